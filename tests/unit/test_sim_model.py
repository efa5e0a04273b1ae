"""The simulated model: how it cuts, continues and misbehaves (one knob per test)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from core.models import JobSpec, Message, OutputFormat
from core.prompts import CONTINUE_MARK, continuation_messages, retry_anchor, retry_messages
from sim.conversation import locate
from sim.model import SimModel, think
from sim.options import SimOptions

PROMPT = "Write a long JSON document about harbours"
MARKER = re.compile(r"\[\[progress: (\d+)%\]\]\n")


def _body(messages: list[dict[str, str]], model: str, max_tokens: int = 100) -> dict[str, Any]:
    return {"model": model, "messages": messages, "max_tokens": max_tokens}


def first(sim: SimModel, model: str = "sim", max_tokens: int = 100) -> dict[str, Any]:
    result = sim.respond(_body([{"role": "user", "content": PROMPT}], model, max_tokens))
    assert result.status == 200, result.body
    return result.body


def next_request(delivered: int, repeat: str, model: str = "sim", max_tokens: int = 100) -> Any:
    """A continuation request exactly as the engine words it."""
    spec = JobSpec(prompt=PROMPT, format=OutputFormat.JSON)
    messages = continuation_messages(
        spec, OutputFormat.JSON, overlap=repeat, context="", delivered=f"{delivered:,} characters"
    )
    return _body([m.model_dump() for m in messages], model, max_tokens)


def content(body: dict[str, Any]) -> str:
    text: str = body["choices"][0]["message"]["content"]
    return text


def finish(body: dict[str, Any]) -> str:
    reason: str = body["choices"][0]["finish_reason"]
    return reason


def split(text: str) -> tuple[int, str]:
    m = MARKER.match(text)
    assert m is not None, text[:80]
    return int(m.group(1)), text[m.end() :]


@pytest.fixture
def sim() -> SimModel:
    return SimModel(SimOptions(size=5000))


def test_first_reply_is_the_target_cut_at_the_limit(sim: SimModel) -> None:
    body = first(sim, max_tokens=100)
    target = sim.target_for(PROMPT)
    assert content(body) == target[:400]
    assert finish(body) == "length"
    assert body["object"] == "chat.completion"
    assert body["id"].startswith("chatcmpl-")
    assert body["model"] == "sim"
    assert isinstance(body["created"], int)
    usage = body["usage"]
    assert usage["completion_tokens"] == 100
    assert usage["prompt_tokens"] == math.ceil(len(PROMPT) / 4)
    assert usage["total_tokens"] == usage["prompt_tokens"] + 100


def test_max_completion_tokens_wins_over_max_tokens(sim: SimModel) -> None:
    request = _body([{"role": "user", "content": PROMPT}], "sim", 100)
    request["max_completion_tokens"] = 10
    assert len(content(sim.respond(request).body)) == 40


def test_a_document_that_fits_finishes_with_stop(sim: SimModel) -> None:
    body = first(sim, max_tokens=100_000)
    assert content(body) == sim.target_for(PROMPT)
    assert finish(body) == "stop"


def test_continuation_repeats_overlap_chars_after_a_progress_marker(sim: SimModel) -> None:
    target = sim.target_for(PROMPT)
    n = 1000
    body = sim.respond(next_request(n, target[n - 150 : n])).body
    percent, payload = split(content(body))
    assert percent == n * 100 // len(target)
    assert payload == target[n - 200 : n - 200 + 400]
    assert finish(body) == "length"


def test_overlap_zero_continues_exactly_and_overlap_is_clipped_at_the_start() -> None:
    exact = SimModel(SimOptions(size=5000, overlap=0))
    target = exact.target_for(PROMPT)
    assert (
        split(content(exact.respond(next_request(700, target[600:700])).body))[1]
        == (target[700:1100])
    )
    wide = SimModel(SimOptions(size=5000, overlap=900))
    assert (
        split(content(wide.respond(next_request(500, target[400:500])).body))[1] == (target[:400])
    )


def test_the_last_reply_finishes_with_stop(sim: SimModel) -> None:
    target = sim.target_for(PROMPT)
    n = len(target) - 100
    body = sim.respond(next_request(n, target[n - 50 : n])).body
    assert split(content(body))[1] == target[n - 200 :]
    assert finish(body) == "stop"


def test_locate_trusts_the_delivered_count_then_the_nearest_then_the_last() -> None:
    text = "abcX" * 5
    assert locate(text, "abcX", 8) == 8
    assert locate(text, "abcX", 9) == 8  # nearest end to the expected position
    assert locate(text, "abcX", None) == 20  # no count: the last occurrence
    assert locate(text, "zzz", 8) is None


def test_a_repeat_that_is_not_in_the_document_gets_a_restart(sim: SimModel) -> None:
    target = sim.target_for(PROMPT)
    body = sim.respond(next_request(1000, "no such text in the target at all")).body
    assert split(content(body))[1] == target[:400]


def test_marker_false_drops_the_marker() -> None:
    sim = SimModel(SimOptions(size=5000, marker=False))
    target = sim.target_for(PROMPT)
    assert content(sim.respond(next_request(1000, target[900:1000])).body) == target[800:1200]


def test_model_name_options_override_the_server_options_per_request(sim: SimModel) -> None:
    body = first(sim, model="sim:format=csv,size=3000,seed=4", max_tokens=10_000)
    assert content(body).startswith("id,name,")
    assert finish(body) == "stop"
    assert content(first(sim)).startswith("{")  # the server's options are unchanged


def test_a_trailing_assistant_message_is_continued_exactly(sim: SimModel) -> None:
    target = sim.target_for(PROMPT)
    messages = [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": target[:1000]},
    ]
    assert content(sim.respond(_body(messages, "sim")).body) == target[1000:1400]


def test_target_for_accepts_a_prompt_a_request_body_or_a_target_body(sim: SimModel) -> None:
    by_prompt = sim.target_for(PROMPT)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": PROMPT}]
    assert sim.target_for({"model": "sim", "messages": messages}) == by_prompt
    assert sim.target_for({"prompt": PROMPT}) == by_prompt
    assert sim.target_for({"prompt": PROMPT, "seed": 9}) != by_prompt
    assert sim.target_for({"prompt": PROMPT, "model": "sim:format=text"}) != by_prompt


# Chaos knobs: each set to 1 shows its effect -------------------------------------------


def chaos(spec: str) -> SimModel:
    return SimModel(SimOptions.parse(f"size=5000,{spec}"))


def test_rate_limit_answers_429_with_retry_after() -> None:
    result = chaos("rate_limit=1,retry_after=3").respond(next_request(10, ""))
    assert result.status == 429
    assert result.headers == {"Retry-After": "3"}
    assert result.body["error"]["code"] == "rate_limit_exceeded"
    assert set(result.body["error"]) >= {"message", "type", "code"}


def test_server_error_answers_500() -> None:
    result = chaos("server_error=1").respond(next_request(10, ""))
    assert result.status == 500
    assert result.body["error"]["type"] == "server_error"


def test_timeout_hangs_before_answering_and_latency_delays_every_call() -> None:
    result = chaos("timeout=1,hang=7,latency=0.5").respond(next_request(10, ""))
    assert (result.status, result.hang, result.delay) == (200, True, 7.5)
    plain = chaos("latency=0.25").respond(next_request(10, ""))
    assert (plain.hang, plain.delay) == (False, 0.25)
    assert chaos("latency=0.25,server_error=1").respond(next_request(10, "")).delay == 0.25


def test_content_filter_stops_with_a_partial_text() -> None:
    sim = chaos("content_filter=1")
    body = first(sim)
    assert finish(body) == "content_filter"
    assert 0 < len(content(body)) < 400
    assert sim.target_for(PROMPT).startswith(content(body))


def test_empty_replies_have_no_content_and_finish_length() -> None:
    body = first(chaos("empty=1"))
    assert (content(body), finish(body)) == ("", "length")
    assert body["usage"]["completion_tokens"] == 0


def test_fence_wraps_the_reply_and_closes_only_when_it_ended() -> None:
    sim = chaos("fence=1")
    target = sim.target_for(PROMPT)
    assert content(first(sim)) == "```json\n" + target[:400]
    assert content(first(sim, max_tokens=10_000)) == "```json\n" + target + "\n```"
    _, payload = split(content(sim.respond(next_request(1000, target[950:1000])).body))
    assert payload == "```json\n" + target[800:1200]


def test_prose_puts_a_line_of_chat_before_the_payload_where_it_can_be_told_apart() -> None:
    sim = chaos("prose=1")
    target = sim.target_for(PROMPT)
    line, blank, payload = content(first(sim)).split("\n", 2)
    assert line.endswith((":", ".")) and not blank
    assert payload == target[:400]
    _, reply = split(content(sim.respond(next_request(1000, target[950:1000])).body))
    assert reply.split("\n", 2)[2] == target[800:1200]
    # A first line of prose in a text document would be the document's first line.
    text = content(first(sim, model="sim:format=text"))
    assert text == sim.target_for({"prompt": PROMPT, "model": "sim:format=text"})[:400]


def test_restart_starts_the_document_again() -> None:
    sim = chaos("restart=1")
    target = sim.target_for(PROMPT)
    _, payload = split(content(sim.respond(next_request(1000, target[950:1000])).body))
    assert payload == target[:400]


def test_malformed_is_garbage_that_is_not_in_the_document() -> None:
    sim = chaos("malformed=1")
    target = sim.target_for(PROMPT)
    body = sim.respond(next_request(1000, target[950:1000])).body
    _, payload = split(content(body))
    assert payload and payload[:20] not in target
    assert finish(body) == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(target[:1000] + payload)


def test_reindent_doubles_the_indentation_of_the_repeated_json() -> None:
    sim = SimModel(SimOptions.parse("size=5000,reindent=1,overlap=300"))
    target = sim.target_for(PROMPT)
    _, payload = split(content(sim.respond(next_request(1000, target[950:1000])).body))
    assert payload != target[700:1100]
    assert re.sub(r"\s", "", payload) == re.sub(r"\s", "", target[700:1100])
    assert payload.endswith(target[1000:1100])  # only the repeated part is re-indented
    deepest = max(len(m) for m in re.findall(r"\n( *)", target))
    assert deepest <= 14
    assert re.search(r"\n {20}\"", payload[:300])


def test_stall_repeats_the_tail_and_adds_nothing() -> None:
    sim = chaos("stall=1")
    target = sim.target_for(PROMPT)
    replies = [
        split(content(sim.respond(next_request(1000, target[900:1000])).body)) for _ in range(2)
    ]
    assert replies[0] == replies[1] == (1000 * 100 // len(target), target[900:1000])


def test_chaos_draws_vary_per_call_and_repeat_for_a_seed() -> None:
    def statuses(seed: int) -> list[int]:
        sim = SimModel(SimOptions(size=2000, seed=seed, server_error=0.5))
        return [sim.respond(next_request(10, "")).status for _ in range(30)]

    assert statuses(1) == statuses(1)
    assert set(statuses(1)) == {200, 500}
    assert statuses(1) != statuses(2)


def test_chaos_in_the_model_name_applies_to_that_request_only() -> None:
    sim = SimModel(SimOptions(size=2000))
    assert sim.respond(next_request(10, "", model="sim:server_error=1")).status == 500
    assert sim.respond(next_request(10, "")).status == 200


# Options and bad requests --------------------------------------------------------------


def test_options_parse_over_a_base_and_print_back() -> None:
    base = SimOptions(size=1000)
    options = SimOptions.parse(" format=json, overlap=120 ,fence=0.3,marker=off", base)
    assert (options.format, options.size, options.overlap, options.fence) == (
        "json",
        1000,
        120,
        0.3,
    )
    assert options.marker is False
    assert SimOptions.parse("format=auto", options).format is None
    assert SimOptions.parse(options.spec()) == options
    assert SimOptions.parse("") == SimOptions()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sizes=10", "unknown sim option 'sizes'"),
        ("size=abc", "size='abc'"),
        ("size=0", "size='0'"),
        ("fence=1.5", "fence='1.5'"),
        ("format=xml", "format='xml'"),
        ("overlap", "expected key=value"),
        ("marker=maybe", "marker='maybe'"),
    ],
)
def test_bad_options_are_refused_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        SimOptions.parse(text)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "JSON object"),
        ({"model": "sim"}, "'messages'"),
        ({"messages": [{"role": "system", "content": "x"}]}, "user message"),
        ({"messages": [{"content": "x"}]}, "messages[0]"),
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": "9"}, "max_tokens"),
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "positive"),
        ({"messages": [{"role": "user", "content": "x"}], "stream": True}, "stream"),
        ({"model": "sim:bogus=1", "messages": [{"role": "user", "content": "x"}]}, "bogus"),
    ],
)
def test_bad_requests_get_400_in_openai_shape(body: Any, message: str) -> None:
    result = SimModel().respond(body)
    assert result.status == 400
    assert result.body["error"]["type"] == "invalid_request_error"
    assert message in result.body["error"]["message"]


def retried(delivered: int, repeat: str, tail: str, model: str = "sim") -> Any:
    """The continuation request again, with the engine's retry note (``retry_messages``)."""
    body = next_request(delivered, repeat, model)
    messages = [Message.model_validate(m) for m in body["messages"]]
    note = retry_messages(messages, "the reply could not be merged", tail)
    return _body([m.model_dump() for m in note], model)


