"""The Chat Completions adapter against a local stand-in for ``/v1/chat/completions``:
what it sends, how each ``finish_reason`` maps, and the compatible-server quirks."""

from __future__ import annotations

import json
import random

import httpx
import pytest

from core.models import FinishReason, Message
from tests.integration.providers.provider_fakes import (
    DOCUMENT,
    ChatFake,
    Served,
    ask,
    chat_completion,
    tokens,
)
from workers.errors import FatalError, PrefillUnsupported, TransientError
from workers.providers.base import CallRequest
from workers.providers.profiles import Profile
from workers.providers.registry import make_provider
from workers.providers.retry import call_with_retries

CONVERSATION = [
    Message(role="system", content="You write lists."),
    Message(role="user", content="Write the list."),
    Message(role="assistant", content="word0 word1"),
    Message(role="user", content="Continue."),
]


def test_the_payload_has_model_messages_in_order_and_max_tokens(chat: Served[ChatFake]) -> None:
    """Every message in its order and role; the limit in max_tokens on a compatible server."""
    chat.provider().complete(CallRequest(messages=CONVERSATION, max_output_tokens=77))
    body = chat.fake.requests[-1].body
    assert body["model"] == "gpt-4.1-mini"
    assert body["messages"] == [{"role": m.role, "content": m.content} for m in CONVERSATION]
    assert body["max_tokens"] == 77 and "max_completion_tokens" not in body


def test_the_job_model_wins_over_the_profile_default(chat: Served[ChatFake]) -> None:
    reply = chat.provider().complete(ask(model="local-llama"))
    assert chat.fake.requests[-1].body["model"] == "local-llama"
    assert reply.model == "local-llama"


def test_openai_itself_gets_max_completion_tokens() -> None:
    """On api.openai.com the limit goes in max_completion_tokens (newer models refuse
    max_tokens); nothing is sent over the network here: a mock transport answers."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=chat_completion("c1", "gpt-4.1-mini", "Hi.", "stop"))

    profile = Profile(name="openai", kind="openai", api_key_env="OPENAI_API_KEY", model="gpt-x")
    env = {"OPENAI_API_KEY": "sk-test-public-endpoint-0001"}
    provider = make_provider(profile, env=env, transport=httpx.MockTransport(handle))
    try:
        assert provider.complete(ask(max_output_tokens=50)).text == "Hi."
    finally:
        provider.close()
    assert str(seen[0].url) == "https://api.openai.com/v1/chat/completions"
    body = json.loads(seen[0].content)
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body


def test_the_profile_can_choose_the_limit_field(chat: Served[ChatFake]) -> None:
    chat.provider(max_tokens_field="max_completion_tokens").complete(ask(max_output_tokens=40))
    body = chat.fake.requests[-1].body
    assert body["max_completion_tokens"] == 40 and "max_tokens" not in body


def test_a_model_refusing_max_tokens_is_asked_again_with_the_other_field_once(
    chat: Served[ChatFake],
) -> None:
    """The 400 "Unsupported parameter: 'max_tokens'" switches the field for that model,
    and the adapter remembers: the next call sends the right one at once."""
    chat.fake.reasoning = True
    provider = chat.provider()
    assert provider.complete(ask(max_output_tokens=30)).finish_reason is FinishReason.LENGTH
    assert provider.complete(ask(max_output_tokens=30)).finish_reason is FinishReason.LENGTH
    sent = [r.body for r in chat.fake.requests]
    assert ["max_tokens" in b for b in sent] == [True, False, False]
    assert [b.get("max_completion_tokens") for b in sent] == [None, 30, 30]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("stop", FinishReason.STOP),
        ("length", FinishReason.LENGTH),
        ("content_filter", FinishReason.CONTENT_FILTER),
        ("tool_calls", FinishReason.TOOL_CALLS),
        ("function_call", FinishReason.TOOL_CALLS),
        ("error", FinishReason.ERROR),
        (None, None),
        ("mystery", None),
    ],
)
def test_finish_reasons_map_onto_the_normalised_table(
    chat: Served[ChatFake], raw: str | None, expected: FinishReason | None
) -> None:
    """Each finish_reason (docs/providers.md, "Finish reasons"), and a missing or unknown
    one is None (malformed)."""
    chat.fake.json(chat_completion("chatcmpl-9", "gpt-4.1-mini", "partial", raw, out=7))
    reply = chat.provider().complete(ask())
    assert reply.finish_reason is expected
    assert reply.text == "partial"
    assert (reply.error is not None) == (raw == "mystery")


def test_a_refusal_is_a_content_filter_with_the_reason_kept(chat: Served[ChatFake]) -> None:
    body = chat_completion("chatcmpl-2", "gpt-4.1-mini", None, "stop", out=9)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    chat.fake.json(body)
    reply = chat.provider().complete(ask())
    assert reply.finish_reason is FinishReason.CONTENT_FILTER and reply.text == ""
    assert reply.incomplete_details == {"reason": "refusal", "refusal": "I can't help with that."}


def test_a_reply_without_choices_has_no_finish_reason(chat: Served[ChatFake]) -> None:
    body = chat_completion("chatcmpl-3", "gpt-4.1-mini", "x", "stop")
    body["choices"] = []
    chat.fake.json(body)
    reply = chat.provider().complete(ask())
    assert reply.finish_reason is None and reply.error == "the reply has no choices"


def test_a_server_saying_stop_at_the_token_limit_is_taken_as_cut(chat: Served[ChatFake]) -> None:
    """Ollama reports `stop` for a reply cut at max_tokens: usage at the limit means length."""
    chat.fake.says_stop_when_cut = True
    reply = chat.provider().complete(ask(max_output_tokens=20))
    assert reply.finish_reason is FinishReason.LENGTH
    assert reply.incomplete_details is not None
    assert reply.incomplete_details["reason"] == "max_output_tokens"
    whole = chat.provider().complete(ask(max_output_tokens=1000))
    assert whole.finish_reason is FinishReason.STOP


def test_vllm_continues_an_open_assistant_message_exactly(chat: Served[ChatFake]) -> None:
    """With continue_final_message the prefill (trailing space stripped) is continued, and
    the reply's text is prefill + continuation: the document, without a seam."""
    chat.fake.vllm = True
    prefill = "word10 word11 "
    reply = chat.provider(continue_final_message=True).complete(
        ask(prefill=prefill, max_output_tokens=5)
    )
    body = chat.fake.requests[-1].body
    assert body["messages"][-1] == {"role": "assistant", "content": "word10 word11"}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    start = DOCUMENT.index("word10")
    assert reply.text == DOCUMENT[start : start + len(reply.text)]
    assert reply.text == "word10 word11 word12 word13 word14 word15 word16"


