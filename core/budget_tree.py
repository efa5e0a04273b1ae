"""Tolerant parsing of a cut JSON text into the shape :mod:`core.budget` renders.

The budget walk only ever needs the containers that are still open at the cut (the path
from the root to the cut element) and, for each of them, its complete children: their type,
where their text lives and their *size* (the characters of their scalar values; keys and
brackets are structure and cost nothing). So a closed container is folded into one
:class:`Closed` record the moment its bracket closes, and its inner nodes are dropped:
memory is O(depth + width of the open containers), not O(document).

The scan is one pass, one token per loop turn: strings are read by the C scanner of the
standard library (``json.decoder.scanstring``), numbers by one regular expression, so the
per-character work is done in C and a multi-megabyte text is read in linear time. Nothing
recurses: open containers are a list. A text that opens more than :data:`MAX_DEPTH`
containers at once is rejected (``ValueError``) like one that is not JSON, since its
rendering would be that many lines long whatever the budget.
"""

from __future__ import annotations

import json.decoder
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from json.decoder import JSONDecodeError
from typing import Literal

from core.json_scan import MAX_DEPTH

#: ``scanstring(text, index_after_quote, strict)`` -> (decoded, index after the closing
#: quote): the standard library's C string scanner (typeshed does not declare it here).
scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]

Kind = Literal["str", "number", "bool", "null", "object", "array"]

_NONBLANK = re.compile(r"[^ \t\n\r]")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# A number the cut may have interrupted: "-", "1.", "1.5e", "1e+" (fullmatch on the tail).
_NUMBER_PREFIX = re.compile(
    r"-?(?:(?:0|[1-9][0-9]*)(?:\.(?:[0-9]+(?:[eE][+-]?[0-9]*)?)?|[eE][+-]?[0-9]*)?)?"
)
_NUMBER_CHARS = frozenset("0123456789.eE+-")
# A string the cut may have interrupted, possibly inside an escape (fullmatch on the tail).
_STRING_PREFIX = re.compile(
    r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*'
    r"(?:\\(?:u[0-9a-fA-F]{0,3})?)?"
)
_LITERALS: dict[str, tuple[str, Kind]] = {
    "t": ("true", "bool"),
    "f": ("false", "bool"),
    "n": ("null", "null"),
}
_CLOSERS = {"}": "object", "]": "array"}

# What the innermost open container (or the top level) expects next.
_VALUE = 0  # the root value, a value after "," in an array or after ":" in an object
_VALUE_OR_CLOSE = 1  # just after "["
_KEY = 2  # after "," in an object
_KEY_OR_CLOSE = 3  # just after "{"
_COLON = 4  # after a key
_AFTER = 5  # after a complete member: "," or the closer
_DONE = 6  # the root value is complete


@dataclass(slots=True)
class Closed:
    """A complete value (or the partial scalar at the cut): ``text[start:end]``."""

    kind: Kind
    start: int
    end: int
    size: int


@dataclass(slots=True)
class Frame:
    """A container still open at the cut; ``children`` are its complete members."""

    kind: Literal["object", "array"]
    key: str | None  # raw key text of this container in its parent object
    start: int
    children: list[Closed] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)  # raw key per child (objects only)
    size: int = 0


@dataclass(slots=True)
class Cut:
    """What sits at the cut inside the innermost open container.

    ``key`` is the raw (possibly partial) key of an object member whose value is missing or
    partial; ``colon`` says whether its ":" was read; ``value`` is the partial or last
    complete value. All empty means the cut is just after "[", "{" or ",".
    """

    key: str | None = None
    colon: bool = False
    value: Closed | None = None


@dataclass(slots=True)
class CutTree:
    """The open containers from the root down (``frames``) and what sits at the cut."""

    text: str
    frames: list[Frame]
    cut: Cut
    complete: bool


def _fail(text: str, pos: int, expected: str) -> ValueError:
    found = repr(text[pos : pos + 20]) if pos < len(text) else "the end"
    return ValueError(f"not JSON up to the cut: expected {expected} at offset {pos}, got {found}")


def last_leaf_end(text: str) -> int:
    """End of the last leaf of a complete document: trailing closers are not part of it.

    An empty container is a leaf, so stripping stops before a closer whose opener is the
    previous non-blank character. Each step looks back over blanks only (no copy of the
    text), so 100 000 trailing closers cost 100 000 steps, not 100 000 copies.
    """
    end = len(text.rstrip(" \t\n\r"))
    while end > 1 and text[end - 1] in "]}":
        before = _blank_start(text, end - 1)
        if text[before - 1] in "[{":
            break
        end = before
    return end


def _blank_start(text: str, end: int) -> int:
    """Start of the run of blanks that ends at ``end`` (``end`` itself if there is none)."""
    while end > 0 and text[end - 1] in " \t\n\r":
        end -= 1
    return end


def parse_cut(text: str) -> CutTree:
    """Parse ``text`` (JSON cut anywhere, or complete) into a :class:`CutTree`.

    A complete document is re-read up to the end of its last leaf, so that leaf becomes the
    cut element and the same rendering rules apply. Raises ``ValueError`` when the text is
    not valid JSON up to the cut.
    """
    tree = _scan(text)
    if not tree.complete:
        return tree
    end = last_leaf_end(text)
    if end == len(text.rstrip(" \t\n\r")):  # a scalar or empty-container root
        return tree
    inner = _scan(text[:end])
    return CutTree(text, inner.frames, inner.cut, complete=True)


