"""The five contexts of a cut JSON text (docs/engine.md, "One iteration")."""

from __future__ import annotations

import json

import pytest

from core.contexts import json_contexts

DOC = json.dumps(
    {"document": {"title": "T", "sections": [{"id": i, "text": "x" * 30} for i in range(5)]}}
)


def test_complete_json_has_no_overlap_and_is_its_own_complete_part() -> None:
    """Case A of the decision table: parsing succeeds and there is no cut."""
    ctx = json_contexts(DOC)
    assert ctx.overlap_context == "" and ctx.json_parsing_success
    assert ctx.complete_part == DOC and ctx.hierarchy_context == DOC


@pytest.mark.parametrize("cut", [20, 75, 140, len(DOC) - 10])
def test_cut_json_has_overlap_at_the_cut_and_a_closed_complete_part(cut: int) -> None:
    """Case B: the overlap is a suffix of the cut text, the complete part parses."""
    text = DOC[:cut]
    ctx = json_contexts(text, overlap_chars=40)
    assert ctx.hierarchy_context == text
    assert ctx.overlap_context and text.endswith(ctx.overlap_context)
    assert ctx.json_parsing_success
    json.loads(ctx.complete_part)
    assert ctx.hierarchy_context_for_prompt


def test_broken_json_is_not_parseable() -> None:
    """Case C: a syntax error before the cut: no complete part, parsing failed."""
    ctx = json_contexts('{"a": [1 2, 3')
    assert not ctx.json_parsing_success and ctx.complete_part == ""
