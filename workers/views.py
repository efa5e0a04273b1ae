"""What a job and a batch look like from outside: the one dict shape ``continuum status
--json`` prints and the status API returns."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from core import JobState
from workers.store import BatchStatus, JobRecord


def job_view(record: JobRecord, *, metadata: bool = False) -> dict[str, Any]:
    """The job's state, progress, fallbacks and errors; ``metadata`` adds the continuation
    metadata (token counts, cost, finish reasons, ...)."""
    summary = record.summary
    result = record.result or {}
    view: dict[str, Any] = {
        "job_id": record.job_id,
        "status": record.status.value,
        "iteration": record.iteration,
        "batch": record.batch,
        "progress": {
            "percent": summary.get("percent"),
            "chars": summary.get("chars", 0),
            "records": summary.get("records", 0),
        },
        "fallbacks": summary.get("fallbacks", []),
        "last_warning": summary.get("last_warning"),
        "reason": result.get("reason") or summary.get("reason"),
        "error": record.error,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "expires_at": record.expires_at,
        "callback": record.callback,
    }
    if metadata:
        try:
            state = JobState.model_validate_json(record.state)
        except ValidationError:  # a job kept only to say its spec was invalid
            view["metadata"] = None
        else:
            view["metadata"] = state.metadata.model_dump(mode="json")
    return view


def batch_view(status: BatchStatus) -> dict[str, Any]:
    return {
        "batch_id": status.batch_id,
        "size": status.size,
        "counts": status.counts,
        "ended": status.ended,
        "done": status.done,
        "iterations": status.iterations,
        "chars": status.chars,
        "created_at": status.created_at,
        "expires_at": status.expires_at,
        "expired": status.expired,
        "jobs": status.jobs,
    }
