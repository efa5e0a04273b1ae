"""The ``/v1/jobs`` routes: submit a job, read its state, output and result, cancel it.

The work of the longer routes is in module functions below the router, one per route.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from api.errors import ApiError
from api.models import JOB_EXAMPLES, ErrorBody, JobResult, JobView, SubmittedJob
from api.output import (
    Shown,
    committed,
    encode,
    json_with_text,
    media_type,
    present,
    snapshot,
    stream,
)
from api.routing import LOCATION, error_responses, v1_router
from core import JobSpec, JobState
from core.ids import ID_PATTERN
from workers.errors import SpecRefused
from workers.store import JobRecord, JobStatus
from workers.submit import submit_job
from workers.views import job_view

if TYPE_CHECKING:
    from api.auth import BearerAuth
    from api.service import Service

JobId = Annotated[str, Path(pattern=ID_PATTERN, description="A job id.", examples=["report-7"])]
JobBody = Annotated[JobSpec, Body(openapi_examples=JOB_EXAMPLES)]
RawOutput = Annotated[bool, Query(description="The accumulated text exactly as committed.")]

_PROGRESS = {
    "X-Continuum-Status": {"description": "The job's status.", "schema": {"type": "string"}},
    "X-Continuum-Iteration": {
        "description": "Iterations committed in the output shown.",
        "schema": {"type": "string"},
    },
    "X-Continuum-Format": {
        "description": "json, csv, markdown, text, auto (not detected yet) or unknown.",
        "schema": {"type": "string"},
    },
}
_OUTPUT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The output so far, in the job's format.",
        "headers": _PROGRESS,
        "content": {
            "application/json": {"schema": {}},
            "text/csv": {"schema": {"type": "string"}},
            "text/markdown": {"schema": {"type": "string"}},
            "text/plain": {"schema": {"type": "string"}},
        },
    },
    204: {"description": "Nothing to show yet.", "headers": _PROGRESS},
    **error_responses(404, 422),
}
_RESULT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": JobResult, "description": "The job succeeded, or ended partial."},
    409: {
        "model": ErrorBody,
        "description": "No result: the job is queued or running (`not_ready`), "
        "failed (`failed`) or was cancelled (`cancelled`).",
    },
    **error_responses(404, 422),
}


def jobs_router(svc: Service, auth: BearerAuth | None) -> APIRouter:
    """The job routes, under ``/v1``, behind ``auth``."""
    router = v1_router(auth)

    @router.post(
        "/jobs",
        status_code=202,
        response_model=SubmittedJob,
        summary="Submit a job",
        responses={
            200: {"model": SubmittedJob, "description": "The job existed already (same spec)."},
            202: {"description": "Created; its first iteration is queued.", "headers": LOCATION},
            **error_responses(400, 409, 413, 415, 422),
        },
    )
    def create_job(spec: JobBody, response: Response) -> SubmittedJob:
        """Create a job from a JobSpec and queue its first iteration. With a `job_id`, the
        submit is idempotent: the same id and spec again answers 200 (`created: false`)
        and queues nothing; the same id with a different spec is refused (409)."""
        return _create_job(svc, spec, response)

    @router.get(
        "/jobs/{job_id}",
        response_model=None,
        summary="A job's state, progress and metadata",
        responses={200: {"model": JobView}, **error_responses(404, 422)},
    )
    def get_job(job_id: JobId) -> dict[str, Any]:
        """State, iteration, progress, fallbacks, errors, continuation metadata and
        timestamps (the shape `continuum status --json` prints)."""
        return job_view(svc.record(job_id), metadata=True)

    @router.get(
        "/jobs/{job_id}/output",
        response_class=Response,
        summary="The output so far",
        responses=_OUTPUT_RESPONSES,
    )
    def get_output(job_id: JobId, raw: RawOutput = False) -> Response:
        """The partial (or final) result so far. JSON is always valid JSON: the open
        strings, arrays and objects are closed; CSV stops at the last complete row;
        an open Markdown code fence is closed; text is as it is. With `raw=true`, the
        accumulated text exactly as committed (JSON may be cut mid-value). Streamed
        from the store a part at a time, whatever the output's size."""
        return _output(svc, job_id, raw=raw)

    @router.get(
        "/jobs/{job_id}/result",
        response_model=None,
        summary="The final result and metadata",
        responses=_RESULT_RESPONSES,
    )
    def get_result(job_id: JobId) -> StreamingResponse:
        """The result of a job that succeeded (or ended partial: its partial result, with
        the reason), and its continuation metadata. Streamed: its `output` is read from
        the store a part at a time, whatever its size."""
        return _result(svc, job_id)

    @router.delete(
        "/jobs/{job_id}",
        response_model=None,
        summary="Cancel a job",
        responses={
            200: {"model": JobView, "description": "Cancelled; nothing more is committed."},
            409: {"model": ErrorBody, "description": "The job has ended already."},
            **error_responses(404, 422),
        },
    )
    def cancel_job(job_id: JobId) -> dict[str, Any]:
        """Cancel a job: it is `cancelled` at once and commits nothing more (an iteration
        in flight is dropped); its output so far is kept."""
        done = svc.store.cancel(job_id)
        if done is None:
            raise ApiError(404, f"no such job: {job_id}")
        record = svc.record(job_id)
        if not done:
            raise ApiError(
                409,
                f"job {job_id} has ended already ({record.status.value})",
                code="ended",
                job_status=record.status.value,
            )
        return job_view(record, metadata=True)

    return router


