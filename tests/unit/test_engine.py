"""The continuation engine, one reply at a time: ``start(spec)`` then ``advance(state, reply)``.

Replies are written by hand (or by ``FakeModel``, a model that honours the continuation
prompt), so every row of the decision table (docs/engine.md, "One iteration") and of the
finish-reason table (docs/providers.md) is pinned down without any I/O. ``run_job`` runs
a whole job through the loop ``continuum run`` runs (``workers.local.run_calls``, with
``core.policy``'s rules) over such a model.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError

from core import (
    Continue,
    Decision,
    Fallback,
    Finish,
    JobSpec,
    JobState,
    Message,
    OutputRef,
    ProviderResponse,
    Retry,
    Usage,
    advance,
    start,
)
from core.formats import SCAN_MODELS
from core.models import ContinuationConfig, FinishReason, OutputFormat
from core.progress import MARKER_TEMPLATE
from core.prompts import (
    CONTINUE_MARK,
    MARK_ASKED,
    REPEAT_CLOSE,
    REPEAT_OPEN,
    asks_mark,
    opening_messages,
    retry_anchor,
    retry_messages,
)
from core.state import MAX_ITERATION_RECORDS, TAIL_CHARS
from workers.local import Output, run_calls

# -- fixtures ----------------------------------------------------------------------------

DOC = json.dumps(
    {
        "title": "Inventory",
        "items": [
            {"id": i, "name": f"item {i}", "tags": ["a", "b"], "price": 1.5 * i, "ok": i % 2 == 0}
            for i in range(40)
        ],
    },
    indent=2,
)
CSV_DOC = "id,name,price\n" + "".join(f'{i},"Name, {i}",{i * 1.5}\n' for i in range(150))
MARKDOWN_DOC = "# Report\n\n" + "".join(
    f"## Section {i}\n\nSome text for section {i}.\n\n- first {i}\n- second {i}\n\n"
    "```python\n"
    f"print({i})\n"
    "```\n\n"
    "| a | b |\n|---|---|\n"
    f"| {i} | {i * 2} |\n\n"
    for i in range(25)
)
TEXT_DOC = "".join(f"Sentence number {i} talks about one thing or another. " for i in range(200))
DOCS = {"json": DOC, "csv": CSV_DOC, "markdown": MARKDOWN_DOC, "text": TEXT_DOC}

#: Not a continuation of any cut JSON: a quote then an invalid escape is an error in a
#: string, in a key, and after any value.
GARBAGE = '"\\x: this is not a continuation ]]}'
PROVIDER_ERROR = ProviderResponse(text="", finish_reason=FinishReason.ERROR, error="HTTP 503")


def job(fmt: str = "json", **continuation: Any) -> JobSpec:
    return JobSpec(
        prompt="Write the document.",
        format=OutputFormat(fmt),
        continuation=ContinuationConfig(**continuation),
    )


def reply(text: str, reason: str | None = "length", **kw: Any) -> ProviderResponse:
    return ProviderResponse(
        text=text, finish_reason=None if reason is None else FinishReason(reason), **kw
    )


def present(accumulated: str, ref: OutputRef) -> str:
    """What a worker shows as the result: ``accumulated[:prefix] + suffix``."""
    return accumulated[: ref.prefix] + ref.suffix


def last_prompt(decision: Continue | Retry) -> str:
    return decision.messages[-1].content


def repeat_block(prompt: str) -> str:
    m = re.search(re.escape(REPEAT_OPEN) + r"(.*)" + re.escape(REPEAT_CLOSE), prompt, re.S)
    assert m is not None, "the continuation prompt has no REPEAT block"
    return m.group(1)


def step(state: JobState, *replies: ProviderResponse) -> tuple[JobState, list[Decision], str]:
    """Advance through ``replies``; the final state, every decision, the accumulated text."""
    decisions: list[Decision] = []
    out = ""
    for r in replies:
        state, d = advance(state, r)
        decisions.append(d)
        out = d.append if isinstance(d, Finish) and d.replace else out + d.append
    return state, decisions, out


# -- a model that follows the continuation prompt, and the job loop ----------------------

_REPEAT = re.compile(re.escape(REPEAT_OPEN) + r"(.*?)" + re.escape(REPEAT_CLOSE), re.S)
_DELIVERED = re.compile(r"Delivered so far: ([\d,]+) characters")


@dataclass
class FakeModel:
    """Writes ``target`` ``chunk`` characters at a time, resuming where the prompt says.

    It reads the REPEAT block of the last message and the delivered length, checks that
    the block is the end of what was delivered (the engine's promise), and answers with
    the next ``chunk`` characters, optionally after repeating the block (``repeat``),
    re-indented (``reindent``), after a line of prose (``prose``), with a progress marker
    (``marker``); every ``fail_every``-th call it answers ``failure`` instead.
    """

    target: str
    chunk: int = 400
    exact: bool = True
    repeat: bool = True
    reindent: bool = False
    prose: str = ""
    marker: bool = False
    fail_every: int = 0
    failure: ProviderResponse = PROVIDER_ERROR
    calls: int = 0
    prompts: list[str] = field(default_factory=list)

    def __call__(self, messages: list[Message]) -> ProviderResponse:
        self.calls += 1
        prompt = messages[-1].content
        self.prompts.append(prompt)
        if self.fail_every and self.calls % self.fail_every == 0:
            return self.failure
        blocks = list(_REPEAT.finditer(prompt))  # a retry's note asks for the last one
        m = blocks[-1] if blocks else None
        if m is None:
            pos, overlap = 0, ""
        else:
            overlap = m.group(1)
            delivered = _DELIVERED.search(prompt)
            assert delivered is not None
            pos = self._resume_at(overlap, int(delivered.group(1).replace(",", "")))
        end = min(len(self.target), pos + self.chunk)
        body = self.target[pos:end]
        if overlap and self.repeat:
            shown = overlap
            if self.reindent:
                shown = re.sub(r"\n( +)", lambda g: "\n" + 2 * g.group(1), overlap)
            body = shown + body
        if overlap and self.prose:
            body = f"{self.prose}\n{body}"
        if overlap and self.marker:
            body = f"[[progress: {100 * pos // len(self.target)}%]]\n{body}"
        return reply(
            body,
            "stop" if end == len(self.target) else "length",
            usage=Usage(input_tokens=len(prompt) // 4, output_tokens=len(body) // 4),
            provider="sim",
            model="sim-1",
        )

    def _resume_at(self, overlap: str, delivered: int) -> int:
        """Where the target goes on after ``overlap``, the end of what was delivered.

        With ``exact`` the delivered text must be a prefix of the target. Otherwise (a
        merge may have changed whitespace outside strings) the repeat is found ignoring
        whitespace, nearest to ``delivered``.
        """
        if self.target[:delivered].endswith(overlap):
            return delivered
        assert not self.exact, "REPEAT is not the end of the delivered output"
        offsets = [i for i, c in enumerate(self.target) if not c.isspace()]
        compact = "".join(self.target[i] for i in offsets)
        squeezed = "".join(overlap.split())
        ends = []
        k = compact.find(squeezed)
        while k != -1:
            ends.append(offsets[k + len(squeezed) - 1] + 1)
            k = compact.find(squeezed, k + 1)
        assert ends, "REPEAT is nowhere in the target"
        end = min(ends, key=lambda e: abs(e - delivered))
        trailing = overlap[len(overlap.rstrip()) :]
        return end + len(trailing) if self.target.startswith(trailing, end) else end


@dataclass
class JobRun:
    state: JobState
    decisions: list[Decision]
    accumulated: str

    @property
    def last(self) -> Decision:
        return self.decisions[-1]

    @property
    def result(self) -> str | None:
        last = self.last
        assert isinstance(last, Finish | Fallback)
        return None if last.output is None else present(self.accumulated, last.output)


def run_job(
    spec: JobSpec,
    model: Any,
    *,
    max_calls: int = 2000,
    roundtrip: bool = False,
) -> JobRun:
    """Run a job to its end as a worker would (``roundtrip``: the state through JSON before
    each call, as the Celery chain carries it); backoffs are not slept."""
    calls = 0
    decisions: list[Decision] = []
    output = Output()

    def call(state: JobState) -> tuple[JobState, ProviderResponse]:
        nonlocal calls
        calls += 1
        if calls > max_calls:
            raise AssertionError(f"the job did not end in {max_calls} calls")
        if roundtrip:
            state = JobState.model_validate_json(state.model_dump_json())
        return state, model(state.messages)

    result = run_calls(
        start(spec),
        call,
        output=output,
        on_iteration=lambda _, decision: decisions.append(decision),
        sleep=lambda _: None,
        rng=random.Random(0),
    )
    return JobRun(result.state, decisions, output.text())


def cut_after(text: str, needle: str, start: int = 0) -> int:
    """The offset just after the first ``needle`` at or after ``start``."""
    return text.index(needle, start) + len(needle)


# -- the decision table (docs/engine.md) -------------------------------------------------


def test_complete_first_reply_finishes_at_once() -> None:
    """Fast path: a complete first reply is the result; nothing is continued."""
    state, d = advance(start(job()), reply(DOC, "stop"))
    assert isinstance(d, Finish)
    assert d.append == DOC and present(d.append, d.output) == DOC
    assert not d.replace and not d.review
    assert state.iteration == 1
    assert not state.metadata.was_continued and state.metadata.continuation_count == 0
    assert state.metadata.fallback_used is False


def test_complete_first_reply_finishes_even_when_the_provider_says_length() -> None:
    """Complete JSON is done whatever the finish reason says (the syntax decides)."""
    _, d = advance(start(job()), reply(DOC, "length"))
    assert isinstance(d, Finish) and d.append == DOC


def test_cut_reply_continues_with_the_overlap_and_the_progress_request() -> None:
    """A parseable cut reply: Continue, append it, ask to repeat the cut and report progress."""
    cut = cut_after(DOC, '"name": "item 3')
    state, d = advance(start(job()), reply(DOC[:cut]))
    assert isinstance(d, Continue)
    assert d.append == DOC[:cut]
    prompt = last_prompt(d)
    overlap = repeat_block(prompt)
    assert overlap and DOC[:cut].endswith(overlap)
    assert overlap == state.overlap
    assert MARKER_TEMPLATE in prompt
    assert "$.items[3].name" in prompt
    assert d.messages[:-1] == opening_messages(job())  # the format stated, then the prompt
    assert d.messages[1] == Message(role="user", content="Write the document.")
    assert state.metadata.was_continued and state.metadata.continuation_count == 1
    # the fallback is the cut text closed into valid JSON
    assert state.fallback is not None
    closed = json.loads(present(DOC[:cut], state.fallback))
    assert closed["items"][3] == {"id": 3, "name": "item 3"}
    assert len(closed["items"]) == 4


@pytest.mark.parametrize("overlap_chars", [20, 80, 300])
def test_the_overlap_asked_for_is_about_overlap_chars_long(overlap_chars: int) -> None:
    """``overlap_chars`` sizes the REPEAT block (never more than what was received)."""
    cut = cut_after(DOC, '"name": "item 9')
    _, d = advance(start(job(overlap_chars=overlap_chars)), reply(DOC[:cut]))
    assert isinstance(d, Continue)
    overlap = repeat_block(last_prompt(d))
    assert DOC[:cut].endswith(overlap)
    assert 0 < len(overlap) <= 3 * overlap_chars


def test_continuation_is_merged_against_the_cut_text() -> None:
    """The next reply repeats the cut and goes on: only the new text is appended."""
    cut = cut_after(DOC, '"name": "item 3')
    state, d1 = advance(start(job()), reply(DOC[:cut]))
    assert isinstance(d1, Continue)
    overlap = repeat_block(last_prompt(d1))
    state, d2 = advance(state, reply(overlap + DOC[cut:], "stop"))
    assert isinstance(d2, Finish)
    assert d2.append == DOC[cut:]
    assert present(d1.append + d2.append, d2.output) == DOC


def test_unmergeable_reply_retries_saying_what_went_wrong_and_appends_nothing() -> None:
    """No safe splice: Retry with the request plus what went wrong and the text to continue
    after (never the identical request: a deterministic model would fail again); the
    state's text is untouched."""
    cut = cut_after(DOC, '"name": "item 3')
    state, d1 = advance(start(job()), reply(DOC[:cut]))
    assert isinstance(d1, Continue)
    after, d2 = advance(state, reply(GARBAGE))
    assert isinstance(d2, Retry)
    assert d2.messages[:-1] == d1.messages[:-1]
    assert d2.messages[-1].content.startswith(d1.messages[-1].content)
    note = d2.messages[-1].content[len(d1.messages[-1].content) :]
    assert "could not be merged" in note and DOC[cut - 40 : cut] in note
    assert d2.append == ""
    assert not d2.backoff
    assert "could not be merged" in d2.reason
    assert (after.length, after.tail, after.scan, after.fallback) == (
        state.length,
        state.tail,
        state.scan,
        state.fallback,
    )
    assert after.merge_failures == 1


def test_the_next_call_carries_one_retry_note_at_a_time() -> None:
    """Runners call with ``state.messages``: after a failed merge that is the request plus
    the note (what went wrong, the text to continue after); a second failure replaces the
    note rather than stacking another; the next continuation carries none."""
    cut = cut_after(DOC, '"name": "item 3')
    state, d1 = advance(start(job(max_merge_failures=5)), reply(DOC[:cut]))
    assert isinstance(d1, Continue) and state.messages == d1.messages
    once, _ = advance(state, reply(GARBAGE))
    assert once.messages != state.messages
    assert once.messages[-1].content.count("could not be used") == 1
    assert DOC[cut - 40 : cut] in once.messages[-1].content
    twice, _ = advance(once, reply(GARBAGE))
    assert twice.messages[-1].content.count("could not be used") == 1
    assert twice.messages[-1].content.startswith(d1.messages[-1].content)
    moved, d3 = advance(twice, reply(repeat_block(last_prompt(d1)) + DOC[cut : cut + 200]))
    assert isinstance(d3, Continue)
    assert "could not be used" not in moved.messages[-1].content


def test_a_doubted_seam_asks_again_naming_the_doubt() -> None:
    """An ambiguous seam (``[0,0,...`` then ``0,0,...``) is asked again, and the request
    that goes out is not the identical one: it names the doubt and quotes the cut."""
    spec = job(ambiguity_retries=2)
    state, _ = advance(start(spec), reply("[0,0,0,0,0,0,0,0,"))
    after, decision = advance(state, reply("0,0,0,0,0]", "stop"))
    assert isinstance(decision, Retry), decision
    assert after.messages != state.messages
    note = after.messages[-1].content.split("could not be used", 1)[1]
    assert "ambiguous" in note and "[0,0,0,0,0,0,0,0," in note


def test_unparseable_first_reply_retries_the_original_conversation() -> None:
    """A first reply that is not JSON at all is a failure: retry the original prompt."""
    spec = job()
    state, d = advance(start(spec), reply("<html>not json</html>"))
    assert isinstance(d, Retry)
    assert d.messages == opening_messages(spec)
    assert state.length == 0 and state.scan is None


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_consecutive_failures_fall_back_to_the_last_valid_part(limit: int) -> None:
    """``max_merge_failures`` failures in a row: Fallback to the last complete part, valid JSON."""
    cut = cut_after(DOC, '"name": "item 3')
    state, d = advance(start(job(max_merge_failures=limit)), reply(DOC[:cut]))
    assert isinstance(d, Continue)
    expected = present(DOC[:cut], state.fallback) if state.fallback else None
    decisions = []
    for _ in range(limit):
        state, d = advance(state, reply(GARBAGE))
        decisions.append(d)
    assert all(isinstance(x, Retry) for x in decisions[:-1])
    last = decisions[-1]
    assert isinstance(last, Fallback)
    assert not last.failed and last.append == ""
    assert last.output is not None
    result = present(DOC[:cut], last.output)
    assert result == expected
    value = json.loads(result)
    assert [item["id"] for item in value["items"]] == [0, 1, 2, 3]
    assert f"{limit} consecutive failures" in last.reason
    assert state.metadata.fallback_used and state.metadata.fallback_reason == last.reason
    assert state.metadata.merge_success is False


def test_default_is_three_consecutive_failures() -> None:
    """The third failure in a row stops the job."""
    cut = cut_after(DOC, '"id": 5')
    state, _, _ = step(start(job()), reply(DOC[:cut]))
    state, decisions, _ = step(state, *[reply(GARBAGE)] * 3)
    assert [type(d) for d in decisions] == [Retry, Retry, Fallback]


def test_a_successful_merge_resets_the_failure_counter() -> None:
    """Failures must be consecutive: a good reply in between starts the count again."""
    c1, c2 = cut_after(DOC, '"id": 5'), cut_after(DOC, '"id": 9')
    state, _ = advance(start(job()), reply(DOC[:c1]))
    state, decisions, _ = step(
        state, reply(GARBAGE), reply(GARBAGE), reply(DOC[c1:c2]), reply(GARBAGE), reply(GARBAGE)
    )
    assert [type(d) for d in decisions] == [Retry, Retry, Continue, Retry, Retry]
    assert state.merge_failures == 2
    assert state.metadata.merge_failures == 4
    state, d = advance(state, reply(DOC[c2:], "stop"))
    assert isinstance(d, Finish)


def test_fallback_when_nothing_valid_was_ever_received_fails_the_job() -> None:
    """No valid part at all: the Fallback has no output and fails the job."""
    state, decisions, _ = step(start(job()), *[reply("nonsense, not JSON")] * 3)
    last = decisions[-1]
    assert isinstance(last, Fallback)
    assert last.failed and last.output is None
    assert state.metadata.fallback_used


def test_raise_error_turns_a_fallback_into_a_failure() -> None:
    """``on_failure=raise_error``: a fallback fails the job even with a valid partial."""
    cut = cut_after(DOC, '"id": 5')
    state, _, _ = step(start(job(on_failure="raise_error")), reply(DOC[:cut]))
    state, decisions, _ = step(state, *[reply(GARBAGE)] * 3)
    last = decisions[-1]
    assert isinstance(last, Fallback) and last.failed
    assert state.metadata.fallback_used


# -- finish reasons (docs/providers.md) --------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "markdown", "text"])
@pytest.mark.parametrize("reason", ["stop", "tool_calls"])
def test_stop_and_tool_calls_finish_the_line_formats(fmt: str, reason: str) -> None:
    """Only the model can say a CSV/Markdown/text document is done: stop/tool_calls finish."""
    doc = DOCS[fmt][:300]
    state, d = advance(start(job(fmt)), reply(doc, reason))
    assert isinstance(d, Finish)
    assert present(d.append, d.output) == doc
    assert not state.metadata.was_continued


@pytest.mark.parametrize("fmt", ["csv", "markdown", "text"])
def test_length_continues_the_line_formats_until_stop(fmt: str) -> None:
    """``length`` continues; a later ``stop`` finishes with everything merged."""
    doc = DOCS[fmt]
    cut = len(doc) // 2
    state, d1 = advance(start(job(fmt)), reply(doc[:cut]))
    assert isinstance(d1, Continue)
    overlap = repeat_block(last_prompt(d1))
    assert doc[:cut].endswith(overlap)
    state, d2 = advance(state, reply(overlap + doc[cut:], "stop"))
    assert isinstance(d2, Finish)
    assert present(d1.append + d2.append, d2.output) == doc


def test_stop_while_the_json_is_open_continues_with_a_warning() -> None:
    """Some providers say ``stop`` when cut (Ollama): open JSON is continued, with a warning."""
    cut = cut_after(DOC, '"id": 5')
    state, d = advance(start(job()), reply(DOC[:cut], "stop"))
    assert isinstance(d, Continue)
    assert any("not complete" in w for w in state.metadata.warnings)


@pytest.mark.parametrize("reason", ["tool_calls", "stop"])
def test_done_reasons_finish_complete_json(reason: str) -> None:
    """stop and tool_calls on complete JSON: Finish, no continuation."""
    _, d = advance(start(job()), reply(DOC, reason))
    assert isinstance(d, Finish)


def test_content_filter_stops_with_the_partial_result_and_a_warning() -> None:
    """``content_filter``: no continuation; the valid part is kept; the user is told why."""
    c1, c2 = cut_after(DOC, '"id": 5'), cut_after(DOC, '"id": 9')
    state, d1 = advance(start(job()), reply(DOC[:c1]))
    state, d2 = advance(state, reply(DOC[c1:c2], "content_filter"))
    assert isinstance(d2, Fallback)
    assert not d2.failed and d2.output is not None
    result = json.loads(present(d1.append + d2.append, d2.output))
    # the cut item is kept, closed; its number "9" may have gone on, so it is dropped
    assert [item.get("id") for item in result["items"]] == [*range(9), None]
    assert "content filter" in d2.reason
    assert state.metadata.fallback_used
    assert any("content filter" in w for w in state.metadata.warnings)


@pytest.mark.parametrize("fmt", ["csv", "text"])
def test_content_filter_keeps_the_partial_line_formats(fmt: str) -> None:
    """The partial result of a filtered CSV/text job is what was merged."""
    doc = DOCS[fmt]
    _, d = advance(start(job(fmt)), reply(doc[:200], "content_filter"))
    assert isinstance(d, Fallback) and not d.failed
    assert d.output is not None
    assert doc[:200].startswith(present(d.append, d.output)[:150])


def test_content_filter_on_an_empty_first_reply_fails() -> None:
    """Filtered before anything was delivered: nothing to keep, the job fails."""
    _, d = advance(start(job()), reply("", "content_filter"))
    assert isinstance(d, Fallback) and d.failed and d.output is None


def test_incomplete_continues_like_length() -> None:
    """``incomplete`` (network/timeout) with usable text: continue from it."""
    cut = cut_after(DOC, '"id": 5')
    details = {"reason": "timeout"}
    state, d = advance(start(job()), reply(DOC[:cut], "incomplete", incomplete_details=details))
    assert isinstance(d, Continue)
    assert d.append == DOC[:cut]
    assert state.metadata.incomplete_details == [details]


def test_error_retries_with_backoff_then_falls_back() -> None:
    """``error``: Retry with backoff (nothing appended), and after the limit, Fallback."""
    cut = cut_after(DOC, '"id": 5')
    state, d1 = advance(start(job()), reply(DOC[:cut]))
    assert isinstance(d1, Continue)
    state, decisions, _ = step(state, *[reply("", "error", error="HTTP 500")] * 3)
    first = decisions[0]
    assert isinstance(first, Retry) and first.backoff
    assert first.messages == d1.messages
    assert "HTTP 500" in first.reason
    assert isinstance(decisions[1], Retry) and decisions[1].backoff
    last = decisions[2]
    assert isinstance(last, Fallback) and not last.failed
    assert last.output == state.fallback


def test_missing_finish_reason_is_a_malformed_reply_to_retry() -> None:
    """``finish_reason=None``: the reply is malformed, even with text: retry, append nothing."""
    spec = job()
    state, d = advance(start(spec), reply(DOC, None))
    assert isinstance(d, Retry)
    assert "malformed" in d.reason and not d.backoff
    assert d.messages == opening_messages(spec)
    assert state.length == 0
    assert state.metadata.finish_reasons == [None]


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_first_reply_is_retried(text: str) -> None:
    """An empty (or blank) first reply delivers nothing: retry."""
    _, d = advance(start(job()), reply(text))
    assert isinstance(d, Retry) and "empty" in d.reason


def test_empty_continuation_is_retried() -> None:
    """An empty reply cut by the limit (a reasoning model's empty partial): retry."""
    cut = cut_after(DOC, '"id": 5')
    state, d1 = advance(start(job()), reply(DOC[:cut]))
    _, d2 = advance(state, reply(""))
    assert isinstance(d1, Continue | Retry)
    assert isinstance(d2, Retry) and d2.messages[:-1] == d1.messages[:-1]
    assert "empty" in d2.messages[-1].content.removeprefix(d1.messages[-1].content)


def test_retries_count_against_max_attempts() -> None:
    """A model that only fails cannot keep the job running: attempts bound retries too."""
    spec = job(max_attempts=2, max_merge_failures=100)
    _, decisions, _ = step(start(spec), *[reply("")] * 3)
    assert [type(d) for d in decisions] == [Retry, Retry, Fallback]
    assert "max_attempts" in decisions[-1].reason  # type: ignore[union-attr]


# -- progress markers and stalls ---------------------------------------------------------


def test_progress_marker_is_stripped_before_merging_and_recorded() -> None:
    """``[[progress: 40%]]`` on the first line is not part of the document."""
    c1, c2 = cut_after(DOC, '"id": 5'), cut_after(DOC, '"id": 9')
    state, _ = advance(start(job()), reply(DOC[:c1]))
    state, d2 = advance(state, reply("[[progress: 40%]]\n" + DOC[c1:c2]))
    assert isinstance(d2, Continue)
    assert d2.append == DOC[c1:c2]
    assert state.metadata.progress_reported == [None, 40]
    assert "40%" in last_prompt(d2)


def test_progress_marker_on_the_last_line_is_stripped_too() -> None:
    c1 = cut_after(DOC, '"id": 5')
    state, _ = advance(start(job()), reply(DOC[:c1]))
    state, d = advance(state, reply(DOC[c1:] + "\n[[progress: 100%]]", "stop"))
    assert isinstance(d, Finish)
    assert "progress" not in d.append
    assert state.metadata.progress_reported[-1] == 100


def test_progress_marker_with_crlf_line_ending_is_stripped() -> None:
    """A marker line ending in CRLF is still a marker line."""
    state, d = advance(start(job("text")), reply("[[progress: 10%]]\r\nOnce upon a time"))
    assert isinstance(d, Continue)
    assert d.append == "Once upon a time"
    assert state.metadata.progress_reported == [10]


def _progress_job(percents: list[int | None], stall_limit: int = 3) -> list[Decision]:
    """A text job whose continuations each add new text and report ``percents``."""
    words = [f"word{i:04d} " for i in range(len(percents) + 1)]
    state, d = advance(start(job("text", stall_limit=stall_limit)), reply(words[0]))
    decisions: list[Decision] = [d]
    for i, percent in enumerate(percents, start=1):
        marker = "" if percent is None else f"[[progress: {percent}%]]\n"
        overlap = repeat_block(last_prompt(d))  # type: ignore[arg-type]
        state, d = advance(state, reply(marker + overlap + words[i]))
        decisions.append(d)
        if not isinstance(d, Continue):
            break
    return decisions


@pytest.mark.parametrize(
    ("percents", "stops_at"),
    [
        ([10, 20, 30, 40, 50, 60], None),  # steady progress
        ([50, 40, 30, 20], 3),  # goes down three times in a row
        ([50, 50, 50, 50], 3),  # does not move
        ([50, 50, 51, 51, 51, 51], 5),  # one move resets the count
        ([10, 40, 40, 40, 40], 4),
        ([50, 49, 50, 51, 52], None),  # a single dip is not a stall
        ([None, None, None, None], None),  # no markers: text is appended, so it moves
    ],
)
def test_stall_stops_the_job_after_stall_limit_iterations_without_progress(
    percents: list[int | None], stops_at: int | None
) -> None:
    """Progress that goes down or moves < 1 point ``stall_limit`` times in a row: stalled.

    ``stops_at`` is the index of the reply that stops the job; the first marker only sets
    the baseline.
    """
    decisions = _progress_job(percents)
    if stops_at is None:
        assert all(isinstance(d, Continue) for d in decisions)
        assert len(decisions) == len(percents) + 1
    else:
        assert len(decisions) == stops_at + 2
        last = decisions[-1]
        assert isinstance(last, Fallback) and not last.failed
        assert last.reason.startswith("stalled")


@pytest.mark.parametrize("stall_limit", [1, 2, 4])
def test_stall_limit_is_configurable(stall_limit: int) -> None:
    decisions = _progress_job([30] * 8, stall_limit=stall_limit)
    assert isinstance(decisions[-1], Fallback)
    assert len(decisions) == 1 + 1 + stall_limit  # first reply, first marker, repeats


def test_without_markers_replies_that_append_nothing_stall() -> None:
    """A model that only repeats the cut adds nothing: after ``stall_limit`` such replies, stop."""
    state, d = advance(start(job("text")), reply(TEXT_DOC[:500]))
    decisions = []
    for _ in range(3):
        state, d = advance(state, reply(state.overlap))
        decisions.append(d)
    assert [type(x) for x in decisions] == [Continue, Continue, Fallback]
    last = decisions[-1]
    assert isinstance(last, Fallback) and "stalled" in last.reason
    assert last.output is not None and present(TEXT_DOC[:500], last.output) == TEXT_DOC[:500]


# -- max_attempts ------------------------------------------------------------------------


@pytest.mark.parametrize("max_attempts", [1, 3, 6])
def test_max_attempts_bounds_the_continuations(max_attempts: int) -> None:
    """``max_attempts`` continuations, then a Fallback with what was merged (valid JSON)."""
    model = FakeModel(DOC, chunk=60)
    run = run_job(job(max_attempts=max_attempts), model)
    assert isinstance(run.last, Fallback) and not run.last.failed
    assert "max_attempts" in run.last.reason
    assert model.calls == max_attempts + 1
    assert run.state.metadata.continuation_count == max_attempts
    assert run.accumulated == DOC[: len(run.accumulated)]
    assert run.result is not None
    json.loads(run.result)


# -- auto format detection ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "fmt"),
    [
        ('{"items": [{"id": 1}, {"id": 2', "json"),
        ('[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, "a', "json"),
        ("id,name,price\n1,Alice,3.5\n2,Bob,4\n3,Car", "csv"),
        ("# Title\n\nSome text\n\n- a list item\n- another", "markdown"),
        ("Once upon a time there was a long story that went on and on", "text"),
    ],
)
def test_auto_detects_the_format_from_the_first_reply(first: str, fmt: str) -> None:
    """``auto``: the first reply decides the format, recorded with a warning."""
    state, d = advance(start(job("auto")), reply(first))
    assert isinstance(d, Continue)
    assert state.format.value == fmt
    assert state.metadata.merge_strategy_used == fmt
    assert any(f"detected from the first reply: {fmt}" in w for w in state.metadata.warnings)


