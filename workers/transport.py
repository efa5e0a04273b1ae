"""kombu's Redis transport, made safe against queue items that are not kombu messages.

Anyone who can write to Redis can ``LPUSH`` anything to a queue. kombu decodes what it pops
inside the worker's event loop, and an error there (an item that is not JSON, an
envelope whose ``properties`` or ``headers`` are not objects, a ``body_encoding`` kombu
does not know, a base64 body that does not decode) stops the worker ("Unrecoverable
error"). Here every item is checked before kombu builds a message from it; a bad one is
dead-lettered (``workers.deadletter``) and the worker goes on. An error while Celery takes
a message that passed (``workers.consumer`` handles the usual ones) is contained too: the
message is dead-lettered and acknowledged, never left to be redelivered forever.
Selected by ``broker_transport`` in ``workers/app.py``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Mapping
from typing import Any

from kombu.transport import redis as kombu_redis

from workers.deadletter import DeadLetter, Kind, dead_letter

#: A kombu delivery tag is a UUID: anything much longer is not one.
MAX_TAG_CHARS = 256


def envelope_problem(payload: Any, codecs: Mapping[str, Any]) -> tuple[Kind, str] | None:
    """What makes ``payload`` (a decoded queue item) no kombu message envelope, or None."""
    if not isinstance(payload, dict):
        return Kind.ENVELOPE, f"the message is a JSON {type(payload).__name__}, not an object"
    properties = payload.get("properties")
    if not isinstance(properties, dict):
        return Kind.ENVELOPE, "the message has no 'properties' object"
    tag = properties.get("delivery_tag")
    if not isinstance(tag, str) or not 0 < len(tag) <= MAX_TAG_CHARS:
        return Kind.ENVELOPE, "properties.delivery_tag is not a short string"
    if properties.get("delivery_info") is not None and not isinstance(
        properties["delivery_info"], dict
    ):
        return Kind.ENVELOPE, "properties.delivery_info is not an object"
    if payload.get("headers") is not None and not isinstance(payload["headers"], dict):
        return Kind.ENVELOPE, "'headers' is not an object"
    for name in ("content-type", "content-encoding"):
        if payload.get(name) is not None and not isinstance(payload[name], str):
            return Kind.ENVELOPE, f"'{name}' is not a string"
    body = payload.get("body")
    if body is not None and not isinstance(body, str):
        return Kind.ENVELOPE, f"'body' is a JSON {type(body).__name__}, not a string"
    encoding = properties.get("body_encoding")
    if encoding is None:
        return None
    if not isinstance(encoding, str) or encoding not in codecs:
        known = ", ".join(sorted(codecs))
        shown = repr(encoding)[:40]
        return Kind.BODY_ENCODING, f"unknown body_encoding {shown} (known: {known})"
    if body:
        try:
            codecs[encoding].decode(body)
        except (binascii.Error, ValueError, TypeError) as exc:
            return Kind.BODY_ENCODING, f"the body is not valid {encoding}: {exc}"
    return None


def _raw(payload: Any) -> str:
    """The item as text for the record, its base64 body decoded when it decodes (so that
    masking sees the URLs in it)."""
    properties = payload.get("properties") if isinstance(payload, dict) else None
    body = payload.get("body") if isinstance(payload, dict) else None
    if isinstance(properties, dict) and properties.get("body_encoding") == "base64" and body:
        with contextlib.suppress(binascii.Error, ValueError, TypeError):
            payload = {**payload, "body": base64.b64decode(body, validate=True).decode()}
    try:
        return json.dumps(payload, default=repr)
    except (TypeError, ValueError):  # pragma: no cover - decoded JSON always dumps
        return repr(payload)


def _names(payload: Any) -> tuple[Any, Any]:
    """The task name and message id the payload claims, if it claims any."""
    headers = payload.get("headers") if isinstance(payload, dict) else None
    if not isinstance(headers, dict):
        return None, None
    return headers.get("task"), headers.get("id")


class Channel(kombu_redis.Channel):
    def _brpop_read(self, **options: Any) -> bool:
        try:
            return bool(super()._brpop_read(**options))  # type: ignore[no-untyped-call]
        except (ValueError, KeyError, TypeError) as exc:
            # Transport._deliver lets nothing but connection errors out: this came from
            # decoding the item (JSON and UTF-8 errors are ValueErrors and keep the text).
            raw = getattr(exc, "doc", None) or getattr(exc, "object", None)
            reason = f"not a JSON message: {type(exc).__name__}: {exc}"
            dead_letter(DeadLetter(Kind.NOT_JSON, reason, raw=raw))
            return False


class Transport(kombu_redis.Transport):
    Channel = Channel

    def _deliver(self, message: Any, queue: str) -> None:
        task, message_id = _names(message)
        problem = envelope_problem(message, Channel.codecs)
        if problem is not None:
            kind, reason = problem
            letter = DeadLetter(kind, reason, _raw(message), queue, task, message_id)
            dead_letter(letter)
            return
        try:
            super()._deliver(message, queue)  # type: ignore[no-untyped-call]
        except self.connection_errors:
            raise
        except Exception as exc:
            reason = f"the worker could not take it: {type(exc).__name__}: {exc}"
            dead_letter(DeadLetter(Kind.UNHANDLED, reason, _raw(message), queue, task, message_id))
            self._settle(message["properties"]["delivery_tag"])

    def _settle(self, tag: str) -> None:
        """Acknowledge ``tag`` wherever it waits for an ack (kombu's ``unacked`` hash), so
        it is not restored and delivered again after the visibility timeout."""
        for channel in self.channels:
            if tag in channel.qos._delivered:
                channel.qos.ack(tag)
