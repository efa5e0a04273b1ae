"""Finding where a continuation fragment repeats the end of what was received.

A continuation fragment usually starts by repeating part of the tail of the accumulated
text (the prompt asks it to), sometimes after a line of prose or a code-fence opener.
A *splice* says how many leading characters of the fragment to drop: ``prose`` characters
of preamble, then ``overlap`` characters that equal the last ``overlap`` characters of the
tail.

This module only enumerates candidates, longest overlap first; which one is safe is the
format's decision (a JSON splice must scan, a CSV splice must keep the field count). The
search costs O(len(fragment)) string operations done in C, never O(len(accumulated)).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

#: Overlaps shorter than this are coincidences as often as repeats: "l" + "lo" may be
#: "llo" or "lo". They are accepted only when the format can prove the zero reading wrong.
MIN_OVERLAP = 8
#: How far into a fragment a preamble (prose line, fence opener) may reach.
MAX_PREAMBLE_CHARS = 400
MAX_PREAMBLE_LINES = 3
#: Bound on anchor occurrences examined, so periodic text cannot make the search quadratic.
MAX_ANCHOR_HITS = 256


@dataclass(frozen=True, slots=True)
class Splice:
    """Drop ``prose + overlap`` characters of the fragment, then append the rest."""

    overlap: int
    prose: int = 0

    @property
    def skip(self) -> int:
        return self.prose + self.overlap


def exact_overlaps(tail: str, fragment: str, *, start: int = 0) -> Iterator[int]:
    """Yield every k >= 1 with ``fragment[start:start+k] == tail[-k:]``, longest first."""
    limit = min(len(tail), len(fragment) - start)
    if limit <= 0:
        return
    anchor_len = min(MIN_OVERLAP, limit)
    anchor = fragment[start : start + anchor_len]
    n = len(tail)
    lo = n - limit
    # Long overlaps: every occurrence of the fragment's first characters in the tail is a
    # candidate start. In periodic text there can be many: the first hits from the far
    # end (the longest overlaps, restarts) and from the near end (the usual short repeat)
    # are examined, so the search stays bounded and misses neither kind.
    hits: list[int] = []
    i = tail.find(anchor, lo)
    while i != -1 and len(hits) < MAX_ANCHOR_HITS:
        hits.append(i)
        i = tail.find(anchor, i + 1)
    if i != -1:
        near: list[int] = []
        j = tail.rfind(anchor, lo)
        while j > hits[-1] and len(near) < MAX_ANCHOR_HITS:
            near.append(j)
            j = tail.rfind(anchor, lo, j + anchor_len - 1)
        hits += reversed(near)
    for i in hits:
        k = n - i
        if k <= anchor_len:
            break
        if fragment.startswith(tail[i:], start):
            yield k
    for k in range(anchor_len, 0, -1):
        if tail.endswith(fragment[start : start + k]):
            yield k


def preamble_starts(fragment: str) -> list[int]:
    """Offsets just after each of the first few lines: where a repeat may begin after prose."""
    starts: list[int] = []
    pos = 0
    for _ in range(MAX_PREAMBLE_LINES):
        nl = fragment.find("\n", pos, MAX_PREAMBLE_CHARS)
        if nl == -1:
            break
        pos = nl + 1
        starts.append(pos)
    return starts


def splice_candidates(tail: str, fragment: str, *, min_overlap: int = MIN_OVERLAP) -> list[Splice]:
    """Candidate splices in order of preference.

    1. overlaps of at least ``min_overlap`` characters, longest first; a repeat at the very
       start of the fragment before one after a preamble line of the same length;
    2. shorter overlaps at the start of the fragment (the caller must prove them);
    3. the exact continuation (nothing dropped).
    """
    long: list[Splice] = []
    short: list[Splice] = []
    for k in exact_overlaps(tail, fragment):
        (long if k >= min_overlap else short).append(Splice(overlap=k))
    for start in preamble_starts(fragment):
        for k in exact_overlaps(tail, fragment, start=start):
            if k < min_overlap:
                break
            long.append(Splice(overlap=k, prose=start))
    long.sort(key=lambda s: (-s.overlap, s.prose))
    return [*long, *short, Splice(overlap=0)]


#: How much of the tail and of a fragment the whitespace-blind search looks at.
NORMALIZED_WINDOW = 8192
_NON_WS = re.compile(r"\S+")


def visible(text: str) -> int:
    """Characters of ``text`` that are not white space."""
    return len("".join(text.split()))


def normalized_overlaps(
    tail: str, body: str, *, lines: bool, in_string: bool = False
) -> Iterator[tuple[int, int, int]]:
    """Repeats of the tail's end that differ from it only in white space, longest first.

    Yields ``(end, visible, size)``: the repeat is ``body[:end]``, with ``visible``
    characters that are not white space, and it repeats the tail's last ``size``.
    ``lines``: CSV, Markdown and text, where a repeat may differ in trailing spaces, CRLF
    and blank lines; otherwise JSON, where any white space outside strings may differ
    (re-indented, re-minified). Exact repeats are not yielded again.
    """
    found = _line_overlaps(tail, body) if lines else _compact_overlaps(tail, body, in_string)
    for end, info, size in found:
        if end > 0 and not (end <= len(tail) and tail.endswith(body[:end])):
            yield end, info, size


def _squeeze(text: str) -> tuple[str, list[int]]:
    """``text`` with each complete line's trailing blanks and ``\\r`` removed and runs of
    line breaks made one; ``ends[i]`` is the offset in ``text`` just after character i."""
    out: list[str] = []
    ends: list[int] = []
    pos = 0
    parts = text.split("\n")
    last = len(parts) - 1
    for index, part in enumerate(parts):
        content = part if index == last else part.rstrip(" \t\r")
        if content:
            out.append(content)
            ends.extend(range(pos + 1, pos + len(content) + 1))
        if index < last:
            newline = pos + len(part) + 1
            if content or not out or out[-1] != "\n":
                out.append("\n")
                ends.append(newline)
            else:
                ends[-1] = newline
        pos += len(part) + 1
    return "".join(out), ends


def _newlines_at_end(text: str) -> int:
    return text[len(text.rstrip()) :].count("\n")


def _line_overlaps(tail: str, body: str) -> Iterator[tuple[int, int, int]]:
    """Line-wise repeats. The tail's last line is matched without its trailing blanks (the
    fragment's copy of it may have lost them) and those are skipped in the fragment when it
    has them too; a tail cut between CR and LF counts as ending a line."""
    window = tail[-NORMALIZED_WINDOW:]
    if window.endswith("\r"):
        window = window[:-1] + "\n"
    last = window.rstrip(" \t")
    blanks = window[len(last) :]
    ntail, tail_ends = _squeeze(last)
    nbody, ends = _squeeze(body[:NORMALIZED_WINDOW])
    if ntail == tail[-NORMALIZED_WINDOW:] and nbody == body[:NORMALIZED_WINDOW]:
        return  # no white space to bend: every repeat is an exact one
    want = _newlines_at_end(window)
    for k in exact_overlaps(ntail, nbody):
        before = len(ntail) - k - 1
        size = len(window) - (tail_ends[before] if before >= 0 else 0)
        end = ends[k - 1]
        if nbody[k - 1] == "\n" and want:
            run_start = len(body[:end].rstrip())
            breaks = [i for i in range(run_start, end) if body[i] == "\n"]
            if len(breaks) > want:
                end = breaks[want - 1] + 1
        if blanks:
            if body.startswith(blanks, end):
                end += len(blanks)
            elif body[end : end + 1] not in ("\n", "\r"):
                continue  # the tail's trailing blanks are text the fragment does not have
        yield end, visible(body[:end]), size


#: Characters after which JSON may hold white space between tokens.
_BETWEEN = ",:[{"


def _compact_overlaps(tail: str, body: str, in_string: bool) -> Iterator[tuple[int, int, int]]:
    """Whitespace-blind repeats (JSON re-indented or re-minified).

    White space that ends the tail is matched exactly when the cut is inside a string (it
    is content there); otherwise the fragment's white space after the repeat is skipped.
    Where the cut is inside a string, spaces that start the fragment must stand for white
    space before the repeated text in the tail.
    """
    window = tail[-2 * NORMALIZED_WINDOW :]
    tail_pieces = [(m.start(), m.group()) for m in _NON_WS.finditer(window)]
    ctail = "".join(piece for _, piece in tail_pieces)
    tail_ws = tail[len(tail.rstrip()) :]
    pieces = [(m.start(), m.group()) for m in _NON_WS.finditer(body[:NORMALIZED_WINDOW])]
    cbody = "".join(piece for _, piece in pieces)
    if ctail == window and cbody == body[:NORMALIZED_WINDOW]:
        return  # no white space on either side: every repeat is an exact one
    spaced = in_string and body[:1] in (" ", "\t")
    for k in exact_overlaps(ctail, cbody):
        end = _compact_end(pieces, k)
        if not in_string:
            end = len(body) - len(body[end:].lstrip()) if tail_ws else end
        elif body.startswith(tail_ws, end):
            end += len(tail_ws)
        else:
            continue
        size = len(window) - (_compact_end(tail_pieces, len(ctail) - k + 1) - 1)
        prior = tail[: len(tail) - size][-1:]
        if spaced and not (prior.isspace() or prior in _BETWEEN):
            # Cut inside a string, the fragment starts with spaces that stand for nothing
            # between tokens in the tail: the string's text, not white space a repeat bent
            # ('"hello' + ' ", "hello"]' is "hello ", then "hello"; a repeat that starts in
            # an indentation, or after a comma or colon, may bend the space there).
            continue
        yield end, k, size


def _compact_end(pieces: list[tuple[int, str]], k: int) -> int:
    """Offset in the original text just after its ``k``-th non-whitespace character."""
    for offset, piece in pieces:
        if k <= len(piece):
            return offset + k
        k -= len(piece)
    raise ValueError("k beyond the compacted text")
