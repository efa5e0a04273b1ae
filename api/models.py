"""Request bodies, and the response shapes the OpenAPI document shows.

The responses are built by ``workers.views`` (the shape ``continuum status --json`` prints)
and returned as they are; these models document them (and the schema tests hold the API
to them) without re-validating every response at run time.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.ids import BATCH_ID_PATTERN, MAX_BATCH_JOBS
from core.state import ContinuationMetadata
from workers.store import JobStatus

MAX_BATCH = MAX_BATCH_JOBS


class BatchRequest(BaseModel):
    """A batch of job specs: each is validated on its own (an invalid one becomes a failed
    job that says why; the others run)."""

    model_config = ConfigDict(extra="forbid")

    specs: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description="Job specs (each a JobSpec, see POST /v1/jobs).",
    )
    batch_id: str | None = Field(
        default=None,
        pattern=BATCH_ID_PATTERN,
        description="Client-chosen batch id; submitting the same batch twice creates it once.",
    )


class SubmittedJob(BaseModel):
    job_id: str
    created: bool = Field(description="False when a job with this id existed already.")


class SubmittedBatch(BaseModel):
    batch_id: str
    jobs: list[str] = Field(description="The batch's job ids, in the order of the specs.")
    invalid: dict[str, str] = Field(
        description="Jobs whose spec is invalid (kept as failed jobs), with what is wrong."
    )
    created: int = Field(description="How many jobs this request created.")


class Progress(BaseModel):
    percent: int | None = Field(description="The progress the model reports, if any.")
    chars: int
    records: int


class JobView(BaseModel):
    job_id: str
    status: JobStatus
    iteration: int = Field(description="Iterations committed (model calls taken in).")
    batch: str | None
    progress: Progress
    fallbacks: list[dict[str, Any]] = Field(description="Provider fallbacks, in order.")
    last_warning: str | None
    reason: str | None = Field(description="Why the job ended as it did, or is retrying.")
    error: str | None
    created_at: float = Field(description="Unix time.")
    updated_at: float = Field(description="Unix time.")
    expires_at: float | None = Field(
        description="When the job (status, output) is deleted from Redis, Unix time: "
        "null until it ends, or when ended jobs are kept forever (CONTINUUM_RETENTION_S)."
    )
    callback: str | None = Field(
        default=None,
        description="Where the job's callback stands once it has ended: `pending`, "
        "`delivered`, `retrying: <last error>`, `refused: <why>` (never sent: a forbidden "
        "address, a redirect) or `undeliverable: <last error> (<n> attempts)`. Null when "
        "the job asked for no callback or has not ended.",
    )
    metadata: ContinuationMetadata | None = Field(
        default=None, description="Continuation metadata (None for an invalid spec)."
    )


class JobResult(BaseModel):
    job_id: str
    status: JobStatus = Field(description="succeeded, or partial.")
    format: str | None
    output: str = Field(description="The result (for JSON: the document's text).")
    reason: str | None
    metadata: ContinuationMetadata | None
    created_at: float
    updated_at: float
    expires_at: float | None = Field(description="When the job is deleted, Unix time (null: kept).")


class BatchView(BaseModel):
    batch_id: str
    size: int
    counts: dict[str, int] = Field(description="Jobs by status.")
    ended: int
    done: bool
    iterations: int
    chars: int
    created_at: float | None
    expires_at: float | None = Field(
        description="When the batch's record is deleted, Unix time: null until every job "
        "has ended, or when kept forever. It goes with the last of its jobs."
    )
    expired: int = Field(description="Jobs of the batch already deleted (counted as ended).")
    jobs: list[str]


class CancelledBatch(BaseModel):
    batch_id: str
    cancelled: int = Field(description="Jobs cancelled by this request.")
    size: int
    batch: BatchView


class ErrorBody(BaseModel):
    error: str = Field(description="A stable code: not_found, conflict, not_ready, ...")
    detail: str = Field(description="What is wrong, in one line.")
    status: JobStatus | None = Field(
        default=None, description="The job's status, when the request conflicts with it."
    )


class ValidationEntry(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorBody(BaseModel):
    error: str
    detail: str = Field(description="One line per problem, each naming its field.")
    errors: list[ValidationEntry]


class RedisHealth(BaseModel):
    ok: bool
    latency_ms: float | None = None
    error: str | None = None


class WorkersHealth(BaseModel):
    count: int | None = Field(description="Workers that answered a ping (None: not asked).")
    names: list[str]
    checked_at: float | None
    error: str | None = None


class Health(BaseModel):
    status: str = Field(description="ok, degraded (Redis up, no worker answered) or down.")
    redis: RedisHealth
    workers: WorkersHealth
