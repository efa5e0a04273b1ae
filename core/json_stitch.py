"""Merging truncated JSON fragments (``docs/engine.md``, "JSON" and "Reading a seam").

The merge works against the *cut* text, never a closed one: the overlap a continuation
repeats lives at the cut. The seam is read by ``core.seam`` like every format's: every
reading (a preamble dropped or not, a repeat of any length, exact or re-indented /
re-minified, none) whose appended text scans as a valid continuation from the scanner
state at the cut is weighed; a seam with two plausible readings that give different
documents is reported as a doubt; when no reading scans, the merge fails. JSON's own
evidence: white space outside strings is not content (readings that differ only there
are the same document), and whole array elements are data a document may repeat.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from core.extraction import clean_text, find_json_start
from core.json_scan import Carry, JsonScanner
from core.merge import Merge
from core.overlap import MIN_OVERLAP, Splice
from core.seam import AMBIGUOUS, REPEATED, Seam, plan_seam
from core.squares import SURPRISE_BITS

_FENCE_AT = re.compile(r"\s*(```|~~~)[^\n]*(?:\n\s*)?\Z")
_NON_WS = re.compile(r"\S+")
_JSONISH = re.compile(r"[\[{]|[\"'][^\n]{0,80}[\"']\s*:")
_RESTART_PROBE = 64


def start_json(fragment: str) -> tuple[JsonScanner, Merge]:
    """Read the first fragment: drop what surrounds the payload, then scan it."""
    text, warnings = clean_text(fragment)
    start, found = find_json_start(text)
    warnings += found
    scanned = _scan_appended(_Feeds(JsonScanner()), text[start:])
    if scanned is None:
        scan = JsonScanner().feed(text[start:])
        err = scan.error
        where = f" at character {err.at}: {err.message}" if err else ""
        return JsonScanner(), Merge.failed(f"the first fragment is not JSON{where}", *warnings)
    scan, kept, more = scanned
    if not scan.root_started:
        return JsonScanner(), Merge.failed("the first fragment holds no JSON", *warnings)
    return scan, Merge(ok=True, append=kept, splice=Splice(0, start), warnings=(*warnings, *more))


def merge_json(
    scan: JsonScanner, tail: str, fragment: str, head: str = "", *, exact: bool = False
) -> tuple[JsonScanner, Merge]:
    """Merge a continuation fragment into text whose scanner state is ``scan``.

    ``tail`` is the end of the accumulated cut text (at least as long as the fragment when
    the document is), ``head`` its first characters (to recognise restarts). The seam is
    read by ``core.seam``: every reading that scans from the cut is weighed.
    """
    text, warnings = clean_text(fragment)
    if not text.strip():
        return scan, Merge.failed("the fragment is empty", *warnings)
    feed = _Feeds(scan)

    def accept(candidate: str) -> tuple[str, str] | None:
        result = _scan_appended(feed, candidate)
        if result is None:
            return None
        _, kept, more = result
        doubt = _begun_again(scan, tail, head, kept)
        return kept, "; ".join([doubt, *more] if doubt else more)

    def repair(candidate: str) -> tuple[str, str] | None:
        quoted, requoted = _SINGLE_QUOTED.subn(r'\1"\2"', candidate)
        fixed = _without_trailing_commas(feed, quoted)
        if fixed is None or (accepted := accept(fixed)) is None:
            return None
        notes = (
            f"wrote {requoted} single-quoted string(s) with double quotes" if requoted else "",
            "removed a trailing comma" if len(fixed) < len(quoted) else "",
            accepted[1],
        )
        return accepted[0], "; ".join(filter(None, notes))

    seam = Seam(
        accept=accept,
        repair=repair,
        lines=False,
        in_string=scan.carry_kind is Carry.STRING,
        in_scalar=scan.carry_kind is Carry.TOKEN and not scan.carry.startswith('"'),
        aligned=_elements(scan),
        restarts=_restarts,
        structural=_structure if scan.carry_kind is not Carry.STRING else _never,
        exact=exact,
    )
    reading, error = plan_seam(tail, scan.length, head, text, seam)
    if reading is not None and error == REPEATED:
        reading = None  # a restart cut short adds nothing: retry rather than stall
    if reading is None:
        err = feed(text).error
        why = f"{err.message} at fragment character {err.at - scan.length}" if err else "?"
        if error == REPEATED:
            why = "the fragment restarted the document and did not reach the cut"
        return scan, Merge.failed(
            f"no reading of the seam is a valid continuation ({why})", *warnings
        )
    new = feed(reading.append)
    return new, Merge(
        ok=True,
        append=reading.append,
        splice=reading.splice,
        warnings=(*warnings, *reading.warnings),
        doubts=reading.doubts,
    )


def _begun_again(scan: JsonScanner, tail: str, head: str, text: str) -> str:
    """The doubt for a reading whose text begins something again that the document holds
    already (a list, the document, an element, a member), read as new JSON; or ''."""
    if _opens_list_again(tail, text):
        return _LIST_AGAIN
    if _opens_object_again(tail, text):
        return _OBJECT_AGAIN
    if _reopens_document(scan, head, text):
        return _DOCUMENT_AGAIN
    key = _key_again(scan, tail, text)
    if key is None:
        return ""
    return (
        f"{AMBIGUOUS}seam: the reply begins with the key {key!r:.40}, which the open object "
        "has already: the member begun again, or the key twice"
    )


_LIST_AGAIN = (
    f"{AMBIGUOUS}seam: the reply opens a new array where the list's elements are no "
    "arrays: the rest of the list begun again in an array of its own, or one element"
)
#: The first character of each kind of JSON value, by kind.
_VALUE_KINDS = ({"{"}, {'"'}, set("-0123456789"), set("tfn"))
_LAST_ELEMENT = re.compile(r"(\S)\s*,\s*\Z")
_NEW_LIST = re.compile(r"\s*\[\s*(\S)")


def _opens_list_again(tail: str, text: str) -> bool:
    """Whether ``text`` opens an array, after a comma that ends an element that is no
    array, and the array's first element is of that element's kind (``[{...}, `` +
    ``[{"id": 7}]``): a model that begins the rest of the list as a list of its own reads
    the same as a nested element, and only asking again can tell."""
    last, first = _LAST_ELEMENT.search(tail[-64:]), _NEW_LIST.match(text)
    if last is None or first is None or last.group(1) == "]":
        return False
    closer = last.group(1)
    ends = {"}": "{", '"': '"', "e": "t", "l": "n"}.get(closer, "0" if closer.isdigit() else "")
    return any(ends in kind and first.group(1) in kind for kind in _VALUE_KINDS)


_OBJECT_AGAIN = (
    f"{AMBIGUOUS}seam: the reply opens an object where the array's last element is no "
    "object: the document or an element begun again, or an element of another kind"
)
_NEW_OBJECT = re.compile(r"\s*\{")


def _opens_object_again(tail: str, text: str) -> bool:
    """Whether ``text`` opens an object after a comma that ends an array element that is
    no object (``{"m": [[1, 2], `` + ``{"m": [[3, 4]]}``, ``"b": [1, `` + ``{"b": [1, 2]}``):
    a model that begins the document or the cut element again reads as one odd element."""
    last = _LAST_ELEMENT.search(tail[-64:])
    # (Objects and nulls share arrays: a missing record.)
    return not (last is None or last.group(1) in "}l" or _NEW_OBJECT.match(text) is None)


_DOCUMENT_AGAIN = (
    f"{AMBIGUOUS}seam: the reply begins as the document does, inside it: the document "
    "begun again (a fresh copy of what is left), or an element like it"
)
#: The brackets a document opens with, its first key and the bracket its value opens.
_OPENING = re.compile(r'\s*((?:[\[{]\s*)+)"((?:[^"\\\n]|\\.){1,200})"\s*:\s*([\[{]?)')
_KEY_VALUE = re.compile(r'\s*"((?:[^"\\\n]|\\.){1,200})"\s*:\s*([\[{]?)')


def _reopens_document(scan: JsonScanner, head: str, text: str) -> bool:
    """Whether ``text``, below the document's top level, opens as the document does: its
    brackets and first key (``{"events": [{...}, `` + ``{"events": [{...``), or the root
    object's first key in an object below it (``"items": [{`` + ``"events": [``). A
    model asked to go on that writes a fresh document reads as one more element."""
    start = _OPENING.match(head)
    if start is None or len(scan.frames) < 2:
        return False
    key, holds = start.group(2), start.group(3)
    if not holds:
        return False  # (a first key holding a scalar, GeoJSON's "type": every record's)
    again = _OPENING.match(text)
    if again is not None:
        same = "".join(again.group(1).split()) == "".join(start.group(1).split())
        return same and again.group(2, 3) == (key, holds)
    # (The first key of a root object only, holding an array or object: an array's records
    # all begin with theirs, and trees and GeoJSON say "type" or "name" at every level.)
    first = _KEY_VALUE.match(text)
    if first is None or start.group(1).strip() != "{":
        return False
    return scan.frames[-1].kind == "{" and first.group(1, 2) == (key, holds)


#: A key at the start of a reply (escapes kept as written).
_FIRST_KEY = re.compile(r'\s*"((?:[^"\\\n]|\\.){1,200})"\s*:')


def _key_again(scan: JsonScanner, tail: str, text: str) -> str | None:
    """The key ``text`` starts with, where the object open at the cut has it already (or is
    the value of that key): ``{"s": {"x": 3370, `` + ``"s": {"x": 3370.0, ...`` begins the
    member again, with a change no repeat reading matches. None otherwise."""
    if not scan.frames or scan.frames[-1].kind != "{":
        return None
    match = _FIRST_KEY.match(text)
    if match is None:
        return None
    key, frame = match.group(1), scan.frames[-1]
    if frame.label == key:
        return key
    body = tail[max(0, frame.open_at - (scan.length - len(tail))) :]
    return key if re.search(rf'"{re.escape(key)}"\s*:', body) else None


#: Trailing commas removed from one reading at most (a slip, not a style).
MAX_COMMA_FIXES = 8
_TRAILING_COMMA = re.compile(r",(\s*)\Z")
#: A single-quoted key or value (a Python or JavaScript slip): after ``[{,:`` or at the
#: fragment's start, before ``,:]}``, holding no quote, backslash or line break, so that
#: writing it with double quotes is exact. Inside a real string, such a rewrite leaves a
#: string followed by no delimiter, which the scan refuses: it cannot pass unnoticed.
_SINGLE_QUOTED = re.compile(
    r"(?:(?<=[\[{,:])|^)([ \t\r\n]*)"  # after a bracket, comma or colon (or at the start)
    r"'([^'\"\\\n]*)'(?=[ \t\r\n]*[,:\]}])"
)


class _Feeds:
    """Scans of texts after one state, each done once: the readings of a seam are each
    accepted, then perhaps repaired, then the chosen one kept, and a long fragment is
    costly to scan."""

    def __init__(self, scan: JsonScanner) -> None:
        self.base = scan.length
        self._scan = scan
        self._done: dict[str, JsonScanner] = {}

    def __call__(self, text: str) -> JsonScanner:
        new = self._done.get(text)
        if new is None:
            new = self._done[text] = self._scan.copy().feed(text)
        return new


def _without_trailing_commas(feed: _Feeds, text: str) -> str | None:
    """``text`` with each comma that the scanner finds right before a closing bracket
    removed (``[1, 2,]``), or None when the text fails for another reason."""
    for _ in range(MAX_COMMA_FIXES):
        err = feed(text).error
        if err is None:
            return text
        at = err.at - feed.base
        if not 0 <= at < len(text) or text[at] not in "]}":
            return None
        comma = _TRAILING_COMMA.search(text, 0, at)
        if comma is None:
            return None
        text = text[: comma.start()] + comma.group(1) + text[at:]
    return None


_SCALAR_BREAK = re.compile(r"[,\s]+")
_ROW_BREAK = re.compile(r"[,\s\[\]]+")


def _scalar_run(tail: str, square: str) -> bool:
    """Whether a square is a few scalars of the open array, each one the data uses (ends
    may be parts of one): ``998, 72, 1`` in ``[1998, 72, 1998, 72, 1...``; or, in an
    array of arrays, scalars across a row's end (``19, 68], [``: a row again, or a row
    ending like the one before, as rows of a few values do)."""
    if any(c in square for c in '{}:"') or "," not in square:
        return False
    breaks = _ROW_BREAK if any(c in square for c in "[]") else _SCALAR_BREAK
    seen = set(breaks.split(tail[-8192:]))
    values = [value for value in breaks.split(square) if value]
    if not values or len(values) * math.log2(max(2, len(seen))) > SURPRISE_BITS:
        return False
    return all(value in seen or any(value in known for known in seen) for value in values)


def _structure(square: str) -> bool:
    """A square holding a key: JSON that cannot follow itself (``"id": "id":``). Arrays of
    scalars can (``[0, [0, ``: a matrix), and so can whole objects of an array, or the
    braces between them (``{}, {}, ``, ``}, {``): those only their length proves a
    repeat."""
    if not (":" in square and len(square.strip()) >= 3):
        return False
    return not _WHOLE_OBJECTS.fullmatch(square)


#: One or more whole objects with no nesting, each followed by a comma (``{}, `` or
#: ``{"a": 1}, {"a": 1},``): elements an array of objects may hold twice in a row.
_WHOLE_OBJECTS = re.compile(r"(?:\s*\{[^{}\[\]]*\}\s*,)+\s*")


def _never(square: str) -> bool:
    return False


def _elements(scan: JsonScanner) -> Callable[[str, str, str], bool]:
    """Whether a square is whole scalar elements of the array open at the cut."""
    in_array = bool(scan.frames) and scan.frames[-1].kind == "["

    def aligned(tail: str, square: str, rest: str) -> bool:
        if in_array and _scalar_run(tail, square):
            return True
        # Scalars repeat in data ([0, 0], ["a", "a"]); a whole object twice in a row is
        # taken for data only where the tail already shows it (periodic, in core.seam).
        if not in_array or any(c in square for c in "{[]}"):
            return False
        body = square.strip()
        before = tail[: len(tail) - len(square)].rstrip()
        if body.startswith(","):  # ", 68, 19" after "19": elements, commas first
            return True
        return body.endswith(",") and before.endswith((",", "["))  # "19, " after "," or "["

    return aligned


def _scan_appended(feed: _Feeds, text: str) -> tuple[JsonScanner, str, list[str]] | None:
    """Scan ``text`` after the scan ``feed`` continues: the new state, the text to keep,
    warnings; or None."""
    trial = feed(text)
    base = feed.base
    if trial.error is None:
        if trial.trailing_at < 0:
            return trial, text, []
        cut = trial.trailing_at - base
        kept, dropped = text[:cut], text[cut:]
        note = f"dropped text after the JSON: {dropped.strip()!r:.80}"
        if _JSONISH.search(dropped) and not _FENCE_AT.match(dropped):
            # More JSON after the end: the reading closed the document too early.
            note = f"{AMBIGUOUS}seam: the JSON closed, then more JSON followed: {dropped!r:.60}"
        return feed(kept), kept, [note]
    at = trial.error.at - base
    if at >= 0 and _FENCE_AT.match(text, at):
        kept = text[:at]
        again = feed(kept)
        if again.error is None:
            return again, kept, ["dropped a closing code fence"]
    return None


def _restarts(head: str, body: str) -> bool:
    """Does ``body`` begin the document again (in any indentation)?"""
    probe = "".join(_NON_WS.findall(head[:_RESTART_PROBE]))
    if len(probe) < MIN_OVERLAP:
        return False
    window = body[: 4 * _RESTART_PROBE]
    return "".join(_NON_WS.findall(window)).startswith(probe)
