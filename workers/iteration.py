"""One iteration of a job, as a Celery task runs it: load, lease, call, advance, commit.

The commit is a compare-and-set on the iteration number (``JobStore.commit``), so every
(job, iteration) is committed once however often its message is delivered. The next
iteration is enqueued only after the commit; if the process dies in between, the
watchdog finds the job overdue and enqueues it again.

The crash budget: taking the lease charges the attempt to its iteration in the same write
(``JobStore.load_and_start``, which reads the job in that call too), so every attempt that
may pay for a model call is counted, whatever stops it afterwards (an exception anywhere,
its worker killed, Redis refusing the writes that would record it). A deferral gives the
charge back; a commit moves the job on. An attempt that raises sends its iteration again
after a growing delay; the attempt that uses up ``MAX_CRASHES`` fails the job with the
exception, and an attempt that finds the budget already spent fails it before calling the
model. These rules, the backoff after a decision and the provider waits deferred rather
than slept are ``core.policy``'s.

A reply is paid for once: while Redis refuses a commit for now (full, failing over), the
attempt waits with the reply in hand (``_commit``); a step whose commit failed all the
same is kept (``JobStore.record_crash``, only then: a copy written before every commit
would double the state's writes, and at ``maxmemory`` be the write that fills Redis) and
committed by the next attempt instead of calling the model again. The commit's
compare-and-set on the iteration number still admits it once.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from dataclasses import replace as updated
from typing import Any

from pydantic import ValidationError

from core import JobState, advance
from core.errors import describe
from core.policy import MAX_CRASHES, MAX_DEFERRALS, Call, Defer, Step, crash_delay, settle
from core.state import OutputRef
from workers.callbacks import callback_url, claim
from workers.calls import call_model
from workers.errors import JobFailed, UnknownProfile, refused_for_now
from workers.observability import tag_iteration
from workers.runtime import Runtime
from workers.store import TERMINAL, CommitResult, JobRecord, JobStatus

__all__ = [
    "MAX_CRASHES",
    "MAX_DEFERRALS",
    "SECONDS_BUCKETS",
    "Enqueue",
    "JobFailed",
    "Notify",
    "crash_delay",
    "decide",
    "refused_for_now",
    "run_iteration",
    "step_counts",
]

log = logging.getLogger("continuum.iteration")

#: ``enqueue(job_id, iteration, countdown_s, queue)`` sends ``continuum.iterate``.
Enqueue = Callable[[str, int, float, str], None]
#: ``notify(job_id)`` sends ``continuum.callback`` for a job that has ended.
Notify = Callable[[str], None]


#: While Redis refuses a commit for now (full, read-only, loading, unreachable) the worker
#: keeps the reply and tries again after this long, doubling up to ``COMMIT_RETRY_MAX_S``,
#: for at most ``max_countdown_s`` in all.
COMMIT_RETRY_S = 0.25
COMMIT_RETRY_MAX_S = 5.0


def decide(rt: Runtime, job_id: str, state: JobState, deferrals: int) -> Step | Defer:
    """Call the model once and take the reply into the job (reviewing a finished JSON);
    or the provider's wait, too long to spend in this slot (``deferrals`` used so far)."""
    state, response = call_model(state, rt.pool, deferrals=deferrals)
    if isinstance(response, Defer):
        return response
    state, decision = advance(state, response)
    return settle(
        state,
        decision,
        output=lambda: rt.store.output(job_id),
        cap=rt.settings.max_countdown_s,
        rng=random.Random(),
    )


@dataclass(frozen=True)
class Postponed:
    """An iteration to send again ``wait`` seconds from now with nothing committed: over
    the provider's rate limit, or a provider retry (``counted`` against ``MAX_DEFERRALS``)
    too long to wait for in a worker slot."""

    wait: float
    reason: str
    queue: str
    counted: bool = False


