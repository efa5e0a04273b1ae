"""One whole job in this process, without a broker (``continuum run``).

The loop is the one every runner applies: call the model, ``advance``, then what
``core.policy.settle`` says (review the output; write to it; call again, after a backoff
when the provider failed; or stop). The Celery task (``workers.iteration``) runs the same
steps one iteration per task; the engine tests run this loop over a model in memory.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from core import Decision, JobSpec, JobState, ProviderResponse, advance, start
from core.policy import MAX_BACKOFF_S, End, Outcome, settle
from core.state import OutputRef
from workers.calls import ProviderPool, call_model

__all__ = ["JobResult", "Outcome", "Output", "run_calls", "run_job"]


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

    def write(self, append: str, replace: bool) -> None:
        if replace:
            self._parts, self._length = [], 0
        if append:
            self._parts.append(append)
            self._length += len(append)

    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def render(self, ref: OutputRef) -> str:
        return self.text()[: ref.prefix] + ref.suffix

    def __len__(self) -> int:
        return self._length


Listener = Callable[[JobState, Decision], None]
#: ``call(state)`` makes the model call ``state.messages`` asks for: the updated state and
#: the reply (``call_model`` over a provider pool, or a model in memory).
Caller = Callable[[JobState], tuple[JobState, ProviderResponse]]


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

    def call(state: JobState) -> tuple[JobState, ProviderResponse]:
        return call_model(state, pool, sleep=sleep, rng=rng)

    return run_calls(start(spec), call, on_iteration=on_iteration, sleep=sleep, rng=rng)


def run_calls(
    state: JobState,
    call: Caller,
    *,
    output: Output | None = None,
    on_iteration: Listener | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> JobResult:
    """Run the job from ``state`` to its end, each model call made by ``call``; the text
    goes to ``output`` (a new one by default)."""
    rng = rng or random.Random()
    output = Output() if output is None else output
    while True:
        state, response = call(state)
        state, decision = advance(state, response)
        step = settle(state, decision, output=output.text, cap=MAX_BACKOFF_S, rng=rng)
        state, action = step.state, step.action
        output.write(step.append, step.replace)
        if on_iteration is not None:
            on_iteration(state, step.decision)
        if isinstance(action, End):
            text = None if action.output is None else output.render(action.output)
            return JobResult(action.outcome, text, state, action.reason)
        if action.delay > 0:
            sleep(action.delay)