def test_auto_detected_format_is_then_fixed() -> None:
    """Once detected, the format stays, even if a later reply looks like another one."""
    state, d = advance(start(job("auto")), reply("id,name\n1,Alice\n2,Bob\n"))
    assert state.format.value == "csv"
    assert "CSV" in last_prompt(d)  # type: ignore[arg-type]
    state, d = advance(state, reply("3,Carol\n4,Dan\n", "stop"))
    assert isinstance(d, Finish)
    assert state.format.value == "csv"
    assert state.metadata.final_record_count == 4
    assert sum("detected" in w for w in state.metadata.warnings) == 1


def test_auto_json_job_runs_to_the_end() -> None:
    run = run_job(job("auto", max_attempts=50), FakeModel(DOC, chunk=500))
    assert isinstance(run.last, Finish)
    assert run.state.format.value == "json"
    assert run.result == DOC


# -- metadata ----------------------------------------------------------------------------


def test_metadata_accounts_every_iteration() -> None:
    """Totals, per-iteration lists, who served each call, records and the strategy."""
    c1 = cut_after(DOC, '"name": "item 3')
    c2 = cut_after(DOC, '"tags": [\n        "a"', c1)
    replies = [
        reply(
            DOC[:c1],
            usage=Usage(input_tokens=100, output_tokens=40),
            cost=0.25,
            provider="openai",
            model="gpt-x",
            incomplete_details={"reason": "max_output_tokens"},
        ),
        reply(
            DOC[c1:c2],
            usage=Usage(input_tokens=150, output_tokens=30),
            cost=0.5,
            provider="anthropic",
            model="claude-y",
        ),
        reply(GARBAGE, usage=Usage(input_tokens=150, output_tokens=5), cost=0.125),
        reply(DOC[c2:], "stop", usage=Usage(input_tokens=160, output_tokens=70), cost=0.125),
    ]
    state, decisions, out = step(start(job()), *replies)
    assert [type(d) for d in decisions] == [Continue, Continue, Retry, Finish]
    assert out == DOC
    meta = state.metadata
    assert meta.was_continued is True
    assert meta.continuation_count == 2
    assert meta.total_input_tokens == 560
    assert meta.total_output_tokens == 145
    assert meta.total_cost_estimate == pytest.approx(1.0)
    assert meta.chunk_sizes == [40, 30, 5, 70]
    assert meta.finish_reasons == ["length", "length", "length", "stop"]
    assert meta.incomplete_details == [{"reason": "max_output_tokens"}, None, None, None]
    assert meta.truncation_points == ["$.items[3].name", "$.items[3].tags[1]"]
    assert [(s.iteration, s.provider, s.model) for s in meta.served_by] == [
        (1, "openai", "gpt-x"),
        (2, "anthropic", "claude-y"),
    ]
    assert meta.final_record_count == 40
    assert meta.merge_strategy_used == "json"
    assert meta.merge_failures == 1
    assert meta.fallback_used is False and meta.fallback_reason is None
    assert any("could not be merged" in w for w in meta.warnings)


