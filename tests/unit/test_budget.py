"""Budgeted prompt context (docs/engine.md, "JSON").

The seed's examples come first, then one table per behaviour: where the cut falls, how the
budget is spent, summary mode, folding of huge sibling arrays, raw text, complete documents,
invalid input. The hypothesis properties cut real ``json.dumps(indent=2)`` output anywhere.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.budget import MAX_INDENT_LEVELS, SUMMARY_THRESHOLD, render_budgeted, type_hint


def lines(*rows: str) -> str:
    return "\n".join(rows)


# --- The seed's example -----------------------------------------------------------------

# The seed's cut value is "120 chars"; its text is 113, so it is padded to exactly 120.
SEED_CONTENT = (
    '"This is a very long content that gets cut right here in the middle of this sentence'
    " and the JSON is truncated... (padded)"
)[:120]
SEED_CUT = lines(
    "{",
    '  "document": {',
    '    "metadata": {',
    '      "title": "My Document",',
    '      "author": "John Doe",',
    '      "version": 1',
    "    },",
    '    "sections": [',
    "      {",
    '        "id": "section1",',
    '        "title": "Introduction",',
    '        "content": "This is the introduction content..."',
    "      },",
    "      {",
    '        "id": "section2",',
    '        "title": "Main Content",',
    '        "content": ' + SEED_CONTENT,
)


def seed_cut_with_content(content: str) -> str:
    return SEED_CUT.replace(SEED_CONTENT, content)


def test_seed_cut_value_is_120_characters() -> None:
    assert len(SEED_CONTENT) == 120


def test_seed_example_with_sufficient_budget_renders_every_value() -> None:
    # Budget 500: 120 (cut) + 24 (sections[1]) + 61 (sections[0]) + 24 (metadata) fit.
    assert render_budgeted(SEED_CUT, 500) == SEED_CUT


def test_seed_example_cut_value_too_big_becomes_hint_and_siblings_spend_the_budget() -> None:
    # The seed's own output for (budget 100, cut value 120) shows the cut value in full and
    # "title" as <str>; its rules say the opposite: a 120-character value does not fit in
    # 100, so *it* becomes <str> and costs nothing. Following the rules: "title" (14) and
    # "id" (10) fit (76 left), sections[0] (61) fits (15 left), 15 < 50 starts summary mode
    # at the sections level, so "metadata", one level higher, shows structure only.
    expected = lines(
        "{",
        '  "document": {',
        '    "metadata": {…},',
        '    "sections": [',
        "      {",
        '        "id": "section1",',
        '        "title": "Introduction",',
        '        "content": "This is the introduction content..."',
        "      },",
        "      {",
        '        "id": "section2",',
        '        "title": "Main Content",',
        '        "content": <str>',
    )
    assert render_budgeted(SEED_CUT, 100) == expected


def test_seed_example_single_value_too_big_keeps_the_whole_budget_for_the_rest() -> None:
    # Value 600 > budget 500: <str>, nothing deducted, every other value still rendered.
    cut = seed_cut_with_content('"' + "x" * 599)
    assert render_budgeted(cut, 500) == seed_cut_with_content("<str>")


def test_seed_example_summary_mode_hints_same_level_and_structure_above() -> None:
    cut = seed_cut_with_content('"' + "x" * 599)
    expected = lines(
        "{",
        '  "document": {',
        '    "metadata": {…},',
        '    "sections": [',
        "      {…},",
        "      {",
        '        "id": <str>,',
        '        "title": <str>,',
        '        "content": <str>',
    )
    assert render_budgeted(cut, SUMMARY_THRESHOLD - 1) == expected


# --- Where the cut falls (budget large enough for everything) ---------------------------


@pytest.mark.parametrize(
    ("cut_text", "expected"),
    [
        pytest.param('{"a": 1, "na', lines("{", '  "a": 1,', '  "na'), id="inside-key"),
        pytest.param('{"a": 1, "name"', lines("{", '  "a": 1,', '  "name"'), id="dangling-key"),
        pytest.param('{"a": 1, "name": ', lines("{", '  "a": 1,', '  "name":'), id="after-colon"),
        pytest.param("[1, 2,", lines("[", "  1,", "  2,"), id="after-comma-in-array"),
        pytest.param('{"a": 1, ', lines("{", '  "a": 1,'), id="after-comma-in-object"),
        pytest.param('{"a": [', lines("{", '  "a": ['), id="just-after-opener"),
        pytest.param('{"n": 12.5e', lines("{", '  "n": 12.5e'), id="inside-exponent"),
        pytest.param("[1, -", lines("[", "  1,", "  -"), id="inside-minus"),
        pytest.param("[1, 2", lines("[", "  1,", "  2"), id="after-digits"),
        pytest.param("[tr", lines("[", "  tr"), id="inside-true"),
        pytest.param('{"x": nu', lines("{", '  "x": nu'), id="inside-null"),
        pytest.param(
            "[[1, 2], [3, [4, 5",
            lines(
                "[",
                "  [",
                "    1,",
                "    2",
                "  ],",
                "  [",
                "    3,",
                "    [",
                "      4,",
                "      5",
            ),
            id="inside-nested-arrays",
        ),
        pytest.param(
            '{"a": [1, 2]',
            lines("{", '  "a": [', "    1,", "    2", "  ]"),
            id="after-closed-array",
        ),
        pytest.param('["ab', lines("[", '  "ab'), id="inside-string"),
        pytest.param('["ab\\', lines("[", '  "ab\\'), id="inside-escape"),
        pytest.param('["ab\\u00', lines("[", '  "ab\\u00'), id="inside-unicode-escape"),
        pytest.param('"abc', '"abc', id="root-string"),
        pytest.param("", "", id="empty-text"),
        pytest.param(" \n ", "", id="blank-text"),
        pytest.param("[", "[", id="lone-opener"),
    ],
)
def test_output_ends_exactly_at_the_cut_without_closers(cut_text: str, expected: str) -> None:
    assert render_budgeted(cut_text, 10_000) == expected


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param('{"a": [1, 2]}', lines("{", '  "a": [', "    1,", "    2"), id="nested"),
        pytest.param('{"a": {"b": true}}\n', lines("{", '  "a": {', '    "b": true'), id="blank"),
        pytest.param('{"a": []}', lines("{", '  "a": []'), id="empty-array-is-the-last-leaf"),
        pytest.param('[1, {"b": {}}]', lines("[", "  1,", "  {", '    "b": {}'), id="empty-obj"),
        pytest.param("[]", "[]", id="empty-root"),
        pytest.param("42", "42", id="scalar-root"),
        pytest.param('"x"', '"x"', id="string-root"),
    ],
)
def test_complete_document_renders_open_at_its_last_leaf(document: str, expected: str) -> None:
    assert render_budgeted(document, 10_000) == expected


# --- How the budget is spent ------------------------------------------------------------

LONG = '"' + "x" * 98 + '"'  # 100 characters


@pytest.mark.parametrize(
    ("cut_text", "budget", "expected"),
    [
        pytest.param(
            f'["ab", {LONG}, "c',
            80,  # cut 2 -> 78; LONG (100) does not fit; "ab" (4) still does
            lines("[", '  "ab",', "  <str>,", '  "c'),
            id="too-big-sibling-skipped-smaller-farther-one-fits",
        ),
        pytest.param(
            f"[{LONG}, {LONG}, {LONG}, 1",
            260,  # cut 1 -> 259; nearest LONG -> 159; next -> 59; the farthest does not fit
            lines("[", "  <str>,", f"  {LONG},", f"  {LONG},", "  1"),
            id="nearest-siblings-first",
        ),
        pytest.param(
            f'{{"far": {LONG}, "in": {{"near": {LONG}, "cut": "x',
            150,  # cut 2 -> 148; near (same level) 100 -> 48 < 50: summary; far is above
            lines("{", '  "far": …,', '  "in": {', f'    "near": {LONG},', '    "cut": "x'),
            id="path-level-before-higher-levels",
        ),
        pytest.param(
            f'{{"a": 1, "b": {LONG}',
            99,  # the last complete value is the cut element: too big -> hint
            lines("{", '  "a": 1,', '  "b": <str>'),
            id="complete-cut-value-too-big",
        ),
        pytest.param(
            '{"a": 1, "b": "' + "y" * 40,
            60,  # cut 41 fits -> 19 left < 50: summary from the cut's own level
            lines("{", '  "a": <number>,', '  "b": "' + "y" * 40),
            id="cut-fits-then-summary",
        ),
    ],
)
def test_budget_is_spent_from_the_cut_upwards(cut_text: str, budget: int, expected: str) -> None:
    assert render_budgeted(cut_text, budget) == expected


@pytest.mark.parametrize(
    ("cut_text", "expected"),
    [
        pytest.param('{"a": 1, "na', lines("{", '  "a": <number>,', '  "na'), id="key-is-free"),
        pytest.param('{"a": 1, "b": ', lines("{", '  "a": <number>,', '  "b":'), id="colon"),
        pytest.param("[1, 2,", lines("[", "  <2 items: number>,"), id="after-comma"),
        pytest.param(
            '{"a": [1, {"b": 2}], "c": "x', lines("{", '  "a": <array>,', '  "c": <str>'), id="cut"
        ),
        pytest.param(
            '{"a": {"b": 1, "c": [true], "d": {}, "e": "s"}, "f": [1, "',
            lines("{", '  "a": {…},', '  "f": [', "    <number>,", "    <str>"),
            id="even-one-character-does-not-fit",
        ),
    ],
)
def test_budget_zero_keeps_structure_and_shows_only_hints(cut_text: str, expected: str) -> None:
    assert render_budgeted(cut_text, 0) == expected


def test_summary_mode_shows_structure_only_above_the_current_level() -> None:
    # Budget 2 pays for the cut ("x) only: summary mode starts on the cut's level (the "in"
    # array: its [0] is a hint); the root is one level higher: keys and shapes, no types.
    cut = '{"s": "v", "n": 1, "o": {"k": 1}, "a": [1], "runs": [1, "a", null], "in": [[0], "x'
    expected = lines(
        "{",
        '  "s": …,',
        '  "n": …,',
        '  "o": {…},',
        '  "a": […],',
        '  "runs": […],',
        '  "in": [',
        "    <array>,",
        '    "x',
    )
    assert render_budgeted(cut, 2) == expected


@pytest.mark.parametrize(
    ("cut_text", "expected_fold"),
    [
        pytest.param("[" + "1, " * 5 + '"x', "  <5 items: number>,", id="uniform-run"),
        pytest.param('[1, "a", null, {}, "x', "  <4 items>,", id="mixed-run"),
        pytest.param('[{"a": 1}, "x', "  <object>,", id="single-value-is-a-plain-hint"),
    ],
)
def test_runs_of_elided_array_values_fold_into_one_line(cut_text: str, expected_fold: str) -> None:
    assert render_budgeted(cut_text, 0).splitlines()[1] == expected_fold


def test_runs_above_the_summary_level_fold_without_types() -> None:
    assert render_budgeted('[1, 2, 3, ["x', 2) == lines("[", "  <3 items>,", "  [", '    "x')


# --- Huge inputs ------------------------------------------------------------------------


def big_items_document(count: int) -> str:
    items = [{"id": i, "name": f"item {i}", "tags": ["a", i % 2 == 0]} for i in range(count)]
    return json.dumps({"meta": {"title": "big", "count": count}, "items": items}, indent=2)


def test_huge_sibling_array_renders_only_the_nearest_items_within_budget() -> None:
    text = big_items_document(30_000)
    assert len(text) > 2_000_000
    cut = text[: text.rindex('"item 29999"') + 5]  # inside the last item's name
    out = render_budgeted(cut, 300)
    # "item (5) and "id" (5) leave 290; items cost 24 or 25 each: ten fit, then 45 < 50.
    assert '"id": 29989' in out and '"id": 29988' not in out
    assert "    <29989 items: object>,\n" in out
    assert '"meta": {…}' in out
    assert out.endswith('"name": "item')
    # Budget plus structure: about 90 characters of keys and indentation per rendered item.
    assert len(out) < 300 + 11 * 100


def test_huge_flat_array_of_numbers_folds_into_one_line() -> None:
    cut = json.dumps(list(range(300_000)))[:-4]  # inside 299999
    out = render_budgeted(cut, 100)
    assert out.splitlines()[:2] == ["[", "  <299991 items: number>,"]
    assert out.endswith("299998,\n  299")
    assert len(out) < 300


def test_huge_string_at_the_cut_becomes_a_hint_without_reading_it_twice() -> None:
    assert render_budgeted('{"k": "' + "z" * 2_000_000, 1000) == '{\n  "k": <str>'


def test_deep_nesting_is_rendered_with_capped_indentation() -> None:
    out = render_budgeted("[" * 5000 + "1", 100)
    assert out.endswith("\n" + "  " * MAX_INDENT_LEVELS + "1")
    assert len(out) < 5000 * (2 * MAX_INDENT_LEVELS + 3)


# --- Raw text, unicode, escapes ---------------------------------------------------------


def test_strings_keep_their_escapes_and_unicode_as_written() -> None:
    cut = '["a\\"b", "back\\\\slash", "caf\\u00e9", "café", "\\ud83d\\ude00", "tail \\"q'
    expected = lines(
        "[",
        '  "a\\"b",',
        '  "back\\\\slash",',
        '  "caf\\u00e9",',
        '  "café",',
        '  "\\ud83d\\ude00",',
        '  "tail \\"q',
    )
    assert render_budgeted(cut, 1000) == expected


def test_sizes_count_the_characters_as_written_not_decoded() -> None:
    escaped = '"' + "\\u00e9" * 10 + '"'  # 62 characters, 10 once decoded
    cut = f'[{escaped}, "x'
    assert render_budgeted(cut, 2 + 61) == lines("[", "  <str>,", '  "x')
    assert render_budgeted(cut, 2 + 62) == lines("[", f"  {escaped},", '  "x')


def test_numbers_keep_their_raw_spelling() -> None:
    assert render_budgeted("[1E5, -0.0, 1e-7, 10", 100) == lines(
        "[", "  1E5,", "  -0.0,", "  1e-7,", "  10"
    )


# --- Errors and the type hints ----------------------------------------------------------


@pytest.mark.parametrize(
    "cut_text",
    [
        '{"a" 1',
        "[1 2",
        "[1,]",
        "{,",
        "[}",
        "]",
        "[tx",
        "[01",
        "[1.]",
        "[1.e5",
        "[-a",
        "{1: 2}",
        '["a\\q',
        '["a\x01',
        '{"a": 1}}',
        '{"a": 1} x',
        "[NaN",
    ],
)
def test_text_that_is_not_json_up_to_the_cut_raises_value_error(cut_text: str) -> None:
    with pytest.raises(ValueError, match=r"not JSON up to the cut: expected .* at offset \d+"):
        render_budgeted(cut_text, 100)


def test_negative_budget_raises_value_error() -> None:
    with pytest.raises(ValueError, match="budget must be >= 0"):
        render_budgeted("[1", -1)


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("x", "<str>"),
        (1, "<number>"),
        (1.5, "<number>"),
        (True, "<bool>"),
        (None, "<null>"),
        ({"a": 1}, "<object>"),
        ([1], "<array>"),
    ],
)
def test_type_hint_names_the_json_type(value: object, hint: str) -> None:
    assert type_hint(value) == hint


def test_type_hint_refuses_values_json_cannot_hold() -> None:
    with pytest.raises(TypeError, match="not a JSON value"):
        type_hint(object())


# --- Properties on real json.dumps(indent=2) output -------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=25,
)
# Complete strings, numbers and literals in json.dumps output (keys included).
SCALAR_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null')


@st.composite
def cut_documents(draw: st.DrawFn) -> tuple[str, str]:
    value: Any = draw(json_values)
    text = json.dumps(value, indent=2, ensure_ascii=draw(st.booleans()))
    return text, text[: draw(st.integers(0, len(text)))]


@settings(max_examples=400, deadline=None)
@given(cut_documents())
def test_full_budget_keeps_every_complete_scalar_before_the_cut(case: tuple[str, str]) -> None:
    _, cut = case
    out = render_budgeted(cut, len(cut) + SUMMARY_THRESHOLD)
    position = 0
    for token in SCALAR_TOKEN.finditer(cut):
        if token.end() == len(cut):
            continue  # may be the partial cut element itself
        position = out.find(token.group(), position)
        assert position >= 0, f"{token.group()!r} missing from {out!r}"
        position += len(token.group())


@settings(max_examples=400, deadline=None)
@given(cut_documents())
def test_full_budget_reproduces_the_cut_text_up_to_trailing_blanks(case: tuple[str, str]) -> None:
    text, cut = case
    out = render_budgeted(cut, len(cut) + SUMMARY_THRESHOLD)
    assert cut.startswith(out)
    dropped = cut[len(out) :]
    # Only blanks after the cut; a complete document also drops its closing brackets.
    assert dropped.strip(" \n" if cut != text else " \n]}") == ""


@settings(max_examples=200, deadline=None)
@given(cut_documents(), st.integers(0, 300))
def test_any_budget_renders_without_raising(case: tuple[str, str], budget: int) -> None:
    _, cut = case
    out = render_budgeted(cut, budget)
    assert out == "" or out[0] in '[{"-0123456789tfn<'
