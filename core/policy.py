"""What a runner does next, as values: the job loop's policy, in one place.

Every runner (``continuum run``'s loop in ``workers.local``, the Celery task's iteration in
``workers.iteration``, the engine tests) applies the same rules; only the I/O around them
differs (sleep in place, or a countdown on the next task):

- ``next_action(state, decision)``: after each decision of the engine, ``Review`` the
  whole output, ``Call`` the model again (after a backoff when the provider failed), or
  ``End`` the job (succeeded, partial, failed). ``settle`` applies it to an ``advance``
  result, reviewing the output when asked, so the runner gets one ``Step`` to apply.
- ``provider_wait(delay, deferrals)``: a provider retry's wait is slept in place when it
  is short, else ``Defer``-red (a worker sends its iteration again later instead of holding
  its slot), and after ``MAX_DEFERRALS`` the profile counts as failed (``GiveUp``).
- ``crash_delay(attempt, cap)``: an attempt that raised sends its iteration again this
  late; the attempt that uses up ``MAX_CRASHES`` fails the job.
- ``backoff_delay``: exponential backoff with full jitter, a server's wait as a floor.

Pure: no I/O; the only input beyond the arguments is the ``rng`` the caller passes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from core.repair import review
from core.state import Decision, Fallback, Finish, JobState, OutputRef, Retry

#: The engine's backoff (a provider's ``error`` reply) waits up to this times
#: ``2**consecutive failures`` seconds, capped by the runner's ``cap``.
BACKOFF_BASE_S = 1.0
#: The cap where a runner sets none (a worker's is ``max_countdown_s``, 300 s by default).
MAX_BACKOFF_S = 300.0

#: A provider retry waiting longer than this does not sleep in a worker: the iteration
#: is sent again with that countdown, freeing the slot.
INLINE_RETRY_S = 2.0
#: Deferred retries per iteration; then the provider counts as failed for this call
#: (fallback to the next profile, or the engine's own retry policy).
MAX_DEFERRALS = 4

#: Attempts at one iteration that may fail (raise, or lose their worker) before its job fails.
MAX_CRASHES = 5
#: The first attempt that raised sends its iteration again this late; each next one waits
#: twice as long (capped by the runner's cap).
CRASH_RETRY_S = 0.5

# Beyond 2**60 the product overflows nothing but means nothing either: the cap rules.
_MAX_EXPONENT = 60


def backoff_delay(
    attempt: int, *, base: float, cap: float, retry_after: float | None, rng: random.Random
) -> float:
    """Seconds to wait before retry number ``attempt`` (0 for the first retry): a uniform
    draw in ``[0, min(cap, base * 2**attempt)]``, never shorter than ``retry_after``."""
    ceiling = min(cap, base * 2.0 ** min(max(attempt, 0), _MAX_EXPONENT))
    delay = rng.uniform(0.0, ceiling)
    if retry_after is not None and math.isfinite(retry_after):
        delay = max(delay, retry_after)
    return delay


class Outcome(StrEnum):
    """How a job ended."""

    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Review:
    """Pass the whole output (``accumulated[:prefix] + suffix``) to ``core.review``."""

    output: OutputRef


@dataclass(frozen=True, slots=True)
class Call:
    """Call the model again, ``delay`` seconds from now."""

    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class End:
    """The job is over: its ``output`` (None when nothing valid was received) and why."""

    outcome: Outcome
    output: OutputRef | None
    reason: str | None = None


Action = Review | Call | End


def next_action(state: JobState, decision: Decision, *, cap: float, rng: random.Random) -> Action:
    """What follows ``decision`` (``state`` is the state ``advance`` returned with it)."""
    if isinstance(decision, Finish):
        return (
            Review(decision.output) if decision.review else End(Outcome.SUCCEEDED, decision.output)
        )
    if isinstance(decision, Fallback):
        outcome = Outcome.FAILED if decision.failed else Outcome.PARTIAL
        return End(outcome, decision.output, decision.reason)
    if isinstance(decision, Retry) and decision.backoff:
        attempt = state.merge_failures  # consecutive failures, this one included
        return Call(backoff_delay(attempt, base=BACKOFF_BASE_S, cap=cap, retry_after=None, rng=rng))
    return Call()


@dataclass(frozen=True, slots=True)
class Step:
    """One reply taken into the job: the state, the last decision (the review's, when the
    output was reviewed), what to write to the output (``append``, replacing everything
    when ``replace``) and what to do next."""

    state: JobState
    decision: Decision
    append: str
    replace: bool
    action: Call | End


def settle(
    state: JobState,
    decision: Decision,
    *,
    output: Callable[[], str],
    cap: float,
    rng: random.Random,
) -> Step:
    """Apply the policy to what ``advance`` returned, reviewing the output when the decision
    asks for it. ``output()`` is the text accumulated before this decision (read only for a
    review: a worker reads it from the store)."""
    append, replace = decision.append, isinstance(decision, Finish) and decision.replace
    action = next_action(state, decision, cap=cap, rng=rng)
    while isinstance(action, Review):
        text = append if replace else output() + append
        ref = action.output
        state, decision = review(state, text[: ref.prefix] + ref.suffix)
        if isinstance(decision, Finish) and decision.replace:
            append, replace = decision.append, True
        action = next_action(state, decision, cap=cap, rng=rng)
    return Step(state, decision, append, replace, action)


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait ``seconds`` in place, then call the provider again."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Defer:
    """Too long to wait holding a worker slot: send the iteration again in ``seconds``."""

    seconds: float


@dataclass(frozen=True, slots=True)
class GiveUp:
    """The provider counts as failed for this call (``reason``): fall back."""

    reason: str


def provider_wait(delay: float, deferrals: int | None) -> Sleep | Defer | GiveUp:
    """How to spend a provider retry's ``delay``; ``deferrals``: how many this iteration has
    used, None where every wait is slept (one process runs the whole job)."""
    if deferrals is None or delay <= INLINE_RETRY_S:
        return Sleep(delay)
    if deferrals >= MAX_DEFERRALS:
        return GiveUp(f"still failing after {deferrals} deferred retries")
    return Defer(delay)


def crash_delay(attempt: int, cap: float) -> float:
    """Seconds before an iteration whose attempt number ``attempt`` raised runs again."""
    return min(cap, CRASH_RETRY_S * 2.0 ** min(attempt - 1, 30))
