"""Tolerant parsing of a cut JSON text into the shape :mod:`core.budget` renders.

The budget walk only ever needs the containers that are still open at the cut (the path
from the root to the cut element) and, for each of them, its complete children: their type,
where their text lives and their *size* (the characters of their scalar values; keys and
brackets are structure and cost nothing). So a closed container is folded into one
:class:`Closed` record the moment its bracket closes, and its inner nodes are dropped:
memory is O(depth + width of the open containers), not O(document).

The text is read by the engine's own scanner (:class:`core.json_scan.JsonScanner`, so one
grammar decides what is JSON): :class:`_TreeScanner` extends the hooks where it completes a
member, opens or closes a container, reads a key or skips a run of simple members, and
keeps the open containers' children. Complete nested values are skipped by the standard
library's C scanner and their size counted by one regular expression, so a multi-megabyte
text is read in linear time, mostly in C. A text that opens more than
:data:`core.json_scan.MAX_DEPTH` containers at once is rejected (``ValueError``) like one
that is not JSON, since its rendering would be that many lines long whatever the budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from core import json_scan
from core.json_scan import (
    ARRAY_MEMBER,
    OBJECT_MEMBER,
    STRING,
    Carry,
    JsonScanner,
    Phase,
)

Kind = Literal["str", "number", "bool", "null", "object", "array"]

# A number the cut may have interrupted: "-", "1.", "1.5e", "1e+" (fullmatch on the tail).
# Stricter than the scanner, which carries "1.e" to fail with the next chunk: a rendering
# shows only text that can still be JSON.
_NUMBER_PREFIX = re.compile(
    r"-?(?:(?:0|[1-9][0-9]*)(?:\.(?:[0-9]+(?:[eE][+-]?[0-9]*)?)?|[eE][+-]?[0-9]*)?)?"
)
# Tokens of a valid value; group 1 holds its scalars (value strings, numbers, literals),
# not its keys and structure: the value's size is their length.
_SCALARS = re.compile(rf'{STRING}[ \t\n\r]*:|({STRING}|[^ \t\n\r\[\]{{}},:"]+)|[ \t\n\r\[\]{{}},]+')


def _size(text: str, start: int, end: int) -> int:
    """The size of the valid container ``text[start:end]`` (findall stays in C)."""
    return sum(map(len, _SCALARS.findall(text, start, end)))


#: The kind of a value by its first character; any other is a number's.
_KINDS: dict[str, Kind] = {
    '"': "str",
    "{": "object",
    "[": "array",
    "t": "bool",
    "f": "bool",
    "n": "null",
}


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
    tree = _TreeScanner(text).tree()
    if not tree.complete:
        return tree
    end = last_leaf_end(text)
    if end == len(text.rstrip(" \t\n\r")):  # a scalar or empty-container root
        return tree
    inner = _TreeScanner(text[:end]).tree()
    return CutTree(text, inner.frames, inner.cut, complete=True)


class _TreeScanner(JsonScanner):
    """The scanner, keeping the children of every open container (read in one feed).

    Its frames mirror the scanner's (``_sync`` adds those it opened since); ``key`` is the
    raw key of the member whose value comes next; ``_closing`` the frame a closer just
    ended, until ``_value_done`` adds it to its parent.
    """

    __slots__ = ("_closing", "key", "open", "root", "text")

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.open: list[Frame] = []
        self.key: str | None = None
        self.root: Closed | None = None
        self._closing: Frame | None = None
        self.feed(text)

    def _sync(self) -> None:
        """Mirror the containers the scanner opened since the last call."""
        while len(self.open) < len(self.frames):
            frame = self.frames[len(self.open)]
            kind: Literal["object", "array"] = "array" if frame.kind == "[" else "object"
            self.open.append(Frame(kind, self.key, frame.open_at))
            self.key = None

    def _add(self, value: Closed, key: str | None) -> None:
        if not self.open:
            self.root = value
            return
        top = self.open[-1]
        top.children.append(value)
        if top.kind == "object":
            top.keys.append(key or "")
        top.size += value.size
        self.key = None

    def _value_done(self, start: int, end: int) -> None:
        if len(self.open) < len(self.frames):
            self._sync()
        super()._value_done(start, end)
        closing, self._closing = self._closing, None
        if closing is not None:
            self._add(Closed(closing.kind, start, end, closing.size), closing.key)
            return
        kind = _KINDS.get(self.text[start], "number")
        size = end - start
        if kind in ("object", "array"):  # swallowed whole
            size = _size(self.text, start, end)
        self._add(Closed(kind, start, end, size), self.key)

    def _pop(self) -> None:
        self._sync()
        super()._pop()
        self._closing = self.open.pop()

    def _key(self, s: str, pos: int, base: int, c: str) -> int:
        if len(self.open) < len(self.frames):
            self._sync()
        end = super()._key(s, pos, base, c)
        if end > 0:
            self.key = s[pos:end]
        return end

    def _skip_run(
        self, pattern: re.Pattern[str], s: str, pos: int, base: int, frame: json_scan.Frame
    ) -> int:
        """The run's members one by one (the same run: a member regex repeated), each
        kept as a child. The frame's anchors are not kept: only excerpts use them."""
        if len(self.open) < len(self.frames):
            self._sync()
        members = ARRAY_MEMBER if frame.kind == "[" else OBJECT_MEMBER
        value = members.groups  # the last group: the member's value
        m = members.match(s, pos)
        while m is not None:
            start, stop = m.span(value)
            size = stop - start if s[start] != "{" else _size(s, start, stop)
            key = m[1] if value == 2 else None
            self._add(Closed(_KINDS.get(s[start], "number"), start, stop, size), key)
            frame.count += 1
            pos = m.end()
            m = members.match(s, pos)
        return pos

    def _carry_token(self, s: str, pos: int, base: int) -> None:
        # Any length: the cut's token is rendered, not carried to another chunk.
        self.carry = s[pos:]
        self.carry_kind = Carry.TOKEN

    def tree(self) -> CutTree:
        """The open containers and what sits at the cut, once the text is read."""
        self._sync()
        text, n = self.text, len(self.text)
        if self.error is not None:
            raise _fail(text, self.error.at, self.error.message)
        if self.trailing_at >= 0:
            raise _fail(text, self.trailing_at, "expected nothing after the complete document")
        if self.done_at >= 0:
            return CutTree(text, [], Cut(value=self.root), complete=True)
        cut = Cut()
        if self.carry_kind is Carry.STRING:
            cut = self._partial(Closed("str", self.string_at, n, n - self.string_at))
        elif self.carry_kind is Carry.TOKEN and self.phase in (Phase.KEY, Phase.KEY_OR_CLOSE):
            cut = Cut(key=self.carry)
        elif self.carry_kind is Carry.TOKEN:
            start = n - len(self.carry)
            kind = _KINDS.get(self.carry[0], "number")
            if kind == "number" and not _NUMBER_PREFIX.fullmatch(self.carry):
                raise _fail(text, start, "expected a value")
            cut = self._partial(Closed(kind, start, n, n - start))
        elif self.phase is Phase.AFTER:  # the last complete member is the cut element
            top = self.open[-1]
            last = top.children.pop()
            top.size -= last.size
            last_key = top.keys.pop() if top.kind == "object" else None
            cut = Cut(last_key, last_key is not None, last)
        elif self.phase is Phase.COLON:
            cut = Cut(key=self.key)
        elif self.phase is Phase.VALUE and self.key is not None:  # after "key":
            cut = Cut(key=self.key, colon=True)
        return CutTree(text, self.open, cut, complete=False)

    def _partial(self, value: Closed) -> Cut:
        return Cut(key=self.key, colon=self.key is not None, value=value)


def _fail(text: str, pos: int, message: str) -> ValueError:
    found = repr(text[pos : pos + 20]) if pos < len(text) else "the end"
    if not message.startswith("expected "):
        message = f"expected JSON ({message})"
    return ValueError(f"not JSON up to the cut: {message} at offset {pos}, got {found}")
