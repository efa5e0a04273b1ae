"""Merging JSON fragments: every overlap shape of docs/engine.md "JSON", and what must fail."""

from __future__ import annotations

import json

import pytest

from core import stitch
from core.json_stitch import merge_json, start_json
from core.state import HEAD_CHARS, TAIL_CHARS

DOC = json.dumps(
    {
        "title": "Inventory",
        "items": [
            {"id": i, "name": f"item {i}", "tags": ["a", "b"], "price": 1.5 * i, "ok": i % 2 == 0}
            for i in range(6)
        ],
    },
    indent=2,
)


def stitch_all(fragments: list[str]) -> tuple[str, list[str], list[str | None]]:
    """Start with the first fragment, merge the others; the text, warnings, errors."""
    scan, merge = start_json(fragments[0])
    assert merge.ok, merge.error
    acc = merge.append
    warnings = list(merge.warnings)
    errors: list[str | None] = []
    for fragment in fragments[1:]:
        scan, merge = merge_json(scan, acc[-TAIL_CHARS:], fragment, acc[:HEAD_CHARS])
        errors.append(merge.error)
        warnings += merge.warnings
        acc += merge.append
    return acc, warnings, errors


def value_of(text: str) -> object:
    return json.loads(text)


def test_complete_first_fragment_is_the_fast_path() -> None:
    """A complete first reply is the whole document: no accumulation needed."""
    scan, merge = start_json(DOC)
    assert merge.ok and scan.complete and merge.append == DOC


@pytest.mark.parametrize("cut", [10, 57, 100, 173, 260, len(DOC) - 3])
@pytest.mark.parametrize("repeat", [0, 8, 20, 64])
def test_overlap_of_any_length_at_any_cut(cut: int, repeat: int) -> None:
    """Exact continuation and partial overlaps of 8+ characters splice once."""
    fragments = [DOC[:cut], DOC[max(0, cut - repeat) :]]
    text, _, errors = stitch_all(fragments)
    assert errors == [None]
    assert value_of(text) == value_of(DOC)


def test_fragment_re_emitting_the_whole_cut_element() -> None:
    """The reply starts the cut element again: the repeat reaches back before the cut."""
    cut = DOC.index('"name": "item 3"') + 12
    element = DOC.rindex("{", 0, cut)
    text, _, errors = stitch_all([DOC[:cut], DOC[element:]])
    assert errors == [None] and value_of(text) == value_of(DOC)


def test_whitespace_differences_outside_strings() -> None:
    """A repeat re-indented by the model is matched ignoring whitespace outside strings."""
    cut = DOC.index('"name": "item 4"') + 10
    start = DOC.index('{\n      "id": 3')
    repeat = DOC[start:cut].replace("\n      ", "\n  ")
    assert repeat != DOC[start:cut]
    text, _, errors = stitch_all([DOC[:cut], repeat + DOC[cut:]])
    assert errors == [None] and value_of(text) == value_of(DOC)


def test_whitespace_inside_strings_is_content() -> None:
    """At a cut inside a string, spaces are part of the value and never collapsed."""
    doc = json.dumps({"text": "alpha  beta   gamma delta epsilon zeta eta theta"})
    cut = doc.index("gamma") - 2
    repeat = doc[doc.index("alpha") : cut]
    text, _, errors = stitch_all([doc[:cut], repeat + doc[cut:]])
    assert errors == [None] and text == doc


def test_restart_covering_everything_received_continues() -> None:
    """A reply that starts the document again but goes further adds only the new part."""
    text, _, errors = stitch_all([DOC[:150], DOC[:400], DOC[380:]])
    assert errors == [None, None] and value_of(text) == value_of(DOC)


def test_restart_that_adds_nothing_is_a_merge_failure() -> None:
    """A reply that restarts and stops short of the cut cannot be merged: retry instead."""
    scan, merge = start_json(DOC[:300])
    again, merge2 = merge_json(scan, merge.append, DOC[:120], merge.append[:HEAD_CHARS])
    assert not merge2.ok and "restarted" in (merge2.error or "")
    assert again is scan


def test_prose_and_fences_around_a_repeat_are_dropped() -> None:
    """A preamble line or a fence before a long enough repeat is dropped with a warning."""
    cut = 200
    frag = "Here is the rest of the JSON:\n```json\n" + DOC[cut - 40 :] + "\n```\nDone!"
    text, warnings, errors = stitch_all([DOC[:cut], frag])
    assert errors == [None] and value_of(text[: text.rindex("}") + 1]) == value_of(DOC)
    assert any("preamble" in w for w in warnings)
    assert any("after the JSON" in w for w in warnings)


