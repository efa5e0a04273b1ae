"""Exact continuation at the source: whole jobs (``workers.local.run_job``) against the
local fakes over real HTTP, with the profile options that continue the text itself rather
than asking the model to repeat it: ``continue_final_message`` (vLLM) and Anthropic's
assistant prefill, and the fallback to the plain continuation turn when the server refuses.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from core import JobSpec
from core.models import ContinuationConfig, OutputFormat
from core.prompts import REPEAT_CLOSE, REPEAT_OPEN
from tests.integration.providers.provider_fakes import (
    DOCUMENT,
    AnthropicFake,
    ChatFake,
    Fake,
    Served,
)
from workers.calls import ProviderPool
from workers.local import JobResult, Outcome, run_job


def run(served: Served[Any], *, tokens: int = 7, **profile: Any) -> JobResult:
    """A text job for the fake's document, served by one profile pointed at the fake."""
    chosen = served.profile(**profile)
    pool = ProviderPool({chosen.name: chosen}, env={})
    spec = JobSpec(
        prompt="Write the words.",
        format=OutputFormat.TEXT,
        providers=[chosen.name],
        max_output_tokens=tokens,
        continuation=ContinuationConfig(max_attempts=60, overlap_chars=20),
    )
    try:
        return run_job(spec, pool, sleep=lambda _: None)
    finally:
        pool.close()


def repeat_block(message: dict[str, str]) -> str:
    content = message["content"]
    start = content.rindex(REPEAT_OPEN) + len(REPEAT_OPEN)
    return content[start : content.index(REPEAT_CLOSE, start)]


def prefills(fake: Fake) -> list[str | None]:
    """Per request: the final assistant message's text, None when it ends with a user turn."""
    return [
        m[-1]["content"] if (m := r.body["messages"])[-1]["role"] == "assistant" else None
        for r in fake.requests
    ]


def test_a_vllm_job_sends_the_tail_as_an_open_assistant_message_and_ends_exact(
    chat: Served[ChatFake],
) -> None:
    """First call: the conversation alone. Every continuation: the continuation turn, then
    the text to repeat (trailing white space stripped) as an assistant message with
    ``continue_final_message: true, add_generation_prompt: false``; the server continues
    it exactly and the job ends with the document, with no seam in doubt."""
    chat.fake.vllm = True
    result = run(chat, continue_final_message=True)
    assert result.outcome is Outcome.SUCCEEDED and result.output == DOCUMENT
    meta = result.state.metadata
    assert meta.warnings == [] and meta.ambiguous_seams == 0 and meta.merge_failures == 0
    first, *continuations = [r.body for r in chat.fake.requests]
    assert [m["role"] for m in first["messages"]][-1:] == ["user"]
    assert "assistant" not in [m["role"] for m in first["messages"]]
    assert "continue_final_message" not in first and "add_generation_prompt" not in first
    assert len(continuations) >= 5
    for body in continuations:
        *_, turn, final = body["messages"]
        assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
        assert turn["role"] == "user" and final["role"] == "assistant"
        assert final["content"] == repeat_block(turn).rstrip() != ""
        assert final["content"] in DOCUMENT


def test_a_prefilled_job_needs_fewer_calls_than_one_that_asks_for_a_repeat(
    switchboard: tuple[Any, str],
) -> None:
    """The repeat is sent, not generated: the output limit goes to new text."""
    board, url = switchboard
    calls = {}
    for exact in (True, False):
        fake = board.fake = ChatFake()
        fake.vllm = True
        result = run(Served(fake, url), continue_final_message=exact)
        assert result.output == DOCUMENT
        calls[exact] = len(fake.requests)
    board.fake = None
    assert calls[True] < calls[False]


def test_an_anthropic_job_with_prefill_ends_exact(anthropic: Served[AnthropicFake]) -> None:
    result = run(anthropic)
    assert result.outcome is Outcome.SUCCEEDED and result.output == DOCUMENT
    assert result.state.metadata.warnings == [] and result.state.prefill
    sent = prefills(anthropic.fake)
    assert sent[0] is None and all(p and p == p.rstrip() for p in sent[1:])


def test_the_fake_vllm_continues_the_final_message_exactly_over_http(
    chat: Served[ChatFake],
) -> None:
    """What the adapter relies on, asked without it: only the text after the open message
    comes back; both flags true is vLLM's 400."""
    chat.fake.vllm = True
    body: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "Write the words."},
            {"role": "assistant", "content": "word0 word1 word2"},
        ],
        "max_tokens": 3,
        "continue_final_message": True,
        "add_generation_prompt": False,
    }
    with httpx.Client(base_url=chat.base_url) as client:
        reply = client.post("/chat/completions", json=body).json()
        assert reply["choices"][0]["message"]["content"] == " word3 word4 word5"
        assert reply["choices"][0]["finish_reason"] == "length"
        refused = client.post("/chat/completions", json=body | {"add_generation_prompt": True})
    assert refused.status_code == 400 and "Cannot set both" in refused.json()["message"]


REFUSALS = {
    "anthropic-newer-model": "does not support assistant message prefill",
    "openai-unknown-field": "Unrecognized request argument supplied: continue_final_message",
    "vllm-template": "the final message does not appear in the chat",
}


@pytest.mark.parametrize("server", list(REFUSALS))
def test_a_refused_prefill_falls_back_to_the_continuation_turn_for_the_rest_of_the_job(
    switchboard: tuple[Any, str], server: str
) -> None:
    """The refusal (a 400 with the server's own body) is neither retried nor a failure nor
    a provider fallback: one warning, then the same profile serves with the plain
    continuation turn (repeat + overlap merging) until the document is done."""
    board, url = switchboard
    fake: Fake
    if server == "anthropic-newer-model":
        fake = AnthropicFake()
        fake.refuses_prefill = True
        options: dict[str, Any] = {}
    else:
        fake = ChatFake()
        fake.vllm = fake.template_drops_final = server == "vllm-template"
        options = {"continue_final_message": True}
    board.fake = fake
    served = Served(fake, url)
    try:
        result = run(served, **options)
    finally:
        served.close()
        board.fake = None
    assert result.outcome is Outcome.SUCCEEDED and result.output == DOCUMENT
    meta = result.state.metadata
    assert meta.provider_fallbacks == [] and not result.state.prefill
    [warning] = meta.warnings
    assert REFUSALS[server] in warning and warning.endswith("continuing without assistant prefill")
    assert warning.startswith(f"{served.profile().name}: HTTP 400")  # named once
    sent = prefills(fake)
    assert sent[0] is None and sent[1] is not None  # the refused call
    assert sent[2:] == [None] * (len(sent) - 2) and len(sent) > 3
    # The call after the refusal is the same continuation turn, without the prefill.
    assert fake.requests[2].body["messages"] == fake.requests[1].body["messages"][:-1]


# A document that repeats itself: the end of what was delivered also occurs earlier.
PERIODIC = "status: ok\n" * 30 + "status: failed\n" + "status: ok\n" * 29 + "status: ok."


def test_an_exact_continuation_of_a_periodic_document_stays_exact(
    chat: Served[ChatFake],
) -> None:
    """A prefilled reply joins at the prefill's length: no repeat is searched for, so a
    document that repeats itself cannot mislead the seam."""
    chat.fake.vllm = True
    chat.fake.document = PERIODIC
    result = run(chat, tokens=40, continue_final_message=True)
    assert result.output == PERIODIC
