"""The Responses API adapter against a local, stateful stand-in for ``/v1/responses``:
the payload, stateful continuation with ``previous_response_id``, and status mapping."""

from __future__ import annotations

import pytest

from core.models import FinishReason, Message
from tests.integration.providers.provider_fakes import (
    DOCUMENT,
    ResponsesFake,
    Served,
    ask,
    responses_body,
    tokens,
)
from workers.errors import FatalError, PreviousResponseNotFound
from workers.providers.base import CallRequest

SYSTEM = Message(role="system", content="You write lists.")
FIRST = [SYSTEM, Message(role="user", content="Write the list.")]


def message(text: str) -> dict[str, object]:
    return {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "annotations": [], "text": text}],
    }


def test_the_first_call_sends_instructions_input_and_max_output_tokens(
    responses: Served[ResponsesFake],
) -> None:
    """System messages become instructions; the others the input, in order."""
    conversation = [
        *FIRST,
        Message(role="assistant", content="a"),
        Message(role="user", content="b"),
    ]
    responses.provider().complete(CallRequest(messages=conversation, max_output_tokens=64))
    body = responses.fake.requests[-1].body
    assert body["model"] == "gpt-4.1-mini"
    assert body["instructions"] == "You write lists."
    assert body["input"] == [
        {"role": "user", "content": "Write the list."},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "b"},
    ]
    assert body["max_output_tokens"] == 64
    assert "previous_response_id" not in body


def test_stateful_continuation_sends_only_the_last_user_message(
    responses: Served[ResponsesFake],
) -> None:
    """Cut, then continued by id twice: each continuation carries the id, the instructions
    and only the last user message; the fragments make the whole document."""
    provider = responses.provider()
    first = provider.complete(CallRequest(messages=FIRST, max_output_tokens=25))
    assert first.finish_reason is FinishReason.LENGTH
    assert first.incomplete_details == {"reason": "max_output_tokens"}
    texts, previous = [first.text], first.response_id
    history = list(FIRST)
    for _ in range(2):
        history += [
            Message(role="assistant", content=texts[-1]),
            Message(role="user", content="Continue exactly where you stopped."),
        ]
        reply = provider.complete(
            CallRequest(messages=history, max_output_tokens=25, previous_response_id=previous)
        )
        body = responses.fake.requests[-1].body
        assert body["previous_response_id"] == previous
        assert body["input"] == [{"role": "user", "content": "Continue exactly where you stopped."}]
        assert body["instructions"] == "You write lists."
        texts.append(reply.text)
        previous = reply.response_id
    assert reply.finish_reason is FinishReason.STOP
    assert "".join(texts) == DOCUMENT


def test_an_unknown_previous_response_says_so(responses: Served[ResponsesFake]) -> None:
    """An expired or unstored id: PreviousResponseNotFound, so the caller resends it all."""
    with pytest.raises(PreviousResponseNotFound) as caught:
        responses.provider().complete(ask(previous_response_id="resp_gone"))
    assert caught.value.status == 400 and "resp_gone" in str(caught.value)


def test_a_continuation_without_a_user_message_is_refused_before_the_call(
    responses: Served[ResponsesFake],
) -> None:
    request = CallRequest(messages=[SYSTEM], max_output_tokens=20, previous_response_id="r")
    with pytest.raises(FatalError, match="user message"):
        responses.provider().complete(request)
    assert responses.fake.requests == []


def test_a_limit_below_the_apis_minimum_is_raised_to_it(responses: Served[ResponsesFake]) -> None:
    """The API refuses max_output_tokens < 16; the adapter sends 16."""
    reply = responses.provider().complete(ask(max_output_tokens=5))
    assert responses.fake.requests[-1].body["max_output_tokens"] == 16
    assert reply.text == "".join(tokens(DOCUMENT)[:16])


def test_a_reasoning_model_that_thought_away_its_budget_gives_an_empty_length(
    responses: Served[ResponsesFake],
) -> None:
    """Reasoning models can return an empty partial: `length`, no text, usage counted."""
    responses.fake.reasoning_tokens = 40
    reply = responses.provider().complete(ask(max_output_tokens=30))
    assert reply.finish_reason is FinishReason.LENGTH and reply.text == ""
    assert reply.usage.output_tokens == 40 and reply.response_id


@pytest.mark.parametrize(
    ("status", "details", "expected"),
    [
        ("completed", None, FinishReason.STOP),
        ("incomplete", {"reason": "max_output_tokens"}, FinishReason.LENGTH),
        ("incomplete", {"reason": "content_filter"}, FinishReason.CONTENT_FILTER),
        ("incomplete", {"reason": "something_new"}, FinishReason.INCOMPLETE),
        ("in_progress", None, FinishReason.INCOMPLETE),
        ("failed", None, FinishReason.ERROR),
        ("mystery", None, None),
    ],
)
def test_status_and_incomplete_reason_map_onto_the_table(
    responses: Served[ResponsesFake],
    status: str,
    details: dict[str, str] | None,
    expected: FinishReason | None,
) -> None:
    body = responses_body("resp_1", "gpt-4.1-mini", [message("partial")], out=5)
    body |= {"status": status, "incomplete_details": details}
    if status == "failed":
        body["error"] = {"code": "server_error", "message": "The model failed to respond."}
    responses.fake.json(body)
    reply = responses.provider().complete(ask())
    assert reply.finish_reason is expected
    assert reply.text == "partial" and reply.incomplete_details == details
    if status == "failed":
        assert reply.error == "The model failed to respond."


def test_a_refusal_part_is_a_content_filter(responses: Served[ResponsesFake]) -> None:
    item = message("")
    item["content"] = [{"type": "refusal", "refusal": "I can't help with that."}]
    responses.fake.json(responses_body("resp_2", "gpt-4.1-mini", [item]))
    reply = responses.provider().complete(ask())
    assert reply.finish_reason is FinishReason.CONTENT_FILTER
    assert reply.incomplete_details == {"reason": "refusal", "refusal": "I can't help with that."}


def test_a_function_call_is_tool_calls(responses: Served[ResponsesFake]) -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "f",
        "arguments": "{}",
        "status": "completed",
    }
    responses.fake.json(responses_body("resp_3", "gpt-4.1-mini", [call]))
    assert responses.provider().complete(ask()).finish_reason is FinishReason.TOOL_CALLS


def test_text_is_every_output_text_part_in_order(responses: Served[ResponsesFake]) -> None:
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": []}
    two = message("one ")
    two["content"].append({"type": "output_text", "annotations": [], "text": "two"})  # type: ignore[attr-defined]
    responses.fake.json(
        responses_body("resp_4", "gpt-4.1-mini", [reasoning, two, message(" three")])
    )
    assert responses.provider().complete(ask()).text == "one two three"
