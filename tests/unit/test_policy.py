"""The job loop's policy (``core.policy``), one row per behaviour, without I/O: what follows
each decision of the engine, how a provider's wait is spent, and that the runners apply it
(the in-process loop sleeps the backoff; a worker's provider wait comes back as a value)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from core import (
    Continue,
    Decision,
    Fallback,
    Finish,
    FinishReason,
    JobSpec,
    JobState,
    Message,
    OutputFormat,
    OutputRef,
    ProviderResponse,
    Retry,
    ValidationOptions,
    start,
)
from core.policy import (
    MAX_BACKOFF_S,
    MAX_DEFERRALS,
    Action,
    Call,
    Defer,
    End,
    GiveUp,
    Outcome,
    Review,
    Sleep,
    next_action,
    provider_wait,
    settle,
)
from tests.unit.test_provider_retry import Fixed
from workers.errors import ProviderError, TransientError
from workers.local import run_calls
from workers.providers.base import CallRequest
from workers.providers.profiles import Profile
from workers.providers.retry import call_with_retries

REF = OutputRef(prefix=7, suffix="]}")
NO_MESSAGES: list[Message] = []


def failing(times: int) -> JobState:
    """A job whose last ``times`` replies failed in a row (``merge_failures``)."""
    return start(JobSpec(prompt="Write.", format=OutputFormat.TEXT)).model_copy(
        update={"merge_failures": times}
    )


# -- what follows a decision ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("decision", "failures", "fraction", "cap", "action"),
    [
        # a finished output ends the job, or is reviewed first when the decision asks
        (Finish(output=REF, append="x"), 0, 1.0, 300.0, End(Outcome.SUCCEEDED, REF)),
        (Finish(output=REF, review=True), 0, 1.0, 300.0, Review(REF)),
        # a fallback ends the job partial, or failed, with its output and reason
        (Fallback(output=REF, reason="stalled"), 0, 1.0, 300.0,
         End(Outcome.PARTIAL, REF, "stalled")),
        (Fallback(output=None, reason="nothing valid", failed=True), 3, 1.0, 300.0,
         End(Outcome.FAILED, None, "nothing valid")),
        # a continuation, and a retry of a reply that failed to merge, call again at once
        (Continue(messages=NO_MESSAGES, append="abc"), 0, 1.0, 300.0, Call(0.0)),
        (Retry(messages=NO_MESSAGES, reason="unmergeable"), 2, 1.0, 300.0, Call(0.0)),
        # a provider error backs off: up to 2**(consecutive failures) s, full jitter...
        (Retry(messages=NO_MESSAGES, reason="503", backoff=True), 1, 1.0, 300.0, Call(2.0)),
        (Retry(messages=NO_MESSAGES, reason="503", backoff=True), 2, 1.0, 300.0, Call(4.0)),
        (Retry(messages=NO_MESSAGES, reason="503", backoff=True), 3, 0.5, 300.0, Call(4.0)),
        (Retry(messages=NO_MESSAGES, reason="503", backoff=True), 3, 0.0, 300.0, Call(0.0)),
        # ...capped by the runner's cap, however many failures
        (Retry(messages=NO_MESSAGES, reason="503", backoff=True), 3, 1.0, 5.0, Call(5.0)),
        (Retry(messages=NO_MESSAGES, reason="503", backoff=True), 10_000, 1.0, 300.0,
         Call(300.0)),
    ],
)  # fmt: skip
def test_next_action_table(
    decision: Decision, failures: int, fraction: float, cap: float, action: Action
) -> None:
    """Finish ends (or asks for a review), Fallback ends partial or failed, Continue and a
    merge retry call at once, a provider error backs off by its consecutive failures."""
    assert next_action(failing(failures), decision, cap=cap, rng=Fixed(fraction)) == action


# -- a decision settled: reviewed when asked, one step to apply ---------------------------

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
    "required": ["items"],
}
ITEM_SCHEMA: dict[str, Any] = {"type": "integer"}


def json_job(**validation: Any) -> JobState:
    options = ValidationOptions.model_validate(validation)
    return start(JobSpec(prompt="Write.", format=OutputFormat.JSON, validation=options))


@dataclass
class SoFar:
    """The output accumulated before the decision, counting its reads."""

    text: str = ""
    reads: int = 0

    def __call__(self) -> str:
        self.reads += 1
        return self.text


@dataclass(frozen=True)
class Row:
    validation: dict[str, Any]
    decision: Decision
    so_far: str
    append: str
    replace: bool
    action: Call | End
    reads: int
    final: type[Decision] = field(default=Finish)


SETTLE_ROWS = {
    "a continuation is written as is; the output is not read": Row(
        {}, Continue(messages=NO_MESSAGES, append="abc"), "", "abc", False, Call(0.0), 0, Continue
    ),
    "a finish without review ends the job; the output is not read": Row(
        {}, Finish(output=OutputRef(prefix=9), append="}"), "", "}", False,
        End(Outcome.SUCCEEDED, OutputRef(prefix=9)), 0,
    ),
    "a valid output passes its review and ends the job": Row(
        {"json_schema": SCHEMA}, Finish(output=OutputRef(prefix=17), append="2]}", review=True),
        '{"items": [1, ', "2]}", False, End(Outcome.SUCCEEDED, OutputRef(prefix=17)), 1,
    ),
    "items the item schema drops replace the output": Row(
        {"item_schema": ITEM_SCHEMA, "items_key": "items"},
        Finish(output=OutputRef(prefix=19), append="]}", review=True),
        '{"items": [1, "x"', '{\n  "items": [\n    1\n  ]\n}', True,
        End(Outcome.SUCCEEDED, OutputRef(prefix=26)), 1,
    ),
    "an invalid output with repairs left asks for one at once": Row(
        {"json_schema": SCHEMA, "max_repair_attempts": 2},
        Finish(output=OutputRef(prefix=14), append="}", review=True),
        '{"items": "x"', "}", False, Call(0.0), 1, Retry,
    ),
    "an invalid output with no repair left fails the job, its output kept": Row(
        {"json_schema": SCHEMA, "max_repair_attempts": 1},
        Finish(output=OutputRef(prefix=14), append="}", review=True),
        '{"items": "x"', "}", False, End(Outcome.FAILED, OutputRef(prefix=14)), 1, Fallback,
    ),
    "a repair reply replaces the output, reviewed without reading the old one": Row(
        {"json_schema": SCHEMA},
        Finish(output=OutputRef(prefix=14), append='{"items": [3]}', replace=True, review=True),
        "old text", '{"items": [3]}', True, End(Outcome.SUCCEEDED, OutputRef(prefix=14)), 0,
    ),
}  # fmt: skip


@pytest.mark.parametrize("row", SETTLE_ROWS.values(), ids=SETTLE_ROWS.keys())
def test_settle_table(row: Row) -> None:
    """One step per reply: what to write (append or replace), the last decision, what next;
    the output so far is read only when a review needs it."""
    so_far = SoFar(row.so_far)
    step = settle(
        json_job(**row.validation), row.decision, output=so_far, cap=300.0, rng=Fixed(1.0)
    )
    assert (step.append, step.replace) == (row.append, row.replace)
    assert isinstance(step.decision, row.final)
    action = step.action
    if isinstance(action, End) and action.reason is not None:
        assert action.reason.startswith("the output does not match the schema")
        action = replace(action, reason=None)
    assert action == row.action
    assert so_far.reads == row.reads


# -- how a provider's wait is spent ------------------------------------------------------


@pytest.mark.parametrize(
    ("delay", "deferrals", "wait"),
    [
        (30.0, None, Sleep(30.0)),  # one process runs the whole job: every wait is slept
        (1.0, 0, Sleep(1.0)),  # a short wait is slept in the worker's slot...
        (2.0, 0, Sleep(2.0)),
        (1.0, MAX_DEFERRALS, Sleep(1.0)),  # ...even once the deferrals are used up
        (2.5, 0, Defer(2.5)),  # a long one gives the slot back
        (30.0, MAX_DEFERRALS - 1, Defer(30.0)),
        (30.0, MAX_DEFERRALS, GiveUp(f"still failing after {MAX_DEFERRALS} deferred retries")),
    ],
)
def test_provider_wait_table(delay: float, deferrals: int | None, wait: object) -> None:
    """Up to 2 s is slept in place; longer is deferred, 4 times per iteration; then the
    provider counts as failed for the call."""
    assert provider_wait(delay, deferrals) == wait


# -- the runners apply it ----------------------------------------------------------------


@dataclass
class RateLimited:
    """A provider that answers 429 with ``Retry-After: retry_after`` once, then a reply."""

    retry_after: float
    profile: Profile = field(
        default_factory=lambda: Profile.model_validate(
            {"name": "p", "kind": "sim", "max_retries": 3, "backoff_cap_s": 60.0}
        )
    )
    calls: int = 0

    def complete(self, request: CallRequest) -> ProviderResponse:
        self.calls += 1
        if self.calls == 1:
            raise TransientError("HTTP 429", status=429, retry_after=self.retry_after)
        return ProviderResponse(text="done", finish_reason=FinishReason.STOP)

    def close(self) -> None:
        pass


REQUEST = CallRequest(messages=[Message(role="user", content="hi")], max_output_tokens=10)


@pytest.mark.parametrize(
    ("retry_after", "deferrals", "expected", "slept", "calls"),
    [
        (30.0, None, "done", [30.0], 2),  # no worker slot to free: the wait is slept
        (1.0, 0, "done", [1.0], 2),
        (30.0, 0, Defer(30.0), [], 1),  # returned, not raised, not slept
        (30.0, MAX_DEFERRALS, "still failing after 4 deferred retries", [], 1),
    ],
)
def test_a_provider_retry_wait_is_slept_returned_or_given_up(
    retry_after: float, deferrals: int | None, expected: object, slept: list[float], calls: int
) -> None:
    """``call_with_retries`` spends a provider's wait as ``provider_wait`` says: a deferral
    is a value its caller applies; used-up deferrals fail the profile for this call."""
    provider = RateLimited(retry_after)
    sleeps: list[float] = []
    result: ProviderResponse | Defer | ProviderError
    try:
        result = call_with_retries(
            provider, REQUEST, sleep=sleeps.append, rng=Fixed(0.0), deferrals=deferrals
        )
    except TransientError as exc:
        result = exc
    if isinstance(result, ProviderResponse):
        assert result.text == expected
    elif isinstance(result, ProviderError):
        assert str(result) == expected
    else:
        assert result == expected
    assert (sleeps, provider.calls) == (slept, calls)


ERROR = ProviderResponse(text="", finish_reason=FinishReason.ERROR, error="HTTP 503")
EMPTY = ProviderResponse(text="", finish_reason=FinishReason.LENGTH)
DONE = ProviderResponse(text="The whole text.", finish_reason=FinishReason.STOP)


@pytest.mark.parametrize(
    ("replies", "slept"),
    [
        ([DONE], []),
        ([ERROR, DONE], [2.0]),
        ([ERROR, ERROR, DONE], [2.0, 4.0]),  # consecutive failures double the ceiling
        ([EMPTY, ERROR, DONE], [4.0]),  # an empty reply is a failure too: not slept, counted
    ],
)
def test_the_in_process_loop_sleeps_the_policy_backoff(
    replies: list[ProviderResponse], slept: list[float]
) -> None:
    """``continuum run``'s loop sleeps what ``next_action`` says between calls: the backoff
    of a provider error by consecutive failures, capped at ``MAX_BACKOFF_S``."""
    queue = list(replies)
    sleeps: list[float] = []

    def call(state: JobState) -> tuple[JobState, ProviderResponse]:
        return state, queue.pop(0)

    result = run_calls(
        start(JobSpec(prompt="Write.", format=OutputFormat.TEXT)),
        call,
        sleep=sleeps.append,
        rng=Fixed(1.0),
    )
    assert result.outcome is Outcome.SUCCEEDED and result.output == "The whole text."
    assert sleeps == slept and all(s <= MAX_BACKOFF_S for s in sleeps)
