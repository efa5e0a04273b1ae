"""The Responses API bills a chained call for the whole conversation it continues; the
profile's ``chain_max_tokens`` bounds that by starting a new chain with the job's bounded
continuation prompt. Against the stateful fake over real HTTP, which bills as OpenAI does."""

from __future__ import annotations

from core.models import FinishReason, Message
from core.prompts import REPEAT_OPEN
from tests.integration.providers.chain_costs import measure
from tests.integration.providers.provider_fakes import (
    ChatFake,
    ResponsesFake,
    Served,
    Switchboard,
    count,
)
from workers.providers.base import CallRequest

FIRST = [
    Message(role="system", content="You write lists."),
    Message(role="user", content="Write the list."),
]
TURN = Message(role="user", content="Continue exactly where you stopped.")


def test_a_chained_call_is_billed_for_the_conversation_it_continues(
    responses: Served[ResponsesFake],
) -> None:
    """Input tokens: the instructions and the input sent, plus every earlier input and
    output of the chain (earlier instructions are not carried over)."""
    provider = responses.provider(chain_max_tokens=10_000)
    first = provider.complete(CallRequest(messages=FIRST, max_output_tokens=20))
    assert first.usage.input_tokens == count("You write lists.") + count("Write the list.") == 6
    second = provider.complete(
        CallRequest(
            messages=[*FIRST, TURN], max_output_tokens=20, previous_response_id=first.response_id
        )
    )
    conversation = count("Write the list.") + first.usage.output_tokens
    assert second.usage.input_tokens == conversation + count(TURN.content) + 3
    assert [r.input_tokens for r in responses.fake.requests] == [6, 3 + 20 + 5 + 3]


def test_a_reply_whose_conversation_reaches_the_bound_is_not_chained_from(
    responses: Served[ResponsesFake],
) -> None:
    """Input plus output at the bound: the reply comes back without its id, so the next
    call sends the whole bounded request without previous_response_id."""
    under = responses.provider(chain_max_tokens=6 + 20 + 1)
    assert under.complete(CallRequest(messages=FIRST, max_output_tokens=20)).response_id
    at = responses.provider(chain_max_tokens=6 + 20)
    reply = at.complete(CallRequest(messages=FIRST, max_output_tokens=20))
    assert reply.finish_reason is FinishReason.LENGTH and reply.response_id is None
    assert reply.text and reply.usage.input_tokens + reply.usage.output_tokens == 26


def test_a_bounded_chain_costs_a_bounded_amount_per_call_and_ends_exact(
    switchboard: tuple[Switchboard, str],
) -> None:
    """An 8 KB document, 100 output tokens a call: chained without bound, each call costs
    more than the last; with the bound, no call costs more than the bound plus one
    bounded prompt, and the whole job less; never chained, every call is what Chat
    Completions sends. Each job ends with the exact document (``measure`` checks it)."""
    board, url = switchboard
    chat = measure(board, url, ChatFake(), "chat")
    unbounded = measure(board, url, ResponsesFake(), "unbounded", chain_max_tokens=10**9)
    bounded = measure(board, url, ResponsesFake(), "bounded", chain_max_tokens=1000)
    never = measure(board, url, ResponsesFake(), "never", chain_max_tokens=0)

    assert all(a < b for a, b in zip(unbounded.inputs, unbounded.inputs[1:], strict=False))
    assert all(unbounded.chained[1:]) and max(unbounded.inputs) > 10 * max(chat.inputs)
    assert max(bounded.inputs) < 1000 + max(chat.inputs)
    assert bounded.chained.count(False) > 2  # the chain started again more than once
    assert bounded.total < unbounded.total / 2
    assert never.inputs == chat.inputs and not any(never.chained)


def test_a_new_chain_starts_with_the_jobs_bounded_request(
    switchboard: tuple[Switchboard, str],
) -> None:
    """The call that starts a new chain sends no previous_response_id but the job's whole
    continuation request: its prompt, then the continuation turn with the text to repeat."""
    board, url = switchboard
    fake = ResponsesFake()
    measure(board, url, fake, "bounded", chain_max_tokens=1000)
    restarts = [r.body for r in fake.requests[1:] if "previous_response_id" not in r.body]
    assert restarts
    for body in restarts:
        first, *_, last = body["input"]
        assert first == {"role": "user", "content": "Write the register."}
        assert last["role"] == "user" and REPEAT_OPEN in last["content"]
