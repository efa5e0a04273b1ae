"""CSV stitching: never glue rows, never lose the header (docs/engine.md, "CSV, Markdown, text").

The header's field count is the proof a seam needs. After a cut that already holds every
field, a fragment that starts a new row gets its line break back (``"1,Alice" + "2,Bob"`` is
two rows, not ``"1,Alice2,Bob"``); a short overlap is accepted only when the exact
continuation would give a row the wrong width; a re-emitted header row is dropped once.

A quote-aware scanner (RFC 4180 as Python's ``csv`` module reads it: quotes open a field,
``""`` escapes, newlines inside quotes) keeps the state at the cut in the scan, so a cut
inside a quoted field continues correctly and a merge costs O(fragment).
"""

from __future__ import annotations

import csv
import io
import math
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from enum import StrEnum
from functools import lru_cache
from itertools import pairwise
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from core.extraction import clean_text
from core.leads import Strength
from core.merge import Merge
from core.overlap import MIN_OVERLAP, visible
from core.seam import (
    AMBIGUOUS,
    EMPTY,
    RESTART_MIN,
    Accept,
    Seam,
    finish,
    grow_head,
    read_seam,
    start_reading,
)
from core.squares import CONFIRM, SURPRISE_BITS, whole_lines
from core.text_stitch import close_wrapper

#: Rows and characters of a reading checked against the header: enough to tell a glued or
#: misaligned seam from a good one, few enough that one ragged row later does not matter.
SEAM_ROWS = 3
LOOKAHEAD_CHARS = 8192

_SPECIAL = re.compile(r'[",\n]')


class CsvMode(StrEnum):
    """Where the scanner stands: what the next character means."""

    ROW_START = "row_start"
    FIELD_START = "field_start"
    UNQUOTED = "unquoted"
    QUOTED = "quoted"
    QUOTE_SEEN = "quote_seen"  # a quote inside a quoted field: closes it, or escapes one


class CsvScan(BaseModel):
    """Resumable state of a CSV accumulation (the text itself lives elsewhere)."""

    model_config = ConfigDict(frozen=True)

    length: int = 0
    records: int = 0  # complete data rows, header and blank lines excluded
    head: str = ""
    header: str = ""  # the header row's text (still growing while ``fields`` is 0)
    fields: int = 0  # the header's field count; 0 until the header row is complete
    mode: CsvMode = CsvMode.ROW_START
    delims: int = 0  # delimiters seen in the unfinished row
    row_end: int = 0  # offset just after the last complete row's line break
    ragged: int = 0  # data rows whose field count differs from the header's
    wrapper: str = ""  # the fence a wrapper opened and did not close yet
    #: The line break last seen inside a quoted field (LF or CRLF); left out of the stored
    #: form while none was (a state stored before this field is written back as it was).
    field_break: str = Field(default="", exclude_if=lambda value: not value)


Rows = list[tuple[int, int]]  # (offset after the row's line break, field count; 0 = blank)


def scan_rows(
    mode: CsvMode, delims: int, text: str, max_rows: int = 0
) -> tuple[CsvMode, int, Rows]:
    """Advance the scanner over ``text``: its final state and the rows it completes.

    Only quotes, commas and newlines are visited (found by a regex, in C), so the cost is
    the number of those characters, not a Python step per character.
    """
    rows: Rows = []
    if '"' not in text and (mode is CsvMode.QUOTED or "\n" not in text):
        return (*_scan_plain(mode, delims, text), rows)
    pos = 0
    for match in _SPECIAL.finditer(text):
        at = match.start()
        if at > pos and _starts_field(mode, text[pos:at]):
            mode = CsvMode.UNQUOTED
        pos = at + 1
        char = text[at]
        if mode is CsvMode.QUOTED:
            if char == '"':
                mode = CsvMode.QUOTE_SEEN
        elif char == '"':
            if mode is not CsvMode.UNQUOTED:  # inside an unquoted field a quote is literal
                mode = CsvMode.QUOTED
        elif char == ",":
            delims, mode = delims + 1, CsvMode.FIELD_START
        else:
            rows.append((pos, 0 if mode is CsvMode.ROW_START else delims + 1))
            delims, mode = 0, CsvMode.ROW_START
            if len(rows) == max_rows:
                return mode, delims, rows
    if len(text) > pos and _starts_field(mode, text[pos:]):
        mode = CsvMode.UNQUOTED
    return mode, delims, rows


