"""Validation of the final JSON and the repair phase (docs/engine.md, "Validation and repair").

``core.review(state, text)`` runs on a complete output when the engine says
``Finish(review=True)``; it finishes, or asks for a repair (a Retry whose messages feed the
exact error back). The repair reply goes through ``advance`` like any other reply.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core import (
    Decision,
    Fallback,
    Finish,
    JobSpec,
    JobState,
    OutputRef,
    ProviderResponse,
    Retry,
    advance,
    review,
    start,
)
from core.models import FinishReason, OutputFormat, ValidationOptions
from core.repair import MAX_REPAIR_CHARS

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["items"],
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "integer"}},
            },
        }
    },
}
ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name"],
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
}
VALID = json.dumps({"items": [{"id": 1}, {"id": 2}]})
INVALID = json.dumps({"items": [{"id": 1}, {"id": "two"}]})
INVALID_ERROR = "at $['items'][1]['id']: \"two\" is not of type \"integer\""


def spec(**validation: Any) -> JobSpec:
    return JobSpec(
        prompt="List the items as JSON.",
        format=OutputFormat.JSON,
        validation=ValidationOptions(**validation),
    )


def reply(text: str, reason: str | None = "stop") -> ProviderResponse:
    return ProviderResponse(
        text=text, finish_reason=None if reason is None else FinishReason(reason)
    )


def generated(job: JobSpec, text: str) -> tuple[JobState, Finish]:
    """The state after a complete first reply, and the engine's Finish."""
    state, decision = advance(start(job), reply(text))
    assert isinstance(decision, Finish)
    return state, decision


def run_repairs(job: JobSpec, first: str, *repairs: str) -> tuple[JobState, list[Decision], str]:
    """A worker's loop from the first reply through review and repair replies.

    Returns the final state, every decision (engine's and review's) and the output.
    """
    state, decision = advance(start(job), reply(first))
    decisions: list[Decision] = [decision]
    output = ""
    pending = list(repairs)
    while True:
        if isinstance(decision, Finish):
            output = decision.append if decision.replace else output + decision.append
            if not decision.review:
                output = output[: decision.output.prefix] + decision.output.suffix
                return state, decisions, output
            state, decision = review(state, output[: decision.output.prefix])
        elif isinstance(decision, Retry):
            assert pending, "a repair was asked for but the test has no reply left"
            state, decision = advance(state, reply(pending.pop(0)))
        else:
            return state, decisions, output
        decisions.append(decision)


# -- max_repair_attempts (docs/engine.md, "Validation and repair") -----------------------


def test_zero_repair_attempts_skips_validation() -> None:
    """0: the output is returned as the model gave it; no review is even asked for."""
    job = spec(json_schema=SCHEMA, max_repair_attempts=0)
    state, finish = generated(job, INVALID)
    assert not finish.review
    again, decision = review(state, INVALID)
    assert isinstance(decision, Finish) and not decision.replace
    assert again.metadata.validation_errors == []


def test_one_repair_attempt_validates_without_retrying() -> None:
    """1: validate; an invalid output fails the job, kept, with the schema's error."""
    job = spec(json_schema=SCHEMA, max_repair_attempts=1)
    state, finish = generated(job, INVALID)
    assert finish.review
    after, decision = review(state, INVALID)
    assert isinstance(decision, Fallback) and decision.failed
    assert decision.reason == f"the output does not match the schema: {INVALID_ERROR}"
    assert decision.output == OutputRef(prefix=len(INVALID))
    assert after.metadata.validation_errors == [INVALID_ERROR]
    assert after.repairs == 0


@pytest.mark.parametrize("attempts", [2, 3, 5])
def test_n_repair_attempts_allow_n_minus_one_repair_calls(attempts: int) -> None:
    """N: up to N-1 repair calls; then the job fails, its output kept, errors recorded."""
    job = spec(json_schema=SCHEMA, max_repair_attempts=attempts)
    state, decisions, output = run_repairs(job, INVALID, *[INVALID] * 10)
    retries = [d for d in decisions if isinstance(d, Retry)]
    assert len(retries) == attempts - 1
    assert state.repairs == attempts - 1
    assert output == INVALID
    assert state.metadata.validation_errors == [INVALID_ERROR] * attempts
    assert isinstance(decisions[-1], Fallback) and decisions[-1].failed


def test_valid_output_needs_no_repair() -> None:
    job = spec(json_schema=SCHEMA)
    state, _ = generated(job, VALID)
    after, decision = review(state, VALID)
    assert isinstance(decision, Finish) and not decision.replace and not decision.review
    assert after.metadata.validation_errors == []


