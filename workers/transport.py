"""kombu's Redis transport, made safe against queue items that are not kombu messages.

Anyone who can write to Redis can ``LPUSH`` anything to a queue. kombu decodes what it pops
inside the worker's event loop, and an error there (an item that is not JSON, an
envelope whose ``properties`` or ``headers`` are not objects, a ``body_encoding`` kombu
does not know, a base64 body that does not decode) stops the worker ("Unrecoverable
error"). Here every item is checked before kombu builds a message from it; a bad one is
dead-lettered (``workers.deadletter``) and the worker goes on. An error while Celery takes
a message that passed (``workers.consumer`` handles the usual ones) is contained too: the
message is dead-lettered and acknowledged, never left to be redelivered forever.

Both ways a message arrives are covered: a queue item (``BRPOP``) and a broadcast on the
fan-out channel every worker listens on (``PUBLISH`` to Celery's remote-control mailbox):
whatever error decoding raises (not only a ``ValueError``: JSON nested 100,000 deep raises
``RecursionError``, a ``{"__type__": "bytes", "__value__": 5}`` an ``AttributeError``), the
item is dead-lettered with the reason and the worker goes on; only connection errors
propagate. An item over ``MAX_ITEM_BYTES`` is refused before it is decoded at all.
Selected by ``broker_transport`` in ``workers/app.py``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Iterator, Mapping
from queue import Empty
from typing import Any, Final

from kombu.transport import redis as kombu_redis
from kombu.utils.json import loads

from core.errors import describe
from workers.deadletter import DeadLetter, Kind, dead_letter

#: A kombu delivery tag is a UUID: anything much longer is not one.
MAX_TAG_CHARS = 256
#: The largest queue item or broadcast decoded. A job's message carries its spec (API
#: requests are at most 1 MiB by default) base64-encoded: 64 MiB is far above any real one
#: and keeps a crafted item from costing the worker gigabytes while it is decoded.
MAX_ITEM_BYTES: Final = 64 * 1024 * 1024

#: What :meth:`Channel._decoded` returns for an item it dead-lettered.
_REFUSED: Final = object()


def _str(value: bytes | str) -> str:
    """kombu's ``bytes_to_str``: undecodable bytes become U+FFFD."""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def envelope_problem(payload: Any, codecs: Mapping[str, Any]) -> tuple[Kind, str] | None:
    """What makes ``payload`` (a decoded queue item) no kombu message envelope, or None."""
    if not isinstance(payload, dict):
        return Kind.ENVELOPE, f"the message is a JSON {type(payload).__name__}, not an object"
    problem = _shape_problem(payload)
    if problem is not None:
        return Kind.ENVELOPE, problem
    problem = _encoding_problem(payload, codecs)
    return None if problem is None else (Kind.BODY_ENCODING, problem)


def _shape_problem(payload: dict[str, Any]) -> str | None:
    """Which field of the envelope ``payload`` kombu would trip on, or None."""
    properties = payload.get("properties")
    if not isinstance(properties, dict):
        return "the message has no 'properties' object"
    tag = properties.get("delivery_tag")
    if not isinstance(tag, str) or not 0 < len(tag) <= MAX_TAG_CHARS:
        return "properties.delivery_tag is not a short string"
    if properties.get("delivery_info") is not None and not isinstance(
        properties["delivery_info"], dict
    ):
        return "properties.delivery_info is not an object"
    if payload.get("headers") is not None and not isinstance(payload["headers"], dict):
        return "'headers' is not an object"
    for name in ("content-type", "content-encoding"):
        if payload.get(name) is not None and not isinstance(payload[name], str):
            return f"'{name}' is not a string"
    body = payload.get("body")
    if body is not None and not isinstance(body, str):
        return f"'body' is a JSON {type(body).__name__}, not a string"
    return None


def _encoding_problem(payload: dict[str, Any], codecs: Mapping[str, Any]) -> str | None:
    """Why the body of the envelope ``payload`` does not decode as its ``body_encoding``
    says, or None (also with no ``body_encoding``)."""
    encoding = payload["properties"].get("body_encoding")
    if encoding is None:
        return None
    if not isinstance(encoding, str) or encoding not in codecs:
        known = ", ".join(sorted(codecs))
        shown = repr(encoding)[:40]
        return f"unknown body_encoding {shown} (known: {known})"
    body = payload.get("body")
    if body:
        try:
            codecs[encoding].decode(body)
        except (binascii.Error, ValueError, TypeError) as exc:
            return f"the body is not valid {encoding}: {exc}"
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
    except Exception as exc:  # nested almost as deep as decoding allows: RecursionError
        return f"(a JSON {type(payload).__name__} that does not print: {type(exc).__name__})"


def _names(payload: Any) -> tuple[Any, Any]:
    """The task name and message id the payload claims, if it claims any."""
    headers = payload.get("headers") if isinstance(payload, dict) else None
    if not isinstance(headers, dict):
        return None, None
    return headers.get("task"), headers.get("id")


