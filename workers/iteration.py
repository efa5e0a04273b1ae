"""One iteration of a job, as a Celery task runs it: load, lease, call, advance, commit.

The commit is a compare-and-set on the iteration number (``JobStore.commit``), so every
(job, iteration) is committed once however often its message is delivered. The next
iteration is enqueued only after the commit; if the process dies in between, the
watchdog finds the job overdue and enqueues it again.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from core import Continue, Decision, Fallback, Finish, JobState, Retry, advance, review
from core.state import OutputRef
from workers.callbacks import callback_url, claim
from workers.calls import UnknownProfile, call_model
from workers.observability import tag_iteration
from workers.providers.base import TransientError
from workers.providers.retry import backoff_delay
from workers.runtime import Runtime
from workers.store import TERMINAL, CommitResult, JobStatus

#: ``enqueue(job_id, iteration, countdown_s, queue)`` sends ``continuum.iterate``.
Enqueue = Callable[[str, int, float, str], None]
#: ``notify(job_id)`` sends ``continuum.callback`` for a job that has ended.
Notify = Callable[[str], None]


#: Times an iteration may raise (a bug, Redis down mid-iteration) before its job fails.
MAX_CRASHES = 5


#: A provider retry waiting longer than this does not sleep in the worker: the iteration
#: is sent again with that countdown, freeing the slot.
INLINE_RETRY_S = 2.0
#: Deferred retries per iteration; then the provider counts as failed for this call
#: (fallback to the next profile, or the engine's own retry policy).
MAX_DEFERRALS = 4


class Deferred(Exception):
    """A provider asked for a wait too long to spend holding a worker slot."""

    def __init__(self, delay: float) -> None:
        super().__init__(f"provider retry deferred by {delay:.1f} s")
        self.delay = delay


def _sleeper(used: int) -> Callable[[float], None]:
    """The provider retry's sleep in a worker: short waits inline, long ones deferred."""

    def sleep(delay: float) -> None:
        if delay <= INLINE_RETRY_S:
            time.sleep(delay)
        elif used >= MAX_DEFERRALS:
            raise TransientError(f"still failing after {used} deferred retries")
        else:
            raise Deferred(delay)

    return sleep


class JobFailed(RuntimeError):
    """Raised by the task after a job ended failed (and was committed so), so the task
    shows as failed in Flower and Sentry, with the job's reason."""


@dataclass(frozen=True)
class Step:
    """What one iteration decided, ready to commit."""

    state: JobState
    decision: Decision
    append: str
    replace: bool


def decide(
    rt: Runtime, job_id: str, state: JobState, sleep: Callable[[float], None] = time.sleep
) -> Step:
    """Call the model once and take the reply into the job (reviewing a finished JSON)."""
    state, response = call_model(state, rt.pool, sleep=sleep)
    state, decision = advance(state, response)
    append, replace = decision.append, isinstance(decision, Finish) and decision.replace
    if isinstance(decision, Finish) and decision.review:
        text = append if replace else rt.store.output(job_id) + append
        ref = decision.output
        state, reviewed = review(state, text[: ref.prefix] + ref.suffix)
        if isinstance(reviewed, Finish) and reviewed.replace:
            append, replace = reviewed.append, True
        decision = reviewed
    return Step(state, decision, append, replace)


def _summary(step: Step) -> dict[str, Any]:
    s, d = step.state, step.decision
    meta = s.metadata
    return {
        "iterations_done": s.iteration,
        "decision": type(d).__name__.lower(),
        "chars": s.length,
        "records": meta.final_record_count,
        "percent": s.stall_percent,
        "fallbacks": [f.model_dump() for f in meta.provider_fallbacks],
        "last_warning": meta.warnings[-1] if meta.warnings else None,
        "reason": getattr(d, "reason", None),
    }


def _result(ref: OutputRef | None, outcome: str, reason: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"outcome": outcome, "reason": reason}
    if ref is not None:
        out.update(prefix=ref.prefix, suffix=ref.suffix)
    return out


def _count_crash(rt: Runtime, job_id: str, iteration: int, exc: Exception) -> None:
    """An iteration raised: the task fails (Flower, Sentry) and the watchdog sends the
    iteration again when the lease expires; after ``MAX_CRASHES`` the job fails, so a
    bug or a poisoned state does not loop forever."""
    field = f"crashes:{iteration}"
    crashes = int(rt.store.redis.hincrby(rt.store.keys.job(job_id), field, 1))
    if crashes >= MAX_CRASHES:
        rt.store.fail(job_id, f"iteration {iteration} raised {crashes} times; last: {exc!r}"[:2000])


