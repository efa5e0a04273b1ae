"""One whole job in this process, without a broker (``continuum run``).

The loop is the one every runner applies: call the model, ``advance``, apply the
decision (append or replace the output; call again; back off; review; stop). The Celery
tasks run the same steps, one iteration per task.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from core import (
    Continue,
    Decision,
    Fallback,
    Finish,
    JobSpec,
    JobState,
    Retry,
    advance,
    review,
    start,
)
from core.state import OutputRef
from workers.calls import ProviderPool, call_model
from workers.providers.retry import backoff_delay


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"


@dataclass(frozen=True)
class JobResult:
    outcome: Outcome
    output: str | None
    state: JobState
    reason: str | None = None


class Output:
    """The accumulated output, appended to per iteration."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0

    def apply(self, decision: Decision) -> None:
        if isinstance(decision, Finish) and decision.replace:
            self._parts, self._length = [], 0
        if decision.append:
            self._parts.append(decision.append)
            self._length += len(decision.append)

    def render(self, ref: OutputRef) -> str:
        text = "".join(self._parts)
        self._parts = [text]
        return text[: ref.prefix] + ref.suffix

    def __len__(self) -> int:
        return self._length


Listener = Callable[[JobState, Decision], None]


def run_job(
    spec: JobSpec,
    pool: ProviderPool,
    *,
    on_iteration: Listener | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> JobResult:
    """Run ``spec`` to its end; ``on_iteration`` sees every decision."""
    rng = rng or random.Random()
    state = start(spec)
    output = Output()
    backoffs = 0
    while True:
        state, response = call_model(state, pool, sleep=sleep, rng=rng)
        state, decision = advance(state, response)
        output.apply(decision)
        if isinstance(decision, Finish) and decision.review:
            state, decision = review(state, output.render(decision.output))
            output.apply(decision)
        if on_iteration is not None:
            on_iteration(state, decision)
        if isinstance(decision, Finish):
            return JobResult(Outcome.SUCCEEDED, output.render(decision.output), state)
        if isinstance(decision, Fallback):
            text = None if decision.output is None else output.render(decision.output)
            outcome = Outcome.FAILED if decision.failed else Outcome.PARTIAL
            return JobResult(outcome, text, state, decision.reason)
        if isinstance(decision, Retry) and decision.backoff:
            backoffs += 1
            profile = pool.profiles[pool.names_for(state)[state.provider_index]]
            base, cap = profile.backoff_base_s, profile.backoff_cap_s
            sleep(backoff_delay(backoffs, base=base, cap=cap, retry_after=None, rng=rng))
        elif isinstance(decision, Continue):
            backoffs = 0
