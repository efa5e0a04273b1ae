"""The Messages API adapter against a local stand-in for ``/v1/messages``: system handling,
stop reasons, and assistant prefill, including the newer models' refusal of it."""

from __future__ import annotations

import random

import pytest

from core.models import FinishReason, Message
from tests.integration.providers.provider_fakes import (
    DOCUMENT,
    AnthropicFake,
    Served,
    anthropic_message,
    ask,
)
from workers.errors import FatalError, PrefillUnsupported, TransientError
from workers.providers.base import CallRequest, uses_prefill
from workers.providers.retry import call_with_retries

CONVERSATION = [
    Message(role="system", content="You write lists."),
    Message(role="user", content="Write the list."),
    Message(role="assistant", content="word0 word1"),
    Message(role="system", content="Plain text only."),
    Message(role="user", content="Continue."),
]


def test_system_messages_go_top_level_and_the_rest_keep_their_order(
    anthropic: Served[AnthropicFake],
) -> None:
    anthropic.provider().complete(CallRequest(messages=CONVERSATION, max_output_tokens=99))
    body = anthropic.fake.requests[-1].body
    assert body["system"] == "You write lists.\n\nPlain text only."
    assert body["messages"] == [
        {"role": "user", "content": "Write the list."},
        {"role": "assistant", "content": "word0 word1"},
        {"role": "user", "content": "Continue."},
    ]
    assert body["max_tokens"] == 99 and body["model"] == "claude-x"


def test_no_system_message_sends_no_system_field(anthropic: Served[AnthropicFake]) -> None:
    anthropic.provider().complete(ask())
    assert "system" not in anthropic.fake.requests[-1].body


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("end_turn", FinishReason.STOP),
        ("stop_sequence", FinishReason.STOP),
        ("max_tokens", FinishReason.LENGTH),
        ("model_context_window_exceeded", FinishReason.LENGTH),
        ("tool_use", FinishReason.TOOL_CALLS),
        ("refusal", FinishReason.CONTENT_FILTER),
        ("pause_turn", FinishReason.INCOMPLETE),
        (None, None),
        ("mystery", None),
    ],
)
def test_stop_reasons_map_onto_the_table(
    anthropic: Served[AnthropicFake], raw: str | None, expected: FinishReason | None
) -> None:
    content = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "part "},
        {"type": "text", "text": "two"},
    ]
    anthropic.fake.json(anthropic_message("msg_1", "claude-x", content, raw, out=4))
    reply = anthropic.provider().complete(ask())
    assert reply.finish_reason is expected
    assert reply.text == "part two"
    assert (reply.error is not None) == (raw == "mystery")


def test_a_prefill_is_sent_stripped_and_returned_in_front_of_the_reply(
    anthropic: Served[AnthropicFake],
) -> None:
    """The prefill ends the messages (trailing whitespace stripped: the API refuses it);
    the reply is prefill + continuation, i.e. the document from the prefill on."""
    provider = anthropic.provider()
    request = ask(prefill="word10 word11 \n", max_output_tokens=5)
    assert uses_prefill(provider.profile, request)
    reply = provider.complete(request)
    body = anthropic.fake.requests[-1].body
    assert body["messages"][-1] == {"role": "assistant", "content": "word10 word11"}
    assert reply.text == "word10 word11 word12 word13 word14 word15 word16"
    assert DOCUMENT.index(reply.text) == DOCUMENT.index("word10")
    assert reply.finish_reason is FinishReason.LENGTH


def test_a_profile_without_prefill_sends_none(anthropic: Served[AnthropicFake]) -> None:
    provider = anthropic.provider(prefill=False)
    request = ask(prefill="word10 word11")
    assert not uses_prefill(provider.profile, request)
    assert provider.complete(request).text == DOCUMENT
    assert [m["role"] for m in anthropic.fake.requests[-1].body["messages"]] == ["user"]


def test_a_refused_prefill_raises_and_the_fallback_without_it_works(
    anthropic: Served[AnthropicFake],
) -> None:
    """A newer model's 400 is PrefillUnsupported (not retried); the adapter remembers the
    model, so the next prefill fails without a round trip; without prefill, a "continue"
    turn is served."""
    anthropic.fake.refuses_prefill = True
    provider = anthropic.provider()
    delays: list[float] = []
    with pytest.raises(PrefillUnsupported) as caught:
        call_with_retries(
            provider, ask(prefill="word10"), sleep=delays.append, rng=random.Random(0)
        )
    assert caught.value.status == 400 and "does not support assistant message prefill" in str(
        caught.value
    )
    assert delays == [] and len(anthropic.fake.requests) == 1
    with pytest.raises(PrefillUnsupported):
        provider.complete(ask(prefill="word20"))
    assert len(anthropic.fake.requests) == 1
    fallback = CallRequest(
        messages=[
            Message(role="user", content="Write the list."),
            Message(role="assistant", content="word0 word1 word2"),
            Message(role="user", content="Continue from 'word2', repeating it."),
        ],
        max_output_tokens=1000,
    )
    reply = provider.complete(fallback)
    assert reply.finish_reason is FinishReason.STOP and reply.text == DOCUMENT
    assert anthropic.fake.requests[-1].body["messages"][-1]["role"] == "user"


def test_overloaded_529_is_transient(anthropic: Served[AnthropicFake]) -> None:
    anthropic.fake.server_error(529)
    with pytest.raises(TransientError) as caught:
        anthropic.provider().complete(ask())
    assert caught.value.status == 529 and "overloaded_error" in str(caught.value)


def test_a_spend_limit_429_is_fatal(anthropic: Served[AnthropicFake]) -> None:
    """The monthly spend cap shares rate_limit_error's type; its error_code says wait is useless."""
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "You have reached your specified API usage limits.",
            "details": {"error_code": "enforced_spend_limit_reached"},
        },
        "request_id": "req_011C1",
    }
    anthropic.fake.json(body, status=429)
    with pytest.raises(FatalError, match="out of quota") as caught:
        anthropic.provider().complete(ask())
    assert not isinstance(caught.value, TransientError)


def test_cached_prompt_tokens_count_as_input(anthropic: Served[AnthropicFake]) -> None:
    body = anthropic_message("msg_2", "claude-x", [{"type": "text", "text": "x"}], "end_turn")
    body["usage"] |= {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1}
    anthropic.fake.json(body)
    reply = anthropic.provider().complete(ask())
    assert reply.usage.input_tokens == 105 and reply.usage.output_tokens == 1
