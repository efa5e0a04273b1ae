"""``GET /v1/jobs/{id}/events``: a job's progress as Server-Sent Events.

Every commit of an iteration, and every end outside one (failed, cancelled), writes one
entry to the job's event stream in Redis, in the same script as the change itself
(``retain.lua``'s ``job_event``): a reader misses none and sees them in order. This route
relays them: one ``iteration`` event per commit (progress, chars, records, decision,
fallbacks, last warning, reason), then one ``end`` event with the outcome, and the
response ends. Each event's ``id`` is its stream id: a client that reconnects with
``Last-Event-ID`` (what browsers' ``EventSource`` send by themselves) goes on after it.
While nothing happens, a comment (``: keep-alive``) goes out every
``CONTINUUM_API_STREAM_HEARTBEAT_S``.

The stream keeps its newest 1,000 entries and expires with the job. A job that ended
before it had a stream (an older version's) gets one ``end`` event made from its record.
A blocking read holds a thread: at most ``CONTINUUM_API_MAX_STREAMS`` streams are served
at once by one process, each waiting in a thread of its own pool, so they never take the
threads the other routes run in; one more is refused with 503.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import anyio
from anyio import CapacityLimiter
from fastapi import APIRouter, Header, Path, Request
from fastapi.responses import StreamingResponse

from api.auth import AuthFirstRoute
from api.errors import ApiError
from api.models import ErrorBody, ValidationErrorBody
from core.ids import ID_PATTERN
from workers.store import TERMINAL, JobEvent, JobRecord, JobStore

#: A stream id: milliseconds, a dash, a sequence number.
STREAM_ID_PATTERN = r"^\d{1,20}-\d{1,20}$"
#: Events relayed per read.
READ_COUNT = 100

JobId = Annotated[str, Path(pattern=ID_PATTERN, description="A job id.", examples=["report-7"])]


def _data(
    job_id: str, status: str, iteration: int | None, s: dict[str, Any], **said: str | None
) -> dict[str, Any]:
    """An event's data, in the shape of the job's status (``GET /v1/jobs/{id}``), from a
    commit's summary ``s``; ``said``: the reason and error, when known otherwise."""
    return {
        "job_id": job_id,
        "status": status,
        "iteration": iteration,
        "progress": {
            "percent": s.get("percent"),
            "chars": s.get("chars", 0),
            "records": s.get("records", 0),
        },
        "decision": s.get("decision"),
        "fallbacks": s.get("fallbacks", []),
        "last_warning": s.get("last_warning"),
        "reason": said.get("reason") or s.get("reason"),
        "error": said.get("error"),
    }


def event_data(event: JobEvent) -> dict[str, Any]:
    """What an event of the stream says."""
    return _data(
        event.job_id, event.status.value, event.iteration, event.summary, error=event.error
    )


def _ended_data(record: JobRecord) -> dict[str, Any]:
    """The ``end`` event of a job whose stream holds none (it ended before streams)."""
    reason = (record.result or {}).get("reason")
    return _data(
        record.job_id,
        record.status.value,
        record.iteration,
        record.summary,
        reason=reason,
        error=record.error,
    )


def _frame(kind: str, data: dict[str, Any], event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


class Relay:
    """The events of one job, read in a thread of the streams' own pool."""

    def __init__(self, store: JobStore, limiter: CapacityLimiter, block_ms: int) -> None:
        self.store = store
        self.limiter = limiter
        self.block_ms = block_ms

    async def read(self, job_id: str, after: str) -> list[JobEvent]:
        def read() -> list[JobEvent]:
            return self.store.events(job_id, after, count=READ_COUNT, block_ms=self.block_ms)

        return await anyio.to_thread.run_sync(read, limiter=self.limiter)

    async def look(self, job_id: str, after: str) -> tuple[JobRecord | None, bool]:
        """The job, and whether it has ended with no event after ``after`` (it ended
        before it had a stream), read off the event loop."""

        def look() -> tuple[JobRecord | None, bool]:
            record = self.store.load(job_id)
            ended = record is not None and record.status in TERMINAL
            return record, ended and not self.store.events(job_id, after, count=1)

        return await anyio.to_thread.run_sync(look, limiter=self.limiter)

    async def frames(self, job_id: str, after: str, gone: Callable[[], Any]) -> AsyncIterator[str]:
        """The stream's frames from ``after`` until the job's ``end`` (or the client
        leaves, or the job disappears)."""
        while True:
            events = await self.read(job_id, after)
            for event in events:
                end = event.status in TERMINAL
                yield _frame("end" if end else "iteration", event_data(event), event.id)
                if end:
                    return
                after = event.id
            if events:
                continue
            record, ended = await self.look(job_id, after)
            if record is None:  # expired or deleted while followed
                yield _frame("gone", {"job_id": job_id})
                return
            if ended:
                yield _frame("end", _ended_data(record))
                return
            if await gone():
                return
            yield ": keep-alive\n\n"


def events_router(store: JobStore, *, max_streams: int, heartbeat_s: float) -> APIRouter:
    """The route, to include in the ``/v1`` router (which holds its auth)."""
    router = APIRouter(route_class=AuthFirstRoute)
    limiter = CapacityLimiter(max_streams)
    relay = Relay(store, limiter, round(heartbeat_s * 1000))
    streams = {"open": 0}

    @router.get(
        "/jobs/{job_id}/events",
        summary="Follow a job as Server-Sent Events",
        response_class=StreamingResponse,
        responses={
            200: {
                "content": {"text/event-stream": {}},
                "description": "`iteration` events, then one `end` event; resumable with "
                "`Last-Event-ID`.",
            },
            404: {"model": ErrorBody, "description": "No such job."},
            422: {"model": ValidationErrorBody},
            503: {
                "model": ErrorBody,
                "description": "Too many event streams open on this API process.",
            },
        },
    )
    async def job_events(
        job_id: JobId,
        request: Request,
        last_event_id: Annotated[
            str | None,
            Header(
                pattern=STREAM_ID_PATTERN,
                description="Go on after this event id (EventSource sends it on reconnect).",
            ),
        ] = None,
    ) -> StreamingResponse:
        """A job's progress as it happens: one `iteration` event per committed iteration
        (status, progress, decision, fallbacks, last warning), then one `end` event with
        the outcome, then the response ends. Resumes after `Last-Event-ID`."""
        after = last_event_id or "0-0"
        if store.load(job_id) is None:
            raise ApiError(404, f"no such job: {job_id}")
        if streams["open"] >= max_streams:
            limit = f"CONTINUUM_API_MAX_STREAMS={max_streams}"
            raise ApiError(503, f"too many event streams open ({limit}); try again later")

        async def body() -> AsyncIterator[str]:
            # Counted while it runs (a response never started counts nothing); the
            # limiter, not this count, bounds the threads the streams take.
            streams["open"] += 1
            try:
                async for frame in relay.frames(job_id, after, request.is_disconnected):
                    yield frame
            finally:
                streams["open"] -= 1

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(body(), media_type="text/event-stream", headers=headers)

    return router