class QoS(kombu_redis.QoS):
    """kombu's QoS, acknowledging without a transaction.

    An ack is a ZREM and an HDEL of the message's tag. kombu sends them in MULTI/EXEC, and
    Redis at ``maxmemory`` refuses every command queued in a transaction, deletes
    included: the ack raised and stopped the worker ("Unrecoverable error"). Sent as a
    plain pipeline, both run (Redis allows deletes when full). The hash entry goes first:
    a crash between the two leaves an index entry with no message, which kombu's restore
    drops, rather than a message no index points to.
    """

    def _remove_from_indices(self, delivery_tag: str, pipe: Any = None) -> Any:
        if pipe is not None:  # kombu's restore adds its own reads to the same pipeline
            return super()._remove_from_indices(delivery_tag, pipe)  # type: ignore[no-untyped-call]
        with self.channel.conn_or_acquire() as client:
            return (
                client.pipeline(transaction=False)
                .hdel(self.unacked_key, delivery_tag)
                .zrem(self.unacked_index_key, delivery_tag)
            )


class Channel(kombu_redis.Channel):
    """kombu's channel, decoding what it receives itself (``_brpop_read`` and
    ``_receive_one`` are kombu 5.7's, with :meth:`_decoded` for its ``loads``), and
    acknowledging without a transaction (:class:`QoS`)."""

    QoS = QoS
    #: (kombu's pool, the client on it) that ``conn_or_acquire`` hands out.
    _shared_client: tuple[Any, Any] | None = None

    @contextlib.contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        """kombu's, with one redis-py client per channel and pool instead of a new one per
        operation: a hop's publish, events, unacked bookkeeping and ack each built one
        (about 0.06 ms, and garbage, each; docs/benchmarks.md "Where a hop's CPU goes").
        A client is safe to share between threads: each command takes a connection from
        the pool."""
        if client:
            yield client
            return
        pool = self.pool
        shared = self._shared_client
        if shared is None or shared[0] is not pool:  # kombu drops its pools on close
            shared = self._shared_client = (pool, self._create_client())  # type: ignore[no-untyped-call]
        yield shared[1]

    def _decoded(self, item: bytes | str, queue: str | None) -> Any:
        """``item`` decoded, or :data:`_REFUSED` once it is dead-lettered."""
        if len(item) > MAX_ITEM_BYTES:
            reason = f"{len(item)} bytes, more than the {MAX_ITEM_BYTES} a message may have"
            dead_letter(DeadLetter(Kind.TOO_LARGE, reason, raw=item, queue=queue))
            return _REFUSED
        try:
            return loads(_str(item))
        except self.connection_errors:
            raise
        except Exception as exc:  # ValueError, RecursionError, AttributeError (object_hook)...
            reason = f"not a JSON message: {describe(exc)}"
            dead_letter(DeadLetter(Kind.NOT_JSON, reason, raw=item, queue=queue))
            return _REFUSED

    def _brpop_read(self, **options: Any) -> bool:
        try:
            try:
                dest_item = self.client.parse_response(self.client.connection, "BRPOP", **options)
            except self.connection_errors:
                # Disconnect, so that the next iteration reconnects.
                self.client.connection.disconnect()
                raise
            if not dest_item:
                raise Empty()
            dest, item = dest_item
            dest = _str(dest).rsplit(self.sep, 1)[0]
            self._queue_cycle.rotate(dest)
            message = self._decoded(item, dest)
            if message is _REFUSED:
                return False
            self.connection._deliver(message, dest)
            return True
        finally:
            self._in_poll = None  # type: ignore[assignment]  # as kombu does
            # The BRPOP connection is idle now: kombu applies a pending re-auth token here.
            flush = getattr(self, "_flush_brpop_reauth", None)
            if flush is not None:
                flush()

    def _receive_one(self, c: Any) -> bool | None:
        try:
            response = c.parse_response()
        except self.connection_errors:
            self._in_listen = None  # type: ignore[assignment]  # as kombu does
            raise
        if not isinstance(response, (list, tuple)):
            return None
        try:
            payload = self._handle_message(c, response)  # type: ignore[no-untyped-call]
            if not _str(payload["type"]).endswith("message") or not payload["data"]:
                return None  # (un)subscribe confirmations
            channel = _str(payload["channel"])
        except self.connection_errors:
            raise
        except Exception as exc:  # pragma: no cover - Redis sends well-formed replies
            reason = f"a broadcast the worker could not read: {describe(exc)}"
            dead_letter(DeadLetter(Kind.UNHANDLED, reason, raw=repr(response)))
            return None
        if channel[:1] == "/":
            _, _, channel = channel.partition(".")
        message = self._decoded(payload["data"], channel)
        if message is _REFUSED:
            return None
        exchange = channel.split("/", 1)[0]
        if exchange not in self._fanout_to_queue:  # only with a wildcard in a topic
            reason = f"a broadcast for no exchange this worker binds: {exchange!r:.200}"
            dead_letter(DeadLetter(Kind.ENVELOPE, reason, _raw(message), channel))
            return None
        return bool(self._deliver_fanout_message(message, exchange))  # type: ignore[no-untyped-call]


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
            reason = f"the worker could not take it: {describe(exc)}"
            dead_letter(DeadLetter(Kind.UNHANDLED, reason, _raw(message), queue, task, message_id))
            self._settle(message["properties"]["delivery_tag"])

    def _settle(self, tag: str) -> None:
        """Acknowledge ``tag`` wherever it waits for an ack (kombu's ``unacked`` hash), so
        it is not restored and delivered again after the visibility timeout."""
        for channel in self.channels:
            if tag in channel.qos._delivered:
                channel.qos.ack(tag)