@pytest.mark.parametrize(
    "spec", ["fence=1,prose=1", "restart=1", "seam_repeat=1,seam_prose_repeat=1"]
)
def test_a_retry_note_is_heeded_exactly_after_the_cut(spec: str) -> None:
    """Told its last reply could not be used, the sim answers as a careful model does: the
    progress line, the quoted end again, the mark, then the text after the cut; no
    wrapper, no other repeat, no restart."""
    sim = chaos(spec)
    target = sim.target_for(PROMPT)
    anchor = retry_anchor(target[:1000], 2000)
    body = sim.respond(retried(1000, target[950:1000], target[:1000])).body
    _, payload = split(content(body))
    start = 1000 - len(anchor)
    assert payload == target[start:1000] + CONTINUE_MARK + target[1000 : start + 400]


def test_heed_retry_false_keeps_the_chaos_on_a_retry() -> None:
    sim = chaos("restart=1,heed_retry=false")
    target = sim.target_for(PROMPT)
    _, payload = split(content(sim.respond(retried(1000, target[950:1000], target[:1000])).body))
    assert payload == target[:400]


def test_failures_still_fire_on_a_retry() -> None:
    sim = chaos("malformed=1")
    target = sim.target_for(PROMPT)
    _, payload = split(content(sim.respond(retried(1000, target[950:1000], target[:1000])).body))
    assert payload not in target


def test_reasoning_wraps_replies_the_way_reasoning_models_do() -> None:
    """``reasoning``: a think block first (or its close alone), an end-of-turn token after
    a last reply, one time in eight a reply that is all thinking; never otherwise."""
    forms = {"block": 0, "close only": 0, "all thinking": 0, "end token": 0}
    for n in range(400):
        text, finish = think("the rest.", "stop", f"{n:016x}", 1.0)
        if text.endswith(("<|im_end|>", "<|eot_id|>")):
            forms["end token"] += 1
        if finish == "length":
            assert text.startswith("<think>\n") and "</think>" not in text
            forms["all thinking"] += 1
            continue
        assert finish == "stop" and "the rest." in text and "</think>\n\nthe rest." in text
        forms["block" if text.startswith("<think>") else "close only"] += 1
    assert all(count > 10 for count in forms.values()), forms
    assert think("the rest.", "length", "00", 0.0) == ("the rest.", "length")