@dataclass(frozen=True)
class Pending:
    """An iteration's step as the store commits it. Kept in the job's hash when the
    commit fails, so that the reply it holds is committed later, not paid for again."""

    state: str
    append: str
    replace: bool
    status: JobStatus
    summary: dict[str, Any]
    result: dict[str, Any] | None
    countdown: float
    queue: str
    #: What the step adds to the deployment's counters (``step_counts``).
    counts: dict[str, Any] = field(default_factory=dict)

    @property
    def more(self) -> bool:
        return self.status is JobStatus.RUNNING

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Pending:
        fields = json.loads(text)
        return cls(**{**fields, "status": JobStatus(fields["status"])})


#: Upper bounds (seconds) of the iteration-time histogram's buckets (``GET /metrics``).
SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


def step_counts(before: JobState, after: JobState, seconds: float) -> dict[str, Any]:
    """What one step adds to the deployment's counters: the tokens, cost, merge failures
    and provider fallbacks its call added to the job's metadata, and its time (the model
    call and the merge) with the smallest histogram bucket that holds it."""
    old, new = before.metadata, after.metadata
    bucket = next((b for b in SECONDS_BUCKETS if seconds <= b), None)
    return {
        "input_tokens": new.total_input_tokens - old.total_input_tokens,
        "output_tokens": new.total_output_tokens - old.total_output_tokens,
        "cost": round(new.total_cost_estimate - old.total_cost_estimate, 9),
        "merge_failures": new.merge_failures - old.merge_failures,
        "fallbacks": len(new.provider_fallbacks) - len(old.provider_fallbacks),
        "seconds": round(seconds, 6),
        "seconds_le": "+Inf" if bucket is None else repr(bucket),
    }


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


def _best_effort(what: str, job_id: str, action: Callable[[], object]) -> bool:
    """Run a write the crash path would like to make; Redis may refuse it (the reason of
    the crash, often): log and go on."""
    try:
        action()
    except Exception:
        log.warning("job %s: could not %s", job_id, what, exc_info=True)
        return False
    return True


def _crashed(
    rt: Runtime,
    record: JobRecord,
    exc: Exception,
    *,
    token: str,
    attempt: int,
    ready: Pending | None,
    reused: bool,
    enqueue: Enqueue,
    notify: Notify | None,
) -> None:
    """An attempt raised (its charge stands): note why and keep a step it paid for but
    could not commit; then either fail the job (the budget is spent) or send the
    iteration again after ``crash_delay``. Every write here is best effort: when Redis
    refuses them, the charge taken with the lease still counts, and the watchdog sends the
    iteration again once the job is overdue."""
    store, job_id, iteration = rt.store, record.job_id, record.iteration
    last = attempt >= MAX_CRASHES
    step = ready.to_json() if ready is not None and not reused and not last else None
    _best_effort(
        "record the crash",
        job_id,
        lambda: store.record_crash(job_id, iteration, describe(exc, 2000), step),
    )
    if last:
        reason = f"iteration {iteration} raised {attempt} times; last: {describe(exc, 2000)}"[:2000]
        _best_effort("fail it", job_id, lambda: _spent(rt, job_id, iteration, reason, notify))
        return
    wait = crash_delay(attempt, rt.settings.max_countdown_s)
    queue = ready.queue if ready is not None else _queue_of(rt, record)
    deadline = time.time() + wait + rt.settings.queue_grace_s
    _best_effort("postpone it", job_id, lambda: store.postpone(job_id, deadline))
    _best_effort("release its lease", job_id, lambda: store.release_lease(job_id, token))
    _best_effort("send it again", job_id, lambda: enqueue(job_id, iteration, wait, queue))


def _spent(rt: Runtime, job_id: str, iteration: int, reason: str, notify: Notify | None) -> None:
    """This attempt spent the crash budget of ``iteration``: fail the job, unless another
    attempt's late commit has moved it on meanwhile (``JobStore.fail_attempt``)."""
    if not rt.store.fail_attempt(job_id, iteration, reason):
        log.warning("job %s moved on from iteration %d meanwhile: not failed", job_id, iteration)
        return
    _best_effort("drop its kept step", job_id, lambda: rt.store.drop_kept_step(job_id))
    _best_effort("send its callback", job_id, lambda: _ended(rt, job_id, notify))


