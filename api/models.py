"""Request bodies, and the response shapes the OpenAPI document shows.

The responses are built by ``workers.views`` (the shape ``continuum status --json`` prints)
and returned as they are; these models document them (and the schema tests hold the API
to them) without re-validating every response at run time. Every field has a description
and the request bodies have examples: ``/docs`` is how most users first meet the API.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi.openapi.models import Example
from pydantic import BaseModel, ConfigDict, Field

from core.ids import BATCH_ID_PATTERN, MAX_BATCH_JOBS
from core.state import ContinuationMetadata
from workers.store import JobStatus

MAX_BATCH = MAX_BATCH_JOBS

_UNIX_TIME = "Unix time, seconds."

#: ``POST /v1/jobs`` examples, as the docs page offers them (each one is accepted as is).
JOB_EXAMPLES: Final[dict[str, Example]] = {
    "text": {
        "summary": "A long text",
        "value": {"prompt": "Write a 30-chapter guide to the museum's exhibits.", "format": "text"},
    },
    "json": {
        "summary": "A JSON array, each item checked against a schema",
        "value": {
            "job_id": "exhibits-2024",
            "prompt": "List every exhibit as a JSON array of objects with name and room.",
            "format": "json",
            "validation": {
                "item_schema": {
                    "type": "object",
                    "required": ["name", "room"],
                    "properties": {"name": {"type": "string"}, "room": {"type": "string"}},
                }
            },
        },
    },
    "conversation": {
        "summary": "A conversation, two providers in order, a callback",
        "value": {
            "messages": [
                {"role": "system", "content": "You answer in CSV only, with a header row."},
                {"role": "user", "content": "List the exhibits: name,room,year."},
            ],
            "format": "csv",
            "providers": ["openai", "anthropic"],
            "continuation": {"max_attempts": 30},
            "callback_url": "https://hooks.example.com/continuum",
            "metadata": {"team": "catalogue"},
        },
    },
}

#: ``POST /v1/batches`` examples.
BATCH_EXAMPLES: Final[dict[str, Example]] = {
    "batch": {
        "summary": "Two jobs in a batch with a chosen id",
        "value": {
            "batch_id": "catalogue-2024",
            "specs": [
                {"job_id": "rooms", "prompt": "Describe every room.", "format": "markdown"},
                {"job_id": "exhibits", "prompt": "List the exhibits.", "format": "csv"},
            ],
        },
    },
}


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
        examples=["catalogue-2024"],
    )


class SubmittedJob(BaseModel):
    """The job a submit created (or found)."""

    job_id: str = Field(
        description="The job's id: the one given, or a new one.", examples=["exhibits-2024"]
    )
    created: bool = Field(description="False when a job with this id existed already.")


class SubmittedBatch(BaseModel):
    """The batch a submit created (or found)."""

    batch_id: str = Field(
        description="The batch's id: the one given, or a new one.", examples=["catalogue-2024"]
    )
    jobs: list[str] = Field(description="The batch's job ids, in the order of the specs.")
    invalid: dict[str, str] = Field(
        description="Jobs whose spec is invalid (kept as failed jobs), with what is wrong."
    )
    created: int = Field(description="How many jobs this request created.")


class Progress(BaseModel):
    """How far a job has got."""

    percent: int | None = Field(description="The progress the model reports, if any.")
    chars: int = Field(description="Characters of output committed so far.")
    records: int = Field(
        description="Complete records so far: items of the JSON document's main array, CSV rows."
    )


class JobView(BaseModel):
    """A job's state, as `continuum status --json` prints it."""

    job_id: str = Field(description="The job's id.")
    status: JobStatus = Field(
        description="queued, running, or how it ended: succeeded, partial, failed, cancelled."
    )
    iteration: int = Field(description="Iterations committed (model calls taken in).")
    batch: str | None = Field(description="The batch the job belongs to, if any.")
    progress: Progress = Field(description="How far the job has got.")
    fallbacks: list[dict[str, Any]] = Field(description="Provider fallbacks, in order.")
    last_warning: str | None = Field(description="The latest warning of the job, if any.")
    reason: str | None = Field(description="Why the job ended as it did, or is retrying.")
    error: str | None = Field(description="Why the job failed, if it did.")
    created_at: float = Field(description=_UNIX_TIME)
    updated_at: float = Field(description=f"When the job last changed. {_UNIX_TIME}")
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


