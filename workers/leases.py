"""Keeping the leases of the iterations in flight alive: one thread per worker process.

An iteration holds its job's lease (a key with a TTL) while its model call runs. Rather
than a thread per iteration, one daemon thread renews every lease this process holds,
every third of the TTL; a lease that turns out to be someone else's (it expired, and the
watchdog's copy took over) is dropped from the set and left alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from workers.store import JobStore

log = logging.getLogger("continuum.leases")


class LeaseRenewer:
    def __init__(self, store: JobStore, ttl_s: float) -> None:
        self.store, self.ttl_s = store, ttl_s
        self._held: dict[tuple[str, str], None] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def hold(self, job_id: str, token: str) -> Iterator[None]:
        """Renew ``job_id``'s lease (ours while it is ``token``) until the block ends."""
        key = (job_id, token)
        with self._lock:
            self._held[key] = None
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="leases", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(key, None)

    def held(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._held)

    def _run(self) -> None:
        stop = threading.Event()
        while not stop.wait(self.ttl_s / 3):
            for job_id, token in self.held():
                try:
                    ours = self.store.renew_lease(job_id, token, self.ttl_s)
                except Exception:  # Redis away for a moment: try again next round
                    log.warning("could not renew the lease of job %s", job_id, exc_info=True)
                    continue
                if not ours:
                    with self._lock:
                        self._held.pop((job_id, token), None)