@pytest.mark.parametrize(
    ("cut_text", "point"),
    [
        ('{"title": "Inv', "$.title"),
        ('{"items": [{"id": 1}, {"id": 2}, {"id": 3, "name": "Bo', "$.items[2].name"),
        ('{"a": {"b": [1, 2, ', "$.a.b[2]"),
        ('{"a": {"b": [[1, 2], [3', "$.a.b[1][0]"),
        ('[{"id": 1}, {"id": 2}, {"id":', "$[2].id"),
    ],
)
def test_truncation_points_are_json_paths(cut_text: str, point: str) -> None:
    """Each JSON cut is recorded as a path to the element being written."""
    state, d = advance(start(job()), reply(cut_text))
    assert isinstance(d, Continue)
    assert state.metadata.truncation_points == [point]


def test_line_format_truncation_points_and_record_counts() -> None:
    """CSV cuts are rows, text cuts are characters; CSV counts complete records."""
    state, _ = advance(start(job("csv")), reply("id,name\n1,Alice\n2,Bob\n3,Ca"))
    assert state.metadata.truncation_points == ["row:2"]
    assert state.metadata.final_record_count == 2
    state, _ = advance(start(job("text")), reply("Once upon a time"))
    assert state.metadata.truncation_points == ["char:16"]


