"""Creating jobs and batches: shared by the ``continuum.generate`` task, the command line
and the status API, so a job is created the same way whoever submits it.

Creation is idempotent on the job id (and the batch id): a producer that retries a submit
with the same id creates nothing twice and enqueues nothing twice. What a user sent is
never dropped: a spec that fails validation still becomes a job, failed, whose error
says what is wrong.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from core import JobSpec, start
from core.ids import is_id
from core.models import describe_errors
from workers.errors import OverLimit, SpecRefused, UnconfiguredProfile
from workers.runtime import Runtime
from workers.settings import Settings
from workers.store import NewJob

#: ``enqueue(job_id, iteration, countdown_s, queue)`` sends ``continuum.iterate``.
Enqueue = Callable[[str, int, float, str], None]


def iterate_options(job_id: str, iteration: int) -> dict[str, Any]:
    """``continuum.iterate``'s send options: its arguments, and how monitors show them
    (Flower, from the sender's task-sent event and the worker's task-received one; the
    workers' logs) in JSON, where Celery would show their Python repr."""
    kwargs = {"job_id": job_id, "iteration": iteration}
    return {"kwargs": kwargs, "argsrepr": "[]", "kwargsrepr": json.dumps(kwargs)}


@dataclass(frozen=True)
class Submitted:
    job_id: str
    created: bool
    error: str | None = None


def unknown_profiles(spec: JobSpec, known: Collection[str]) -> str | None:
    """Which of the spec's provider profiles are not configured, in words (None: all are)."""
    missing = [name for name in spec.providers if name not in known]
    if not missing:
        return None
    names = ", ".join(sorted(known)) or "none"
    return f"unknown provider profile(s) {', '.join(map(repr, missing))}; known: {names}"


def over_limits(spec: JobSpec, settings: Settings) -> str | None:
    """What in ``spec`` exceeds the operator's limits, in words (None: nothing)."""
    cfg = spec.continuation
    asked = {
        "max_output_tokens": spec.max_output_tokens,
        "continuation.max_attempts": cfg.max_attempts,
        "validation.max_repair_attempts": spec.validation.max_repair_attempts,
        "continuation.max_merge_failures": cfg.max_merge_failures,
        "continuation.stall_limit": cfg.stall_limit,
        "continuation.context_budget_chars": cfg.context_budget_chars,
        "continuation.overlap_chars": cfg.overlap_chars,
    }
    problems = []
    for field, value in asked.items():
        setting = "limit_" + field.rpartition(".")[2]
        most = getattr(settings, setting)
        if value > most:
            env = f"CONTINUUM_{setting.upper()}"
            problems.append(f"{field}: {value} is over this deployment's limit {most} ({env})")
    return "; ".join(problems) or None


def new_id() -> str:
    return uuid.uuid4().hex


def _checked(rt: Runtime, spec: JobSpec) -> None:
    """``SpecRefused`` when the spec asks for more than the operator allows or names a
    provider profile that is not configured."""
    problem = over_limits(spec, rt.settings)
    if problem is not None:
        raise OverLimit(problem)
    problem = unknown_profiles(spec, rt.pool.profiles)
    if problem is not None:
        raise UnconfiguredProfile(problem)


def _new_job(rt: Runtime, spec: JobSpec, job_id: str) -> tuple[NewJob, str]:
    """The job to create for a checked spec, and the queue of its iteration 0."""
    state = start(spec)
    deadline = time.time() + rt.settings.queue_grace_s
    job = NewJob(job_id, spec.model_dump_json(), state.model_dump_json(), deadline)
    return job, rt.queue_for(state)


def _invalid_job(job_id: str, raw: Any, problem: str) -> NewJob:
    return NewJob(job_id, json.dumps(raw, default=str), error=f"invalid job: {problem}")


def submit_job(
    rt: Runtime, spec: JobSpec, enqueue: Enqueue, *, batch: str | None = None
) -> Submitted:
    """Create the job (unless its id exists) and enqueue its iteration 0; ``SpecRefused``
    (nothing created) when the spec asks for more than the operator allows or names a
    provider profile that is not configured."""
    _checked(rt, spec)
    job, queue = _new_job(rt, spec, spec.job_id or new_id())
    (created,) = rt.store.create_jobs([job], batch=batch)
    if created:
        enqueue(job.job_id, 0, 0.0, queue)
    return Submitted(job.job_id, created)


def record_invalid(
    rt: Runtime, job_id: str, raw: Any, problem: str, *, batch: str | None = None
) -> Submitted:
    """Keep an invalid submission as a failed job that says what is wrong with it (a job
    that already holds this id, valid or not, is left as it is)."""
    job = _invalid_job(job_id, raw, problem)
    (created,) = rt.store.create_jobs([job], batch=batch)
    return Submitted(job_id, created, job.error)


#: Specs of a batch created per round of Redis writes (``JobStore.create_jobs``): the
#: round trips of a batch grow with its chunks, not its jobs.
BATCH_CHUNK = 500


def _batch_job(rt: Runtime, raw: Any, job_id: str) -> tuple[NewJob, str | None]:
    """The job to create for one spec of a batch (``job_id``: its id by position, unless
    it names its own), and its queue; None for a spec kept as a failed job."""
    try:
        spec = JobSpec.model_validate(raw)
    except ValidationError as exc:
        named = raw.get("job_id") if isinstance(raw, dict) else None
        return _invalid_job(named if is_id(named) else job_id, raw, describe_errors(exc)), None
    if spec.job_id is None:
        # A stable id per position: resubmitting the same batch creates nothing twice.
        spec = spec.model_copy(update={"job_id": job_id})
    job_id = spec.job_id or job_id
    try:
        _checked(rt, spec)
    except SpecRefused as exc:
        return _invalid_job(job_id, raw, str(exc)), None
    return _new_job(rt, spec, job_id)


def submit_batch(
    rt: Runtime,
    specs: Sequence[Any],
    enqueue: Enqueue,
    *,
    batch_id: str | None = None,
) -> tuple[str, list[Submitted]]:
    """Create a batch of jobs from raw specs (each validated on its own: a bad one becomes
    a failed job, the others run), ``BATCH_CHUNK`` at a time. Idempotent on ``batch_id``."""
    batch_id = batch_id or new_id()
    rt.store.create_batch(batch_id, len(specs))
    out = []
    for first in range(0, len(specs), BATCH_CHUNK):
        chunk = specs[first : first + BATCH_CHUNK]
        made = [_batch_job(rt, raw, f"{batch_id}.{first + n}") for n, raw in enumerate(chunk)]
        created = rt.store.create_jobs([job for job, _ in made], batch=batch_id)
        for (job, queue), new in zip(made, created, strict=True):
            if new and queue is not None:
                enqueue(job.job_id, 0, 0.0, queue)
            out.append(Submitted(job.job_id, new, job.error))
    return batch_id, out
