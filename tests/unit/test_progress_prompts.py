"""Progress markers, stall bookkeeping, and the pieces of a continuation prompt."""

from __future__ import annotations

import json
import re

import pytest

from core import JobSpec, Message, OutputFormat
from core.json_scan import JsonScanner
from core.progress import MARKER_TEMPLATE, Stall, split_marker
from core.prompts import (
    CONTEXT_CLOSE,
    CONTEXT_OPEN,
    FORMAT_INSTRUCTIONS,
    REPEAT_CLOSE,
    REPEAT_OPEN,
    continuation_messages,
    json_path,
    json_window,
    overlap_context,
    repair_messages,
    retry_anchor,
)

# -- split_marker ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rest", "percent"),
    [
        ('[[progress: 40%]]\n{"a": 1', '{"a": 1', 40),  # first line
        ('{"a": 1}\n[[progress: 100%]]', '{"a": 1}', 100),  # last line
        ("[[progress: 40%]]", "", 40),  # nothing else
        ("[[progress: 40%]]\r\nrow,1\r\n", "row,1\r\n", 40),  # CRLF first line
        ("row,1\r\n[[progress: 7%]]\r", "row,1\r", 7),  # CRLF last line
        ("  [[ progress : 33 % ]]  \ntext", "text", 33),  # loose spacing
        ("[[progress: 12.7%]]\ntext", "text", 12),  # decimals truncated
        ("[[progress: 55]]\ntext", "text", 55),  # no percent sign
        ("[[progress: 140%]]\ntext", "text", 100),  # clamped to 100
        ("[[progress: 0%]]\ntext", "text", 0),
        ("no marker here", "no marker here", None),  # absent
        ("", "", None),
        ("a\n[[progress: 40%]]\nb", "a\n[[progress: 40%]]\nb", None),  # middle: kept
        ("x [[progress: 40%]]\ny", "x [[progress: 40%]]\ny", None),  # not alone on its line
        ("[[progress: 1000%]]\ny", "[[progress: 1000%]]\ny", None),  # not a percentage
        ("[[progress: NN%]]\ny", "[[progress: NN%]]\ny", None),  # the template itself
    ],
)
def test_split_marker(text: str, rest: str, percent: int | None) -> None:
    """A marker alone on the first or last line is removed and read; nowhere else."""
    assert split_marker(text) == (rest, percent)


def test_marker_on_first_line_wins_over_last_line() -> None:
    assert split_marker("[[progress: 10%]]\nbody\n[[progress: 90%]]") == (
        "body\n[[progress: 90%]]",
        10,
    )


# -- Stall -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "percent", "appended", "delivered", "after"),
    [
        # no marker: measured progress only
        (Stall(), None, 10, 0, Stall(None, 0, 0, 10)),
        (Stall(None, 2), None, 10, 100, Stall(None, 0, 0, 10)),
        (Stall(None, 2), None, 0, 100, Stall(None, 3, 0, 0)),
        (Stall(40, 1, 5), None, 10, 100, Stall(40, 0, 5, 10)),  # keeps the last estimate
        # the first estimate sets the baseline
        (Stall(), 40, 10, 100, Stall(40, 0, 0, 10)),
        (Stall(), 40, 0, 100, Stall(40, 1, 0, 0)),
        # moves by a point or more: reset
        (Stall(40, 2), 41, 10, 100, Stall(41, 0, 0, 10)),
        (Stall(40, 2), 90, 10, 100, Stall(90, 0, 0, 10)),
        (Stall(40, 2), 41, 0, 100, Stall(41, 3, 0, 0)),  # but nothing was appended
        # goes down: counts at once
        (Stall(40, 0), 39, 500, 100, Stall(39, 1, 0, 500)),
        (Stall(40, 2), 10, 500, 100, Stall(10, 3, 0, 500)),
        # flat after the previous reply merged a point's worth (100 chars at 40% = 2.5)
        (Stall(40, 0, 0, 10), 40, 10, 100, Stall(40, 1, 0, 10)),
        (Stall(40, 1, 0, 3), 40, 3, 100, Stall(40, 2, 0, 3)),
        # flat, but the previous reply merged nothing: an honest marker, and this reply
        # brought text: reset
        (Stall(54, 1, 0, 0), 54, 1400, 4400, Stall(54, 0, 0, 1400)),
        # flat, less than a point's worth merged so far: not yet
        (Stall(40, 0, 0, 1000), 40, 9000, 400_000, Stall(40, 0, 1000, 9000)),
        (Stall(40, 0, 1000, 9000), 40, 2000, 400_000, Stall(40, 1, 0, 2000)),  # 10,000
        (Stall(0, 0, 0, 100), 0, 5, 100, Stall(0, 1, 0, 5)),  # 0%: a point >= all delivered
        (Stall(0, 0, 0, 99), 0, 5, 100, Stall(0, 0, 99, 5)),
    ],
)
def test_stall_update(
    before: Stall, percent: int | None, appended: int, delivered: int, after: Stall
) -> None:
    assert before.update(percent, appended, delivered) == after


