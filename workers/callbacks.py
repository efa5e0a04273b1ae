"""Callbacks: when a job ends, its result is POSTed to the spec's ``callback_url``.

At least once, from an outbox: the script that ends a job (``workers/lua/retain.lua``)
puts it in the outbox (``Keys.outbox``, scored by when its next attempt is due) in the
same write, with the event's id. Delivery is a task of its own (``continuum.callback``),
sent when the job ends, so it never blocks an iteration; an attempt first claims the
entry (``JobStore.claim_callback``: one deliverer at a time, each for ``HOLD_S``), and a
failed one is due again after ``backoff`` (capped by ``max_countdown_s``), ``MAX_ATTEMPTS``
in all. The watchdog sends the task again for an entry overdue by ``queue_grace_s`` (its
task was lost with a worker), so a worker killed between the job's end and the POST
loses nothing. An entry names the event of the job that wrote it: once that job has
expired, no attempt takes it (not even for a new job under the same id), and the
watchdog drops it. An attempt records its outcome only while it still holds its claim;
one that outlived it (another deliverer took over) changes nothing, and says so in the log.

The receiver gets ``{"event_id", "job": <the status view, with metadata>, "result": <text
or null>}`` and should answer 2xx; anything else, or no answer within the deadline, is
retried. Every attempt carries the same ``event_id`` (also as the ``Idempotency-Key`` and
``X-Continuum-Event-Id`` headers: a receiver drops a repeat) and, when
``CONTINUUM_CALLBACK_SECRET`` is set, ``X-Continuum-Signature: t=<unix>,v1=<hex>``, the
HMAC-SHA256 of ``"<t>.<body>"`` with that secret (``sign``, ``verify``). A redirect is
never followed (the receiver must answer at the URL it was given): a 3xx fails the
delivery for good, as does a URL whose host is not public and not allow-listed
(``workers.callback_addresses``: checked after DNS, then called at the checked address).
The job hash's ``callback`` field says where delivery stands: pending, delivered,
retrying with the last error, refused with the reason, or undeliverable (every attempt
failed) with the last error.

The URL's path, query and user info may carry the receiver's token: no message, log line
or task result here names more of it than ``scheme://host:port`` (``origin``).

One delivery never holds its worker thread longer than its deadline (``TIMEOUT_S``): the
time to connect, negotiate TLS, send the request and read the response's status line and
headers is counted on one monotonic clock, not per socket operation. Every blocking
socket call gets what is left of it as its timeout (``_DeadlineBackend``), so a receiver
that trickles its answer a byte at a time, or reads the request that way, is cut off
when the deadline passes (a ``CallbackError``, retried), not after ``timeout`` per byte.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import select
import socket
import ssl
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpcore
import httpx

from workers.callback_addresses import (
    AllowList,
    Resolver,
    check,
    origin,
    resolve,
)
from workers.errors import AddressRefused, CallbackError, CallbackRefused, Unresolved
from workers.settings import Settings
from workers.store import TERMINAL, JobRecord, JobStore
from workers.views import job_view

log = logging.getLogger("continuum.callbacks")

#: The deadline of one delivery: connect, TLS, request, response status line and headers.
TIMEOUT_S = 10.0
MAX_RETRIES = 8
#: Attempts at one callback before it is undeliverable: the first and its retries.
MAX_ATTEMPTS = MAX_RETRIES + 1
#: How long an attempt holds its claim: past the delivery's deadline, with room for
#: building the body. A deliverer killed mid-POST is replaced this late (plus the grace).
HOLD_S = 3 * TIMEOUT_S
#: A retry may run this early (a countdown fires on another clock than the entry's).
EARLY_S = 1.0

EVENT_HEADER = "X-Continuum-Event-Id"
IDEMPOTENCY_HEADER = "Idempotency-Key"
SIGNATURE_HEADER = "X-Continuum-Signature"
ATTEMPT_HEADER = "X-Continuum-Attempt"


def callback_url(record: JobRecord) -> str | None:
    try:
        url = json.loads(record.spec).get("callback_url")
    except (ValueError, AttributeError):
        return None
    return url if isinstance(url, str) and url else None


def allow_list(settings: Settings) -> AllowList:
    return AllowList.parse(settings.callback_allow)


def claim(store: JobStore, job_id: str) -> bool:
    """True for the first caller only: that one sends the callback task (the watchdog
    sends it again if it is lost)."""
    return store.claim_callback_send(job_id)


#: A result longer than this (bytes of output) is not put in the callback's body: the body
#: is built in memory, and a receiver would have to take it whole. It says so instead
#: (``result_omitted``), and the receiver reads the result from the API, streamed.
MAX_RESULT_BYTES = 1024 * 1024


def payload(store: JobStore, record: JobRecord, event_id: str | None = None) -> dict[str, Any]:
    """The body: the same on every attempt (the view leaves out the callback's state).
    A result over ``MAX_RESULT_BYTES`` is left out: ``"result": null`` and
    ``"result_omitted": {"bytes": <its output's length>, "path": "/v1/jobs/<id>/result"}``."""
    view = job_view(record, metadata=True)
    view.pop("callback", None)
    size = store.output_size(record.job_id)
    body: dict[str, Any]
    if size > MAX_RESULT_BYTES and record.result is not None:
        path = f"/v1/jobs/{record.job_id}/result"
        body = {"job": view, "result": None, "result_omitted": {"bytes": size, "path": path}}
    else:
        body = {"job": view, "result": store.final_output(record)}
    return body if event_id is None else {"event_id": event_id, **body}


def encode(body: dict[str, Any]) -> bytes:
    """The body as sent (and signed): compact UTF-8 JSON."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def sign(secret: str, body: bytes, at: int) -> str:
    """``X-Continuum-Signature``'s value: ``t=<at>,v1=<hex HMAC-SHA256 of "<at>.<body>">``."""
    mac = hmac.new(secret.encode("utf-8"), b"%d." % at + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={mac}"


def verify(
    secret: str, body: bytes, header: str, *, now: float | None = None, tolerance_s: float = 300
) -> bool:
    """What a receiver checks: the signature is ours and at most ``tolerance_s`` old."""
    fields = dict(part.partition("=")[::2] for part in header.split(","))
    try:
        at = int(fields.get("t", ""))
    except ValueError:
        return False
    now = time.time() if now is None else now
    if abs(now - at) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, body, at), f"t={at},v1={fields.get('v1', '')}")


def backoff(attempt: int, cap: float) -> float:
    """Seconds before the attempt after failed attempt ``attempt`` (1, 2, 4, ... ``cap``)."""
    return float(min(2.0 ** max(attempt - 1, 0), cap))


def deliver(
    url: str,
    body: dict[str, Any],
    *,
    allow: AllowList,
    timeout: float = TIMEOUT_S,
    resolver: Resolver = resolve,
    transport: httpx.BaseTransport | None = None,
    headers: dict[str, str] | None = None,
    secret: str | None = None,
) -> None:
    """POST ``body`` to ``url`` at its checked address, with ``headers`` and, given a
    ``secret``, signed (``sign``) as it is sent. ``CallbackRefused`` when it must not be
    sent; ``CallbackError`` when the receiver did not take it, or did not answer (status
    line and headers) within ``timeout`` seconds of the connection being started: a
    deadline on the whole exchange, not on each read. (``transport`` replaces the network,
    in tests: the deadline is then the transport's business.)"""
    shown = origin(url)
    try:
        target = check(url, allow, resolver)
    except AddressRefused as exc:
        raise CallbackRefused(str(exc)) from None
    except Unresolved as exc:
        raise CallbackError(f"POST to {shown}: {exc}") from None
    if transport is None:
        transport = _DeadlineTransport(time.monotonic() + timeout)
    content = encode(body)
    sent = {**(headers or {}), "Host": target.host_header, "Content-Type": "application/json"}
    if secret:
        sent[SIGNATURE_HEADER] = sign(secret, content, int(time.time()))
    # ``trust_env=False``: no proxy from the environment, which would resolve the host
    # again (and reach whatever it can); the connection goes to the checked address.
    with httpx.Client(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
    ) as client:
        request = client.build_request(
            "POST",
            target.pinned_url,
            content=content,
            headers=sent,
            extensions=target.extensions,
        )
        try:
            answer = client.send(request, stream=True)  # the body is never read
            answer.close()
        except httpx.TimeoutException:
            raise CallbackError(
                f"POST to {shown}: no answer within {timeout:g} s"
                " (the deadline for connecting, sending and the response headers)"
            ) from None
        except httpx.HTTPError as exc:
            reason = _hide(str(exc), url, str(target.pinned_url))
            raise CallbackError(f"POST to {shown}: {type(exc).__name__}: {reason}") from None
    if answer.is_redirect:
        raise CallbackRefused(
            f"POST to {shown}: HTTP {answer.status_code}, a redirect (redirects are not followed)"
        )
    if not answer.is_success:
        raise CallbackError(f"POST to {shown}: HTTP {answer.status_code}")


class Outcome(StrEnum):
    SKIPPED = "skipped"
    DELIVERED = "delivered"
    REFUSED = "refused"
    RETRY = "retry"
    UNDELIVERABLE = "undeliverable"


@dataclass(frozen=True)
class Attempt:
    """What one attempt came to; the task retries a ``RETRY`` after ``wait`` seconds."""

    outcome: Outcome
    detail: str
    wait: float = 0.0
    number: int = 0


def _adopt(store: JobStore, job_id: str) -> bool:
    """Put a job that ended before the outbox existed (an upgrade: its callback
    ``pending`` or ``retrying``, with no event id) in the outbox; the first attempt that
    finds it does (``JobStore.adopt_callback``)."""
    record = store.load(job_id)
    if record is None or callback_url(record) is None or record.status not in TERMINAL:
        return False
    if not (record.callback or "").startswith(("pending", "retrying")):
        return False
    return store.adopt_callback(job_id)


_NOT_CLAIMED = {
    0: "another worker is delivering it",
    -1: "nothing to deliver (delivered, settled, or no callback_url)",
    -2: "not due yet",
    -3: "no such job (expired)",
}


@dataclass(frozen=True)
class _Claim:
    """One attempt's hold on a job's callback: the event it delivers, under its token."""

    store: JobStore
    job_id: str
    token: str
    event: str

    def settle(self, done: Attempt, outcome: str, retry_at: float | None = None) -> Attempt:
        """Record ``done`` (``outcome`` in the job; the entry dropped, or due at
        ``retry_at``) while the claim is still ours. Else nothing changes: the claim ran
        out mid-attempt and another deliverer took the entry over (and may have delivered
        it), so this outcome is not the job's, and no retry of it is asked for."""
        if self.store.settle_callback(
            self.job_id, self.token, self.event, outcome, retry_at=retry_at
        ):
            return done
        log.warning(
            "job %s: callback attempt %d outlived its claim (%s): not recorded",
            self.job_id,
            done.number,
            done.outcome.value,
        )
        return Attempt(Outcome.SKIPPED, "its claim ran out before it settled", number=done.number)


def _claim(store: JobStore, job_id: str) -> tuple[int, _Claim]:
    token = uuid.uuid4().hex
    number, event = store.claim_callback(job_id, token, hold_s=HOLD_S, early_s=EARLY_S)
    if number == -1 and _adopt(store, job_id):
        number, event = store.claim_callback(job_id, token, hold_s=HOLD_S, early_s=EARLY_S)
    return number, _Claim(store, job_id, token, event)


def attempt(
    store: JobStore,
    job_id: str,
    settings: Settings,
    *,
    resolver: Resolver = resolve,
    transport: httpx.BaseTransport | None = None,
) -> Attempt:
    """One attempt at the job's callback, if its outbox entry is due and free: claim it,
    POST, settle (the outcome in the job's ``callback`` field; the entry dropped, or due
    again after ``backoff``)."""
    number, claim = _claim(store, job_id)
    if number <= 0:
        return Attempt(Outcome.SKIPPED, _NOT_CLAIMED[number])
    record = store.load(job_id)
    url = None if record is None else callback_url(record)
    if record is None or url is None:
        skipped = Attempt(Outcome.SKIPPED, "no such job, or no callback_url")
        return claim.settle(skipped, "refused: the job has no callback_url")
    if number > MAX_ATTEMPTS:  # the attempts before raised something else (see the log)
        shown = record.callback or ""
        last = shown[10:] if shown.startswith("retrying: ") else "no attempt finished (see the log)"
        done = Attempt(Outcome.UNDELIVERABLE, last, number=number)
        return claim.settle(done, f"undeliverable: {last} ({number - 1} attempts)")
    body = payload(store, record, claim.event)
    if store.callback_event(job_id) != claim.event:
        # The job expired after the claim, and its id was reused: the body read is not
        # the body of the claimed event (the dead entry is the watchdog's to drop).
        return Attempt(Outcome.SKIPPED, "the job expired while its callback was read")
    return _post(claim, url, body, number, settings, resolver=resolver, transport=transport)


def _post(
    claim: _Claim,
    url: str,
    body: dict[str, Any],
    number: int,
    settings: Settings,
    *,
    resolver: Resolver,
    transport: httpx.BaseTransport | None,
) -> Attempt:
    """POST the claimed event's ``body`` once and settle the claim with what came of it."""
    event = claim.event
    secret = settings.callback_secret.get_secret_value() if settings.callback_secret else None
    try:
        deliver(
            url,
            body,
            allow=allow_list(settings),
            resolver=resolver,
            transport=transport,
            headers={EVENT_HEADER: event, IDEMPOTENCY_HEADER: event, ATTEMPT_HEADER: str(number)},
            secret=secret,
        )
    except CallbackRefused as exc:
        return claim.settle(Attempt(Outcome.REFUSED, str(exc), number=number), f"refused: {exc}")
    except CallbackError as exc:
        if number >= MAX_ATTEMPTS:
            done = Attempt(Outcome.UNDELIVERABLE, str(exc), number=number)
            return claim.settle(done, f"undeliverable: {exc} ({number} attempts)")
        wait = backoff(number, settings.max_countdown_s)
        done = Attempt(Outcome.RETRY, str(exc), wait, number)
        return claim.settle(done, f"retrying: {exc}", retry_at=time.time() + wait)
    return claim.settle(Attempt(Outcome.DELIVERED, origin(url), number=number), "delivered")


def _hide(text: str, *urls: str) -> str:
    for url in urls:
        text = text.replace(url, origin(url))
    return text


# -- the deadline ----------------------------------------------------------------------------
#
# httpx's timeouts are per operation: a read that gets one byte restarts the clock, so a
# receiver dripping its headers holds the caller for as long as it likes. The sockets of a
# delivery are therefore opened by ``_DeadlineBackend``, whose every blocking call (connect,
# TLS handshake, each send, each recv) is given the time left until one deadline, and
# which refuses to block at all once it has passed. No thread, no signal: the socket's own
# timeout does it, and CPython bounds a TLS handshake, read or write by it as a whole.
# What httpx sends is unchanged: the same request, to the pinned address, with the same
# ``Host`` header and TLS server name (the ``sni_hostname`` extension reaches start_tls).


class _Deadline:
    def __init__(self, at: float) -> None:
        self.at = at

    def left(self, timeout: float | None, late: type[httpcore.TimeoutException]) -> float:
        """The timeout for the next blocking call: ``timeout`` or what is left of the
        deadline, the smaller; ``late`` (a timeout) once nothing is left."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise late("the delivery's deadline has passed")
        return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """httpcore's blocking socket stream, with every call bounded by the deadline."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self._sock = sock
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            self._sock.settimeout(self._deadline.left(timeout, httpcore.ReadTimeout))
            return self._sock.recv(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # One ``send`` at a time (not ``sendall`` with one timeout): a receiver that
        # reads the request a byte at a time is cut off at the deadline too.
        view = memoryview(buffer)
        try:
            while view:
                self._sock.settimeout(self._deadline.left(timeout, httpcore.WriteTimeout))
                view = view[self._sock.send(view) :]
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    def close(self) -> None:
        self._sock.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        try:
            self._sock.settimeout(self._deadline.left(timeout, httpcore.ConnectTimeout))
            wrapped = ssl_context.wrap_socket(self._sock, server_hostname=server_hostname)
        except TimeoutError as exc:
            self.close()
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:  # ssl.SSLError (a certificate not verified) among them
            self.close()
            raise httpcore.ConnectError(str(exc)) from exc
        except httpcore.ConnectTimeout:
            self.close()
            raise
        return _DeadlineStream(wrapped, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object" and isinstance(self._sock, ssl.SSLSocket):
            return self._sock  # what httpcore asks of it (ALPN) an SSLSocket answers
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        if info == "is_readable":
            try:
                return bool(select.select([self._sock], [], [], 0)[0])
            except (OSError, ValueError):
                return True
        return None


class _DeadlineBackend(httpcore.NetworkBackend):
    """Opens the delivery's connections as ``_DeadlineStream``s (TCP only)."""

    def __init__(self, deadline: _Deadline) -> None:
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        source = None if local_address is None else (local_address, 0)
        try:
            wait = self._deadline.left(timeout, httpcore.ConnectTimeout)
            # ``host`` is the checked address (an IP literal): no DNS happens here.
            sock = socket.create_connection((host, port), wait, source_address=source)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        for option in socket_options or ():
            sock.setsockopt(*option)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _DeadlineStream(sock, self._deadline)


class _DeadlineTransport(httpx.HTTPTransport):
    """httpx's own transport (request and response mapping, errors), its connection pool
    built on ``_DeadlineBackend``: httpx's constructor takes no network backend."""

    def __init__(self, deadline: float) -> None:
        context = httpx.create_ssl_context(trust_env=False)  # what httpx.Client would use
        super().__init__(verify=context, trust_env=False)
        self._pool.close()
        self._pool = httpcore.ConnectionPool(
            ssl_context=context, network_backend=_DeadlineBackend(_Deadline(deadline))
        )


def mark(store: JobStore, job_id: str, outcome: str) -> None:
    """Record a callback's outcome on its job, unless the job has expired meanwhile."""
    store.set_fields(job_id, callback=outcome[:500])


__all__ = [
    "ATTEMPT_HEADER",
    "EVENT_HEADER",
    "IDEMPOTENCY_HEADER",
    "MAX_ATTEMPTS",
    "MAX_RETRIES",
    "SIGNATURE_HEADER",
    "Attempt",
    "CallbackError",
    "CallbackRefused",
    "Outcome",
    "allow_list",
    "attempt",
    "backoff",
    "callback_url",
    "claim",
    "deliver",
    "encode",
    "mark",
    "origin",
    "payload",
    "sign",
    "verify",
]