def test_without_continue_final_message_a_prefill_is_not_sent(chat: Served[ChatFake]) -> None:
    """Plain Chat Completions has no prefill: the request is the messages as given."""
    reply = chat.provider().complete(ask(prefill="word10 word11"))
    body = chat.fake.requests[-1].body
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert "continue_final_message" not in body
    assert reply.text == DOCUMENT


STRICT_SERVER_422 = {  # a FastAPI server whose request model forbids unknown fields
    "detail": [
        {
            "type": "extra_forbidden",
            "loc": ["body", "continue_final_message"],
            "msg": "Extra inputs are not permitted",
            "input": True,
        }
    ]
}


@pytest.mark.parametrize("server", ["openai", "vllm-template", "strict-422"])
def test_a_server_that_cannot_continue_the_message_raises_prefill_unsupported_once(
    chat: Served[ChatFake], server: str
) -> None:
    """A 400/422 about continue_final_message (a server that does not know it, a chat
    template that cannot continue the message) is PrefillUnsupported, not retried; the
    adapter remembers the model, so the next prefill fails without a round trip, and a
    call without one is served."""
    chat.fake.vllm = chat.fake.template_drops_final = server == "vllm-template"
    if server == "strict-422":
        chat.fake.json(STRICT_SERVER_422, status=422)
    provider = chat.provider(continue_final_message=True)
    delays: list[float] = []
    with pytest.raises(PrefillUnsupported) as caught:
        call_with_retries(
            provider, ask(prefill="word10"), sleep=delays.append, rng=random.Random(0)
        )
    assert caught.value.status in (400, 422) and "continue_final_message" in str(caught.value)
    assert delays == [] and len(chat.fake.requests) == 1
    with pytest.raises(PrefillUnsupported, match="refused earlier"):
        provider.complete(ask(prefill="word20"))
    assert len(chat.fake.requests) == 1
    assert provider.complete(ask()).text == DOCUMENT
    assert "continue_final_message" not in chat.fake.requests[-1].body


def test_an_empty_quota_is_fatal_although_it_is_a_429(chat: Served[ChatFake]) -> None:
    """429 insufficient_quota: waiting cannot help, so no retries."""
    message = (
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors."
    )
    error = {"message": message, "type": "insufficient_quota", "param": None}
    chat.fake.json({"error": error | {"code": "insufficient_quota"}}, status=429)
    delays: list[float] = []
    with pytest.raises(FatalError, match="out of quota"):
        call_with_retries(chat.provider(), ask(), sleep=delays.append, rng=random.Random(0))
    assert delays == []


def test_a_bad_gateway_is_transient_without_retry_after(chat: Served[ChatFake]) -> None:
    chat.fake.server_error(502)
    with pytest.raises(TransientError) as caught:
        chat.provider().complete(ask())
    assert caught.value.status == 502 and caught.value.retry_after is None


def test_the_documents_tokens_are_what_the_fake_counts() -> None:
    assert "".join(tokens(DOCUMENT)) == DOCUMENT


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (  # vLLM's own error shape
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            "HTTP 400 BadRequestError: This model's maximum context length is 4096 tokens.",
        ),
        (404, {"detail": "Not Found"}, "HTTP 404: Not Found"),  # a FastAPI server
        (404, {"error": "model 'llama9' not found"}, "HTTP 404: model 'llama9' not found"),
    ],
)
def test_compatible_servers_error_shapes_are_read(
    chat: Served[ChatFake], status: int, body: dict[str, object], expected: str
) -> None:
    chat.fake.json(body, status=status)
    chat.fake.sends_request_id = False  # nor do these servers send a request id
    with pytest.raises(FatalError) as caught:
        chat.provider().complete(ask())
    assert str(caught.value) == f"test-openai: {expected}"
