"""Callbacks: when a job ends, its result is POSTed to the spec's ``callback_url``.

Delivery is a task of its own (``continuum.callback``), so it never blocks an iteration;
it is retried with a growing countdown (never beyond ``max_countdown_s``) and claimed
once per job (``HSETNX``), so a job ending on two racing deliveries posts once. The
receiver gets ``{"job": <the status view, with metadata>, "result": <text or null>}``
and should answer 2xx; anything else, or no answer within the timeout, is retried. A
redirect is never followed (the receiver must answer at the URL it was given): a 3xx
fails the delivery for good, as does a URL whose host is not public and not allow-listed
(``workers.callback_addresses``: checked after DNS, then called at the checked address).
The job hash's ``callback`` field says where delivery stands: pending, delivered,
retrying or failed with the last error, or refused with the reason.

The URL's path, query and user info may carry the receiver's token: no message, log line
or task result here names more of it than ``scheme://host:port`` (``origin``).
"""

from __future__ import annotations

import json
from typing import Any

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
    not be sent; ``CallbackError`` when the receiver did not take it."""
    shown = origin(url)
    try:
        target = check(url, allow, resolver)
    except Refused as exc:
        raise CallbackRefused(str(exc)) from None
    except Unresolved as exc:
        raise CallbackError(f"POST to {shown}: {exc}") from None
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


def mark(store: JobStore, job_id: str, outcome: str) -> None:
    store.redis.hset(store.keys.job(job_id), "callback", outcome[:500])


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
