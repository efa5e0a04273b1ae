"""Callbacks: when a job ends, its result is POSTed to the spec's ``callback_url``.

Delivery is a task of its own (``continuum.callback``), so it never blocks an iteration;
it is retried with a growing countdown (never beyond ``max_countdown_s``) and claimed
once per job (``HSETNX``), so a job ending on two racing deliveries posts once. The
receiver gets ``{"job": <the status view, with metadata>, "result": <text or null>}``
and should answer 2xx; anything else, or no answer within the timeout, is retried.
The job hash's ``callback`` field says where delivery stands: pending, delivered, or
failed with the last error.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from workers.store import JobRecord, JobStore
from workers.views import job_view

TIMEOUT_S = 10.0
MAX_RETRIES = 8


class CallbackError(RuntimeError):
    """The receiver did not take the callback (an error status, or no answer)."""


def callback_url(record: JobRecord) -> str | None:
    try:
        url = json.loads(record.spec).get("callback_url")
    except (ValueError, AttributeError):
        return None
    return url if isinstance(url, str) and url else None


def claim(store: JobStore, job_id: str) -> bool:
    """True for the first caller only: that one sends the callback task."""
    return bool(store.redis.hsetnx(store.keys.job(job_id), "callback", "pending"))


def payload(store: JobStore, record: JobRecord) -> dict[str, Any]:
    return {"job": job_view(record, metadata=True), "result": store.final_output(record)}


def deliver(url: str, body: dict[str, Any], *, timeout: float = TIMEOUT_S) -> None:
    try:
        answer = httpx.post(url, json=body, timeout=timeout, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise CallbackError(f"POST {url}: {type(exc).__name__}: {exc}") from None
    if not answer.is_success:
        raise CallbackError(f"POST {url}: HTTP {answer.status_code}")


def mark(store: JobStore, job_id: str, outcome: str) -> None:
    store.redis.hset(store.keys.job(job_id), "callback", outcome[:500])