def _queue_of(rt: Runtime, record: JobRecord) -> str:
    """The queue of the job's iteration, or the default one if its state does not parse."""
    try:
        return rt.queue_for(JobState.model_validate_json(record.state))
    except Exception:
        return rt.settings.queue


def _give_up(
    rt: Runtime, job_id: str, iteration: int, *, attempt: int, token: str, notify: Notify | None
) -> dict[str, Any]:
    """The budget was spent before this attempt (the last failure could not be recorded
    as one, or workers were lost): fail the job without calling the model, unless a late
    commit has moved it on meanwhile (``JobStore.fail_attempt``)."""
    store = rt.store
    try:
        last = store.attempt_error(job_id) or "none recorded (a worker was lost)"
        reason = f"iteration {iteration} did not finish in {attempt - 1} attempts; last: {last}"
        if not store.fail_attempt(job_id, iteration, reason[:2000]):
            return {"job_id": job_id, "iteration": iteration, "skipped": "stale: moved on"}
        store.drop_kept_step(job_id)
    finally:
        store.release_lease(job_id, token)
    _ended(rt, job_id, notify)
    raise JobFailed(f"job {job_id} failed at iteration {iteration}: {reason}")


def _postpone(
    rt: Runtime, record: JobRecord, token: str, later: Postponed, enqueue: Enqueue
) -> float:
    """Send the same iteration again ``later``, holding no worker slot meanwhile (the
    watchdog's deadline moves past the wait); nothing is committed. Returns the wait."""
    store, job_id, iteration = rt.store, record.job_id, record.iteration
    if later.counted:
        store.count_deferral(job_id, iteration)
    wait = min(later.wait, rt.settings.max_countdown_s)
    store.postpone(job_id, time.time() + wait + rt.settings.queue_grace_s)
    store.release_lease(job_id, token)
    enqueue(job_id, iteration, wait, later.queue)
    store.refund_attempt(job_id)  # sent again: this attempt failed nothing
    return wait


def _ended(rt: Runtime, job_id: str, notify: Notify | None) -> None:
    """The job has ended: have its callback sent, once, if it asked for one."""
    record = rt.store.load(job_id)
    if notify is None or record is None or callback_url(record) is None:
        return
    if claim(rt.store, job_id):
        notify(job_id)


def _pending(rt: Runtime, step: Step) -> Pending:
    """The step as the store commits it."""
    action = step.action
    if isinstance(action, Call):
        status, result, countdown = JobStatus.RUNNING, None, action.delay
    else:
        status, countdown = JobStatus(action.outcome.value), 0.0
        result = _result(action.output, action.outcome.value, action.reason)
    return Pending(
        state=step.state.model_dump_json(),
        append=step.append,
        replace=step.replace,
        status=status,
        summary=_summary(step),
        result=result,
        countdown=countdown,
        queue=rt.queue_for(step.state),
    )


def _call(rt: Runtime, record: JobRecord, token: str) -> Pending | Postponed:
    """The paid half of an iteration: wait for the rate limit, call the model, advance;
    or the iteration postponed (over the rate limit, a long provider retry)."""
    store, job_id, iteration = rt.store, record.job_id, record.iteration
    try:
        state = JobState.model_validate_json(record.state)
    except ValidationError as exc:  # no retry can read it
        store.fail(job_id, f"the job's stored state is unreadable: {exc}"[:2000])
        raise JobFailed(f"job {job_id}: its stored state is unreadable") from exc
    profile = rt.profile_for(state)
    tag_iteration(job_id, iteration, profile.name if profile is not None else None)
    wait = rt.rate_wait(state)
    if wait > 0:  # over the provider's shared rate limit
        return Postponed(wait, "provider rate limit", rt.queue_for(state))
    started = time.monotonic()
    try:
        with rt.leases.hold(job_id, token):
            step = decide(rt, job_id, state, record.deferrals)
    except UnknownProfile as exc:  # a configuration error: no retry can fix it
        store.fail(job_id, str(exc))
        raise JobFailed(f"job {job_id} failed at iteration {iteration}: {exc}") from exc
    if isinstance(step, Defer):
        return Postponed(step.seconds, "provider retry", rt.queue_for(state), counted=True)
    counts = step_counts(state, step.state, time.monotonic() - started)
    return updated(_pending(rt, step), counts=counts)


