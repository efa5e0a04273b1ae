"""Callbacks: when a job ends, its result is POSTed to the spec's ``callback_url``.

Delivery is a task of its own (``continuum.callback``), so it never blocks an iteration;
it is retried with a growing countdown (never beyond ``max_countdown_s``) and claimed
once per job (``HSETNX``), so a job ending on two racing deliveries posts once. The
receiver gets ``{"job": <the status view, with metadata>, "result": <text or null>}``
and should answer 2xx; anything else, or no answer within the deadline, is retried. A
redirect is never followed (the receiver must answer at the URL it was given): a 3xx
fails the delivery for good, as does a URL whose host is not public and not allow-listed
(``workers.callback_addresses``: checked after DNS, then called at the checked address).
The job hash's ``callback`` field says where delivery stands: pending, delivered,
retrying or failed with the last error, or refused with the reason.

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

import json
import select
import socket
import ssl
import time
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from workers.callback_addresses import (
    AllowList,
    Refused,
    Resolver,
    Unresolved,
    check,
    origin,
    resolve,
)
from workers.settings import Settings
from workers.store import JobRecord, JobStore
from workers.views import job_view

#: The deadline of one delivery: connect, TLS, request, response status line and headers.
TIMEOUT_S = 10.0
MAX_RETRIES = 8


class CallbackError(RuntimeError):
    """Raised when the receiver did not take the callback (an error status, or no answer);
    the delivery is retried."""


class CallbackRefused(Refused):
    """Raised when a callback must not be sent at all (a forbidden address, a redirect);
    the delivery is never retried."""


def callback_url(record: JobRecord) -> str | None:
    try:
        url = json.loads(record.spec).get("callback_url")
    except (ValueError, AttributeError):
        return None
    return url if isinstance(url, str) and url else None


def allow_list(settings: Settings) -> AllowList:
    return AllowList.parse(settings.callback_allow)


def claim(store: JobStore, job_id: str) -> bool:
    """True for the first caller only: that one sends the callback task."""
    return bool(store.redis.hsetnx(store.keys.job(job_id), "callback", "pending"))


def payload(store: JobStore, record: JobRecord) -> dict[str, Any]:
    return {"job": job_view(record, metadata=True), "result": store.final_output(record)}


def deliver(
    url: str,
    body: dict[str, Any],
    *,
    allow: AllowList,
    timeout: float = TIMEOUT_S,
    resolver: Resolver = resolve,
    transport: httpx.BaseTransport | None = None,
) -> None:
    """POST ``body`` to ``url`` at its checked address. ``CallbackRefused`` when it must
    not be sent; ``CallbackError`` when the receiver did not take it, or did not answer
    (status line and headers) within ``timeout`` seconds of the connection being started:
    a deadline on the whole exchange, not on each read. (``transport`` replaces the
    network, in tests: the deadline is then the transport's business.)"""
    shown = origin(url)
    try:
        target = check(url, allow, resolver)
    except Refused as exc:
        raise CallbackRefused(str(exc)) from None
    except Unresolved as exc:
        raise CallbackError(f"POST to {shown}: {exc}") from None
    if transport is None:
        transport = _DeadlineTransport(time.monotonic() + timeout)
    # ``trust_env=False``: no proxy from the environment, which would resolve the host
    # again (and reach whatever it can); the connection goes to the checked address.
    with httpx.Client(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
    ) as client:
        request = client.build_request(
            "POST",
            target.pinned_url,
            json=body,
            headers={"Host": target.host_header},
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


#: Write a field only into a job that still exists: a job whose retention ran out while
#: its callback was retried must not come back as a hash with no status and no expiry.
_MARK = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HSET', KEYS[1], 'callback', ARGV[1])
end
return -1
"""


def mark(store: JobStore, job_id: str, outcome: str) -> None:
    store.redis.eval(_MARK, 1, store.keys.job(job_id), outcome[:500])


__all__ = [
    "MAX_RETRIES",
    "CallbackError",
    "CallbackRefused",
    "allow_list",
    "callback_url",
    "claim",
    "deliver",
    "mark",
    "origin",
    "payload",
]
