"""The public task contract (versioned): ``continuum.generate`` and ``continuum.iterate``.

A producer that imports nothing of Continuum's sends::

    Celery(broker=URL).send_task("continuum.generate", kwargs={"spec": {...}})

``continuum.iterate`` carries only ``{"job_id", "iteration"}``: the prompt, the state and
the output stay in Redis, so the message is small however long the output grows and the
task's visible arguments show no prompt and no key. ``continuum.submit_batch`` takes
``{"specs": [...], "batch_id"?}`` and creates a batch.

The tasks are shared (``celery.shared_task``): each app that ``workers.app.make_app``
builds has them, and runs them on its own settings and runtime (``self.app.runtime``),
sending the next messages on its own broker (``workers.producer``).

A message that cannot be validated (poison) fails the job it names with a clear error (a
new job id is kept as a failed job, never dropped); the task itself fails with that error,
so Flower and Sentry show it, and is acknowledged: never redelivered forever.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import UserDict
from typing import Any, TypeVar

from celery import shared_task
from celery.worker.request import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from redis.exceptions import RedisError

from core import JobSpec
from core.ids import BATCH_ID_PATTERN, ID_PATTERN, MAX_BATCH_JOBS, is_id
from core.models import describe_errors
from workers import callbacks
from workers.errors import InvalidMessage, NotReplicated, SpecRefused, refused_for_now
from workers.iteration import JobFailed, run_iteration
from workers.observability import QuietRequest
from workers.producer import ITERATE, Producer
from workers.runtime import Runtime
from workers.submit import (
    iterate_options,
    new_id,
    record_invalid,
    submit_batch,
    submit_job,
)

log = logging.getLogger("continuum.tasks")


class GenerateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    spec: JobSpec
    batch: str | None = Field(None, pattern=BATCH_ID_PATTERN)


class BatchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    specs: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_BATCH_JOBS)
    batch_id: str | None = Field(None, pattern=BATCH_ID_PATTERN)


class IterateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    job_id: str = Field(pattern=ID_PATTERN)
    iteration: int = Field(ge=0)


M = TypeVar("M", bound=BaseModel)


def _parse(model: type[M], args: tuple[Any, ...], kwargs: dict[str, Any]) -> M | str:
    """The validated arguments, or what is wrong with them in words."""
    if args:
        return "the task takes keyword arguments only"
    try:
        return model.model_validate(kwargs)
    except ValidationError as exc:
        return describe_errors(exc)


def _runtime(task: Any) -> Runtime:
    """The runtime of the app running ``task`` (``workers.app.ContinuumApp``)."""
    rt: Runtime = task.app.runtime
    return rt


#: A submission that Redis refused for now, or took but no replica confirmed
#: (``NotReplicated``), is sent again this many times, this long apart: it creates nothing
#: twice (``_message_id``).
SUBMIT_RETRIES = 5
SUBMIT_RETRY_S = 2.0
_BATCH_ID = re.compile(BATCH_ID_PATTERN)


def _message_id(task: Any, *, batch: bool = False) -> str:
    """The id of what a submission task creates when its message names none: its task id
    (Celery's are uuid4s), so the message delivered again (its worker killed before the
    ack, a retry) creates nothing twice. A task id that is no valid job (or batch) id, a
    producer's own, gives a digest of it: the same for every delivery, and unlike any
    valid task id (a letter and 32 hex digits)."""
    found = str(task.request.id or "")
    if not found:
        return new_id()  # run in-process, not from a message
    valid = _BATCH_ID.fullmatch(found) if batch else is_id(found)
    return found if valid else "t" + hashlib.sha256(found.encode()).hexdigest()[:32]


def _again_later(task: Any, exc: RedisError) -> Exception:
    """The retry of a submission task Redis refused for now (``refused_for_now``) or took
    without a replica's confirmation; ``exc`` itself otherwise (a bug: not retried)."""
    if isinstance(exc, NotReplicated) or refused_for_now(exc):
        retry: Exception = task.retry(exc=exc, countdown=SUBMIT_RETRY_S, max_retries=SUBMIT_RETRIES)
        return retry
    return exc