def _scan(text: str) -> CutTree:  # noqa: C901, PLR0915  # scanner state machine
    """One token per turn; a closed container is folded into its parent as one record."""
    n = len(text)
    stack: list[Frame] = []
    state = _VALUE
    key: str | None = None  # key of the member whose value comes next
    root: Closed | None = None
    pos = 0
    while True:
        blank_end = _NONBLANK.search(text, pos)
        if blank_end is None:
            break
        pos = blank_end.start()
        c = text[pos]
        value: Closed | None = None
        if state == _AFTER:
            top = stack[-1]
            if c == ",":
                state = _KEY if top.kind == "object" else _VALUE
                pos += 1
                continue
            if _CLOSERS.get(c) != top.kind:
                raise _fail(text, pos, "',' or '" + ("}" if top.kind == "object" else "]") + "'")
        elif state == _COLON:
            if c != ":":
                raise _fail(text, pos, "':'")
            state = _VALUE
            pos += 1
            continue
        elif state in (_KEY, _KEY_OR_CLOSE):
            if c == '"':
                try:
                    end = scanstring(text, pos + 1, True)[1]
                except JSONDecodeError:
                    if _STRING_PREFIX.fullmatch(text, pos):
                        return CutTree(text, stack, Cut(key=text[pos:]), complete=False)
                    raise _fail(text, pos, "a valid key string") from None
                key, state, pos = text[pos:end], _COLON, end
                continue
            if not (c == "}" and state == _KEY_OR_CLOSE):
                expected = "a key string or '}'" if state == _KEY_OR_CLOSE else "a key string"
                raise _fail(text, pos, expected)
        elif state == _DONE:
            raise _fail(text, pos, "nothing after the complete document")

        if c in "]}":  # a closer that the state above allowed (or a stray one)
            if state not in (_AFTER, _VALUE_OR_CLOSE, _KEY_OR_CLOSE) or (
                _CLOSERS[c] != stack[-1].kind
            ):
                raise _fail(text, pos, "a value")
            frame = stack.pop()
            value = Closed(frame.kind, frame.start, pos + 1, frame.size)
            key = frame.key
            pos += 1
        elif c in "[{":
            if len(stack) >= MAX_DEPTH:
                raise ValueError(
                    f"cannot render: nested deeper than {MAX_DEPTH} levels at offset {pos}"
                )
            stack.append(Frame("array" if c == "[" else "object", key, pos))
            key = None
            state = _VALUE_OR_CLOSE if c == "[" else _KEY_OR_CLOSE
            pos += 1
            continue
        elif c == '"':
            try:
                end = scanstring(text, pos + 1, True)[1]
            except JSONDecodeError:
                if _STRING_PREFIX.fullmatch(text, pos):
                    return _partial(text, stack, key, Closed("str", pos, n, n - pos))
                raise _fail(text, pos, "a valid string") from None
            value, pos = Closed("str", pos, end, end - pos), end
        elif c in _LITERALS:
            word, kind = _LITERALS[c]
            if text.startswith(word, pos):
                value, pos = Closed(kind, pos, pos + len(word), len(word)), pos + len(word)
            elif word.startswith(text[pos : pos + len(word)]):  # shorter: the cut is inside
                return _partial(text, stack, key, Closed(kind, pos, n, n - pos))
            else:
                raise _fail(text, pos, repr(word))
        else:
            m = _NUMBER.match(text, pos)
            if m and (m.end() == n or text[m.end()] not in _NUMBER_CHARS):
                value, pos = Closed("number", pos, m.end(), m.end() - pos), m.end()
            elif _NUMBER_PREFIX.fullmatch(text, pos):
                return _partial(text, stack, key, Closed("number", pos, n, n - pos))
            else:
                raise _fail(text, pos, "a value")

        # A complete value: it joins the innermost open container, or it is the root.
        if not stack:
            root, state = value, _DONE
        else:
            top = stack[-1]
            top.children.append(value)
            if top.kind == "object":
                top.keys.append(key or "")
            top.size += value.size
            key, state = None, _AFTER
    return _at_end(text, stack, state, key, root)


def _partial(text: str, stack: list[Frame], key: str | None, value: Closed) -> CutTree:
    return CutTree(text, stack, Cut(key=key, colon=key is not None, value=value), complete=False)


def _at_end(
    text: str, stack: list[Frame], state: int, key: str | None, root: Closed | None
) -> CutTree:
    """Turn the scanner's state at the end of the text into the cut."""
    if state == _DONE:
        return CutTree(text, [], Cut(value=root), complete=True)
    if state == _AFTER:  # the last complete member is the cut element
        top = stack[-1]
        last = top.children.pop()
        top.size -= last.size
        last_key = top.keys.pop() if top.kind == "object" else None
        return CutTree(text, stack, Cut(last_key, last_key is not None, last), complete=False)
    if state == _COLON:
        return CutTree(text, stack, Cut(key=key), complete=False)
    if state == _VALUE and key is not None:  # after "key":
        return CutTree(text, stack, Cut(key=key, colon=True), complete=False)
    return CutTree(text, stack, Cut(), complete=False)
