"""The labelling rule of the seam corpus (stated in full in ``sim.seams``).

``label_seam`` weighs, at one seam, the readings a careful reader holding only the fragments
could make besides the true one, and returns why the seam is ambiguous (if it is) and the
whitespace-only JSON readings that are the same document. ``valid`` says whether a document
is valid for its format: JSON parses; CSV rows all have the header's field count and no
quote is stray; a Markdown table's delimiter row has its header's cell count and code fences
pair up; any text is valid text.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from dataclasses import dataclass, field

from sim import seam_wrappers
from sim.seam_cuts import is_mark as _mark
from sim.seam_json import ends_in_string, same_tokens
from sim.seams import Reply, apply_fixes

_DELIMITER = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_WS = " \t\r\n"
_RUN = re.compile(r"[ \t\r\n]+")


def _cells(line: str) -> int:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return len(body.split("|"))


def csv_fields(line: str) -> int:
    try:
        return len(next(csv.reader([line])))
    except (csv.Error, StopIteration):
        return 0


def valid(doc: str, fmt: str) -> bool:
    """Whether ``doc`` is a valid document of ``fmt`` (see the module docstring)."""
    if fmt == "json":
        try:
            json.loads(doc)
        except ValueError:
            return False
        return True
    bare = doc.replace("\r\n", "")
    if "\r" in bare or ("\n" in bare and "\r\n" in doc):
        return False  # one document, one line-break convention
    if fmt == "csv":
        try:
            rows = list(csv.reader(io.StringIO(doc, newline=""), strict=True))
        except csv.Error:
            return False
        return bool(rows) and all(len(r) == len(rows[0]) for r in rows)
    if fmt == "markdown":
        lines = doc.replace("\r\n", "\n").split("\n")
        if sum(1 for ln in lines if ln.startswith("```")) % 2:
            return False
        for prev, line in itertools.pairwise(lines):
            table = "-" in line and _DELIMITER.match(line) and "|" in line + prev
            if table and _cells(prev) != _cells(line):
                return False
    return True


def _units(text: str, fmt: str) -> tuple[str, list[int]]:
    """Characters to compare a repeat with what it repeats, and where each ends in ``text``:
    white-space runs are one unit (line break or blank), and vanish in JSON."""
    units: list[str] = []
    ends: list[int] = []
    pos = 0
    for run in _RUN.finditer(text):
        units.append(text[pos : run.start()])
        ends.extend(range(pos + 1, run.start() + 1))
        if fmt != "json":
            units.append("\n" if any(c in "\r\n" for c in run.group()) else " ")
            ends.append(run.end())
        pos = run.end()
    units.append(text[pos:])
    ends.extend(range(pos + 1, len(text) + 1))
    return "".join(units), ends


def _borders(tail: str, head: str) -> list[int]:
    """Every j >= 1 such that ``tail`` ends with ``head[:j]``."""
    out: list[int] = []
    if not tail:
        return out
    j = head.find(tail[-1])
    while j != -1:
        if tail.endswith(head[: j + 1]):
            out.append(j + 1)
        j = head.find(tail[-1], j + 1)
    return out


def overlaps(before: str, content: str, fmt: str) -> set[int]:
    """Every length of ``content``'s start that a reader could take for a re-statement of
    the end of ``before``, including 0. Text is compared with white-space runs as one unit
    (line break or blank; none at all in JSON outside strings); white space the reply
    re-states exactly is taken whole, white space it re-states differently at any length."""
    found = {0}
    mine = before[len(before.rstrip(_WS)) :]
    core = before[: len(before) - len(mine)]
    loose = not (fmt == "json" and ends_in_string(before))
    lead = len(content) - len(content.lstrip(_WS))
    if mine:
        found.update(_borders(mine, content[:lead]))
        if fmt == "json" and loose:
            found.update(range(lead + 1))
        elif lead and ("\n" in mine) == ("\n" in content[:lead]) and content[:lead] != mine:
            found.update(range(1, lead + 1))
    whole = fmt == "json"  # JSON may be re-indented: any length may stand for any other
    tail_units, _ = _units(core if whole else core[-(2 * len(content) + 64) :], fmt)
    reach = len(content) if whole else 2 * len(before) + 64
    head_units, ends = _units(content[:reach], fmt)
    borders = _borders(tail_units, head_units)
    if head_units[:1] in ("\n", " "):  # a repeat may start inside a white-space run
        other = ("\n" if head_units[0] == " " else " ") + head_units[1:]
        borders += _borders(tail_units, other)
    for j in borders:
        end = ends[j - 1]
        stop = end
        while stop < len(content) and content[stop] in _WS:
            stop += 1
        if not mine:
            found.add(end)
        elif content.startswith(mine, end):
            found.add(end + len(mine))
        if mine and loose and (fmt == "json" or not content.startswith(mine, end)):
            found.update(range(end, stop + 1))
    return found


def natural_duplicate(dup: str, before: str, following: str) -> bool:
    """Whether a document could plausibly hold ``dup`` twice in a row at the seam, the first
    copy ending ``before`` and the second followed by ``following``."""
    if not dup:
        return False
    if _mark(dup[0]):
        return False  # half a ZWJ sequence, flag or accented letter: no text doubles one
    if not any(c.isalnum() for c in dup):
        return True
    if dup + dup in before:
        return True
    if (
        dup.endswith("\n")
        and before[-len(dup) - 1 : -len(dup)] in ("\n", "")
        and (before.count(dup) >= 2)
    ):
        return True
    runs = re.findall(r"\w+", dup)
    if len(runs) != 1:
        return False
    if (len(dup) <= 2 and dup.isalnum()) or runs[0].isdigit():
        return True  # "ee", "00"; and digits make a number whatever they are
    left = before[-len(dup) - 1 : -len(dup)] if len(before) > len(dup) else ""
    whole_left = not dup[0].isalnum() or not left.isalnum()
    whole_right = not dup[-1].isalnum() or not following[:1].isalnum()
    return whole_left and whole_right


@dataclass
class SeamLabel:
    reasons: list[str] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)


def label_seam(fmt: str, before: str, reply: Reply, after: str, header: int) -> SeamLabel:
    """Why the seam between ``before`` (the right document so far) and ``reply`` could be
    read another way; ``after`` is the rest of the right document; ``header`` the number of
    CSV fields."""
    label = SeamLabel()
    content, k = reply.content, reply.overlap
    if not content:
        return label
    if "rewritten" in reply.variant:
        # The document's start again with a change: a restart rewritten, or a block the
        # document says again with a change (a second table, a second report).
        label.reasons.append("a restart with a change reads as the start said again, changed")
    truth = before + reply.adds + after
    for alt_k in sorted(overlaps(before, content, fmt) - {k}):
        alt = before + apply_fixes(content, alt_k, reply.fixes) + after
        if alt == truth:
            continue
        if fmt == "json" and same_tokens(alt, truth):
            label.accepted.append(alt)
            continue
        if not valid(alt, fmt):
            continue
        if alt_k > k:
            label.reasons.append(f"{content[k:alt_k]!r} could be a repeat of the delivered end")
            break
        dup = content[alt_k:k]
        if natural_duplicate(dup, before, content[k:] + after):
            label.reasons.append(f"{dup!r} could be new text, twice in a row")
            break
    lead = len(content) - len(content.lstrip(_WS))
    for alt_k in range(k + 1, lead + 1) if fmt == "json" and reply.prefix.strip() else ():
        alt = before + apply_fixes(content, alt_k, reply.fixes) + after
        if same_tokens(alt, truth):  # part or all of the white space after the wrapper
            label.accepted.append(alt)
    label.reasons += _wrapper_doubts(fmt, before, reply, after, header)
    return label


def _wrapper_doubts(fmt: str, before: str, reply: Reply, after: str, header: int) -> list[str]:
    out = []
    content = reply.content
    lines = content.replace("\r\n", "\n").split("\n")
    at_line = bool(reply.prefix.strip()) or before.endswith("\n") or not before
    if at_line and seam_wrappers.preamble_like(lines[0]):
        out.append(f"content line {lines[0]!r} reads like a preamble")
    if at_line and seam_wrappers.fence_line(lines[0]):
        out.append(f"content line {lines[0]!r} reads like the wrapper's fence")
    last = next((ln for ln in reversed(lines) if ln.strip()), "")
    if not after and seam_wrappers.fence_line(last):
        out.append(f"last content line {last!r} reads like a closing fence")
    if not after and seam_wrappers.signoff_like(last):
        out.append(f"last content line {last!r} reads like a sign-off")
    wrapped = bool(reply.prefix.strip()) and fmt != "json"  # JSON: the same document
    if wrapped and content[:1] in ("\n", "\r"):
        out.append("a line break right after the wrapper could be the wrapper's")
    if wrapped and content[:1] in (" ", "\t") and before[-1:] in (" ", "\t"):
        out.append("white space right after the wrapper could be the wrapper's")
    if fmt == "csv":
        prose = [ln for ln in (reply.prefix + "\n" + reply.suffix).split("\n") if ln.strip()]
        rows = [ln for ln in prose if not seam_wrappers.fence_line(ln)]
        if any(csv_fields(ln) == header for ln in rows):
            out.append("a prose line has as many fields as the header")
    return out


def label_detection(fmt: str, first: str) -> list[str]:
    """Why the format of a document whose first reply delivered ``first`` (content only) is
    not clear: a CSV needs two whole lines with the same fields to be told from prose."""
    lines = first.replace("\r\n", "\n").split("\n")[:-1]
    if fmt == "csv" and (len(lines) < 2 or csv_fields(lines[0]) != csv_fields(lines[1])):
        return ["the first reply is too short to tell CSV from text"]
    return []


def label_first(fmt: str, prefix: str, doc: str, fenced: bool, header: int) -> list[str]:
    """Why the first reply's wrapper, or the fences of any wrapper, could be read otherwise."""
    out = []
    if fmt == "csv" and any(
        csv_fields(ln) == header for ln in prefix.split("\n") if ln.strip() and "```" not in ln
    ):
        out.append("the first reply's prose has as many fields as the header")
    lines = [ln for ln in doc.split("\n") if ln.strip()]
    if (
        fenced
        and lines
        and (seam_wrappers.fence_line(lines[0]) or seam_wrappers.fence_line(lines[-1]))
    ):
        out.append("the document starts or ends with a code fence inside a fenced reply")
    return out