def crlf_records(mode: CsvMode, delims: int, text: str) -> tuple[str, bool]:
    """``text`` (LF line breaks), scanned from ``mode``, with the breaks that end records
    written CRLF and those inside quoted fields kept LF; and whether there were any of
    those."""
    _, _, rows = scan_rows(mode, delims, text)
    out, last = [], 0
    for end, _ in rows:
        out.append(text[last : end - 1])
        last = end
    out.append(text[last:])
    return "\r\n".join(out), text.count("\n") > len(rows)


def _field_break(text: str, rows: Rows) -> str:
    """The last line break of ``text`` inside a quoted field ("" where there is none, or
    only an LF whose CR came before ``text``)."""
    if text.count("\n") <= len(rows):
        return ""
    ends = {end - 1 for end, _ in rows}
    at = len(text)
    while (at := text.rfind("\n", 0, at)) > 0:
        if at not in ends:
            return "\r\n" if text[at - 1] == "\r" else "\n"
    return ""


def _scan_plain(mode: CsvMode, delims: int, text: str) -> tuple[CsvMode, int]:
    """``scan_rows`` over text with no quote (and, outside a quoted field, no line break):
    the commas are counted in C."""
    if mode is CsvMode.QUOTED:
        return mode, delims
    commas = text.count(",")
    if commas:
        delims, mode = delims + commas, CsvMode.FIELD_START
        text = text[text.rfind(",") + 1 :]
    if text and _starts_field(mode, text):
        mode = CsvMode.UNQUOTED
    return mode, delims


def _starts_field(mode: CsvMode, plain: str) -> bool:
    """Whether ordinary characters move the scanner into an unquoted field.

    A lone ``\r`` at a row's start is the first half of a blank ``\r\n`` line.
    """
    if mode in (CsvMode.QUOTED, CsvMode.UNQUOTED):
        return False
    return not (mode is CsvMode.ROW_START and plain == "\r")


def _advance(scan: CsvScan, append: str) -> CsvScan:
    mode, delims, rows = scan_rows(scan.mode, scan.delims, append)
    header, fields, records, ragged = scan.header, scan.fields, scan.records, scan.ragged
    if not fields:
        first = next((end for end, count in rows if count), None)
        header += append if first is None else append[:first]
    for _, count in rows:
        if not count:
            continue
        if not fields:
            header, fields = header.strip("\r\n"), count
        else:
            records, ragged = records + 1, ragged + (count != fields)
    return CsvScan(
        field_break=_field_break(append, rows) or scan.field_break,
        length=scan.length + len(append),
        records=records,
        head=grow_head(scan.head, append),
        header=header,
        fields=fields,
        mode=mode,
        delims=delims,
        row_end=scan.length + rows[-1][0] if rows else scan.row_end,
        ragged=ragged,
    )


def stray_quote(mode: CsvMode, text: str) -> bool:
    """Whether ``text``, read on from ``mode``, puts anything but a delimiter, a line break
    or an escaped quote right after a quote that closes a field (``"disagr"disagree"``).

    RFC 4180 has no such field, and a strict CSV reader refuses it: a reading of a seam
    that makes one (a reply read on inside a quoted field it re-emits) is no CSV.
    """
    if mode is not CsvMode.QUOTE_SEEN and '"' not in text:
        return False
    pos = 0
    for match in _SPECIAL.finditer(text):
        at = match.start()
        if mode is CsvMode.QUOTE_SEEN and text[pos:at] not in ("", "\r"):
            return True
        if at > pos and _starts_field(mode, text[pos:at]):
            mode = CsvMode.UNQUOTED
        pos = at + 1
        char = text[at]
        if mode is CsvMode.QUOTED:
            mode = CsvMode.QUOTE_SEEN if char == '"' else mode
        elif char == '"':
            mode = mode if mode is CsvMode.UNQUOTED else CsvMode.QUOTED
        else:
            mode = CsvMode.FIELD_START if char == "," else CsvMode.ROW_START
    return mode is CsvMode.QUOTE_SEEN and text[pos:] not in ("", "\r")


def fits(scan: CsvScan, text: str) -> bool:
    """Whether the first rows ``text`` completes have the header's field count, with no
    text after a closing quote."""
    mode, delims, rows = scan_rows(scan.mode, scan.delims, text[:LOOKAHEAD_CHARS], SEAM_ROWS)
    if stray_quote(scan.mode, text[: rows[-1][0] if len(rows) == SEAM_ROWS else LOOKAHEAD_CHARS]):
        return False
    counts = [count for _, count in rows if count]
    expected = scan.fields
    if not expected:
        if not counts:
            return True
        expected, counts = counts[0], counts[1:]
    if any(count != expected for count in counts):
        return False
    if expected > 1 and _blank_between(rows, mode):
        return False
    return mode is CsvMode.ROW_START or delims + 1 <= expected