def _kept(rt: Runtime, job_id: str, iteration: int) -> Pending | None:
    """The step an earlier attempt paid for but could not commit, if it kept one that
    this version can read."""
    text = rt.store.kept_step(job_id, iteration)
    try:
        return None if text is None else Pending.from_json(text)
    except (TypeError, ValueError, KeyError):
        log.warning("job %s: the kept step of iteration %d is unreadable", job_id, iteration)
        return None


def _commit(rt: Runtime, job_id: str, iteration: int, ready: Pending, token: str) -> CommitResult:
    """Commit ``ready``. While Redis refuses the write for now, keep the reply in hand (and
    the lease alive) and try again, for at most ``max_countdown_s``: a full or failing-over
    Redis costs a wait, not a second model call."""
    settings = rt.settings
    give_up = time.monotonic() + settings.max_countdown_s
    delay = COMMIT_RETRY_S
    with rt.leases.hold(job_id, token):
        while True:
            now = time.time()
            deadline = now + ready.countdown + settings.queue_grace_s if ready.more else None
            try:
                return rt.store.commit(
                    job_id,
                    expected_iteration=iteration,
                    state=ready.state,
                    append=ready.append,
                    replace=ready.replace,
                    status=ready.status,
                    deadline=deadline,
                    lease_token=token,
                    summary=ready.summary,
                    result=ready.result,
                    counts=ready.counts,
                )
            except Exception as exc:
                if not refused_for_now(exc) or time.monotonic() + delay > give_up:
                    raise
                log.warning(
                    "job %s: Redis refused the commit of iteration %d (%s); trying again in %.2f s",
                    job_id,
                    iteration,
                    describe(exc, 2000),
                    delay,
                )
            time.sleep(delay)
            delay = min(delay * 2, COMMIT_RETRY_MAX_S)


def _landed(rt: Runtime, job_id: str, iteration: int, ready: Pending) -> bool:
    """A commit found stale may be this attempt's own: it landed, but its reply was lost
    (the connection dropped after the write) and the commit was sent again (by ``_commit``,
    or redis-py's own retry). Then the job is one past ``iteration`` with exactly this
    step's state, and the next iteration (or the callback) is still this worker's to send:
    no one else will until the watchdog, ``queue_grace_s`` later. A same step committed by
    a concurrent attempt passes too: its message is then sent twice, which is harmless."""
    record = rt.store.load(job_id)
    return record is not None and record.iteration == iteration + 1 and record.state == ready.state


@dataclass(frozen=True)
class Attempt:
    """An attempt's commit: its result, the step, and whether an earlier attempt paid for
    it (its own commit failed)."""

    code: CommitResult
    ready: Pending
    reused: bool


def run_iteration(
    rt: Runtime,
    job_id: str,
    iteration: int,
    enqueue: Enqueue,
    notify: Notify | None = None,
) -> dict[str, Any]:
    """Run iteration ``iteration`` of the job, unless it is stale, finished or in flight.
    ``notify(job_id)`` sends the job's callback when the job ends."""
    base = {"job_id": job_id, "iteration": iteration}
    token = uuid.uuid4().hex
    # The lease is taken (and the attempt charged) only for a job at this iteration that
    # has not ended: what ``_skipped`` tells apart then needs no lease.
    record, attempt = rt.store.load_and_start(job_id, iteration, token, rt.settings.lease_ttl_s)
    if record is None:
        return {**base, "skipped": "no such job"}
    skipped = _skipped(rt, record, iteration, notify)
    if skipped is not None:
        return {**base, "skipped": skipped}
    if attempt == 0:
        return {**base, "skipped": "this iteration is running elsewhere"}
    if attempt < 0:
        return {**base, "skipped": "stale: the job has moved on"}
    if attempt > MAX_CRASHES:
        return _give_up(rt, job_id, iteration, attempt=attempt, token=token, notify=notify)
    done = _attempt(rt, record, token, attempt=attempt, enqueue=enqueue, notify=notify)
    if isinstance(done, Postponed):
        return {**base, "deferred_s": round(done.wait, 3), "reason": done.reason}
    return _conclude(rt, record, done, enqueue, notify)


