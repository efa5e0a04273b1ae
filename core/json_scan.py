"""A resumable, incremental JSON scanner.

The scanner reads a JSON text chunk by chunk and keeps just enough state to continue
exactly where the previous chunk stopped: the open containers (with the offset just after
their last complete member), the parse phase, and a partial token carried over the cut.
Feeding a chunk costs O(len(chunk)): nothing before the cut is read again. Complete
nested values are validated and skipped by the C scanner of the standard library, and
runs of scalar members (and of flat objects) by one regular expression, so the Python loop
only runs for the containers that stay open.

Nesting is read without recursion: the scanner's own frames are a list, and a nested value
too deep for the C scanner (whose recursion is bounded by the interpreter's recursion limit)
is read member by member like an open one (see :meth:`JsonScanner._swallow`). Past
:data:`MAX_DEPTH` open containers the text is rejected with a :class:`ScanError` (no JSON a
model means to write nests that deep, and every step's cost grows with the depth).

From that state, :meth:`JsonScanner.close` says how to turn the text read so far into
valid JSON without re-reading it: keep ``text[:n]`` and append a short suffix (close an
open string, drop a dangling key, a partial literal or number and a trailing comma, then
close every open container).
"""

from __future__ import annotations

import json
import json.decoder
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

_WS = re.compile(r"[ \t\n\r]*")
# String body after the opening quote, strict JSON: no control characters, valid escapes.
_STR_BODY = re.compile(r'[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*')
_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_PREFIX = re.compile(r"-?(?:0|[1-9][0-9]*)?(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?\Z")
_STRING = r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
_SCALAR = rf"(?:{_STRING}|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)"
_W = r"[ \t\n\r]*"
# An object of scalars, the typical record ({"id": 1, "name": "x"}). No array: a closed
# array may be what ``records`` counts, so arrays are always read one by one.
_FLAT_OBJECT = (
    rf"\{{{_W}(?:{_STRING}{_W}:{_W}{_SCALAR}{_W}(?:,{_W}{_STRING}{_W}:{_W}{_SCALAR}{_W})*)?\}}"
)
_MEMBER = rf"(?:{_SCALAR}|{_FLAT_OBJECT})"
# Runs of complete members (scalars or flat objects) followed by a comma, matched by C
# code. The empty group records where the last member ended (Python keeps a repeated
# group's last match).
_ARRAY_RUN = re.compile(rf"(?:{_W}{_MEMBER}(){_W},)*")
_OBJECT_RUN = re.compile(rf"(?:{_W}{_STRING}{_W}:{_W}{_MEMBER}(){_W},)*")
_STRINGS = re.compile(_STRING)
#: A JSON string, as a pattern (strict: no control characters, valid escapes).
STRING = _STRING
#: One member of a run (each followed by its comma), its key and value in groups: how a
#: subclass that keeps the members lists those a run skipped (``core.budget_tree``).
ARRAY_MEMBER = re.compile(rf"{_W}({_MEMBER}){_W},")
OBJECT_MEMBER = re.compile(rf"{_W}({_STRING}){_W}:{_W}({_MEMBER}){_W},")
# A flat object once its strings are removed: what to drop to count a run's own commas.
_FLAT_OBJECTS = re.compile(r"\{[^{}]*\}")
#: A run is matched in windows of at most this many characters: one match over a very long
#: run costs more than linear time in the regex engine (it keeps state per repetition of a
#: capturing group), so "[0,0,0,..." a megabyte long took seconds in one call.
_RUN_WINDOW = 4096
_LITERALS = ("true", "false", "null")
_CLOSER = {"{": "}", "[": "]"}
#: Longest partial key or token carried over a cut and re-read with the next chunk.
_MAX_CARRY = 4096
#: Longest nested value the C scanner is asked to validate in one call.
_SWALLOW_WINDOW = 8192
#: Most nested values are short: they are tried in a window this long first, so that a
#: small value does not cost a copy of the whole window.
_SWALLOW_FIRST = 512
#: After the C scanner could not swallow a nested value (open at the end of the text,
#: longer than the window, invalid, or nested too deep for its recursion), values that
#: start within 1/_SWALLOW_BACKOFF of the text it was given are read member by member
#: without asking it. A failed call costs at most the text it was given; keeping failed
#: calls that far apart keeps their total cost linear in the text (an open path of 100 000
#: containers, or "[" * 1_000_000, would otherwise cost one window, or one RecursionError,
#: per level).
_SWALLOW_BACKOFF = 4
_ANCHOR_SPAN = 2048
#: Most containers open at once; a text that opens one more is a syntax error ("nested
#: deeper than ..."), not an exception. The standard library's own parser gives up at
#: about 1,000 levels (RecursionError).
MAX_DEPTH = 10_000
#: Nested values are swallowed only this far from MAX_DEPTH: a value of at most
#: _SWALLOW_WINDOW characters nests at most half as many levels, so whether the limit is
#: hit does not depend on which values were swallowed (that is, on how the text was cut).
_SWALLOW_DEPTH = MAX_DEPTH - _SWALLOW_WINDOW // 2