def _blank_between(rows: Rows, mode: CsvMode) -> bool:
    """Whether a blank line comes before more data: with two fields or more it is no
    record (RFC 4180: every record has the header's fields), so a reading that keeps
    one between rows (a wrapper's blank line, ``"...\n"`` + ``"\n2,Bob"``) is no CSV.
    Blank lines that end the text are left alone: a reply may end with one."""
    counts = [count for _, count in rows]
    if any(a == 0 and b > 0 for a, b in pairwise(counts)):
        return True
    return bool(counts) and counts[-1] == 0 and mode is not CsvMode.ROW_START


def _readings(scan: CsvScan, nl: str = "\n", *, exact: bool = False) -> tuple[Accept, Accept]:
    """Read the seam as it stands, or repaired by ending the cut row (it had every field)
    with the document's line break ``nl``. ``exact``: the reply is known to go on right
    at the cut (prefilled, or marked on a retry), so a valid reading as it stands lost no
    line break there and is not doubted."""
    ended = "the cut row was complete: started a new row"
    can_break = scan.mode not in (CsvMode.ROW_START, CsvMode.QUOTED) and scan.fields > 0

    def breaks(text: str) -> bool:
        return can_break and not text.startswith(("\n", "\r\n")) and fits(scan, "\n" + text)

    def accept(text: str) -> tuple[str, str] | None:
        if not fits(scan, text):
            return None
        if breaks(text) and not exact:
            return text, f"{AMBIGUOUS}cut: continued the cut field rather than starting a row"
        return text, ""

    def repair(text: str) -> tuple[str, str] | None:
        return (nl + text, ended) if breaks(text) else None

    return accept, repair


def _seam(scan: CsvScan, tail: str, *, exact: bool = False) -> Seam:
    """How a CSV fragment's start is read: by width, without a repeated header."""

    # Data rows equal to the header: a repeat of it proves nothing. Otherwise the header
    # is no record the data repeats: a row equal to it is the header re-emitted.
    header_data = f"\n{scan.header}\n" in tail or f"\n{scan.header}\r\n" in tail
    header = scan.header if scan.fields and not header_data else None

    def drop(body: str, parted: bool) -> tuple[int, str, Strength]:
        if not scan.fields or scan.mode is CsvMode.QUOTED or not body.startswith(scan.header):
            return 0, "", Strength.NONE
        if header_data:
            return 0, "", Strength.NONE
        after = body[len(scan.header) : len(scan.header) + 2]
        size = 2 if after == "\r\n" else 1 if after.startswith("\n") else 0
        if not size:
            return 0, "", Strength.NONE
        return len(scan.header) + size, "dropped a repeated header row", Strength.STRONG

    restart = len(scan.header) + 1 + MIN_OVERLAP if scan.fields else RESTART_MIN
    crlf = "\r\n" in tail and not tail.endswith("\r")  # a CR at the cut wants its LF only
    accept, repair = _readings(scan, "\r\n" if crlf else "\n", exact=exact)
    return Seam(
        accept=accept,
        repair=repair,
        drop_repeat=drop,
        restart_min=restart,
        wrapper=scan.wrapper,
        aligned=_whole_row,
        duplicates=lambda tail, append: _duplicate_row(tail, append, header),
        token_cut=_field_cut,
        rejoins=_value_rejoins,
        exact=exact,
        blank_lines=False,
        in_field=scan.mode is CsvMode.QUOTED,
        ends_in_field=_field_end_reader(scan.mode, scan.delims),
        crlf_records=lambda text: crlf_records(scan.mode, scan.delims, text),
        field_break=scan.field_break,
    )


#: Rows a text is scanned one by one, looking for a row end a text scanned before had.
SYNC_ROWS = 32