def _skipped(rt: Runtime, record: JobRecord, iteration: int, notify: Notify | None) -> str | None:
    """Why this delivery runs nothing: the job has ended (a cancelled one still gets its
    callback), or it is at another iteration."""
    if record.status in TERMINAL:
        if record.status is JobStatus.CANCELLED:  # cancelled while this message waited
            _ended(rt, record.job_id, notify)
        return f"the job is {record.status.value}"
    if record.iteration != iteration:
        return f"stale: the job is at iteration {record.iteration}"
    return None


def _attempt(
    rt: Runtime,
    record: JobRecord,
    token: str,
    *,
    attempt: int,
    enqueue: Enqueue,
    notify: Notify | None,
) -> Attempt | Postponed:
    """The charged part of an attempt, under its lease: commit the step an earlier attempt
    kept, or call the model for one, or postpone the iteration. An exception here goes
    through the crash path (``_crashed``) and is raised again."""
    store, job_id, iteration = rt.store, record.job_id, record.iteration
    code: CommitResult | None = None
    ready: Pending | None = None  # the step to commit
    reused = False  # it was paid for by an earlier attempt, whose commit failed
    try:
        ready = _kept(rt, job_id, iteration) if attempt > 1 else None
        reused = ready is not None
        if ready is None:
            called = _call(rt, record, token)
            if isinstance(called, Postponed):
                return updated(called, wait=_postpone(rt, record, token, called, enqueue))
            ready = called
        code = _commit(rt, job_id, iteration, ready, token)
    except JobFailed:
        raise
    except Exception as exc:
        _crashed(
            rt,
            record,
            exc,
            token=token,
            attempt=attempt,
            ready=ready,
            reused=reused,
            enqueue=enqueue,
            notify=notify,
        )
        raise
    finally:
        if code is not CommitResult.COMMITTED:  # a commit drops its own lease
            _best_effort("release its lease", job_id, lambda: store.release_lease(job_id, token))
    return Attempt(code, ready, reused)


def _conclude(
    rt: Runtime, record: JobRecord, done: Attempt, enqueue: Enqueue, notify: Notify | None
) -> dict[str, Any]:
    """After the commit (or its refusal): send the next iteration, or the callback of a job
    that has ended. Nothing here repeats a model call, so an exception here is not charged;
    the watchdog sends a next iteration that was not."""
    job_id, iteration, ready = record.job_id, record.iteration, done.ready
    code = done.code
    if code is CommitResult.STALE and _landed(rt, job_id, iteration, ready):
        code = CommitResult.COMMITTED
    if done.reused and code is CommitResult.COMMITTED:
        _best_effort("drop its kept step", job_id, lambda: rt.store.drop_kept_step(job_id))
    if code is CommitResult.COMMITTED and ready.more:
        enqueue(job_id, iteration + 1, ready.countdown, ready.queue)
    elif code in {CommitResult.COMMITTED, CommitResult.CANCELLED}:
        _ended(rt, job_id, notify)
    if code is CommitResult.COMMITTED and ready.status is JobStatus.FAILED:
        raise JobFailed(f"job {job_id} failed at iteration {iteration}: {ready.summary['reason']}")
    result = {"job_id": job_id, "iteration": iteration, "commit": code.value}
    reused = {"reused_step": True} if done.reused else {}
    return {**result, "status": ready.status.value, **reused, **ready.summary}
