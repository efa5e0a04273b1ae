"""``/healthz``: Redis reachable (pinged on every call), and the workers seen (a Celery
ping, whose answer is reused for a few seconds so the check stays fast)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import RedisError

from core.errors import describe
from workers.store import JobStore


@dataclass
class Health:
    store: JobStore
    celery: Any
    cache_s: float = 5.0
    ping_timeout_s: float = 0.5
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _workers: dict[str, Any] | None = None
    _at: float = float("-inf")

    def check(self) -> tuple[bool, dict[str, Any]]:
        """(Redis is up, the report)."""
        started = time.perf_counter()
        try:
            self.store.ping()
        except RedisError as exc:
            report = {
                "status": "down",
                "redis": {"ok": False, "error": describe(exc)},
                "workers": {"count": None, "names": [], "checked_at": None},
            }
            return False, report
        latency = round((time.perf_counter() - started) * 1000, 3)
        workers = self.workers()
        seen = bool(workers.get("count"))
        return True, {
            "status": "ok" if seen else "degraded",
            "redis": {"ok": True, "latency_ms": latency},
            "workers": workers,
        }

    def workers(self) -> dict[str, Any]:
        """The workers that answered the last ping; pinged again when the answer is older
        than ``cache_s``. While one request pings, the others get the previous answer."""
        if self._workers is not None and time.monotonic() - self._at < self.cache_s:
            return self._workers
        if not self._lock.acquire(blocking=self._workers is None):
            assert self._workers is not None
            return self._workers
        try:
            if self._workers is not None and time.monotonic() - self._at < self.cache_s:
                return self._workers
            self._workers = self._ping()
            self._at = time.monotonic()
            return self._workers
        finally:
            self._lock.release()

    def _ping(self) -> dict[str, Any]:
        try:
            replies = self.celery.control.ping(timeout=self.ping_timeout_s) or []
        except Exception as exc:  # the broker connection failed: report it, stay up
            return {
                "count": None,
                "names": [],
                "checked_at": time.time(),
                "error": describe(exc),
            }
        names = sorted(name for reply in replies for name in reply)
        return {"count": len(names), "names": names, "checked_at": time.time()}