def test_fallback_metadata_says_why() -> None:
    state, _, _ = step(start(job()), reply(DOC[:100]), *[reply(GARBAGE)] * 3)
    meta = state.metadata
    assert meta.fallback_used is True
    assert meta.fallback_reason is not None and "consecutive failures" in meta.fallback_reason
    assert meta.merge_success is False
    assert meta.merge_failures == 3


# -- the state: serialisable and bounded -------------------------------------------------


def test_state_round_trips_through_json_at_every_step() -> None:
    """The state a worker chains is plain JSON and loses nothing."""
    spec = job(max_attempts=50)
    model = FakeModel(DOC, chunk=300, marker=True, fail_every=4, failure=reply(GARBAGE))
    state = start(spec)
    messages = state.messages
    for _ in range(8):
        again = JobState.model_validate_json(state.model_dump_json())
        assert again == state
        state, d = advance(state, model(messages))
        assert isinstance(d, Continue | Retry)
        messages = d.messages
    assert JobState.model_validate_json(state.model_dump_json()) == state


def test_a_job_resumed_from_json_decides_exactly_as_one_kept_in_memory() -> None:
    """Serialising the state between iterations changes nothing: the engine is pure."""
    spec = job(max_attempts=100)
    kept = run_job(spec, FakeModel(DOC, chunk=250, marker=True, fail_every=5))
    chained = run_job(spec, FakeModel(DOC, chunk=250, marker=True, fail_every=5), roundtrip=True)
    assert chained.decisions == kept.decisions
    assert chained.accumulated == kept.accumulated == DOC
    assert chained.state == kept.state


