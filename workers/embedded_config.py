"""What the embedded ``redis-server`` starts with: a config file and a password.

Anyone on the machine can reach a port on loopback, so the embedded server asks for a
password and refuses the commands that turn Redis access into more (files written
anywhere with ``CONFIG SET dir``, modules loaded, replication from a rogue master, data
sent elsewhere with ``MIGRATE``) or that destroy data or stop the server.

The password is random, one per data directory, kept in ``DATA_DIR/redis.password`` (mode
0600, owner only), so every ``continuum`` process that shares the server finds it again.
It never appears on a command line: ``redis-server`` reads its settings from
``DATA_DIR/redis.conf`` (mode 0600 too), which holds only the password's SHA-256 (an
ACL rule on the ``default`` user), never the password itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from workers.errors import UnsafePasswordFile

__all__ = [
    "CONFIG_NAME",
    "DISABLED_COMMANDS",
    "PASSWORD_NAME",
    "UnsafePasswordFile",
    "embedded_url",
    "ensure_password",
    "read_password",
    "redact_url",
    "render_config",
    "write_private",
]

log = logging.getLogger("continuum.embedded")

PASSWORD_NAME = "redis.password"
CONFIG_NAME = "redis.conf"
#: Refused to every client (Redis 6.2 ACL). ``CONFIG GET`` stays allowed (read-only);
#: the server is stopped with SIGTERM, never with SHUTDOWN.
DISABLED_COMMANDS = (
    "config",  # CONFIG SET dir/dbfilename writes files anywhere; REWRITE, RESETSTAT
    "module",  # MODULE LOAD runs native code
    "debug",
    "acl",  # would lift these very rules
    "shutdown",
    "flushall",
    "flushdb",
    "swapdb",
    "slaveof",  # replicating from a rogue master loads its data (and modules)
    "replicaof",
    "sync",
    "psync",
    "replconf",
    "failover",
    "cluster",
    "migrate",  # sends keys to any host and port
    "restore",  # crafted payloads
    "restore-asking",
    "pfdebug",
    "pfselftest",
)
_PASSWORD_BYTES = 32


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600, atomically (no moment where it is
    readable by others or half written)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def read_password(data_dir: Path) -> str | None:
    """The password kept in ``data_dir``; None when there is no password file.

    Raises :class:`UnsafePasswordFile` when the file is not a regular file of ours that
    only we can read and write: a password others could read is no secret.
    """
    path = Path(data_dir) / PASSWORD_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlink (ELOOP), or not ours to read
        raise UnsafePasswordFile(f"cannot use {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise UnsafePasswordFile(f"{path} is not a regular file owned by this user")
        if info.st_mode & 0o077:
            raise UnsafePasswordFile(
                f"{path} is readable or writable by others (mode {stat.S_IMODE(info.st_mode):o})"
            )
        password = fh.read(1024).decode("utf-8", "replace").strip()
    return password or None


def ensure_password(data_dir: Path) -> str:
    """The data dir's password, made (random, mode 0600) if it has none or an unsafe one.

    Only the process that holds the data dir's lock calls this, before its server starts:
    replacing an unsafe password then cuts off nobody.
    """
    try:
        found = read_password(data_dir)
    except UnsafePasswordFile as exc:
        log.warning("a new password for the embedded Redis: %s", exc)
        found = None
    if found:
        return found
    password = secrets.token_urlsafe(_PASSWORD_BYTES)
    write_private(Path(data_dir) / PASSWORD_NAME, password + "\n")
    return password


def _quoted(value: str) -> str:
    """A value as one Redis config argument (double-quoted, escaped)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r") + '"'


def render_config(
    *,
    port: int,
    data_dir: Path,
    log_path: Path,
    password: str,
    extra: Mapping[str, str] | None = None,
) -> str:
    """The text of ``redis.conf``: loopback, AOF, no RDB snapshots, and an ACL that asks
    for ``password`` (stored as its SHA-256) and refuses :data:`DISABLED_COMMANDS`."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    denied = " ".join(f"-{name}" for name in DISABLED_COMMANDS)
    settings: dict[str, str] = {
        "bind": "127.0.0.1",
        "port": str(port),
        "protected-mode": "yes",
        "dir": _quoted(str(data_dir)),
        "appendonly": "yes",
        "appendfsync": "everysec",
        "save": '""',
        "daemonize": "no",
        "logfile": _quoted(str(log_path)),
    }
    for key, value in (extra or {}).items():
        settings[key] = _quoted(value)
    lines = [
        "# Written by Continuum at each start of the embedded Redis; edits are lost.",
        *(f"{key} {value}" for key, value in settings.items()),
        f"user default on #{digest} ~* &* +@all {denied} +config|get",
    ]
    return "\n".join(lines) + "\n"


def embedded_url(port: int, password: str | None) -> str:
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"redis://{auth}127.0.0.1:{port}/0"


#: Query options of a URL whose values are secrets (``sentinel_password``, ``password``).
_SECRET_OPTION = re.compile(r"password|secret|token", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with its password (if any) and every query option that holds one
    (``?sentinel_password=...``) replaced by ``***``: what may be printed."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "(a URL that does not parse)"
    if password:
        user = parts.username or ""
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{user}:***@{host}")
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        shown = [(k, "***" if _SECRET_OPTION.search(k) else v) for k, v in pairs]
        parts = parts._replace(query=urlencode(shown, safe="*"))
    return urlunsplit(parts)
