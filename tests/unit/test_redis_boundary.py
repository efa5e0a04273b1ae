"""Only the job store (and the few modules that must build a client from a URL or name a
redis-py exception) import ``redis``; nothing outside the store reaches into its client."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Each with why it may import redis-py.
ALLOWED = {
    "workers/store.py": "the job store",
    "workers/store_metrics.py": "the store's metrics reads (a type only)",
    "workers/broker.py": "reads kombu's queue lists on a Redis broker, not the store",
    "workers/embedded.py": "starts and probes the embedded server",
    "workers/errors.py": "tells Redis's transient refusals from bugs (its exceptions)",
    "workers/tasks.py": "sends again a submission Redis refused for now (its exceptions)",
    "api/errors.py": "maps RedisError to 503 (its exceptions)",
    "api/health.py": "reports RedisError as Redis down (its exceptions)",
    "api/app.py": "create_app's redis= argument (a type only)",
}
_IMPORT = re.compile(r"^\s*(?:import redis\b|from redis\b)", re.M)
_CLIENT = re.compile(r"\bstore\.redis\b|\.redis\.(?!exceptions)\w+\(")


def _sources() -> list[Path]:
    return sorted(p for top in ("workers", "api", "cli") for p in (ROOT / top).rglob("*.py"))


def test_only_the_store_and_the_listed_modules_import_redis() -> None:
    importing = {str(p.relative_to(ROOT)) for p in _sources() if _IMPORT.search(p.read_text())}
    assert importing == set(ALLOWED)


def test_nothing_outside_the_store_uses_its_redis_client() -> None:
    store = {"workers/store.py", "workers/store_metrics.py"}
    found = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in _sources()
        if str(p.relative_to(ROOT)) not in store
        for m in _CLIENT.finditer(p.read_text())
    ]
    assert found == []