#: Scan states as the code before typed scan states stored them (frames as arrays): a job in
#: flight across an upgrade must load and go on.
OLD_JSON_SCAN = (
    '{"length":48,"frames":[["{",0,null,0,1,"items",1,1],["[",10,"items",1,20,null,11,11],'
    '["{",22,1,1,30,"tags",23,23],["[",40,"tags",1,44,null,41,41]],"phase":1,"carry":"",'
    '"carry_kind":2,"string_at":46,"root_started":true,"done_at":-1,"trailing_at":-1,'
    '"error":null,"records":[0,1073741824]}'
)
OLD_JSON_TEXT = '{"items": [{"id": 1}, {"id": 2, "tags": ["a", "b'
OLD_CSV_SCAN = (
    '{"length":19,"records":1,"head":"id,name\\n1,Ann\\n2,\\"Bo","header":"id,name",'
    '"fields":2,"mode":"quoted","delims":1,"row_end":14,"ragged":0,"wrapper":""}'
)
OLD_CSV_TEXT = 'id,name\n1,Ann\n2,"Bo'


def _stored(fmt: str, text: str, scan: str) -> str:
    """A whole stored state around ``scan``, as the worker reads it from the job hash."""
    state = start(job(fmt)).model_copy(update={"length": len(text), "head": text, "tail": text})
    stored = json.loads(state.model_dump_json())
    stored["scan"] = json.loads(scan)
    return json.dumps(stored, separators=(",", ":"))