def _create_job(svc: Service, spec: JobSpec, response: Response) -> SubmittedJob:
    try:
        done = submit_job(svc.rt, spec, svc.enqueue)
    except SpecRefused as exc:
        where: list[str | int] = ["body", *exc.field]
        entry = {"loc": where, "msg": str(exc), "type": exc.code}
        raise ApiError(422, str(exc), code=exc.code, errors=[entry]) from None
    response.headers["Location"] = f"/v1/jobs/{done.job_id}"
    if not done.created:
        record = svc.store.load(done.job_id)
        if record is not None and not _same_spec(record.spec, spec):
            raise ApiError(
                409,
                f"job {done.job_id} exists with a different spec",
                code="job_exists",
                job_status=record.status.value,
            )
        response.status_code = 200
    return SubmittedJob(job_id=done.job_id, created=done.created)


def _same_spec(stored: str, spec: JobSpec) -> bool:
    try:
        return JobSpec.model_validate_json(stored) == spec
    except ValidationError:  # kept as a failed job because its spec was invalid
        return False


def _output(svc: Service, job_id: str, *, raw: bool) -> Response:
    snap = snapshot(svc.store, job_id)
    if snap is None:
        raise ApiError(404, f"no such job: {job_id}")
    shown = committed(snap) if raw else present(snap)
    fmt = snap.format
    headers = {
        "X-Continuum-Status": snap.record.status.value,
        "X-Continuum-Iteration": str(snap.record.iteration),
        "X-Continuum-Format": fmt.value if fmt is not None else "unknown",
    }
    if shown is None:
        return Response(status_code=204, headers=headers)
    kind = media_type(fmt)
    if raw and kind == "application/json":
        kind = "text/plain; charset=utf-8"
    body = encode(stream(svc.store, shown))
    return StreamingResponse(body, media_type=kind, headers=headers)


def _refuse_without_result(job_id: str, record: JobRecord) -> None:
    """Raise the 409 of a job with no result to show (not ended, failed or cancelled)."""
    status = record.status
    if status in {JobStatus.QUEUED, JobStatus.RUNNING}:
        raise ApiError(
            409,
            f"job {job_id} is {status.value} (iteration {record.iteration}); "
            "its result is not ready",
            code="not_ready",
            job_status=status.value,
        )
    why = record.error or (record.result or {}).get("reason")
    if status is JobStatus.FAILED:
        raise ApiError(
            409,
            f"job {job_id} failed" + (f": {why}" if why else ""),
            code="failed",
            job_status=status.value,
        )
    if status is JobStatus.CANCELLED:
        raise ApiError(
            409,
            f"job {job_id} was cancelled; its output so far is at /v1/jobs/{job_id}/output",
            code="cancelled",
            job_status=status.value,
        )
    if record.result is None or "prefix" not in record.result:
        raise ApiError(409, f"job {job_id} has no result", code="failed", job_status=status.value)


def _result(svc: Service, job_id: str) -> StreamingResponse:
    record = svc.record(job_id)
    _refuse_without_result(job_id, record)
    result = record.result
    assert result is not None  # _refuse_without_result
    size, gen = svc.store.output_version(job_id)
    svc.record(job_id)  # 404 if it expired meanwhile (an ended job changes no more)
    shown = Shown(job_id, size, int(result["prefix"]), str(result["suffix"]), gen)
    view = job_view(record, metadata=True)
    body = {
        "job_id": job_id,
        "status": record.status.value,
        "format": _format_of(record.state),
        "output": "",
        "reason": view["reason"],
        "metadata": view["metadata"],
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "expires_at": record.expires_at,
    }
    parts = json_with_text(body, "output", stream(svc.store, shown))
    return StreamingResponse(parts, media_type="application/json")


def _format_of(state: str) -> str | None:
    try:
        return JobState.model_validate_json(state).format.value
    except ValidationError:  # kept as a failed job because its spec was invalid
        return None