def _field_end_reader(mode: CsvMode, delims: int) -> Callable[[str], bool]:
    """Whether text appended at the cut (in ``mode``) ends inside a quoted field.

    A seam asks it of each reading, of texts that start at different places and often
    end at the same one. At a row's end the scanner is at a row start whatever came
    before, so a text that reaches a row end where a text scanned before had one, with
    the same text after it, ends as that one did: the rest is scanned once (a reply of
    800 KB read seven ways took 2.5 s, scanned whole each time)."""
    scanned: list[tuple[str, set[int], bool]] = []  # text, its row ends (from its end), answer

    def ends_in_field(text: str) -> bool:
        state, _, rows = scan_rows(mode, delims, text, 1)
        if not rows:
            return state is CsvMode.QUOTED
        first = at = rows[0][0]
        for _ in range(SYNC_ROWS if scanned else 0):
            left = len(text) - at
            for seen, ends, answer in scanned:
                if left in ends and seen.endswith(text[at:]):
                    return answer
            state, _, rows = scan_rows(CsvMode.ROW_START, 0, text[at:], 1)
            if not rows:
                return state is CsvMode.QUOTED
            at += rows[0][0]
        final, _, more = scan_rows(CsvMode.ROW_START, 0, text[first:])
        ends = {len(text) - first} | {len(text) - first - end for end, _ in more}
        scanned.append((text, ends, final is CsvMode.QUOTED))
        return final is CsvMode.QUOTED

    return ends_in_field


def _duplicate_row(tail: str, append: str, header: str | None = None) -> bool:
    """Whether the row the seam falls in equals the row before or after it (``header``:
    a row no data row equals, so a pair of those is no duplicate record)."""
    window = tail[-DUPLICATE_WINDOW:]
    start = window.find("\n") + 1 if len(tail) > len(window) else 0
    text = window[start:] + append[:DUPLICATE_WINDOW]
    cut = len(window) - start
    if "\n" not in text:
        return False  # one row, no neighbour to equal
    _, _, rows = scan_rows(CsvMode.ROW_START, 0, text)
    bounds = [0, *(end for end, _ in rows)]
    spans = [text[a:b].rstrip("\r\n") for a, b in pairwise(bounds)]
    at = next((i for i, (a, b) in enumerate(pairwise(bounds)) if a <= cut < b), None)
    if at is None:
        return False
    near = spans[max(0, at - 1) : at + 2]
    return any(a.strip() and a == b and a != header for a, b in pairwise(near))


#: Characters either side of the seam parsed to compare the rows around it.
DUPLICATE_WINDOW = 1024
#: Distinct values under which a column's data counts as a small vocabulary.
SMALL_VOCABULARY = 12
#: Bits of surprise up to which fields repeating the row before's are a plausible
#: coincidence (half the budget of a free recombination: neighbours are checked column by
#: column, so each field is priced at its own column's rate).
FIELD_BITS = SURPRISE_BITS / 2
_VALUE_BREAK = re.compile(r'[,"\r\n]+')


def _common_fields(tail: str, square: str) -> bool:
    """Whether a square spanning fields is made only of values the data used before it, few
    enough (in bits) that their coming round again in that order is no rare coincidence."""
    if not any(c in square for c in ",\n"):
        return False
    window = tail[-LOOKAHEAD_CHARS:]
    if len(tail) <= LOOKAHEAD_CHARS and tail.find("\n") < len(tail) - len(square):
        window = tail[tail.find("\n") + 1 :]  # the header's names are no data values
    used = _VALUE_BREAK.split(window[: len(window) - len(square)])
    seen = set(used)
    # A small vocabulary (yes/no/agree answers) recombines freely, parts of values included,
    # and any value the data holds (the square's own too) may come round again.
    everywhere = _VALUE_BREAK.split(window)
    vocabulary = set(everywhere)
    small = len(vocabulary) <= SMALL_VOCABULARY and len(everywhere) >= 2 * len(vocabulary)
    if small:
        seen |= vocabulary
    # The last value is the cut field itself: the document holds it whichever the reading.
    values = [value for value in _VALUE_BREAK.split(square)[:-1] if value]
    if not values or len(values) * math.log2(max(2, len(seen))) > SURPRISE_BITS:
        return False  # that many values in that order: a coincidence too unlikely
    return all(
        value in seen or (small and any(value in known for known in seen)) for value in values
    )


class _Columns(NamedTuple):
    """What the data rows before the cut say about their columns."""

    pairs: int  # consecutive rows
    same: tuple[int, ...]  # per column: pairs holding the same value in it
    values: tuple[frozenset[str], ...]  # per column: the values it holds