@pytest.mark.parametrize(
    ("fmt", "text", "scan", "rest"),
    [
        ("json", OLD_JSON_TEXT, OLD_JSON_SCAN, '"]}]}'),
        ("csv", OLD_CSV_TEXT, OLD_CSV_SCAN, 'b"\n3,Cy\n'),
    ],
)
def test_a_state_stored_before_typed_scan_states_loads_and_goes_on(
    fmt: str, text: str, scan: str, rest: str
) -> None:
    """The scan of a stored state is read as its format's model, it is written back exactly
    as it was read (the stored form did not change), and the job goes on from it."""
    state = JobState.model_validate_json(_stored(fmt, text, scan))
    assert type(state.scan) is SCAN_MODELS[OutputFormat(fmt)]
    assert json.loads(state.model_dump_json())["scan"] == json.loads(scan)
    assert state.model_dump_json().count(scan) == 1
    after, decision = advance(state, reply(rest, "stop"))
    assert isinstance(decision, Finish)
    if fmt == "json":
        assert json.loads(text + rest) == {"items": [{"id": 1}, {"id": 2, "tags": ["a", "b"]}]}
    assert after.length == len(text + rest)


def test_a_scan_state_needs_the_format_that_reads_it() -> None:
    """A scan holds no type tag: a state whose format has no scanner (auto) cannot hold one."""
    stored = json.loads(_stored("json", OLD_JSON_TEXT, OLD_JSON_SCAN))
    stored["format"] = "auto"
    with pytest.raises(ValidationError, match="needs the job's format"):
        JobState.model_validate_json(json.dumps(stored))


def _long_doc(min_chars: int) -> str:
    items: list[str] = []
    text = "lorem ipsum dolor sit amet, consectetur adipiscing elit "
    i = 0
    while sum(len(x) for x in items) < min_chars:
        items.append(json.dumps({"id": i, "name": f"item {i}", "text": text * (1 + i % 3)}))
        i += 1
    return '{"title": "long", "items": [\n  ' + ",\n  ".join(items) + "\n]}"


def test_state_size_does_not_grow_with_the_output() -> None:
    """300 iterations of ~2 KB (> 600 KB): the state stays bounded, the output is exact.

    The model reports whole percents and each reply is a third of a point: steady progress
    that must not be taken for a stall.
    """
    doc = _long_doc(620_000)
    spec = job(max_attempts=1000)
    model = FakeModel(doc, chunk=2100, marker=True)
    state = start(spec)
    messages = state.messages
    accumulated = ""
    sizes = []
    while True:
        state, d = advance(state, model(messages))
        accumulated += d.append
        sizes.append(len(state.model_dump_json()))
        if not isinstance(d, Continue):
            break
        messages = d.messages
    assert isinstance(d, Finish)
    assert model.calls >= 290
    assert accumulated == doc
    assert present(accumulated, d.output) == doc
    assert len(state.tail) == TAIL_CHARS
    # the tail window (JSON-escaped), the spec, the prompt, and bounded per-iteration records
    fixed = len(json.dumps(state.tail)) + len(spec.model_dump_json())
    fixed += len(json.dumps(state.messages[-1].content))
    assert max(sizes) < fixed + 200 * MAX_ITERATION_RECORDS
    # once the per-iteration records are full, the size is flat
    plateau = sizes[MAX_ITERATION_RECORDS + 10 :]
    assert max(plateau) - min(plateau) < 8_000
    meta = state.metadata
    assert len(meta.chunk_sizes) == MAX_ITERATION_RECORDS
    assert meta.records_dropped == model.calls - MAX_ITERATION_RECORDS
    assert meta.continuation_count == model.calls - 1