def _always(m: re.Match[str] | None) -> re.Match[str]:
    assert m is not None, "patterns that can match the empty string always match"
    return m


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_SCAN_ONCE = _DECODER.scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__
#: ``scanstring(text, index_after_quote, strict)`` -> (decoded, index after the closing
#: quote): the standard library's C string scanner (typeshed does not declare it here).
scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class Phase(IntEnum):
    """What the innermost open container expects next."""

    VALUE_OR_CLOSE = 0  # just after "[": a value or "]"
    VALUE = 1  # after "," in an array, after ":" in an object, or the root value
    KEY_OR_CLOSE = 2  # just after "{"
    KEY = 3  # after "," in an object
    COLON = 4  # after a key
    AFTER = 5  # after a complete member: "," or the closer
    DONE = 6  # the root value is complete


class Carry(IntEnum):
    """What the carried-over text at the cut is."""

    NONE = 0
    TOKEN = 1  # the start of a key, number or literal, read again with the next chunk
    STRING = 2  # inside a value string; the carry is a partial escape ("\\", "\\u00")


@dataclass(slots=True)
class Frame:
    """One open container."""

    kind: str  # "{" or "["
    open_at: int  # offset of the bracket
    label: str | int | None  # key or index in the parent; None for the root
    count: int = 0  # complete members so far
    safe: int = 0  # offset just after the last complete member (or the bracket)
    key: str | None = None  # objects: the key whose value comes next
    # Earlier member boundaries, trailing ``safe`` by about _ANCHOR_SPAN characters: where
    # a prompt excerpt can start to show the cut's recent siblings. Hints only: where they
    # fall depends on how the text was chunked.
    near: int = 0
    far: int = 0

    def advance_safe(self, end: int) -> None:
        if end - self.near > _ANCHOR_SPAN:
            self.far, self.near = self.near, self.safe
        self.safe = end


@dataclass(slots=True)
class ScanError:
    at: int
    message: str


class ScanFrame(NamedTuple):
    """An open container in a snapshot (a JSON array in a stored state): a :class:`Frame`'s
    fields in order (``members`` is its ``count``, a name tuples already use)."""

    kind: str
    open_at: int
    label: str | int | None
    members: int
    safe: int
    key: str | None
    near: int
    far: int


class JsonScan(BaseModel):
    """A snapshot of :class:`JsonScanner`: what a JSON job keeps between iterations.

    The fields are the scanner's; ``error`` is ``(at, message)`` and ``records``
    ``(records_closed, records_depth)``. The stored form (field order, arrays for frames)
    is the one earlier versions wrote, so jobs in flight load across an upgrade.
    """

    model_config = ConfigDict(frozen=True)

    length: int = 0
    frames: tuple[ScanFrame, ...] = ()
    phase: Phase = Phase.VALUE
    carry: str = ""
    carry_kind: Carry = Carry.NONE
    string_at: int = -1
    root_started: bool = False
    done_at: int = -1
    trailing_at: int = -1
    error: tuple[int, str] | None = None
    records: tuple[int, int] = (0, 1 << 30)