@shared_task(name="continuum.generate", bind=True, Request=QuietRequest)
def generate(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Create a job (idempotent on ``spec.job_id``, or on the task's id when the spec names
    none) and enqueue its iteration 0."""
    rt = _runtime(self)
    parsed = _parse(GenerateArgs, args, kwargs)
    if isinstance(parsed, str):
        job_id = _named_job(kwargs)
        if job_id is not None:
            record_invalid(rt, job_id, kwargs.get("spec"), parsed)
        raise InvalidMessage(f"invalid job{f' {job_id}' if job_id else ''}: {parsed}")
    spec = parsed.spec
    if spec.job_id is None:
        spec = spec.model_copy(update={"job_id": _message_id(self)})
    try:
        done = submit_job(rt, spec, Producer(self.app).iteration, batch=parsed.batch)
    except SpecRefused as exc:
        job_id = spec.job_id or new_id()
        record_invalid(rt, job_id, kwargs.get("spec"), str(exc), batch=parsed.batch)
        raise InvalidMessage(f"invalid job {job_id}: {exc}") from None
    except RedisError as exc:
        raise _again_later(self, exc) from exc
    return {"job_id": done.job_id, "created": done.created}


@shared_task(name="continuum.submit_batch", bind=True, Request=QuietRequest)
def submit_batch_task(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Create a batch of jobs (``{"specs": [...], "batch_id"?}``; idempotent on the batch
    id, or on the task's id when the message names none) and enqueue each one."""
    rt = _runtime(self)
    parsed = _parse(BatchArgs, args, kwargs)
    if isinstance(parsed, str):
        raise InvalidMessage(f"invalid batch: {parsed}")
    enqueue = Producer(self.app).iteration
    batch_id = parsed.batch_id or _message_id(self, batch=True)
    try:
        batch_id, jobs = submit_batch(rt, parsed.specs, enqueue, batch_id=batch_id)
    except RedisError as exc:
        raise _again_later(self, exc) from exc
    return {
        "batch_id": batch_id,
        "jobs": [j.job_id for j in jobs],
        "invalid": {j.job_id: j.error for j in jobs if j.error},
    }


class IterateRequest(Request):  # type: ignore[misc]  # celery has no type hints
    """An iteration's request: its arguments, as the worker's events carry them to Flower
    (and its log lines), in JSON, whoever sent the message. Arguments that are not the
    contract's (a poison message) keep Celery's repr."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self._args or not isinstance(self._kwargs, dict):
            return
        parsed = _parse(IterateArgs, (), self._kwargs)
        if isinstance(parsed, IterateArgs):
            shown = iterate_options(parsed.job_id, parsed.iteration)
            self._kwargsrepr = self._request_dict["kwargsrepr"] = shown["kwargsrepr"]
            self._argsrepr = self._request_dict["argsrepr"] = shown["argsrepr"]


class Progress(UserDict[str, Any]):
    """An iteration's result. Celery shows a result as its repr (Flower, the worker's log);
    this one's repr is its JSON, which a dict's cannot be: Celery renders dicts itself."""

    def __repr__(self) -> str:
        return json.dumps(self.data, default=str)


# Flower shows a task's result as its repr, cut at ``resultrepr_maxsize`` (1 KiB by
# default): long enough here for the fallbacks and reasons after the progress fields.
# Flower builds its task list from the workers' events, which carry the result's repr:
# the result backend is not needed for it, and skipping it saves six Redis commands per
# iteration (the STARTED and SUCCESS writes and their publishes).
@shared_task(
    name=ITERATE,
    bind=True,
    resultrepr_maxsize=8192,
    ignore_result=True,
    Request=IterateRequest,
)
def iterate(self: Any, *args: Any, **kwargs: Any) -> Progress:
    """Run one iteration of a job; its result (shown by Flower, in JSON) carries the
    progress.

    A job that ends failed makes this task fail too, with the job's reason, so Flower lists
    it among failed tasks (and Sentry receives it); the message is acked all the same.
    """
    rt = _runtime(self)
    parsed = _parse(IterateArgs, args, kwargs)
    if isinstance(parsed, str):
        job_id = _named_job(kwargs)
        if job_id is not None and rt.store.load(job_id) is not None:
            rt.store.fail(job_id, f"invalid iteration message: {parsed}")
        raise InvalidMessage(f"invalid iteration message: {parsed}")
    producer = Producer(self.app)
    done = run_iteration(rt, parsed.job_id, parsed.iteration, producer.iteration, producer.callback)
    return Progress(done)


def flower_view(task: Any) -> Any:
    """Flower's ``format_task`` (``continuum flower`` sets it): an iteration is listed, and
    titled on its page, as ``continuum.iterate[<job id>#<iteration>]``. Flower passes a
    copy made for display: its events state, its task types and its Prometheus labels keep
    the task's own name, so they do not grow with every iteration (a ``shadow`` name in
    the message would, and in every worker's counters too)."""
    if task.name != ITERATE or not task.kwargs:
        return task
    try:
        parsed = IterateArgs.model_validate_json(task.kwargs)
    except ValidationError:  # sent before its worker showed arguments in JSON
        return task
    task.name = f"{ITERATE}[{parsed.job_id}#{parsed.iteration}]"
    return task


class CallbackArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    job_id: str = Field(pattern=ID_PATTERN)


@shared_task(name="continuum.callback", bind=True, max_retries=callbacks.MAX_ATTEMPTS)
def callback(self: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """One attempt at an ended job's callback (``workers.callbacks.attempt``), retried with
    a countdown; the watchdog sends it again if it is lost. Any number of these may run for
    one job: only the one that claims the outbox entry, when it is due, posts."""
    rt = _runtime(self)
    parsed = _parse(CallbackArgs, args, kwargs)
    if isinstance(parsed, str):
        raise InvalidMessage(f"invalid callback message: {parsed}")
    # Nothing returned, raised or logged here names more of the URL than its origin:
    # Flower and the result backend show it, and the path or query may hold a token.
    done = callbacks.attempt(rt.store, parsed.job_id, rt.settings)
    if done.outcome is callbacks.Outcome.RETRY:
        exc = callbacks.CallbackError(done.detail)
        raise self.retry(exc=exc, countdown=done.wait) from exc
    if done.outcome is callbacks.Outcome.UNDELIVERABLE:
        raise callbacks.CallbackError(f"undeliverable after {done.number} attempts: {done.detail}")
    if done.outcome is callbacks.Outcome.REFUSED:
        log.warning("job %s: %s", parsed.job_id, done.detail)
    return {"job_id": parsed.job_id, done.outcome.value: done.detail}


def _named_job(kwargs: dict[str, Any]) -> str | None:
    """The job id a bad message names, when it names a plausible one."""
    candidate = kwargs.get("job_id")
    spec = kwargs.get("spec")
    if candidate is None and isinstance(spec, dict):
        candidate = spec.get("job_id")
    return candidate if is_id(candidate) else None


__all__ = [
    "InvalidMessage",
    "JobFailed",
    "callback",
    "flower_view",
    "generate",
    "iterate",
]