@pytest.mark.parametrize(
    ("count", "limit", "stalled"), [(0, 3, False), (2, 3, False), (3, 3, True)]
)
def test_stalled_at_the_limit(count: int, limit: int, stalled: bool) -> None:
    assert Stall(50, count).stalled(limit) is stalled


def test_honest_model_on_a_long_document_never_stalls() -> None:
    """500 replies, each 0.2 % of the whole, reported as whole percents: steady, not stalled."""
    total, chunk = 1_000_000, 2_000
    stall = Stall()
    delivered = 0
    for _ in range(500):
        percent = 100 * delivered // total
        stall = stall.update(percent, chunk, delivered)
        delivered += chunk
        assert not stall.stalled(3)


def test_looping_model_that_keeps_writing_without_progress_stalls() -> None:
    """New text every time, but the estimate stays: stalled after about three points' worth
    (a point is 1% of the size the estimate implies, which grows with what is delivered)."""
    stall = Stall(40, 0)
    delivered = 400_000  # one point = 10,000 characters
    replies = 0
    while not stall.stalled(3):
        stall = stall.update(40, 2_000, delivered)
        delivered += 2_000
        replies += 1
    assert 15 <= replies <= 20


# -- overlap_context ---------------------------------------------------------------------

LINES = "".join(f"line {i:03d} of the text\n" for i in range(50))


@pytest.mark.parametrize("size", [5, 50, 100])
def test_overlap_is_the_end_of_the_tail(size: int) -> None:
    overlap = overlap_context(LINES, size)
    assert LINES.endswith(overlap)
    assert 0 < len(overlap) <= size


def test_overlap_of_a_short_tail_is_all_of_it() -> None:
    assert overlap_context("short", 200) == "short"
    assert overlap_context("", 200) == ""


def test_overlap_starts_at_a_line_start_when_one_is_near() -> None:
    overlap = overlap_context(LINES, 60)
    assert overlap.startswith("line ")
    assert LINES.endswith(overlap)


def test_overlap_without_newlines_is_exactly_size() -> None:
    tail = "abcdefghij" * 50
    assert overlap_context(tail, 37) == tail[-37:]


def test_overlap_reaches_back_to_the_cut_element_when_near() -> None:
    """The repeat starts at the cut element's start when that is within 3 x size."""
    tail = "x" * 1000 + '{"id": 7, "name": "a long name that goes on and on'
    start = 1000
    overlap = overlap_context(tail, 20, start)
    assert overlap == tail[start:]


def test_overlap_ignores_a_far_cut_element() -> None:
    tail = "x" * 1000 + "y" * 200
    assert overlap_context(tail, 20, 10) == tail[-20:]


# -- json_path ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("", "$"),
        ('{"title": "Inv', "$.title"),
        ('{"title": "Inventory", ', "$"),
        ('{"items": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4, "name": "Bo', "$.items[3].name"),
        ('{"items": [', "$.items[0]"),
        ("[1, 2, 3", "$[2]"),
        ("[[1, 2], [3, 4], [5", "$[2][0]"),
        ('{"a": {"b": {"c": [true, fal', "$.a.b.c[1]"),
        ('{"a": 1, "b"', "$.b"),
        ('{"a": 1, "bc', "$"),
    ],
)
def test_json_path_names_the_cut_element(text: str, path: str) -> None:
    assert json_path(JsonScanner().feed(text)) == path


# -- json_window -------------------------------------------------------------------------