# -- whole jobs against a model that follows the prompt ----------------------------------


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "text"])
@pytest.mark.parametrize(
    "behaviour",
    [
        {},
        {"repeat": False},
        {"marker": True},
        {"prose": "Sure! Here is the rest:"},
        {"chunk": 97},
        {"fail_every": 3},
    ],
    ids=["repeat", "no-repeat", "marker", "prose", "small-chunks", "some-errors"],
)
def test_whole_job_reconstructs_the_document_exactly(fmt: str, behaviour: dict[str, Any]) -> None:
    """Every format, every common model habit: the merged output is the target, byte for byte."""
    doc = DOCS[fmt]
    model = FakeModel(doc, **behaviour)
    run = run_job(job(fmt, max_attempts=500), model)
    assert isinstance(run.last, Finish), run.last
    assert run.result == doc
    assert run.accumulated.startswith(doc)
    meta = run.state.metadata
    assert meta.continuation_count >= 2
    assert meta.merge_strategy_used == fmt
    assert not meta.fallback_used


@pytest.mark.parametrize("behaviour", [{"reindent": True}, {"prose": "Continuing the JSON:"}])
def test_json_job_with_reindented_or_introduced_repeats_keeps_the_value(
    behaviour: dict[str, Any],
) -> None:
    """A repeat that differs in indentation, or follows prose, merges to the same JSON value."""
    run = run_job(job("json", max_attempts=200), FakeModel(DOC, exact=False, **behaviour))
    assert isinstance(run.last, Finish)
    assert run.result is not None
    assert json.loads(run.result) == json.loads(DOC)


def test_whole_csv_job_counts_records() -> None:
    run = run_job(job("csv", max_attempts=200), FakeModel(CSV_DOC, chunk=333))
    assert run.result == CSV_DOC
    assert run.state.metadata.final_record_count == 150
    assert all(p.startswith("row:") for p in run.state.metadata.truncation_points)


def test_advance_never_changes_the_state_it_is_given() -> None:
    """The engine works on ``state.clone()``: a whole job with chaos (retries, restarts,
    fallbacks in metadata) leaves every input state exactly as it was, and each clone is
    equal to the deep copy it replaces."""
    from sim.model import SimModel, SimOptions  # noqa: PLC0415

    sim = SimModel(SimOptions(seed=9))
    model = "sim:format=json,size=6000,fence=0.3,prose=0.3,restart=0.2,malformed=0.1"
    spec = JobSpec(
        prompt="List the exhibits",
        format=OutputFormat.JSON,
        model=model,
        max_output_tokens=200,
        continuation=ContinuationConfig(max_attempts=80),
    )
    state = start(spec)
    for _ in range(120):
        before = state.model_dump_json()
        clone = state.clone()
        assert clone.model_dump() == state.model_copy(deep=True).model_dump()
        clone.metadata.warnings.append("changed")
        clone.metadata.chunk_sizes.append(1)
        assert state.model_dump_json() == before
        body = {
            "model": model,
            "messages": [m.model_dump() for m in state.messages],
            "max_tokens": spec.max_output_tokens,
        }
        choice = sim.respond(body).body["choices"][0]
        response = ProviderResponse(
            text=choice["message"]["content"],
            finish_reason=choice["finish_reason"],
            provider="sim",
        )
        new, decision = advance(state, response)
        assert state.model_dump_json() == before
        if isinstance(decision, (Finish, Fallback)):
            break
        state = new
    else:
        raise AssertionError("the job did not end")


def test_a_prefilled_reply_joins_at_the_prefill_in_a_periodic_document() -> None:
    """A reply that continued a prefill (``prefilled``) is the exact continuation: in text
    that repeats itself, where a repeat search would doubt or misread, it is taken as is."""
    doc = "ok\n" * 40 + "failed\n" + "ok\n" * 40
    cut = 90
    state, d1 = advance(start(job("text")), reply(doc[:cut]))
    assert isinstance(d1, Continue)
    prefill = state.overlap.rstrip()
    state, d2 = advance(
        state,
        reply(
            prefill + doc[cut - (len(state.overlap) - len(prefill)) :],
            "stop",
            prefilled=len(prefill),
        ),
    )
    assert isinstance(d2, Finish)
    assert d1.append + d2.append == doc
    assert not any("ambiguous" in w for w in state.metadata.warnings)


# -- the continue mark of a retry (``CONTINUE_MARK``) -----------------------------------

#: Identical rows, then more: no end of the cut text short enough to repeat is unique.
PERIODIC_CSV = "id,state\n" + "7,ok\n" * 60 + "8,failed\n"


def _doubted_periodic(fmt: str = "csv") -> tuple[JobState, str, int]:
    """A periodic CSV cut mid-run, and the retry a doubted repeat asks for: the state,
    the end the note quotes, where the cut is."""
    cut = 9 + 5 * 30 + 2  # inside the 31st "7,ok"
    spec = job(fmt).model_copy(update={"max_output_tokens": 40})  # quotes up to 80 characters
    state, d1 = advance(start(spec), reply(PERIODIC_CSV[:cut]))
    assert isinstance(d1, Continue)
    state, d2 = advance(state, reply(PERIODIC_CSV[cut - 10 : cut + 40]))
    assert isinstance(d2, Retry) and "ambiguous" in d2.reason, d2
    quote = list(_REPEAT.finditer(last_prompt(d2)))[-1].group(1)  # the note's, the last
    return state, quote, cut


def test_a_retry_asks_for_the_mark_after_the_quoted_end() -> None:
    state, quote, cut = _doubted_periodic()
    assert PERIODIC_CSV[:cut].endswith(quote) and len(quote) == 80
    assert f"then write {CONTINUE_MARK}" in state.messages[-1].content


def test_a_marked_reply_joins_where_the_mark_is_in_periodic_rows() -> None:
    """Rows all alike: the quote recurs all through the text, so only the mark says where
    the copy ends; the reply then joins there exactly, with no doubt."""
    state, quote, cut = _doubted_periodic()
    rest = PERIODIC_CSV[cut:]
    state, d = advance(state, reply(quote + CONTINUE_MARK + rest, "stop"))
    assert isinstance(d, Finish), d
    assert state.length == len(PERIODIC_CSV)
    assert state.metadata.ambiguous_seams == 0


