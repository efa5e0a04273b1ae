"""The public task contract (versioned): ``continuum.generate`` and ``continuum.iterate``.

A producer that imports nothing of Continuum's sends::

    Celery(broker=URL).send_task("continuum.generate", kwargs={"spec": {...}})

``continuum.iterate`` carries only ``{"job_id", "iteration"}``: the prompt, the state and
the output stay in Redis, so the message is small however long the output grows and the
task's visible arguments show no prompt and no key. A message that cannot be validated
(poison) fails its job with a clear error, or is logged and dropped when it names no job;
it is acknowledged either way, never redelivered forever.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core import JobSpec, start
from workers.app import app
from workers.iteration import run_iteration
from workers.runtime import runtime

log = logging.getLogger("continuum.tasks")


class GenerateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    spec: JobSpec
    batch: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class IterateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    job_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
    iteration: int = Field(ge=0)


M = TypeVar("M", bound=BaseModel)


def _parse(model: type[M], args: tuple[Any, ...], kwargs: dict[str, Any]) -> M | str:
    """The validated arguments, or what is wrong with them in words."""
    if args:
        return "the task takes keyword arguments only"
    try:
        return model.model_validate(kwargs)
    except ValidationError as exc:
        return "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )


def enqueue_iteration(job_id: str, iteration: int, countdown: float = 0.0) -> None:
    iterate.apply_async(
        kwargs={"job_id": job_id, "iteration": iteration},
        countdown=countdown or None,
    )


@app.task(name="continuum.generate", bind=True)
def generate(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Create a job (idempotent on ``spec.job_id``) and enqueue its iteration 0."""
    rt = runtime()
    parsed = _parse(GenerateArgs, args, kwargs)
    if isinstance(parsed, str):
        problem = parsed
        job_id = _named_job(kwargs)
        if job_id is not None:
            rt.store.create(job_id, "{}", "{}", deadline=time.time() + 3600)
            rt.store.fail(job_id, f"invalid job: {problem}")
        log.error("continuum.generate: invalid message dropped: %s", problem)
        return {"job_id": job_id, "error": f"invalid job: {problem}"}
    spec = parsed.spec
    job_id = spec.job_id or uuid.uuid4().hex
    state = start(spec)
    created = rt.store.create(
        job_id,
        spec.model_dump_json(),
        state.model_dump_json(),
        deadline=time.time() + rt.settings.queue_grace_s,
        batch=parsed.batch,
    )
    if created:
        enqueue_iteration(job_id, 0)
    return {"job_id": job_id, "created": created}


@app.task(name="continuum.iterate", bind=True)
def iterate(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Run one iteration of a job; its result (shown by Flower) carries the progress."""
    rt = runtime()
    parsed = _parse(IterateArgs, args, kwargs)
    if isinstance(parsed, str):
        problem = parsed
        job_id = _named_job(kwargs)
        if job_id is not None and rt.store.load(job_id) is not None:
            rt.store.fail(job_id, f"invalid iteration message: {problem}")
        log.error("continuum.iterate: invalid message dropped: %s", problem)
        return {"job_id": job_id, "error": f"invalid iteration message: {problem}"}
    return run_iteration(rt, parsed.job_id, parsed.iteration, enqueue_iteration)


def _named_job(kwargs: dict[str, Any]) -> str | None:
    """The job id a bad message names, when it names a plausible one."""
    candidate = kwargs.get("job_id")
    spec = kwargs.get("spec")
    if candidate is None and isinstance(spec, dict):
        candidate = spec.get("job_id")
    try:
        return (
            IterateArgs(job_id=candidate, iteration=0).job_id
            if isinstance(candidate, str)
            else None
        )
    except ValidationError:
        return None