@lru_cache(maxsize=16)
def _columns(window: str) -> _Columns:
    """The data rows in ``window``, its first line (the header or a row the window cuts)
    and its last, unfinished, left out."""
    try:
        rows = list(csv.reader(io.StringIO(window, newline="")))[1:-1]
    except csv.Error:  # a stray carriage return: no statistics, no plausibility from them
        return _Columns(0, (), ())
    width = max(map(len, rows), default=0)
    same = [0] * width
    for one, two in pairwise(rows):
        for column, (a, b) in enumerate(zip(one, two, strict=False)):
            same[column] += a == b
    values = tuple(frozenset(row[i] for row in rows if i < len(row)) for i in range(width))
    return _Columns(max(0, len(rows) - 1), tuple(same), values)


def _field_cut(tail: str, square: str, after: str) -> bool:
    """Whether the cut row ``square``, ended where it was cut, would end in a value its
    column never held, one the re-emitted row goes on with (``...,Note:`` then ``...,Note:
    the following rows are estimates``): then it is that row again, not a row of its own."""
    if not after or after[0] in ",\r\n":
        return False  # the re-emitted row ends the value there too
    mode, delims, rows = scan_rows(CsvMode.ROW_START, 0, square)
    if rows or mode in (CsvMode.QUOTED, CsvMode.ROW_START):
        return False  # a quote left open: no row to end
    columns = _columns(tail[-LOOKAHEAD_CHARS:])
    known = columns.values
    if mode is CsvMode.FIELD_START:
        # Ended there, the row's last value is empty, and the re-emitted row that goes on
        # with a value repeats its whole fields: plausible where the column holds empty
        # values and those columns repeat from row to row.
        if delims < len(known) and "" not in known[delims]:
            return True
        return _equal_bits(columns, range(delims)) > FIELD_BITS
    value = (_fields(square) or [""])[-1]
    return bool(value) and (delims >= len(known) or value not in known[delims])


def _value_rejoins(tail: str, text: str) -> bool:
    """Whether the cut row ends in a part of a value (``agr``) its column never held, that
    ``text`` completes into one it did (``ee,agree``: ``agree``)."""
    start = max(0, len(tail) - LOOKAHEAD_CHARS)
    cut = tail[tail.rfind("\n", start) + 1 or start :]
    mode, delims, rows = scan_rows(CsvMode.ROW_START, 0, cut)
    if rows or mode is not CsvMode.UNQUOTED:
        return False
    value = (_fields(cut) or [""])[-1]
    rest = _VALUE_BREAK.split(text[:LOOKAHEAD_CHARS], maxsplit=1)[0]
    known = _columns(tail[-LOOKAHEAD_CHARS:]).values
    if not (value and rest) or delims >= len(known):
        return False
    return value not in known[delims] and value + rest in known[delims]


def _equal_bits(columns: _Columns, which: Iterable[int]) -> float:
    """Bits of surprise of a row holding the same values as the row before in ``which``
    columns: each costs -log2 of its column's share of equal neighbours (counted with half
    a pair more, so that little data proves little)."""
    pairs, same, _ = columns
    return -sum(math.log2(((same[c] if c < len(same) else 0) + 0.5) / (pairs + 1)) for c in which)