class JsonScanner:
    """Incremental scanner over a JSON text that arrives in chunks.

    ``length`` is the number of characters fed. ``error`` is set, and the scanner stops
    reading, at the first syntax error. ``done_at`` is the offset just after the root value
    once it is complete; text after it is not read (``trailing_at`` marks where it starts).
    """

    __slots__ = (
        "_owned",
        "_swallow_from",
        "_swallowed",
        "carry",
        "carry_kind",
        "done_at",
        "error",
        "frames",
        "length",
        "phase",
        "records_closed",
        "records_depth",
        "root_started",
        "string_at",
        "trailing_at",
    )

    def __init__(self) -> None:
        self.length = 0
        self.frames: list[Frame] = []
        self.phase = Phase.VALUE
        self.carry = ""
        self.carry_kind = Carry.NONE
        self.string_at = -1  # offset of the opening quote of an open value string
        self.root_started = False
        self.done_at = -1
        self.trailing_at = -1
        self.error: ScanError | None = None
        self.records_closed = 0  # size of the last array closed at the shallowest depth
        self.records_depth = 1 << 30
        self._swallowed = 0
        self._swallow_from = 0  # no nested value starting before this offset is swallowed
        # frames[i] for i >= _owned are this scanner's own; those below may be shared with
        # copies and are replaced by a private copy before they change (only the innermost
        # frame ever changes), so copy() costs one list copy, not one Frame per level.
        self._owned = 0

    # -- state -------------------------------------------------------------------------
    def copy(self) -> JsonScanner:
        other = JsonScanner.__new__(JsonScanner)
        other.length = self.length
        other.frames = self.frames.copy()
        # Both now share every frame: each copies the innermost one before changing it.
        other._owned = self._owned = len(self.frames)
        other.phase = self.phase
        other.carry = self.carry
        other.carry_kind = self.carry_kind
        other.string_at = self.string_at
        other.root_started = self.root_started
        other.done_at = self.done_at
        other.trailing_at = self.trailing_at
        other.error = self.error
        other.records_closed = self.records_closed
        other.records_depth = self.records_depth
        other._swallowed = 0
        other._swallow_from = self._swallow_from
        return other

    def snapshot(self) -> JsonScan:
        """The state a job keeps between iterations (it grows with depth, not length)."""
        return JsonScan.model_construct(
            length=self.length,
            frames=tuple(
                ScanFrame(f.kind, f.open_at, f.label, f.count, f.safe, f.key, f.near, f.far)
                for f in self.frames
            ),
            phase=self.phase,
            carry=self.carry,
            carry_kind=self.carry_kind,
            string_at=self.string_at,
            root_started=self.root_started,
            done_at=self.done_at,
            trailing_at=self.trailing_at,
            error=None if self.error is None else (self.error.at, self.error.message),
            records=(self.records_closed, self.records_depth),
        )

    @classmethod
    def resume(cls, scan: JsonScan) -> JsonScanner:
        """A scanner that continues where ``scan`` was taken."""
        new = cls()
        new.length = scan.length
        new.frames = [Frame(*f) for f in scan.frames]
        new.phase = scan.phase
        new.carry = scan.carry
        new.carry_kind = scan.carry_kind
        new.string_at = scan.string_at
        new.root_started = scan.root_started
        new.done_at = scan.done_at
        new.trailing_at = scan.trailing_at
        new.error = None if scan.error is None else ScanError(*scan.error)
        new.records_closed, new.records_depth = scan.records
        return new

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as JSON data (the form a job's state stores)."""
        return self.snapshot().model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JsonScanner:
        return cls.resume(JsonScan.model_validate(data))

    @property
    def complete(self) -> bool:
        return self.done_at >= 0

    @property
    def depth(self) -> int:
        return len(self.frames)

    # -- feeding -----------------------------------------------------------------------
    def feed(self, chunk: str) -> JsonScanner:
        """Read ``chunk`` (the text that follows what was fed so far); returns self."""
        start_length = self.length
        self.length += len(chunk)
        if self.error is not None or self.done_at >= 0:
            if self.done_at >= 0 and self.trailing_at < 0:
                self._after_done(chunk, start_length)
            return self
        carry, kind = self.carry, self.carry_kind
        self.carry, self.carry_kind = "", Carry.NONE
        text = carry + chunk
        base = start_length - len(carry)
        pos = 0
        if kind is Carry.STRING:
            pos = self._string_body(text, 0, base, self.string_at - base)
            if pos < 0:
                return self
        self._run(text, pos, base)
        return self

    def _after_done(self, chunk: str, base: int) -> None:
        m = _always(_WS.match(chunk))
        if m.end() < len(chunk):
            self.trailing_at = base + m.end()

    def _fail(self, at: int, message: str) -> None:
        self.error = ScanError(at, message)

    def _string_body(self, text: str, pos: int, base: int, quote: int) -> int:
        """Continue a value string at ``pos``; return the position after it, or -1."""
        m = _always(_STR_BODY.match(text, pos))
        end = m.end()
        n = len(text)
        if end < n and text[end] == '"':
            self.string_at = -1
            self._value_done(base + quote, base + end + 1)
            return end + 1
        rest = text[end:]
        if end == n or _PARTIAL_ESCAPE.match(rest):
            self.carry = rest
            self.carry_kind = Carry.STRING
            self.string_at = base + quote
            return -1
        bad = text[end]
        what = "control character" if bad < " " else "invalid escape"
        self._fail(base + end, f"{what} in string")
        return -1

    def _top(self) -> Frame:
        """The innermost frame, about to change: copied first if it is shared."""
        frames = self.frames
        f = frames[-1]
        if len(frames) <= self._owned:
            f = frames[-1] = Frame(
                f.kind, f.open_at, f.label, f.count, f.safe, f.key, f.near, f.far
            )
            self._owned = len(frames) - 1
        return f

    # The methods from here to _pop are the grammar, one token per call; a subclass may
    # extend _value_done, _container, _pop, _key and _skip_run to see the structure
    # (core.budget_tree does).
    def _value_done(self, start: int, end: int) -> None:
        """The value at ``start:end`` completed the current member (or the root)."""
        if not self.frames:
            self.phase = Phase.DONE
            self.done_at = end
            return
        f = self._top()
        f.count += 1
        f.advance_safe(end)
        f.key = None
        self.phase = Phase.AFTER

    def _run(self, s: str, pos: int, base: int) -> None:
        """Read tokens from ``pos`` to the end of ``s`` (offset ``base`` in the text)."""
        n = len(s)
        while True:
            pos = _always(_WS.match(s, pos)).end()
            if pos >= n:
                return
            phase = self.phase
            c = s[pos]
            if phase is Phase.AFTER:
                pos = self._after(s, pos, base, c)
            elif phase is Phase.VALUE:
                pos = self._value(s, pos, base, c)
            elif phase is Phase.VALUE_OR_CLOSE:
                pos = self._close(pos, base) if c == "]" else self._value(s, pos, base, c)
            elif phase is Phase.KEY:
                pos = self._key(s, pos, base, c)
            elif phase is Phase.COLON:
                if c != ":":
                    self._fail(base + pos, "expected ':'")
                    return
                self.phase = Phase.VALUE
                pos += 1
            elif phase is Phase.KEY_OR_CLOSE:
                pos = self._close(pos, base) if c == "}" else self._key(s, pos, base, c)
            else:  # DONE
                self.trailing_at = base + pos
                return
            if pos < 0:
                return

    def _after(self, s: str, pos: int, base: int, c: str) -> int:
        """After a member: a comma (then a run of simple members, if any) or the closer."""
        f = self.frames[-1]
        if c == ",":
            f = self._top()
            if f.kind == "[":
                self.phase = Phase.VALUE
                return self._skip_run(_ARRAY_RUN, s, pos + 1, base, f)
            self.phase = Phase.KEY
            return self._skip_run(_OBJECT_RUN, s, pos + 1, base, f)
        if c == _CLOSER[f.kind]:
            self._pop()
            self._value_done(f.open_at, base + pos + 1)
            return pos + 1
        self._fail(base + pos, f"expected ',' or '{_CLOSER[f.kind]}'")
        return -1

    def _close(self, pos: int, base: int) -> int:
        """The closer at ``pos`` ends the innermost container."""
        start = self.frames[-1].open_at
        self._pop()
        self._value_done(start, base + pos + 1)
        return pos + 1

    def _key(self, s: str, pos: int, base: int, c: str) -> int:
        """A member's key; -1 when it runs into the cut (carried) or is not one."""
        if c != '"':
            self._fail(base + pos, "expected a key")
            return -1
        end = _always(_STR_BODY.match(s, pos + 1)).end()
        if end < len(s) and s[end] == '"':
            self._top().key = scanstring(s, pos + 1, True)[0]
            self.phase = Phase.COLON
            return end + 1
        if end == len(s) or _PARTIAL_ESCAPE.match(s, end):
            self._carry_token(s, pos, base)
        else:
            self._fail(base + end, "invalid string in key")
        return -1

    def _skip_run(self, pattern: re.Pattern[str], s: str, pos: int, base: int, frame: Frame) -> int:
        """Skip the run of complete members (scalars and flat objects, each followed by its
        comma) at ``pos``.

        They are counted into ``frame``; returns the position after the run (``pos`` if there
        is none). Windows of :data:`_RUN_WINDOW` characters keep each regex call short; a
        member cut by a window's end is simply matched by the next window.
        """
        n = len(s)
        while True:
            m = _always(pattern.match(s, pos, min(n, pos + _RUN_WINDOW)))
            end = m.end()
            if end == pos:
                return pos
            # Commas outside strings and flat objects in the run = members completed by it.
            frame.count += _FLAT_OBJECTS.sub("", _STRINGS.sub("", s[pos:end])).count(",")
            frame.advance_safe(base + m.end(1))
            pos = end

    def _pop(self) -> None:
        frame = self.frames.pop()
        self._owned = min(self._owned, len(self.frames))
        if frame.kind == "[" and len(self.frames) <= min(1, self.records_depth):
            self.records_depth = len(self.frames)
            self.records_closed = frame.count

    @property
    def records(self) -> int:
        """Complete items of the main list: the root array, or the shallowest array
        directly under the root object."""
        for frame in self.frames[:2]:
            if frame.kind == "[":
                return frame.count
        return self.records_closed

    def _carry_token(self, s: str, pos: int, base: int) -> None:
        if len(s) - pos > _MAX_CARRY:
            self._fail(base + pos, "token too long to carry over a cut")
            return
        self.carry = s[pos:]
        self.carry_kind = Carry.TOKEN

    def _value(self, s: str, pos: int, base: int, c: str) -> int:
        """Read one value starting at ``pos``; return the next position, or -1 to stop."""
        self.root_started = True
        if c == '"':
            return self._string_body(s, pos + 1, base, pos)
        if c in "{[":  # c is one character
            return self._container(s, pos, base, c)
        if c == "-" or "0" <= c <= "9":
            return self._number(s, pos, base)
        for lit in _LITERALS:
            if s.startswith(lit, pos):
                self._value_done(base + pos, base + pos + len(lit))
                return pos + len(lit)
            if lit.startswith(s[pos : pos + len(lit)]) and len(s) - pos < len(lit):
                self._carry_token(s, pos, base)
                return -1
        self._fail(base + pos, "expected a value")
        return -1

    def _container(self, s: str, pos: int, base: int, c: str) -> int:
        """A nested value: swallowed whole when it is complete and short, else opened."""
        depth = len(self.frames)
        if depth and base + pos >= self._swallow_from and depth <= _SWALLOW_DEPTH:
            end = self._swallow(s, pos, base)
            if end > 0:
                if c == "[" and depth <= min(1, self.records_depth):
                    self.records_depth = depth
                    self.records_closed = self._swallowed
                self._value_done(base + pos, base + end)
                return end
        if depth >= MAX_DEPTH:
            self._fail(base + pos, f"nested deeper than {MAX_DEPTH} levels")
            return -1
        parent = self.frames[-1] if depth else None
        label: str | int | None = None
        if parent is not None:
            label = parent.key if parent.kind == "{" else parent.count
        at = base + pos
        self.frames.append(Frame(c, at, label, 0, at + 1, None, at + 1, at + 1))
        if c == "[":
            self.phase = Phase.VALUE_OR_CLOSE
            end = self._skip_run(_ARRAY_RUN, s, pos + 1, base, self.frames[-1])
            if end > pos + 1:
                self.phase = Phase.VALUE
            return end
        self.phase = Phase.KEY_OR_CLOSE
        return pos + 1

    def _number(self, s: str, pos: int, base: int) -> int:
        if _NUMBER_PREFIX.match(s, pos) is not None:
            # The number runs into the cut: it may go on in the next chunk.
            self._carry_token(s, pos, base)
            return -1
        number = _NUMBER.match(s, pos)
        end = pos if number is None else number.end()
        if end == pos or s[end] in ".eE+-0123456789":
            self._fail(base + pos, "invalid number")
            return -1
        self._value_done(base + pos, base + end)
        return end

    def _swallow(self, s: str, pos: int, base: int) -> int:
        """Validate and skip a complete nested value with the C scanner; 0 if it is open.

        A bounded window keeps an open container from costing a parse to the end of the
        text: a value longer than the window is simply read member by member instead. So
        is a value nested deeper than the C scanner can recurse (it raises RecursionError
        after a bounded amount of work); after any failure, the values that start in the
        next ``given // _SWALLOW_BACKOFF`` characters are not offered to it again.
        """
        rest = len(s) - pos
        given = min(rest, _SWALLOW_FIRST)
        try:
            if rest > _SWALLOW_FIRST:
                try:
                    value, end = _SCAN_ONCE(s[pos : pos + _SWALLOW_FIRST], 0)
                except (StopIteration, ValueError):
                    given = min(rest, _SWALLOW_WINDOW)
                    if rest > _SWALLOW_WINDOW:
                        value, end = _SCAN_ONCE(s[pos : pos + _SWALLOW_WINDOW], 0)
                    else:
                        value, end = _SCAN_ONCE(s, pos)
                        end -= pos
                end += pos
            else:
                value, end = _SCAN_ONCE(s, pos)
        except (StopIteration, ValueError, RecursionError):
            self._swallow_from = base + pos + given // _SWALLOW_BACKOFF
            return 0
        self._swallowed = len(value)
        return int(end)

    def finish(self) -> JsonScanner:
        """The input ended: a number or literal carried at the very end is complete."""
        if self.carry_kind is Carry.TOKEN and self.error is None:
            token = self.carry
            if token in _LITERALS or _NUMBER.fullmatch(token):
                self.carry, self.carry_kind = "", Carry.NONE
                self._value_done(self.length - len(token), self.length)
        return self

    # -- closing -----------------------------------------------------------------------
    def close(self) -> tuple[int, str] | None:
        """How to make valid JSON of the text read so far: ``text[:n] + suffix``.

        None when nothing usable was read (no root value, a syntax error before any
        complete member, or a root scalar cut in the middle).
        """
        if self.done_at >= 0:
            return self.done_at, ""
        if self.error is not None and not self.frames:
            return None
        if not self.frames:
            if self.carry_kind is Carry.STRING:
                return self.length - len(self.carry), '"'
            return None
        closers = "".join(_CLOSER[f.kind] for f in reversed(self.frames))
        top = self.frames[-1]
        if self.error is None and self.carry_kind is Carry.STRING:
            # An open value string is kept and closed; an incomplete escape is dropped.
            return self.length - len(self.carry), '"' + closers
        return top.safe, closers
