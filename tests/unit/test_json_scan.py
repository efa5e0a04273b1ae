"""The incremental JSON scanner: closing a cut text, resuming at any cut, reporting errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.json_scan import JsonScan, JsonScanner


def closed(text: str) -> str | None:
    result = JsonScanner().feed(text).close()
    return None if result is None else text[: result[0]] + result[1]


@pytest.mark.parametrize(
    ("cut", "expected"),
    [
        # open containers are closed; a partial value string is kept and closed
        ('{"a": [1, 2, {"b": "hel', '{"a": [1, 2, {"b": "hel"}]}'),
        # a dangling key is dropped, with or without its colon
        ('{"a": 1, "b"', '{"a": 1}'),
        ('{"a": 1, "b":', '{"a": 1}'),
        ('{"a": 1, "b": ', '{"a": 1}'),
        # a partial key is dropped
        ('{"a": 1, "bc', '{"a": 1}'),
        # a trailing comma is dropped
        ("[1, 2, ", "[1, 2]"),
        ('{"a": 1,', '{"a": 1}'),
        # partial literals and numbers at the cut are dropped (12 may be the start of 123)
        ("[true, fal", "[true]"),
        ("[1, nu", "[1]"),
        ("[1, 12", "[1]"),
        ("[1, -", "[1]"),
        ("[1, 1.5e", "[1]"),
        # an incomplete escape is dropped, the string kept
        ('["ab\\', '["ab"]'),
        ('["ab\\u00', '["ab"]'),
        ('["ab\\u00e9', '["ab\\u00e9"]'),
        # empty containers just opened
        ("[", "[]"),
        ('{"a": {', '{"a": {}}'),
        ('{"a": [', '{"a": []}'),
        # a complete document is itself
        ('{"a": [1, 2]}', '{"a": [1, 2]}'),
        ('{"a": [1, 2]}  \n', '{"a": [1, 2]}'),
        # a root string cut in the middle
        ('"abc', '"abc"'),
        # nothing usable
        ("", None),
        ("12", None),
        ("tr", None),
    ],
)
def test_close_cut_text(cut: str, expected: str | None) -> None:
    """Closing keeps every complete member and what the seed says to keep of the cut."""
    assert closed(cut) == expected
    if expected is not None:
        json.loads(expected)


@pytest.mark.parametrize(
    ("text", "at", "message"),
    [
        ("[1 2]", 3, "expected ',' or ']'"),
        ('{"a" 1}', 5, "expected ':'"),
        ("{1: 2}", 1, "expected a key"),
        ("[1,]", 3, "expected a value"),
        ('["a\\x"]', 3, "invalid escape in string"),
        ('["a\nb"]', 3, "control character in string"),
        ("[01]", 1, "invalid number"),
        ("[NaN]", 1, "expected a value"),
        ("[truex]", 5, "expected ',' or ']'"),
        ('{"a": 1,}', 8, "expected a key"),
    ],
)
def test_syntax_errors_are_located(text: str, at: int, message: str) -> None:
    """A syntax error stops the scan and says where and what was expected."""
    scan = JsonScanner().feed(text)
    assert scan.error is not None
    assert (scan.error.at, scan.error.message) == (at, message)


def test_text_after_the_root_is_marked_not_read() -> None:
    """Trailing prose or a fence after a complete document is located, not parsed."""
    scan = JsonScanner().feed('{"a": 1}\n```\nHope this helps!')
    assert scan.complete and scan.done_at == 8 and scan.trailing_at == 9
    assert scan.error is None


def test_finish_completes_a_root_scalar() -> None:
    """At end of input a number or literal carried over the cut is complete."""
    assert JsonScanner().feed("12").finish().complete
    assert JsonScanner().feed("nul").finish().complete is False


def test_records_count_the_main_list() -> None:
    """Records are the items of the root array or the shallowest array under the root."""
    assert JsonScanner().feed('{"meta": {}, "items": [{"a": 1}, {"a": 2}, {"a"').records == 2
    assert JsonScanner().feed("[1, 2, 3]").records == 3
    assert JsonScanner().feed('{"items": [1, 2, 3], "x": {"y": [1]}}').records == 3


def test_state_is_small_and_round_trips() -> None:
    """The snapshot grows with depth, not with the length of the text."""
    text = json.dumps({"items": [{"id": i, "name": "x" * 50} for i in range(20_000)]})[:-5]
    scan = JsonScanner().feed(text)
    snapshot = scan.snapshot()
    stored = snapshot.model_dump_json()
    assert len(stored) < 500
    assert JsonScanner.resume(JsonScan.model_validate_json(stored)).snapshot() == snapshot
    assert JsonScanner.from_dict(json.loads(stored)).to_dict() == json.loads(stored)
    inner = snapshot.frames[-1]
    assert (inner.kind, inner.label, inner.key) == ("{", 19_999, "name")
    assert json.loads(stored)["frames"][-1][:3] == ["{", inner.open_at, 19_999]


def without_anchors(snapshot: dict[str, object]) -> dict[str, object]:
    """Anchors are excerpt hints whose place depends on chunking; the rest must not."""
    frames = snapshot["frames"]
    assert isinstance(frames, list)
    return {**snapshot, "frames": [f[:6] for f in frames]}


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(
    value=json_values,
    indent=st.sampled_from([None, 0, 2]),
    ascii_only=st.booleans(),
    data=st.data(),
)
def test_every_cut_closes_to_valid_json_and_chunks_do_not_matter(
    value: object, indent: int | None, ascii_only: bool, data: st.DataObject
) -> None:
    """Any document cut anywhere closes to valid JSON, and feeding it in arbitrary chunks
    gives exactly the state of feeding it at once."""
    doc = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    cut = data.draw(st.integers(0, len(doc)))
    text = doc[:cut]
    whole = JsonScanner().feed(text)
    assert whole.error is None
    chunked = JsonScanner()
    bounds = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    start = 0
    for bound in [*bounds, len(text)]:
        chunked.feed(text[start:bound])
        start = bound
    assert without_anchors(chunked.to_dict()) == without_anchors(whole.to_dict())
    result = whole.close()
    if result is not None:
        json.loads(text[: result[0]] + result[1])
    if cut == len(doc):
        assert whole.finish().complete
        assert json.loads(text[: whole.done_at]) == value