def test_first_fragment_with_prose_fence_bom_and_nul() -> None:
    """Extraction strips a BOM, NUL characters, prose and a fence before the payload."""
    first = "\ufeffSure! Here it is:\n```json\n" + DOC[:90].replace("Inventory", "Inven\x00tory")
    text, warnings, _ = stitch_all([first, DOC[70:]])
    assert value_of(text) == value_of(DOC)
    assert any("byte-order mark" in w for w in warnings)
    assert any("NUL" in w for w in warnings)
    assert any("fence" in w for w in warnings)


def test_lone_surrogates_are_removed_with_a_warning() -> None:
    """Invalid surrogates from a broken encoder are removed, never passed on."""
    text, warnings, errors = stitch_all(['{"a": "x\ud800y", "b"', ": 1}"])
    assert errors == [None] and value_of(text) == {"a": "xy", "b": 1}
    assert any("surrogate" in w for w in warnings)


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        # cut inside a string, escapes on both sides of the cut
        ('{"s": "a\\"b', '\\\\c\\u00e9"}', {"s": 'a"b\\cé'}),
        ('{"s": "a\\', 'nb"}', {"s": "a\nb"}),
        ('{"s": "a\\u00', 'e9"}', {"s": "aé"}),
        # cut inside a number, a literal, a key
        ('{"n": 12', '345, "m": -1.5e3}', {"n": 12345, "m": -1500.0}),
        ('{"t": tr', "ue}", {"t": True}),
        ('{"long_key', '_name": null}', {"long_key_name": None}),
        # cut between members
        ("[1, 2,", " 3]", [1, 2, 3]),
        ("[1, 2", ", 3]", [1, 2, 3]),
    ],
)
def test_exact_continuation_at_every_kind_of_cut(first: str, second: str, expected: object) -> None:
    """With no overlap, the reply continues the token the cut was in."""
    text, _, errors = stitch_all([first, second])
    assert errors == [None] and value_of(text) == expected


def test_short_repeat_proven_by_the_grammar_is_accepted() -> None:
    """A 2-character repeat is taken when the exact reading would not scan."""
    text, _, errors = stitch_all(['{"a": 1, "b', '"b": 2}'])
    assert errors == [None] and value_of(text) == {"a": 1, "b": 2}


def test_ambiguous_short_repeat_is_exact_continuation_with_a_warning() -> None:
    """ "hel" + "lo" is "hello" or "helo": too short to be an overlap; the guess is said."""
    text, warnings, errors = stitch_all(['{"s": "hel', 'lo"}'])
    assert errors == [None] and value_of(text) == {"s": "hello"}
    assert any("ambiguous" in w for w in warnings)


def test_no_safe_splice_is_a_merge_failure_not_concatenation() -> None:
    """A reply that neither overlaps nor continues validly is refused, state unchanged."""
    scan, merge = start_json('{"a": [1, 2')
    again, bad = merge_json(scan, merge.append, '"unrelated": true}', merge.append)
    assert not bad.ok and bad.append == "" and again is scan
    assert "no reading" in (bad.error or "")


def test_closing_fence_on_an_incomplete_reply_is_dropped() -> None:
    """A fence the model closed although the JSON goes on is not part of the payload."""
    text, _, errors = stitch_all(['{"a": [1, 2', ", 3\n```", ", 4]}"])
    assert errors == [None, None] and value_of(text) == {"a": [1, 2, 3, 4]}


def test_periodic_tail_needs_a_long_anchor() -> None:
    """In periodic text, the longest repeat of 8+ characters wins; shorter ones never."""
    doc = json.dumps({"rows": ["ab" * 3] * 12})
    cut = doc.index('"ababab"', 40) + 4
    text, _, errors = stitch_all([doc[:cut], doc[cut - 30 :]])
    assert errors == [None] and value_of(text) == value_of(doc)


def test_prose_then_blank_line_then_fence_before_the_repeat() -> None:
    """A chatty preamble of several lines (prose, blank, fence opener) is dropped."""
    first, second = '{"a": ["hello wor', 'Sure, here:\n\n```json\n["hello world", "more"]}'
    text, _, errors = stitch_all([first, second])
    assert errors == [None] and value_of(text) == {"a": ["hello world", "more"]}


