"""The settings of a command that needs Redis, built once at the entry point and passed
down: ``REDIS_URL``, else the embedded server (``./var/redis``) another ``continuum``
process runs, else a new embedded one that this process owns and stops when it exits;
and the broker, ``CONTINUUM_BROKER_URL`` (default: that Redis). The Redis URL may carry a
password (the embedded server's always does): it travels in the settings, never in
``os.environ`` (``continuum up`` gives it to its children in their own environment:
``cli.stack``), and is printed masked.

A URL no client can use (``amqp://`` as ``REDIS_URL``, ``sentinel://`` as the broker, no
scheme at all) stops the command with one line naming the setting, never the URL, and
exit status 2: a configuration error, which a supervisor must not take for a clean exit.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from workers.embedded import redact_url, resolve_redis_url
from workers.errors import BadUrl, EmbeddedRedisError, NoRedis

if TYPE_CHECKING:
    from workers.settings import Settings


def _checked(command: str, settings: Settings) -> Settings:
    from workers.settings import url_problems  # noqa: PLC0415  (a command's start stays quick)

    problems = url_problems(settings)
    if problems:
        # Said once, plainly, and non-zero: Celery would take some of these for a broker
        # or retry them forever, and a supervisor must see a configuration error.
        raise BadUrl(f"continuum {command}: {'; '.join(problems)}")
    return settings


@contextmanager
def connect(command: str, *, announce: bool = False) -> Iterator[Settings]:
    """Yield the command's settings, read from the environment, their Redis URL resolved
    and both URLs checked."""
    from workers.settings import get_settings  # noqa: PLC0415

    _checked(command, get_settings())  # before starting an embedded Redis for nothing
    try:
        url, server = resolve_redis_url()
    except EmbeddedRedisError as exc:
        raise NoRedis(f"continuum {command}: {exc}") from None
    settings = _checked(command, get_settings().model_copy(update={"redis_url": url}))
    if server is not None and announce:
        print(
            f"continuum {command}: started an embedded Redis at {redact_url(url)} (data in "
            f"{server.data_dir}); it stops when this command does",
            file=sys.stderr,
            flush=True,
        )
    try:
        yield settings
    finally:
        if server is not None:
            server.stop()
