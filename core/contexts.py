"""The contexts of a JSON text cut anywhere (docs/engine.md, "One iteration").

The engine computes the same pieces incrementally from its state; this function gives
them for a whole cut text, for tools and tests. Like the engine, it renders the budgeted
context from at most the last :data:`~core.state.TAIL_CHARS` characters (the path above
them re-opened from the scanner): rendering reads the members of open containers one at
a time in Python (complete values are skipped by the C scanner), which a megabyte of JSON
would still make slow.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.budget_tree import last_leaf_end
from core.json_scan import JsonScanner
from core.prompts import json_prompt_context, overlap_context
from core.state import TAIL_CHARS


@dataclass(frozen=True)
class JsonContexts:
    """``overlap_context``: the tail at the cut the model must repeat ("" when complete);
    ``hierarchy_context``: the cut text, the base for the next merge;
    ``hierarchy_context_for_prompt``: the budgeted rendering of it;
    ``complete_part``: the same data closed into valid JSON ("" when impossible);
    ``json_parsing_success``: whether ``complete_part`` is valid JSON."""

    overlap_context: str
    hierarchy_context: str
    hierarchy_context_for_prompt: str
    complete_part: str
    json_parsing_success: bool


def json_contexts(text: str, *, budget: int = 2000, overlap_chars: int = 200) -> JsonContexts:
    scan = JsonScanner().feed(text)
    closed = None if scan.error is not None else scan.close()
    complete = "" if closed is None else text[: closed[0]] + closed[1]
    if scan.complete:
        overlap = ""
    else:
        element = scan.frames[-1].safe if scan.frames else None
        overlap = overlap_context(text, overlap_chars, element)
    return JsonContexts(
        overlap_context=overlap,
        hierarchy_context=text,
        hierarchy_context_for_prompt=_prompt_context(scan, text, budget),
        complete_part=complete,
        json_parsing_success=closed is not None,
    )


def _prompt_context(scan: JsonScanner, text: str, budget: int) -> str:
    if len(text) <= TAIL_CHARS:
        return json_prompt_context(scan, text, budget)
    if scan.error is not None:  # not JSON up to the cut: nothing to render
        return text[max(0, len(text) - budget) :]
    if scan.complete:
        # Render it as cut at its last leaf (as the renderer does a complete document).
        text = text[: last_leaf_end(text[: scan.done_at])]
        scan = JsonScanner().feed(text)
    return json_prompt_context(scan, text[-TAIL_CHARS:], budget)
