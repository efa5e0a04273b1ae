"""The dead-letter record: broker messages a worker could not take, kept for an operator.

Anyone who can write to the broker can send a worker anything. A message that is not one
a worker can run (not JSON, a broken envelope, an unknown ``body_encoding`` or content
type, a body that does not decode, an unknown task, arguments the task contract refuses)
is acknowledged away, never redelivered and never fatal to the worker, logged, and
recorded here with the reason (``workers.transport`` and ``workers.consumer`` decide)::

    {prefix}deadletter    list of JSON entries, newest first, at most MAX_ENTRIES

An entry: ``at`` (Unix time), ``kind`` (a :class:`Kind`), ``reason``, ``queue``,
``task``, ``id``, ``size`` (characters received; bytes for what arrived as bytes, like a
queue item that is not JSON) and ``raw``, the start of what was
received (at most ``RAW_MAX_CHARS``) with URL queries and passwords and API keys masked.
The log line says the same without ``raw``. Read the record with ``LRANGE``, or
:meth:`DeadLetterBox.recent`. A worker records to the store of the settings its app was
built from (``record_to``, called when the worker starts: ``workers.app``); a process
that never called it only logs.

Masking runs on the worker's consumer loop, on text anyone who can write to the broker
chooses: it looks only at the start of each field (what is kept and a margin, so that a
secret cut by the end of what is kept is still recognised), and its patterns do a bounded
amount of work per position, so no message can stall a worker (linear time, about a
millisecond per field, whatever its size).
"""

from __future__ import annotations

import logging
import re
import reprlib
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from workers.providers.redact import MASK, redact
from workers.settings import Settings
from workers.store import JobStore

__all__ = [
    "MAX_ENTRIES",
    "RAW_MAX_CHARS",
    "DeadLetter",
    "DeadLetterBox",
    "Kind",
    "dead_letter",
    "entry",
    "record_to",
]

log = logging.getLogger("continuum.deadletter")

MAX_ENTRIES: Final = 1000
RAW_MAX_CHARS: Final = 2048
REASON_MAX_CHARS: Final = 500
NAME_MAX_CHARS: Final = 200
# Masking looks at what is kept and this much more (more again, up to _SCAN_MAX_MARGIN,
# when masking shortened it): a secret that the end of what it looks at cuts off is not
# recognised, and must not show in what is kept.
_SCAN_MARGIN: Final = 512
_SCAN_MAX_MARGIN: Final = 8 * _SCAN_MARGIN

# A URL scheme is at most 32 characters, and a URL's userinfo and path stop at the next
# "/" or "://": each position of the text costs a bounded number of steps, not a scan of
# the rest of it (``"a." * 32768`` once took 90 s). Possessive: no backtracking either.
_SCHEME = r"\b[a-z][a-z0-9+.\-]{0,31}://"
_URL_USERINFO = re.compile(rf"(?i)({_SCHEME})[^/\s\"'@]++@")
_URL_QUERY = re.compile(rf"(?i)({_SCHEME}(?:(?!://)[^\s\"'?#])*+)\?[^\s\"'#]*+")


class Kind(StrEnum):
    """Why a message was dead-lettered."""

    NOT_JSON = "not-json"  # the queue item is not JSON text
    ENVELOPE = "bad-envelope"  # JSON, but not kombu's message envelope
    BODY_ENCODING = "bad-body-encoding"  # an unknown body_encoding, or a body it cannot undo
    CONTENT_TYPE = "content-type-refused"  # a serializer the workers do not accept (pickle)
    UNDECODABLE = "undecodable-body"  # the body does not decode with its content type
    NOT_A_TASK = "not-a-task"  # no task name: not a Celery task message
    UNKNOWN_TASK = "unknown-task"  # a task name no worker registers
    INVALID_TASK = "invalid-task"  # a task message Celery cannot read (body shape, fields)
    INVALID_ARGUMENTS = "invalid-arguments"  # arguments the task contract refuses
    UNHANDLED = "unhandled"  # any other error while taking the message
    TOO_LARGE = "too-large"  # over MAX_ITEM_BYTES (workers.transport): never decoded


@dataclass(frozen=True)
class DeadLetter:
    """One message a worker could not take, and why."""

    kind: Kind
    reason: str
    raw: str | bytes | None = None
    queue: str | None = None
    task: Any = None
    message_id: Any = None


