"""Budgeted prompt context: the cut JSON re-rendered so the part near the cut survives.

A continuation prompt shows the model the document it is writing, left open at the cut, so
it knows where it is in the hierarchy. The document can be far larger than a prompt can
carry, and what matters most is what is nearest the cut, so the character budget is spent
bottom-up (docs/engine.md, "JSON"):

1. The cut element first: its raw text up to the cut if it fits, else its type hint.
2. Then the siblings of each open container, from the cut's container up to the root and,
   within a container, nearest to the cut first. A value whose size fits what is left is
   rendered in full and its size deducted; a larger one becomes a type hint (``<str>``,
   ``<object>``...) and costs nothing, and the walk goes on (a smaller one further away
   may still fit).
3. As soon as less than :data:`SUMMARY_THRESHOLD` is left, the budget drops to 0 and
   *summary mode* starts: the remaining values of the container being walked get type
   hints; the containers above it (closer to the root) get structure only: their keys
   stay, and a value is shown as ``{…}``, ``[…]`` or ``…``.

Sizes count the characters of scalar values as written (quotes and escapes included). Keys,
brackets, commas and indentation are structure: free, so the output is about the budget
plus the structure of the path. Within an array, two or more consecutive values that are
not rendered in full are folded into one ``<N items: kind>`` (or ``<N items>``) line, so a huge
sibling array costs one line; object members are never folded, since keys are structure.

The output is indented by two spaces like ``json.dumps(indent=2)``, scalars keep their raw
text, and it ends where the cut element ends, with no closing brackets and no trailing
blanks (after a comma it ends with the comma; after a colon, with the colon).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.budget_tree import Closed, CutTree, Frame, Kind, parse_cut
from core.json_scan import scanstring

#: Below this many characters left, the walk switches to summary mode (budget set to 0).
SUMMARY_THRESHOLD = 50
INDENT = "  "
#: Indentation stops growing past this depth, so a pathologically deep path (LLM garbage
#: such as 100 000 "[") renders in linear, not quadratic, size.
MAX_INDENT_LEVELS = 32

_HINTS: dict[Kind, str] = {
    "str": "<str>",
    "number": "<number>",
    "bool": "<bool>",
    "null": "<null>",
    "object": "<object>",
    "array": "<array>",
}
# Summary mode above the current level: no value, only the shape of the structure.
_STRUCTURE: dict[Kind, str] = {"object": "{…}", "array": "[…]"}
_OPENERS = {"object": "{", "array": "["}
_TOKEN = re.compile(
    r'[ \t\n\r]*(?:([\[{])[ \t\n\r]*([\]}])?|([\]}])|(,)|(:)|(")|([^ \t\n\r\[\]{},:"]+))'
)


def type_hint(value: object) -> str:
    """The hint that stands for a decoded JSON value (``<str>``, ``<number>``, ...)."""
    if isinstance(value, bool):  # before int: bool is an int subclass
        return _HINTS["bool"]
    if isinstance(value, str):
        return _HINTS["str"]
    if isinstance(value, int | float):
        return _HINTS["number"]
    if value is None:
        return _HINTS["null"]
    if isinstance(value, dict):
        return _HINTS["object"]
    if isinstance(value, list | tuple):
        return _HINTS["array"]
    raise TypeError(f"not a JSON value: {type(value).__name__}")


@dataclass(slots=True)
class _Plan:
    """Where the budget went.

    ``full[d]`` holds the indices of the children of ``frames[d]`` (root first) rendered in
    full. Levels count from the cut: level 0 is the cut's own container. Values not
    rendered in full get a type hint up to ``summary_level`` and structure only above it.
    """

    cut_full: bool
    full: list[set[int]]
    summary_level: int


def render_budgeted(cut_text: str, budget: int) -> str:
    """Render ``cut_text`` (JSON cut anywhere, or complete) within ``budget`` characters.

    Raises ``ValueError`` if the budget is negative or the text is not JSON up to the cut.
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    tree = parse_cut(cut_text)
    return _render(tree, _allocate(tree, budget))