def _fields(line: str) -> list[str]:
    """The fields of one row's text (none where it holds a stray carriage return)."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []


def _fields_again(tail: str, square: str) -> bool:
    """Whether a square that spans one row end is fields repeating the row before's, in
    columns where this data repeats values from row to row, with few bits of surprise.

    Read exactly, ``tail = ... c a \n b`` and then ``a \n b`` again holds the rows
    ``c a``, ``b a`` and ``b ...``: the whole fields of ``a`` repeat those of the row before
    and the whole fields of ``b`` those of the row after. Categorical columns (a status, a
    year, an answer) do that all the time; a column of names or ids seldom. Each whole
    field costs -log2 of its column's share of equal neighbours (counted with half a pair
    more, so that little data proves little); the cut field is the document's either way.
    """
    cut = len(tail) - len(square)
    if "\n" not in square or cut <= 0:
        return False
    # The cut row's start: the line's, unless the square holds quoted line breaks too (then
    # the cut row may as well: the rows are scanned).
    single = square.count("\n") == 1
    row_start = tail.rfind("\n", 0, cut) + 1 if single else _row_start(tail, cut)
    mode, delims, rows = scan_rows(CsvMode.ROW_START, 0, tail[row_start:cut])
    _, _, ends = scan_rows(mode, delims, square)
    if rows or len(ends) != 1:
        return False  # one row ends in the square (other line breaks are quoted values)
    a, b = square[: ends[0][0] - 1].rstrip("\r"), square[ends[0][0] :].rstrip("\r")
    parsed, b_fields, again = (_fields(line) for line in (tail[row_start:cut] + a, b, b + a))
    if len(again) != len(parsed):
        return False  # ``b a`` is no row like ``c a``: the reading inserts a line break
    whole = delims if mode in (CsvMode.ROW_START, CsvMode.FIELD_START) else delims + 1
    columns = [*range(whole, len(parsed)), *range(len(b_fields) - 1)]
    if not columns:
        return False
    pairs, same, values = _columns(tail[-LOOKAHEAD_CHARS:])
    glued = len(b_fields) - 1
    if (
        0 <= glued < min(len(values), len(again))
        and (whole > delims or b_fields[glued])
        and visible(a.split(",", 1)[0]) >= CONFIRM
        and again[glued] not in values[glued]
    ):
        # ``b a`` glues the cut value to (the end of) another: a value its column never
        # held ("moved to Züric" + " cooperative was founded in 2019.", "2019-08" +
        # "2019-12-19").
        return False
    return _equal_bits(_Columns(pairs, same, values), columns) <= FIELD_BITS


def _row_start(tail: str, offset: int) -> int:
    """Where the row holding ``offset`` starts, as the rows of the tail's last
    ``LOOKAHEAD_CHARS`` read (from its first line break, when it starts mid-document)."""
    start = max(0, len(tail) - LOOKAHEAD_CHARS)
    if start:
        start = tail.find("\n", start) + 1
    ends = _row_ends(tail[start:])
    at = bisect_right(ends, offset - start)
    return start + (ends[at - 1] if at else 0)


@lru_cache(maxsize=16)
def _row_ends(window: str) -> tuple[int, ...]:
    """Offsets just after each row's line break in ``window``, read from a row's start."""
    return tuple(end for end, _ in scan_rows(CsvMode.ROW_START, 0, window)[2])


def _whole_row(tail: str, square: str, rest: str) -> bool:
    """Whether ``square`` is one whole row (quoted line breaks included), or fields the data
    keeps using (a small vocabulary of values recombines into new rows): data repeats."""
    if whole_lines(tail, square, rest) or _common_fields(tail, square):
        return True
    if _fields_again(tail, square):
        return True
    if len(square) >= len(tail) or tail[-len(square) - 1] != "\n":
        return False
    row = square if square.endswith("\n") else square + "\n"
    if row is not square and not rest.startswith(("\n", "\r\n")):
        return False
    mode, _, rows = scan_rows(CsvMode.ROW_START, 0, row)
    return mode is CsvMode.ROW_START and len(rows) == 1


def start_csv(fragment: str) -> tuple[CsvScan, Merge]:
    """Clean the first fragment; a wrapper (chat prose, a code fence) is dropped."""
    text, warnings = clean_text(fragment)
    reading = start_reading(
        text, ends_in_field=lambda t: scan_rows(CsvMode.ROW_START, 0, t)[0] is CsvMode.QUOTED
    )
    append, wrapper, notes = close_wrapper(reading, line_start=True)
    if not append.strip():
        return CsvScan(), Merge.failed(EMPTY, *warnings, *reading.warnings)
    scan = CsvScan(wrapper=wrapper)
    return _checked(scan, append, finish(reading, append, [*warnings, *notes]), wrapper)


def merge_csv(
    scan: CsvScan, tail: str, fragment: str, *, exact: bool = False
) -> tuple[CsvScan, Merge]:
    """Append a continuation, using the header's field count to read the seam."""
    if not scan.length:
        return start_csv(fragment)
    reading, warnings, error = read_seam(
        tail, scan.length, scan.head, fragment, _seam(scan, tail, exact=exact)
    )
    if reading is None:
        return scan, Merge.failed(error, *warnings)
    wrapper = "" if reading.closed else reading.fence or scan.wrapper
    return _checked(scan, reading.append, finish(reading, reading.append, warnings), wrapper)


def _checked(scan: CsvScan, append: str, merge: Merge, wrapper: str) -> tuple[CsvScan, Merge]:
    new = _advance(scan, append).model_copy(update={"wrapper": wrapper})
    if new.ragged > scan.ragged:
        note = f"{new.ragged - scan.ragged} row(s) do not have the header's {new.fields} fields"
        merge = Merge(True, merge.append, merge.splice, (*merge.warnings, note), None, merge.doubts)
    return new, merge


def close_csv(scan: CsvScan) -> tuple[int, str]:
    """Up to the end of the last complete row: a row cut mid-way may hold a cut value."""
    return scan.row_end, ""