def test_no_schema_means_no_review() -> None:
    """Without a schema there is nothing to validate: Finish without review."""
    _, finish = generated(spec(), INVALID)
    assert not finish.review


# -- the repair request and its reply ----------------------------------------------------


def test_repair_prompt_feeds_back_the_exact_error_and_the_output() -> None:
    """The failed output as the assistant turn, then the exact error."""
    job = spec(json_schema=SCHEMA, max_repair_attempts=2)
    state, _ = generated(job, INVALID)
    after, decision = review(state, INVALID)
    assert isinstance(decision, Retry) and not decision.backoff
    assert after.phase == "repair"
    messages = decision.messages
    assert messages[0].role == "system"  # the format stated, as in every request
    assert messages[1].content == "List the items as JSON."
    assert (messages[-2].role, messages[-2].content) == ("assistant", INVALID)
    assert messages[-1].role == "user"
    assert f"Your previous output had an error: {INVALID_ERROR}" in messages[-1].content
    assert "Output ONLY the corrected JSON" in messages[-1].content
    assert INVALID_ERROR in decision.reason


def test_output_that_is_not_json_is_sent_for_repair_with_the_parse_error() -> None:
    job = spec(json_schema=SCHEMA, max_repair_attempts=2)
    state, _ = generated(job, VALID)
    after, decision = review(state, '{"items": [1,]}')
    assert isinstance(decision, Retry)
    assert "not valid JSON" in after.metadata.validation_errors[0]
    assert after.metadata.validation_errors[0] in decision.messages[-1].content


def test_a_complete_repair_reply_replaces_the_output_and_is_reviewed_again() -> None:
    """A complete repair reply: Finish(replace=True, review=True); the review then passes."""
    job = spec(json_schema=SCHEMA, max_repair_attempts=2)
    state, _ = generated(job, INVALID)
    state, retry = review(state, INVALID)
    assert isinstance(retry, Retry)
    state, decision = advance(state, reply(VALID))
    assert isinstance(decision, Finish)
    assert decision.replace and decision.review
    assert decision.append == VALID and decision.output == OutputRef(prefix=len(VALID))
    assert state.phase == "generate"
    state, final = review(state, VALID)
    assert isinstance(final, Finish) and not final.review


def test_repair_reply_wrapped_in_a_fence_and_prose_is_accepted() -> None:
    """The repair reply's code fence and preamble are stripped like any JSON reply."""
    job = spec(json_schema=SCHEMA, max_repair_attempts=2)
    _, decisions, output = run_repairs(
        job, INVALID, f"Here is the corrected JSON:\n```json\n{VALID}\n```"
    )
    assert output == VALID
    assert isinstance(decisions[-1], Finish)


@pytest.mark.parametrize(
    "repair",
    [
        reply(VALID[:20], "length"),  # truncated
        reply("Sorry, I cannot fix that."),  # not JSON
        reply(VALID, "error"),  # provider error
        reply(VALID, None),  # malformed
    ],
    ids=["truncated", "not-json", "error", "malformed"],
)
def test_an_unusable_repair_reply_keeps_the_original_output(repair: ProviderResponse) -> None:
    """A repair that is not complete JSON changes nothing: the original, still invalid, is
    kept and the job fails with the schema's error."""
    job = spec(json_schema=SCHEMA, max_repair_attempts=3)
    state, _ = generated(job, INVALID)
    state, retry = review(state, INVALID)
    assert isinstance(retry, Retry)
    state, decision = advance(state, repair)
    assert isinstance(decision, Fallback) and decision.failed and decision.append == ""
    assert INVALID_ERROR in decision.reason
    assert decision.output == OutputRef(prefix=len(INVALID))
    assert state.metadata.validation_errors == [INVALID_ERROR]
    assert any("keeping the output" in w for w in state.metadata.warnings)


def test_repair_calls_are_accounted_like_any_call() -> None:
    job = spec(json_schema=SCHEMA, max_repair_attempts=2)
    state, _, _ = run_repairs(job, INVALID, VALID)
    assert state.iteration == 2
    assert state.metadata.finish_reasons == ["stop", "stop"]