def _allocate(tree: CutTree, budget: int) -> _Plan:
    """Spend the budget from the cut element up to the root, nearest sibling first."""
    remaining = budget
    full: list[set[int]] = [set() for _ in tree.frames]
    value = tree.cut.value
    cut_full = value is not None and value.size <= remaining
    if value is not None and cut_full:
        remaining -= value.size
    # The cut element is weighed before the threshold: a short budget still shows it.
    if remaining < SUMMARY_THRESHOLD:
        return _Plan(cut_full, full, 0)
    for level in range(len(tree.frames)):
        depth = len(tree.frames) - 1 - level
        children, chosen = tree.frames[depth].children, full[depth]
        for index in range(len(children) - 1, -1, -1):
            size = children[index].size
            if size <= remaining:
                chosen.add(index)
                remaining -= size
                if remaining < SUMMARY_THRESHOLD:
                    return _Plan(cut_full, full, level)
    return _Plan(cut_full, full, len(tree.frames))


def _render(tree: CutTree, plan: _Plan) -> str:
    """Re-render the open path root first, ending at the cut element (no closers)."""
    text, frames, cut = tree.text, tree.frames, tree.cut
    cut_value = ""
    if cut.value is not None:
        cut_value = (
            _pretty(text, cut.value, len(frames)) if plan.cut_full else _HINTS[cut.value.kind]
        )
    if cut.key is not None:
        cut_value = cut.key + (":" if cut.colon else "") + (" " + cut_value if cut_value else "")
    if not frames:
        return cut_value
    out = [_OPENERS[frames[0].kind]]
    for depth, frame in enumerate(frames):
        hints = len(frames) - 1 - depth <= plan.summary_level
        pad = _newline(depth + 1)
        items = _members(text, frame, plan.full[depth], hints, depth + 1)
        out.append(",".join(pad + item for item in items))
        if depth + 1 < len(frames):
            child = frames[depth + 1]
            key = "" if child.key is None else child.key + ": "
            out.append(("," if items else "") + pad + key + _OPENERS[child.kind])
        elif cut_value:
            out.append(("," if items else "") + pad + cut_value)
        elif items:  # the cut is just after a comma
            out.append(",")
    return "".join(out)


def _members(text: str, frame: Frame, full: set[int], hints: bool, depth: int) -> list[str]:
    """The complete children of an open container, rendered in full or elided."""
    children = frame.children
    if frame.kind == "object":
        return [
            key + ": " + (_pretty(text, child, depth) if i in full else _elide([child], hints))
            for i, (key, child) in enumerate(zip(frame.keys, children, strict=True))
        ]
    items: list[str] = []
    start = 0
    for index in [*sorted(full), len(children)]:
        if index > start:
            items.append(_elide(children[start:index], hints))
        if index < len(children):
            items.append(_pretty(text, children[index], depth))
        start = index + 1
    return items


def _newline(depth: int) -> str:
    return "\n" + INDENT * min(depth, MAX_INDENT_LEVELS)


def _elide(run: list[Closed], hints: bool) -> str:
    """One line for values not rendered in full: a hint, a structure mark, or a count."""
    if len(run) == 1:
        kind = run[0].kind
        return _HINTS[kind] if hints else _STRUCTURE.get(kind, "…")
    kinds = {value.kind for value in run}
    if hints and len(kinds) == 1:
        return f"<{len(run)} items: {kinds.pop()}>"
    return f"<{len(run)} items>"


def _pretty(text: str, value: Closed, depth: int) -> str:
    """``value`` re-indented as ``json.dumps(indent=2)`` would, scalars kept as written.

    ``depth`` is the indentation level of the line the value starts on. The text is known
    to be valid JSON, so this only re-lays tokens; it costs O(len(value)).
    """
    if value.kind not in _OPENERS:
        return text[value.start : value.end]
    out: list[str] = []
    pos, end = value.start, value.end
    while pos < end:
        m = _TOKEN.match(text, pos)
        assert m is not None, "a parsed value always tokenizes"
        pos = m.end()
        group = m.lastindex
        if group == 1:
            depth += 1
            out.append(m[1] + _newline(depth))
        elif group == 2:
            out.append(m[1] + m[2])
        elif group == 3:
            depth -= 1
            out.append(_newline(depth) + m[3])
        elif group == 4:
            out.append("," + _newline(depth))
        elif group == 5:
            out.append(": ")
        elif group == 6:
            string_end = scanstring(text, pos, True)[1]
            out.append(text[pos - 1 : string_end])
            pos = string_end
        else:
            out.append(m[7])
    return "".join(out)