@pytest.mark.parametrize("lost", [5, 10])
def test_a_model_that_loses_count_copying_still_joins_at_its_mark(lost: int) -> None:
    """A copy of a periodic end that drops a row or two is still an end of the text: the
    mark after it says where the new text starts."""
    state, quote, cut = _doubted_periodic()
    state, d = advance(state, reply(quote[lost:] + CONTINUE_MARK + PERIODIC_CSV[cut:], "stop"))
    assert isinstance(d, Finish) and state.length == len(PERIODIC_CSV)
    assert state.metadata.ambiguous_seams == 0


def test_a_mark_after_a_copy_that_is_not_the_end_is_dropped_and_the_reply_read_as_usual() -> None:
    """A copy bent out of shape (a row changed) proves nothing: the reply, mark removed,
    is read as any other, and here it stays in doubt."""
    state, quote, cut = _doubted_periodic()
    bent = quote.replace("7,ok", "7,OK", 1)
    state, d = advance(state, reply(bent + CONTINUE_MARK + PERIODIC_CSV[cut:], "stop"))
    assert isinstance(d, Finish) and state.metadata.ambiguous_seams == 1
    assert CONTINUE_MARK not in state.tail


def test_a_mark_on_a_line_of_its_own_is_doubted() -> None:
    """The copy ends in a line break the text does not have there: the model set the mark
    on its own line. The line break after it is taken for the model's too, with a doubt
    (either may be the document's)."""
    state, quote, cut = _doubted_periodic()
    marked = quote + "\n" + CONTINUE_MARK + "\n" + PERIODIC_CSV[cut:]
    state, d = advance(state, reply(marked, "stop"))
    assert isinstance(d, Finish) and state.length == len(PERIODIC_CSV)
    assert state.metadata.ambiguous_seams == 1
    assert any("on a line of its own" in w for w in state.metadata.warnings)


def test_a_reply_that_ends_at_the_mark_appends_nothing() -> None:
    state, quote, cut = _doubted_periodic()
    after, d = advance(state, reply(quote + CONTINUE_MARK))
    assert isinstance(d, Continue) and d.append == "" and after.length == cut


def test_the_mark_means_nothing_unless_a_retry_asked_for_it() -> None:
    """In an ordinary continuation the mark is text like any other (a document about this
    protocol may hold it)."""
    doc = "Notes on the retry protocol.\n"
    state, _ = advance(start(job("text")), reply(doc))
    state, _ = advance(state, reply(doc + f"A reply may hold {CONTINUE_MARK} once.\n", "stop"))
    assert CONTINUE_MARK in state.tail


def test_a_text_that_holds_the_mark_is_not_asked_for_it() -> None:
    tail = f"a line with {CONTINUE_MARK} in it\n" + "ok\n" * 50
    messages = retry_messages([Message(role="user", content="Go on.")], "ambiguous", tail)
    assert not asks_mark(messages[-1].content)
    assert asks_mark(retry_messages(messages, "ambiguous", "ok\n" * 50)[-1].content)


def test_a_second_mark_is_dropped_and_doubted() -> None:
    state, quote, cut = _doubted_periodic()
    rest = PERIODIC_CSV[cut:]
    state, d = advance(
        state, reply(quote + CONTINUE_MARK + rest[:20] + CONTINUE_MARK + rest[20:], "stop")
    )
    assert isinstance(d, Finish) and state.length == len(PERIODIC_CSV)
    assert state.metadata.ambiguous_seams == 1
    assert CONTINUE_MARK not in state.tail


@pytest.mark.parametrize(
    ("written", "doubted"),
    [
        ("{mark}{rest}", False),  # the mark at once: nothing left to copy after a prefill
        ("{copy}{mark}{rest}", True),  # the note followed to the letter, or text again
        ("X{mark}{rest}", True),  # text of its own, then the mark
    ],
)
def test_a_prefilled_reply_to_a_marked_retry_never_keeps_the_mark(
    written: str, doubted: bool
) -> None:
    """A prefill goes with the retry note when the profile prefills: the reply continues
    the prefill, and may write the mark the note asks for. The mark is never text; after
    text of the reply's own, where the join is is doubted."""
    state, quote, cut = _doubted_periodic()
    prefill = state.overlap.rstrip()
    rest = PERIODIC_CSV[len(state.overlap.rstrip()) - len(prefill) + cut :]
    body = written.format(mark=CONTINUE_MARK, rest=rest, copy=quote[-12:], rest_after=rest[10:])
    state, d = advance(state, reply(prefill + body, "stop", prefilled=len(prefill)))
    assert isinstance(d, Finish), d
    assert CONTINUE_MARK not in state.tail
    assert state.length == len(PERIODIC_CSV) + (written.startswith("X"))
    assert (state.metadata.ambiguous_seams == 1) is doubted


def test_a_mark_after_text_that_is_no_copy_is_dropped_and_doubted() -> None:
    """The mark after new text: misplaced, or the document's own. Read as usual, the
    mark dropped, and doubted (never silently dropped)."""
    state, _, cut = _doubted_periodic()
    rest = PERIODIC_CSV[cut:]
    state, d = advance(state, reply(rest[:7] + CONTINUE_MARK + rest[7:], "stop"))
    assert isinstance(d, Finish), d
    assert CONTINUE_MARK not in state.tail
    assert state.metadata.ambiguous_seams == 1


def test_a_space_after_the_mark_that_makes_two_is_doubted() -> None:
    doc = "".join(f"Line {i} says the same thing as the line before it.\n" for i in range(40))
    spec = job("text").model_copy(update={"max_output_tokens": 40})
    cut = doc.index("Line 20 says the same ") + len("Line 20 says the same ")
    state, _ = advance(start(spec), reply(doc[:cut]))
    state, d = advance(state, reply(doc[cut - 10 : cut + 30]))
    assert isinstance(d, Retry), d
    quote = list(_REPEAT.finditer(last_prompt(d)))[-1].group(1)
    state, d = advance(state, reply(quote + CONTINUE_MARK + " " + doc[cut:], "stop"))
    assert state.metadata.ambiguous_seams == 1


def test_document_text_never_asks_for_the_mark() -> None:
    """The request is recognised only right before the note's own REPEAT block: a document
    that quotes the note's words does not turn the mark on."""
    quoted = f"a document that says: {MARK_ASKED}{REPEAT_OPEN}x"
    turn = f"Continue.\n{REPEAT_OPEN}{quoted}{REPEAT_CLOSE}"
    assert asks_mark(turn)  # the shape alone (what the simulator looks at) is fooled
    assert not asks_mark(turn, "the end the engine quotes")  # the engine knows its quote
    note = retry_messages([Message(role="user", content="Go on.")], "ambiguous", "ok\n" * 50)
    assert asks_mark(note[-1].content, retry_anchor("ok\n" * 50, 2000))