NESTED = json.dumps(
    {
        "title": "T",
        "meta": {"owner": "x"},
        "data": {
            "rows": [{"id": i, "name": f"row {i}", "tags": ["p", "q"]} for i in range(300)],
        },
    },
    indent=2,
)


def _keys(path: str) -> list[str]:
    return re.findall(r"\.(\w+)", path)


def test_window_is_the_tail_when_the_tail_is_everything() -> None:
    text = NESTED[:500]
    assert json_window(JsonScanner().feed(text), text) == text


@pytest.mark.parametrize("tail_chars", [80, 300, 1500, 6000])
def test_window_reopens_the_path_when_the_tail_does_not_reach_the_root(tail_chars: int) -> None:
    """Containers opened before the tail are re-opened from the scanner's path."""
    cut = NESTED.index('"name": "row 250') + 14
    text = NESTED[:cut]
    scan = JsonScanner().feed(text)
    window = json_window(scan, text[-tail_chars:])
    assert window.startswith('{"data": {"rows": [')
    assert text.endswith(window[-10:])
    again = JsonScanner().feed(window)
    assert again.error is None and not again.complete
    assert _keys(json_path(again)) == _keys(json_path(scan)) == ["data", "rows", "name"]
    assert len(window) <= tail_chars + 64


# -- continuation_messages and repair_messages -------------------------------------------


def test_continuation_keeps_the_original_conversation_first() -> None:
    turns = [
        Message(role="system", content="You write CSV."),
        Message(role="user", content="List 1000 cities."),
    ]
    spec = JobSpec(messages=turns, format=OutputFormat.CSV)
    messages = continuation_messages(
        spec, OutputFormat.CSV, overlap="3,Paris\n4,Lyo", context="id,city", delivered="9 chars"
    )
    stated = Message(role="system", content=FORMAT_INSTRUCTIONS[OutputFormat.CSV])
    assert messages[: len(turns) + 1] == [stated, *turns]  # the format stated first
    assert len(messages) == len(turns) + 2
    last = messages[-1]
    assert last.role == "user"
    assert "Delivered so far: 9 chars." in last.content
    assert CONTEXT_OPEN + "id,city" + CONTEXT_CLOSE in last.content
    assert MARKER_TEMPLATE in last.content
    assert last.content.endswith(REPEAT_OPEN + "3,Paris\n4,Lyo" + REPEAT_CLOSE)
    assert "CSV" in last.content


@pytest.mark.parametrize("fmt", list(OutputFormat))
def test_every_format_has_its_instructions(fmt: OutputFormat) -> None:
    spec = JobSpec(prompt="p")
    last = continuation_messages(spec, fmt, overlap="ab", context="", delivered="2")[-1]
    assert "Continue the" in last.content
    assert CONTEXT_OPEN not in last.content  # no context block when there is no context


def test_repair_messages_feed_back_the_output_and_the_error() -> None:
    spec = JobSpec(prompt="p", format=OutputFormat.JSON)
    messages = repair_messages(spec, '{"a": }', "Expecting value: line 1 column 7")
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0].content == FORMAT_INSTRUCTIONS[OutputFormat.JSON]
    assert messages[2].content == '{"a": }'
    assert "Your previous output had an error: Expecting value: line 1 column 7" in (
        messages[3].content
    )
    assert "Output ONLY the corrected JSON" in messages[3].content


@pytest.mark.parametrize(
    ("tail", "most", "expected"),
    [
        # Unique already: the shortest end, 120 characters.
        ("".join(f"word{i} " for i in range(100)), 2000, 120),
        # Periodic: 0,0,0,... is unique only from the text before the run.
        ("intro text here: " + "0," * 400, 2000, 817),
        # Never unique within the cap: the cap.
        ("0," * 2000, 300, 300),
        # Shorter than the least quote: all of it.
        ("[1, 2, ", 2000, 7),
    ],
)
def test_a_retry_quotes_an_end_found_nowhere_earlier(tail: str, most: int, expected: int) -> None:
    """The end a retry asks to repeat occurs once in the delivered text (so a reply that
    repeats it joins at one place), doubling from 120 characters, at most ``most``."""
    quote = retry_anchor(tail, most)
    assert tail.endswith(quote) and len(quote) == expected
    if expected < most and expected < len(tail):
        assert tail.find(quote) == len(tail) - len(quote)