def test_a_repeat_made_only_of_indentation_is_no_evidence() -> None:
    """A re-indented repeat whose first characters happen to equal the indentation at the cut
    is matched on its content, not spliced after the whitespace (which would duplicate it)."""
    tail = (
        '{\n  "sections": [\n    {\n      "id": 1,\n      "items": [\n        {\n'
        '          "sku": "A",\n          "label": "garnet",\n          "price": 5,\n          '
    )
    fragment = (
        '\n            "items": [\n                {\n                    "sku": "A",\n'
        '                    "label": "garnet",\n                    "price": 5,\n'
        '          "qty": 1\n        }\n      ]\n    }\n  ]\n}'
    )
    text, _, errors = stitch_all([tail, fragment])
    assert errors == [None]
    assert value_of(text) == {
        "sections": [{"id": 1, "items": [{"sku": "A", "label": "garnet", "price": 5, "qty": 1}]}]
    }


def test_rest_of_a_cut_literal_is_not_a_prose_line() -> None:
    """ "ull," continues a literal cut after "n": it is content, not a preamble to drop."""
    first = '{"a": [\n    false,\n    n'
    second = "```json\null,\n    null,\n    null\n  ]\n}\n```"
    text, _, errors = stitch_all([first, second])
    assert errors == [None] and value_of(text) == {"a": [False, None, None, None]}


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        (  # ", " after every comma: "72,0" would be the only comma without its space
            [
                '{"values": [68, 1998, 72, 0, 19, 72, 0, 1998, 70, 72, 70, 0, 68, 0, 11, 11, '
                "0, 72,",
                "0, 11, 11, 0, 72, 68, 70]}",
            ],
            '{"values": [68, 1998, 72, 0, 19, 72, 0, 1998, 70, 72, 70, 0, 68, 0, 11, 11, 0, 72, '
            "68, 70]}",
        ),
        (  # every value indented: "1998" at the line's start would be the only one not
            [
                '{\n    "values": [\n        72,\n        11,\n        68,\n        1998,\n'
                "        70,\n",
                "1998,\n        70,\n        19\n    ]\n}",
            ],
            '{\n    "values": [\n        72,\n        11,\n        68,\n        1998,\n'
            "        70,\n        19\n    ]\n}",
        ),
    ],
)
def test_a_repeat_is_read_where_no_repeat_would_break_the_spacing_habit(
    fragments: list[str], expected: str
) -> None:
    result = stitch(fragments, "json")
    assert (result.text, result.doubts) == (expected, [])


@pytest.mark.parametrize(
    "fragments",
    [
        # Compact: no spacing tells a repeat of "2," from a new "2"-something.
        ['{"values":[72,11,70,68,70,0,70,19,19,72,19,68,72,70,', "2,70,1998]}"],
        # The reply begins the line again, indented its own way: spacing says nothing.
        [
            '{\n    "values": [\n        0,\n        68,\n        70,\n        11,\n     ',
            "       11,\n        11,\n        70\n    ]\n}",
        ],
    ],
)
def test_spacing_decides_no_seam_it_cannot_tell(fragments: list[str]) -> None:
    result = stitch(fragments, "json")
    assert result.ok and result.doubts, result.text


def test_a_reply_of_an_empty_fenced_block_adds_nothing() -> None:
    result = stitch(['{"email": "user13@ex', "```\n```", 'ample.com"}'], "json")
    assert (result.text, result.doubts) == ('{"email": "user13@example.com"}', [])


@pytest.mark.parametrize(
    ("fragments", "doubted"),
    [
        (['[{"active": false, "tags": []}, ', '[{"id": 7}]'], True),
        (["[1, 2, ", "[3, 4]]"], True),
        (['{"a": [true, ', "[false]]}"], True),
        (["[[1, 2], ", "[3, 4]]"], False),  # a list of arrays goes on with an array
        (['[{"a": 1}, ', '{"b": 2}]'], False),
    ],
)
def test_a_new_array_among_elements_that_are_none_is_doubted(
    fragments: list[str], doubted: bool
) -> None:
    result = stitch(fragments, "json")
    assert bool(result.doubts) is doubted, result.text


def test_an_elision_mark_where_json_cannot_hold_it_is_dropped() -> None:
    result = stitch(['{"values": [1, 2, ', "... 3, 4]}"], "json")
    assert (result.text, result.doubts) == ('{"values": [1, 2, 3, 4]}', [])