class JobList(BaseModel):
    """A page of jobs, newest first (``GET /v1/jobs``)."""

    jobs: list[JobView] = Field(description="The jobs of this page (without metadata).")
    next_cursor: str | None = Field(
        description="Pass it as `cursor` for the next page; null when there is no more."
    )


class JobResult(BaseModel):
    """The result of a job that succeeded or ended partial."""

    job_id: str = Field(description="The job's id.")
    status: JobStatus = Field(description="succeeded, or partial.")
    format: str | None = Field(description="The output's format: json, csv, markdown or text.")
    output: str = Field(description="The result (for JSON: the document's text).")
    reason: str | None = Field(description="Why the job ended partial (null when it succeeded).")
    metadata: ContinuationMetadata | None = Field(description="Continuation metadata.")
    created_at: float = Field(description=_UNIX_TIME)
    updated_at: float = Field(description=f"When the job last changed. {_UNIX_TIME}")
    expires_at: float | None = Field(description="When the job is deleted, Unix time (null: kept).")


class BatchView(BaseModel):
    """A batch's progress, summed over its jobs."""

    batch_id: str = Field(description="The batch's id.")
    size: int = Field(description="Jobs in the batch.")
    counts: dict[str, int] = Field(description="Jobs by status.")
    ended: int = Field(description="Jobs that have ended, whatever their outcome.")
    done: bool = Field(description="True when every job of the batch has ended.")
    iterations: int = Field(description="Iterations committed, over all its jobs.")
    chars: int = Field(description="Characters of output committed, over all its jobs.")
    created_at: float | None = Field(description=_UNIX_TIME)
    expires_at: float | None = Field(
        description="When the batch's record is deleted, Unix time: null until every job "
        "has ended, or when kept forever. It goes with the last of its jobs."
    )
    expired: int = Field(description="Jobs of the batch already deleted (counted as ended).")
    jobs: list[str] = Field(description="The batch's job ids.")


class CancelledBatch(BaseModel):
    """What cancelling a batch did."""

    batch_id: str = Field(description="The batch's id.")
    cancelled: int = Field(description="Jobs cancelled by this request.")
    size: int = Field(description="Jobs in the batch.")
    batch: BatchView = Field(description="The batch after the cancel.")


class ErrorBody(BaseModel):
    """Every error but a validation error."""

    error: str = Field(description="A stable code: not_found, conflict, not_ready, ...")
    detail: str = Field(description="What is wrong, in one line.")
    status: JobStatus | None = Field(
        default=None, description="The job's status, when the request conflicts with it."
    )


class ValidationEntry(BaseModel):
    """One problem of a request that failed validation."""

    loc: list[str | int] = Field(
        description="Where: `body`, `path` or `query`, then the field's path."
    )
    msg: str = Field(description="What is wrong.")
    type: str = Field(description="A stable code for the kind of problem (pydantic's).")


class ValidationErrorBody(BaseModel):
    """A request that failed validation (422)."""

    error: str = Field(description="`invalid_request`.")
    detail: str = Field(description="One line per problem, each naming its field.")
    errors: list[ValidationEntry] = Field(description="The problems, one entry each.")


class RedisHealth(BaseModel):
    """Whether Redis answers."""

    ok: bool = Field(description="Redis answered a PING.")
    latency_ms: float | None = Field(default=None, description="How long the PING took.")
    error: str | None = Field(default=None, description="Why Redis did not answer.")


class WorkersHealth(BaseModel):
    """Which workers answered a ping."""

    count: int | None = Field(description="Workers that answered a ping (None: not asked).")
    names: list[str] = Field(description="Their names.")
    checked_at: float | None = Field(description=f"When they were asked. {_UNIX_TIME}")
    error: str | None = Field(default=None, description="Why the workers could not be asked.")


class Health(BaseModel):
    """The API's health: Redis reachable, workers seen."""

    status: str = Field(description="ok, degraded (Redis up, no worker answered) or down.")
    redis: RedisHealth = Field(description="Whether Redis answers.")
    workers: WorkersHealth = Field(description="Which workers answered a ping.")
