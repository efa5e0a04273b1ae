"""Finding Redis for the commands that need it: ``REDIS_URL``, else the embedded server
(``./var/redis``) another ``continuum`` process runs, else a new embedded one that this
process owns and stops when it exits. The URL may carry a password (the embedded
server's always does): it goes into ``REDIS_URL`` for this process and its children (an
environment is private to its user, unlike a command line) and is printed masked."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from workers.embedded import EmbeddedRedisError, redact_url, resolve_redis_url

#: The URL schemes redis-py connects with.
REDIS_SCHEMES = ("redis", "rediss", "unix")


class NoRedis(RuntimeError):
    """No Redis to talk to, and none could be started; the message says why."""


@contextmanager
def redis_url(command: str, *, announce: bool = False) -> Iterator[str]:
    """Yield the Redis URL to use, exported as ``REDIS_URL`` for the settings read after."""
    try:
        url, server = resolve_redis_url()
    except EmbeddedRedisError as exc:
        raise NoRedis(f"continuum {command}: {exc}") from None
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in REDIS_SCHEMES:
        # Said once, plainly, and non-zero: Celery would take some of these for a broker
        # or retry them forever, and a supervisor must see a configuration error.
        shown = f"not {scheme}://" if scheme else "and this is no URL"
        raise NoRedis(
            f"continuum {command}: REDIS_URL must be a Redis URL (redis://, rediss:// or "
            f"unix://), {shown}: job state and the queue both live in Redis"
        )
    os.environ["REDIS_URL"] = url
    from workers.settings import get_settings  # noqa: PLC0415

    get_settings.cache_clear()
    if server is not None and announce:
        print(
            f"continuum {command}: started an embedded Redis at {redact_url(url)} (data in "
            f"{server.data_dir}); it stops when this command does",
            file=sys.stderr,
            flush=True,
        )
    try:
        yield url
    finally:
        if server is not None:
            server.stop()