def test_too_large_an_output_is_not_sent_back_for_repair() -> None:
    """A reply could not hold a corrected copy of a huge output: keep it, record the error."""
    big = json.dumps({"items": [{"id": "x" * 100} for _ in range(MAX_REPAIR_CHARS // 100)]})
    job = spec(json_schema=SCHEMA, max_repair_attempts=3)
    state, _ = generated(job, big)
    after, decision = review(state, big)
    assert isinstance(decision, Fallback) and decision.failed
    assert after.repairs == 0
    assert len(after.metadata.validation_errors) == 1


# -- lenient items -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items_key", "wrap"),
    [
        (None, lambda items: items),
        ("items", lambda items: {"title": "t", "items": items}),
    ],
    ids=["top-level-array", "items-key"],
)
def test_malformed_items_are_dropped_with_one_warning_each(
    items_key: str | None, wrap: Any
) -> None:
    """Lenient items: bad items go, one warning each; the filtered document replaces it."""
    items = [
        {"id": 1, "name": "a"},
        {"id": "2", "name": "b"},
        {"id": 3},
        {"id": 4, "name": "d"},
        7,
    ]
    text = json.dumps(wrap(items))
    job = spec(item_schema=ITEM_SCHEMA, items_key=items_key)
    state, finish = generated(job, text)
    assert finish.review
    after, decision = review(state, text)
    assert isinstance(decision, Finish)
    assert decision.replace and not decision.review
    assert decision.output == OutputRef(prefix=len(decision.append))
    assert json.loads(decision.append) == wrap([items[0], items[3]])
    dropped = [w for w in after.metadata.warnings if "dropped" in w]
    assert [w.split(" dropped")[0] for w in dropped] == ["item 1", "item 2", "item 4"]


def test_all_items_valid_keeps_the_output_untouched() -> None:
    text = json.dumps([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    state, _ = generated(spec(item_schema=ITEM_SCHEMA), text)
    after, decision = review(state, text)
    assert isinstance(decision, Finish) and not decision.replace
    assert after.metadata.warnings == []


def test_zero_valid_items_fails_the_job() -> None:
    """If no item survives, the operation fails."""
    text = json.dumps([{"id": "x"}, 3, {"name": "no id"}])
    state, _ = generated(spec(item_schema=ITEM_SCHEMA), text)
    after, decision = review(state, text)
    assert isinstance(decision, Fallback)
    assert decision.failed and decision.output is None
    assert after.metadata.validation_errors == ["no valid items"]


def test_missing_items_array_is_a_validation_error() -> None:
    """The item schema names an array that is not there: ask for a repair."""
    text = json.dumps({"rows": []})
    job = spec(item_schema=ITEM_SCHEMA, items_key="items", max_repair_attempts=2)
    state, _ = generated(job, text)
    after, decision = review(state, text)
    assert isinstance(decision, Retry)
    assert "no array of items at key 'items'" in after.metadata.validation_errors[0]


def test_lenient_items_and_schema_together() -> None:
    """Items are filtered first; the filtered document is then checked against the schema."""
    text = json.dumps({"items": [{"id": 1, "name": "a"}, {"id": "x", "name": "b"}]})
    job = spec(item_schema=ITEM_SCHEMA, items_key="items", json_schema=SCHEMA)
    state, _ = generated(job, text)
    after, decision = review(state, text)
    assert isinstance(decision, Finish) and decision.replace
    assert json.loads(decision.append) == {"items": [{"id": 1, "name": "a"}]}
    assert after.metadata.validation_errors == []


@pytest.mark.parametrize(
    ("on_invalid", "failed"), [("raise_error", True), ("return_partial", False)]
)
def test_an_output_still_invalid_after_the_repairs_is_never_a_success(
    on_invalid: str, failed: bool
) -> None:
    """After the last repair the job ends failed (the default) or partial, never
    succeeded; the output is kept and the reason names the schema's error."""
    job = spec(json_schema=SCHEMA, max_repair_attempts=2, on_invalid=on_invalid)
    state, decisions, output = run_repairs(job, INVALID, INVALID)
    assert output == INVALID
    last = decisions[-1]
    assert isinstance(last, Fallback) and last.failed is failed
    assert last.reason == f"the output does not match the schema after 1 repair(s): {INVALID_ERROR}"
    assert state.metadata.fallback_used and state.metadata.fallback_reason == last.reason


def test_an_output_whose_kept_items_still_fail_the_schema_fails() -> None:
    """Items dropped, the rest still fails the whole schema: the model's own output is kept
    and the job fails (no repair is asked of a text the model never wrote)."""
    text = json.dumps({"items": [{"id": 1, "name": "a"}, {"id": "x"}]})
    whole = {"type": "object", "required": ["items", "total"]}
    job = spec(item_schema=ITEM_SCHEMA, items_key="items", json_schema=whole)
    state, _ = generated(job, text)
    after, decision = review(state, text)
    assert isinstance(decision, Fallback) and decision.failed
    assert decision.output == OutputRef(prefix=len(text))
    assert after.metadata.validation_errors == ['at $: "total" is a required property']