def _masked(text: str) -> str:
    text = _URL_USERINFO.sub(r"\1***@", text)
    text = _URL_QUERY.sub(r"\1?***", text)
    return redact(text)


def _bounded(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text`` masked, masking only the start of it.

    The text is cut to ``limit`` and a margin before masking, then masked, then cut to
    ``limit``. A secret the first cut splits is not recognised, but stays at the end of
    the masked text, in the margin that is cut away again (unless the cut fell inside a
    masked span: then the masked text ends with the mask). If masking shortened the text
    so much that what is kept reaches into the margin, the margin grows (up to
    ``_SCAN_MAX_MARGIN``).
    """
    margin = _SCAN_MARGIN
    while True:
        window = text[: limit + margin]
        masked = _masked(window)
        if len(window) == len(text) or len(masked) >= limit + _SCAN_MARGIN or masked.endswith(MASK):
            return masked[:limit]
        if margin >= _SCAN_MAX_MARGIN:
            # Only texts full of secrets shrink this much: keep only what cannot hold
            # the start of one the cut split.
            return masked[: max(0, min(limit, len(masked) - _SCAN_MARGIN))]
        margin *= 2


# A task name or id that is not a string (any JSON value a sender put there), shown
# shallow and short: a deeply nested one must not make the record fail (RecursionError).
_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = NAME_MAX_CHARS
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 20


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _REPR.repr(value)


def _short(value: Any, limit: int = NAME_MAX_CHARS) -> str | None:
    if value is None:
        return None
    return _bounded(_text(value), limit)


def entry(letter: DeadLetter, now: float) -> dict[str, Any]:
    """The record of ``letter`` as stored and logged: bounded, secrets masked."""
    raw = letter.raw
    # Bytes are decoded only as far as they can be kept (a UTF-8 character is 1-4 bytes).
    scanned = (RAW_MAX_CHARS + _SCAN_MAX_MARGIN + 1) * 4
    text = raw[:scanned].decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return {
        "at": round(now, 3),
        "kind": letter.kind.value,
        "reason": _short(letter.reason, REASON_MAX_CHARS),
        "queue": _short(letter.queue),
        "task": _short(letter.task),
        "id": _short(letter.message_id),
        "size": None if raw is None else len(raw),
        "raw": None if text is None else _bounded(text, RAW_MAX_CHARS),
    }


class DeadLetterBox:
    """The bounded list of dead letters in a job store (``Keys.dead_letters``)."""

    def __init__(self, store: JobStore, max_entries: int = MAX_ENTRIES) -> None:
        self.store = store
        self.max_entries = max_entries

    def put(self, record: dict[str, Any]) -> None:
        self.store.put_dead_letter(record, self.max_entries)

    def recent(self, count: int = 100) -> list[dict[str, Any]]:
        """The latest ``count`` entries, newest first."""
        return self.store.dead_letters(count)


#: Where ``dead_letter`` records (None: it only logs), set by ``record_to``.
_box: DeadLetterBox | None = None


def record_to(settings: Settings) -> None:
    """Record this process's dead letters in the store of ``settings`` (nowhere when it
    has no Redis URL). The worker's entry point calls it: the transport and the consumer
    that dead-letter are built by kombu and Celery, which pass no settings to them."""
    global _box  # noqa: PLW0603  (see the docstring)
    if not settings.redis_url:
        _box = None
        return
    store = JobStore.from_url(
        settings.redis_url, settings.key_prefix, socket_connect_timeout=5, socket_timeout=5
    )
    _box = DeadLetterBox(store)


def dead_letter(letter: DeadLetter) -> None:
    """Log ``letter`` and add it to the record. Never raises: whatever goes wrong here must
    not stop the worker that is throwing a bad message away."""
    try:
        record = entry(letter, time.time())
        log.error(
            "dead-lettered a broker message (%s): %s [queue %s, task %s, id %s, size %s]",
            record["kind"],
            record["reason"],
            record["queue"],
            record["task"],
            record["id"],
            record["size"],
        )
        if _box is not None:
            _box.put(record)
    except Exception:
        log.exception("could not record a dead-lettered broker message")
