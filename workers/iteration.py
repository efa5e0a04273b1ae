"""One iteration of a job, as a Celery task runs it: load, lease, call, advance, commit.

The commit is a compare-and-set on the iteration number (``JobStore.commit``), so every
(job, iteration) is committed once however often its message is delivered. The next
iteration is enqueued only after the commit; if the process dies in between, the
watchdog finds the job overdue and enqueues it again.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core import Continue, Decision, Fallback, Finish, JobState, Retry, advance, review
from core.state import OutputRef
from workers.calls import call_model
from workers.providers.retry import backoff_delay
from workers.runtime import Runtime
from workers.store import TERMINAL, CommitResult, JobStatus

#: ``enqueue(job_id, iteration, countdown_s, queue)`` sends ``continuum.iterate``.
Enqueue = Callable[[str, int, float, str], None]


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


class LeaseKeeper:
    """Renews the iteration's lease while the model call runs."""

    def __init__(self, rt: Runtime, job_id: str, token: str) -> None:
        self.rt, self.job_id, self.token = rt, job_id, token
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{job_id}", daemon=True)

    def _run(self) -> None:
        ttl = self.rt.settings.lease_ttl_s
        while not self._stop.wait(ttl / 3):
            if not self.rt.store.renew_lease(self.job_id, self.token, ttl):
                return

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def decide(rt: Runtime, job_id: str, state: JobState) -> Step:
    """Call the model once and take the reply into the job (reviewing a finished JSON)."""
    state, response = call_model(state, rt.pool)
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
        "iteration": s.iteration,
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


def run_iteration(rt: Runtime, job_id: str, iteration: int, enqueue: Enqueue) -> dict[str, Any]:
    """Run iteration ``iteration`` of the job, unless it is stale, finished or in flight."""
    store, settings = rt.store, rt.settings
    record = store.load(job_id)
    base = {"job_id": job_id, "iteration": iteration}
    if record is None:
        return {**base, "skipped": "no such job"}
    if record.status in TERMINAL:
        return {**base, "skipped": f"the job is {record.status.value}"}
    if record.iteration != iteration:
        return {**base, "skipped": f"stale: the job is at iteration {record.iteration}"}
    token = uuid.uuid4().hex
    if not store.acquire_lease(job_id, token, settings.lease_ttl_s):
        return {**base, "skipped": "this iteration is running elsewhere"}
    try:
        state = JobState.model_validate_json(record.state)
        wait = rt.rate_wait(state)
        if wait > 0:
            # Over the provider's shared rate limit: come back later without holding a
            # worker slot (the watchdog's deadline moves past the wait).
            wait = min(wait, settings.max_countdown_s)
            store.postpone(job_id, time.time() + wait + settings.queue_grace_s)
            store.release_lease(job_id, token)
            enqueue(job_id, iteration, wait, rt.queue_for(state))
            return {**base, "deferred_s": round(wait, 3), "reason": "provider rate limit"}
        with LeaseKeeper(rt, job_id, token):
            step = decide(rt, job_id, state)
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
        store.release_lease(job_id, token)
    if code is CommitResult.COMMITTED and more:
        enqueue(job_id, iteration + 1, countdown, rt.queue_for(step.state))
    if code is CommitResult.COMMITTED and status is JobStatus.FAILED:
        raise JobFailed(f"job {job_id} failed at iteration {iteration}: {summary['reason']}")
    return {**base, "commit": code.value, "status": status.value, **summary}
