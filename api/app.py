"""The status API: submit jobs and batches, follow them, read their output, cancel them.

``create_app(settings, redis=...)`` builds the app; nothing is read or connected at import.
Jobs are created exactly as the ``continuum.generate`` task creates them
(``workers.submit``), and their iteration 0 is sent as the same ``continuum.iterate``
message a worker sends, to the queue of the job's provider profile. See ``docs/api.md``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Body, FastAPI, Path, Query, Response, Security
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from api.auth import AuthFirstRoute, BearerAuth, NoToken
from api.docs_assets import DESCRIPTION, install_docs
from api.errors import ApiError, install
from api.events import events_router
from api.health import Health
from api.listing import listing_router
from api.metrics import metrics_router
from api.middleware import BodyLimit
from api.models import (
    BATCH_EXAMPLES,
    JOB_EXAMPLES,
    BatchRequest,
    BatchView,
    CancelledBatch,
    ErrorBody,
    JobResult,
    JobView,
    SubmittedBatch,
    SubmittedJob,
    ValidationErrorBody,
)
from api.models import Health as HealthReport
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
from api.settings import ApiSettings, api_settings
from core import JobSpec, JobState
from core.ids import BATCH_ID_PATTERN, ID_PATTERN
from workers.app import make_app
from workers.broker import BrokerInspector
from workers.calls import ProviderPool
from workers.errors import SpecRefused
from workers.producer import Producer
from workers.providers.registry import load_profiles
from workers.ratelimit import TokenBucket
from workers.runtime import Runtime
from workers.settings import Settings, url_problems
from workers.store import JobRecord, JobStatus, JobStore
from workers.submit import submit_batch, submit_job
from workers.tracing import init_tracing, trace_app
from workers.views import batch_view, job_view

if TYPE_CHECKING:
    from redis import Redis

VERSION = "1"

JobId = Annotated[str, Path(pattern=ID_PATTERN, description="A job id.", examples=["report-7"])]
BatchId = Annotated[str, Path(pattern=BATCH_ID_PATTERN, description="A batch id.")]


_LOCATION = {"Location": {"description": "The new resource.", "schema": {"type": "string"}}}
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


def _responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        model = ValidationErrorBody if code == 422 else ErrorBody
        out[code] = {"model": model}
    return out


class Service:
    """What the routes use: the job store, the runtime that creates jobs, the producer
    and the broker's inspector (``/metrics``)."""

    def __init__(
        self, settings: ApiSettings, store: JobStore, celery: Any, *, owns_store: bool
    ) -> None:
        self.settings = settings
        self.owns_store = owns_store
        self.celery = celery
        self.store = store
        self.broker = BrokerInspector(celery, settings.broker_prefix)
        self.rt = Runtime(
            settings, self.store, ProviderPool(load_profiles(os.environ)), TokenBucket(store)
        )
        self.health = Health(
            store,
            celery,
            cache_s=settings.api_health_cache_s,
            ping_timeout_s=settings.api_ping_timeout_s,
        )

    def close(self) -> None:
        """Release the producer's broker connections (and Redis, when the app owns it)."""
        self.celery.close()
        self.broker.close()
        if self.owns_store:
            self.store.close()

    def enqueue(self, job_id: str, iteration: int, countdown: float, queue: str) -> None:
        """Send ``continuum.iterate`` on the broker as a worker does (with the request's
        trace, when tracing is on: ``workers.tracing``)."""
        Producer(self.celery, trace=True).iteration(job_id, iteration, countdown, queue)

    def record(self, job_id: str) -> JobRecord:
        record = self.store.load(job_id)
        if record is None:
            raise ApiError(404, f"no such job: {job_id}")
        return record


def _same_spec(stored: str, spec: JobSpec) -> bool:
    try:
        return JobSpec.model_validate_json(stored) == spec
    except ValidationError:  # kept as a failed job because its spec was invalid
        return False