def _defer(
    rt: Runtime,
    state: JobState,
    base: dict[str, Any],
    token: str,
    *,
    wait: float,
    reason: str,
    enqueue: Enqueue,
) -> dict[str, Any]:
    """Send the same iteration again in ``wait`` seconds, holding no worker slot meanwhile
    (the watchdog's deadline moves past the wait); nothing is committed."""
    job_id, iteration = base["job_id"], base["iteration"]
    wait = min(wait, rt.settings.max_countdown_s)
    rt.store.postpone(job_id, time.time() + wait + rt.settings.queue_grace_s)
    rt.store.release_lease(job_id, token)
    enqueue(job_id, iteration, wait, rt.queue_for(state))
    return {**base, "deferred_s": round(wait, 3), "reason": reason}


def _ended(rt: Runtime, job_id: str, notify: Notify | None) -> None:
    """The job has ended: have its callback sent, once, if it asked for one."""
    record = rt.store.load(job_id)
    if notify is None or record is None or callback_url(record) is None:
        return
    if claim(rt.store, job_id):
        notify(job_id)


def run_iteration(
    rt: Runtime,
    job_id: str,
    iteration: int,
    enqueue: Enqueue,
    notify: Notify | None = None,
) -> dict[str, Any]:
    """Run iteration ``iteration`` of the job, unless it is stale, finished or in flight.
    ``notify(job_id)`` sends the job's callback when the job ends."""
    store, settings = rt.store, rt.settings
    record = store.load(job_id)
    base = {"job_id": job_id, "iteration": iteration}
    if record is None:
        return {**base, "skipped": "no such job"}
    if record.status in TERMINAL:
        if record.status is JobStatus.CANCELLED:  # cancelled while this message waited
            _ended(rt, job_id, notify)
        return {**base, "skipped": f"the job is {record.status.value}"}
    if record.iteration != iteration:
        return {**base, "skipped": f"stale: the job is at iteration {record.iteration}"}
    token = uuid.uuid4().hex
    if not store.acquire_lease(job_id, token, settings.lease_ttl_s):
        return {**base, "skipped": "this iteration is running elsewhere"}
    code: CommitResult | None = None
    try:
        try:
            state = JobState.model_validate_json(record.state)
        except ValidationError as exc:  # no retry can read it
            store.fail(job_id, f"the job's stored state is unreadable: {exc}"[:2000])
            raise JobFailed(f"job {job_id}: its stored state is unreadable") from exc
        profile = rt.profile_for(state)
        tag_iteration(job_id, iteration, profile.name if profile is not None else None)
        wait = rt.rate_wait(state)
        if wait > 0:  # over the provider's shared rate limit
            return _defer(
                rt, state, base, token, wait=wait, reason="provider rate limit", enqueue=enqueue
            )
        try:
            with rt.leases.hold(job_id, token):
                step = decide(rt, job_id, state, _sleeper(record.deferrals))
        except Deferred as deferred:
            store.redis.hincrby(store.keys.job(job_id), f"deferrals:{iteration}", 1)
            return _defer(
                rt,
                state,
                base,
                token,
                wait=deferred.delay,
                reason="provider retry",
                enqueue=enqueue,
            )
        except UnknownProfile as exc:  # a configuration error: no retry can fix it
            store.fail(job_id, str(exc))
            raise JobFailed(f"job {job_id} failed at iteration {iteration}: {exc}") from exc
        except Exception as exc:
            _count_crash(rt, job_id, iteration, exc)
            raise
        d = step.decision
        countdown = 0.0
        if isinstance(d, Retry) and d.backoff:
            delay = backoff_delay(
                step.state.merge_failures,
                base=1.0,
                cap=settings.max_countdown_s,
                retry_after=None,
                rng=random.Random(),
            )
            countdown = min(delay, settings.max_countdown_s)
        status, result, more = JobStatus.RUNNING, None, isinstance(d, (Continue, Retry))
        if isinstance(d, Finish):
            status, result = JobStatus.SUCCEEDED, _result(d.output, "succeeded", None)
        elif isinstance(d, Fallback):
            status = JobStatus.FAILED if d.failed else JobStatus.PARTIAL
            result = _result(d.output, status.value, d.reason)
        now = time.time()
        summary = _summary(step)
        code = store.commit(
            job_id,
            expected_iteration=iteration,
            state=step.state.model_dump_json(),
            append=step.append,
            replace=step.replace,
            status=status,
            deadline=now + countdown + settings.queue_grace_s if more else None,
            lease_token=token,
            summary=summary,
            result=result,
        )
    finally:
        if code is not CommitResult.COMMITTED:  # a commit drops its own lease
            store.release_lease(job_id, token)
    if code is CommitResult.COMMITTED and more:
        enqueue(job_id, iteration + 1, countdown, rt.queue_for(step.state))
    elif code in {CommitResult.COMMITTED, CommitResult.CANCELLED}:
        _ended(rt, job_id, notify)
    if code is CommitResult.COMMITTED and status is JobStatus.FAILED:
        raise JobFailed(f"job {job_id} failed at iteration {iteration}: {summary['reason']}")
    return {**base, "commit": code.value, "status": status.value, **summary}