def _routes(svc: Service, auth: BearerAuth | None) -> APIRouter:
    """The ``/v1`` routes; each one depends on ``auth`` (none: local-only, no token)."""
    router = APIRouter(
        prefix="/v1",
        dependencies=[Security(auth)] if auth is not None else [],
        responses=_responses(401) if auth is not None else {},
        route_class=AuthFirstRoute,
    )

    @router.post(
        "/jobs",
        status_code=202,
        response_model=SubmittedJob,
        summary="Submit a job",
        responses={
            200: {"model": SubmittedJob, "description": "The job existed already (same spec)."},
            202: {"description": "Created; its first iteration is queued.", "headers": _LOCATION},
            **_responses(400, 409, 413, 415, 422),
        },
    )
    def create_job(
        spec: Annotated[JobSpec, Body(openapi_examples=JOB_EXAMPLES)], response: Response
    ) -> SubmittedJob:
        """Create a job from a JobSpec and queue its first iteration. With a `job_id`, the
        submit is idempotent: the same id and spec again answers 200 (`created: false`)
        and queues nothing; the same id with a different spec is refused (409)."""
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

    @router.post(
        "/batches",
        status_code=202,
        response_model=SubmittedBatch,
        summary="Submit a batch of jobs",
        responses={
            200: {"model": SubmittedBatch, "description": "The batch existed already."},
            202: {
                "description": "Created; its jobs' first iterations are queued.",
                "headers": _LOCATION,
            },
            **_responses(400, 413, 415, 422),
        },
    )
    def create_batch(
        body: Annotated[BatchRequest, Body(openapi_examples=BATCH_EXAMPLES)], response: Response
    ) -> SubmittedBatch:
        """Create a batch. Each spec is validated on its own: an invalid one becomes a
        failed job whose error says why (listed under `invalid`), the others run."""
        batch_id, jobs = submit_batch(svc.rt, body.specs, svc.enqueue, batch_id=body.batch_id)
        created = sum(j.created for j in jobs)
        response.headers["Location"] = f"/v1/batches/{batch_id}"
        response.status_code = 202 if created else 200
        return SubmittedBatch(
            batch_id=batch_id,
            jobs=[j.job_id for j in jobs],
            invalid={j.job_id: j.error for j in jobs if j.error},
            created=created,
        )

    @router.get(
        "/jobs/{job_id}",
        response_model=None,
        summary="A job's state, progress and metadata",
        responses={200: {"model": JobView}, **_responses(404, 422)},
    )
    def get_job(job_id: JobId) -> dict[str, Any]:
        """State, iteration, progress, fallbacks, errors, continuation metadata and
        timestamps (the shape `continuum status --json` prints)."""
        return job_view(svc.record(job_id), metadata=True)

    @router.get(
        "/jobs/{job_id}/output",
        response_class=Response,
        summary="The output so far",
        responses={
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
            **_responses(404, 422),
        },
    )
    def get_output(
        job_id: JobId,
        raw: Annotated[
            bool, Query(description="The accumulated text exactly as committed.")
        ] = False,
    ) -> Response:
        """The partial (or final) result so far. JSON is always valid JSON: the open
        strings, arrays and objects are closed; CSV stops at the last complete row;
        an open Markdown code fence is closed; text is as it is. With `raw=true`, the
        accumulated text exactly as committed (JSON may be cut mid-value). Streamed
        from the store a part at a time, whatever the output's size."""
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

    @router.get(
        "/jobs/{job_id}/result",
        response_model=None,
        summary="The final result and metadata",
        responses={
            200: {"model": JobResult, "description": "The job succeeded, or ended partial."},
            409: {
                "model": ErrorBody,
                "description": "No result: the job is queued or running (`not_ready`), "
                "failed (`failed`) or was cancelled (`cancelled`).",
            },
            **_responses(404, 422),
        },
    )
    def get_result(job_id: JobId) -> StreamingResponse:
        """The result of a job that succeeded (or ended partial: its partial result, with
        the reason), and its continuation metadata. Streamed: its `output` is read from
        the store a part at a time, whatever its size."""
        record = svc.record(job_id)
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
        result = record.result
        if result is None or "prefix" not in result:
            raise ApiError(
                409, f"job {job_id} has no result", code="failed", job_status=status.value
            )
        size, gen = svc.store.output_version(job_id)
        svc.record(job_id)  # 404 if it expired meanwhile (an ended job changes no more)
        shown = Shown(job_id, size, int(result["prefix"]), str(result["suffix"]), gen)
        view = job_view(record, metadata=True)
        body = {
            "job_id": job_id,
            "status": status.value,
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

    @router.delete(
        "/jobs/{job_id}",
        response_model=None,
        summary="Cancel a job",
        responses={
            200: {"model": JobView, "description": "Cancelled; nothing more is committed."},
            409: {"model": ErrorBody, "description": "The job has ended already."},
            **_responses(404, 422),
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

    @router.get(
        "/batches/{batch_id}",
        response_model=None,
        summary="A batch's progress",
        responses={200: {"model": BatchView}, **_responses(404, 422)},
    )
    def get_batch(batch_id: BatchId) -> dict[str, Any]:
        """Jobs by status, iterations and characters so far, and the batch's job ids."""
        status = svc.store.batch_status(batch_id)
        if status is None:
            raise ApiError(404, f"no such batch: {batch_id}")
        return batch_view(status)

    @router.delete(
        "/batches/{batch_id}",
        response_model=None,
        summary="Cancel a batch",
        responses={200: {"model": CancelledBatch}, **_responses(404, 422)},
    )
    def cancel_batch(batch_id: BatchId) -> dict[str, Any]:
        """Cancel every job of the batch that has not ended."""
        if svc.store.batch_status(batch_id) is None:
            raise ApiError(404, f"no such batch: {batch_id}")
        cancelled, size = svc.store.cancel_batch(batch_id)
        status = svc.store.batch_status(batch_id)
        assert status is not None
        return {
            "batch_id": batch_id,
            "cancelled": cancelled,
            "size": size,
            "batch": batch_view(status),
        }

    s = svc.settings
    router.include_router(listing_router(svc.store))
    router.include_router(
        events_router(
            svc.store, max_streams=s.api_max_streams, heartbeat_s=s.api_stream_heartbeat_s
        )
    )
    return router


def _format_of(state: str) -> str | None:
    try:
        return JobState.model_validate_json(state).format.value
    except ValidationError:  # kept as a failed job because its spec was invalid
        return None


def create_app(settings: Settings | None = None, *, redis: Redis | None = None) -> FastAPI:
    """The status API on ``settings`` (default: read from the environment now) and
    ``redis`` (default: a client on ``settings.redis_url``, closed at shutdown).

    Raises :class:`api.auth.NoToken` without ``api_token`` unless ``api_insecure_local``,
    and ``ValueError`` (naming the setting, not the URL) when ``REDIS_URL`` or
    ``CONTINUUM_BROKER_URL`` is no URL it can use. Messages go to the broker
    (``CONTINUUM_BROKER_URL``, default ``REDIS_URL``).
    """
    s = api_settings(settings)
    problems = url_problems(s)
    if problems:
        raise ValueError("; ".join(problems))
    token = s.api_token.get_secret_value() if s.api_token is not None else None
    if not token and not s.api_insecure_local:
        raise NoToken
    if redis is not None:
        store = JobStore(redis, prefix=s.key_prefix, retention_s=s.retention_s)
    elif s.redis_url:
        store = JobStore.from_url(
            s.redis_url,
            s.key_prefix,
            retention_s=s.retention_s,
            socket_connect_timeout=2.0,
            socket_timeout=10.0,
            health_check_interval=30,
        )
    else:
        raise RuntimeError("REDIS_URL is not set: the status API needs Redis")
    celery = make_app(s, broker_url=s.broker or store.server_url())
    # A producer only: no result backend, so sending a task subscribes to nothing.
    celery.conf.result_backend = "disabled"
    svc = Service(s, store, celery, owns_store=redis is None)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        svc.close()

    app = FastAPI(
        title="Continuum status API",
        version=VERSION,
        summary="Submit long LLM generations, follow them, read their output.",
        description=DESCRIPTION,
        docs_url=None,  # served from this machine: install_docs
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.service = svc
    install(app)
    install_docs(app)
    auth = BearerAuth(token) if token else None
    app.include_router(_routes(svc, auth))
    app.include_router(
        metrics_router(svc.store, svc.broker, s, svc.rt.pool.profiles.values(), auth)
    )

    @app.get(
        "/healthz",
        response_model=None,
        summary="Health: Redis reachable, workers seen",
        responses={
            200: {"model": HealthReport, "description": "Redis is up (workers: see the body)."},
            503: {"model": HealthReport, "description": "Redis is unreachable."},
        },
    )
    def healthz() -> JSONResponse:
        """Whether Redis answers (503 when it does not) and which workers answered a ping
        (reused for `CONTINUUM_API_HEALTH_CACHE_S`). Needs no token."""
        ok, report = svc.health.check()
        return JSONResponse(report, status_code=200 if ok else 503)

    app.add_middleware(BodyLimit, max_bytes=s.api_max_body_bytes)
    init_tracing("continuum-api", celery=False)  # its sends carry trace_headers()
    trace_app(app)
    return app
