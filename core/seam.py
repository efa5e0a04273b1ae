"""The seam rules the line-based formats (text, CSV, Markdown) share.

A fragment's start is read in a fixed order of preference, so every format makes the same
safety decisions (SPEC §2.3):

1. a restart: the fragment repeats the document's beginning; only what follows the received
   text is kept, nothing when the fragment does not reach that far;
2. an overlap of at least ``MIN_OVERLAP`` characters with the tail, maybe after a preamble
   (prose, a code-fence opener) or a repeat the format recognises (a CSV header row, a
   Markdown table header), both dropped;
3. whole lines that repeat the tail's last lines up to trailing white space;
4. a short overlap, only when the format proves the exact continuation wrong;
5. the exact continuation, with a warning when a short overlap made it ambiguous;
6. last resorts, when the format rejects all of the above: a "preamble" that may be the rest
   of the cut line (see ``weak_preamble``), then a seam the format repairs; and when even
   that fails, no reading at all: a merge failure (the engine retries), never a guess.

The format says which readings it accepts (``Seam.accept``); the seed's mergers guessed
instead, and glued rows, lost headers and deleted headings. ``Merge.splice`` offsets refer
to the fragment after ``clean_text`` (BOM, NUL, lone surrogates).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from core.extraction import clean_text
from core.merge import Merge, describe_splice
from core.overlap import MIN_OVERLAP, Splice, preamble_starts, splice_candidates

#: Characters of the document's start kept in a scan, to recognise a fragment that restarts.
HEAD_CHARS = 1024
#: How much of the document's start a fragment must repeat to count as a restart: a heading
#: or a line that merely recurs is not one (the seed deleted such headings).
RESTART_MIN = 32
#: Complete lines compared when looking for repeated lines at the seam.
MAX_SEAM_LINES = 32
#: Smaller tail windows tried when the whole tail offers no long overlap: the search looks at
#: a bounded number of anchor hits from the far end of the tail, so in repetitive text (a
#: long list, a table) an overlap near the end can be out of its reach.
RETRY_WINDOWS = (8192, 1024)
REPEATED = "fragment repeated already received content"
EMPTY = "fragment is empty after clean-up"
NO_SEAM = "no reading of the seam passes the format's checks"

FENCE_OPENER = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*\r?\n")

#: The text to append for one reading of the seam and a note (may be empty), or None when
#: the format rules that reading out.
Accept = Callable[[str], tuple[str, str] | None]


def fence_opener(fragment: str) -> re.Match[str] | None:
    """A code-fence opener line at the very start of the fragment: a wrapper (text, CSV)."""
    return FENCE_OPENER.match(fragment)


def preamble_fence(fragment: str, prose: int) -> str:
    """The marker of the fence opener that ends a dropped preamble, or '' if it is prose."""
    if not prose:
        return ""
    start = fragment.rfind("\n", 0, prose - 1) + 1
    match = FENCE_OPENER.fullmatch(fragment, start, prose)
    return match.group("fence") if match else ""


def split_closing_fence(text: str, fence: str, *, line_start: bool) -> tuple[str, str]:
    """Split off a last line that closes ``fence`` (``(text, '')`` when there is none).

    The newline before the closing line stays: it ends the wrapped content's last line.
    ``line_start`` says whether ``text`` begins a line (else its first line continues one).
    """
    end = len(text.rstrip())
    start = text.rfind("\n", 0, end) + 1
    line = text[start:end].strip()
    if (start or line_start) and len(line) >= len(fence) and line == fence[0] * len(line):
        return text[:start], text[start:]
    return text, ""


def grow_head(head: str, append: str) -> str:
    """The document's first ``HEAD_CHARS`` characters, grown by an append (O(1))."""
    return head if len(head) >= HEAD_CHARS else head + append[: HEAD_CHARS - len(head)]


def find_restart(
    tail: str, head: str, body: str, min_match: int
) -> tuple[int, Splice, str, str] | None:
    """Read ``body`` as a restart of the document, maybe after preamble lines.

    It must repeat at least ``min_match`` characters of the document's start (all of the
    fragment or of the head, when shorter). What follows the whole tail, if the fragment
    reaches it, is new; without it the fragment only repeats what was received. Returns
    where the restart starts, the splice, the text to append and a warning.
    """
    for start in (0, *preamble_starts(body)):
        size = min(len(head), len(body) - start)
        if size < min_match or not body.startswith(head[:size], start):
            continue
        found = body.find(tail, start) if tail else -1
        if found >= 0:
            note = "fragment restarted the document; kept only what follows the received text"
            return start, Splice(len(tail), found), body[found + len(tail) :], note
        return start, Splice(len(body) - start, start), "", REPEATED
    return None


def line_overlap(tail: str, body: str, *, whole: bool) -> int:
    """Characters of ``body`` whose complete lines repeat the tail's last complete lines.

    Lines compare without trailing white space (a repeat re-emitted with ``\\r\\n`` or a
    trailing blank still counts); at least ``MIN_OVERLAP`` visible characters must repeat.
    """
    if not tail.endswith("\n"):
        return 0
    lines = body.split("\n", MAX_SEAM_LINES)[:-1]
    before = tail[:-1].rsplit("\n", MAX_SEAM_LINES)
    if not whole or len(before) > MAX_SEAM_LINES:
        before = before[1:]  # the window's first line may be cut
    ours = [line.rstrip() for line in lines]
    theirs = [line.rstrip() for line in before]
    for count in range(min(len(ours), len(theirs)), 0, -1):
        if ours[:count] == theirs[-count:] and sum(map(len, ours[:count])) >= MIN_OVERLAP:
            return sum(len(line) + 1 for line in lines[:count])
    return 0


def find_splices(tail: str, fragment: str) -> list[Splice]:
    """``splice_candidates`` over the whole tail and shorter windows of it, merged."""
    found = set(splice_candidates(tail, fragment))
    for window in RETRY_WINDOWS:
        if len(tail) > window:
            found.update(splice_candidates(tail[-window:], fragment))
    return sorted(found, key=lambda s: (s.overlap < MIN_OVERLAP, -s.overlap, s.prose))


def weak_preamble(tail: str, fragment: str, splice: Splice) -> bool:
    """Whether a preamble splice only matched the tail's unfinished last line from its start.

    In repetitive text (rows sharing a prefix, numbered lines) that is what an exact
    continuation looks like when its second line starts like the cut line: the "preamble"
    is then the rest of the cut line. A real preamble is prose ending with a colon, or a
    fence opener.
    """
    if not splice.prose or "\n" in tail[-splice.overlap :]:
        return False
    if len(tail) > splice.overlap and tail[-splice.overlap - 1] != "\n":
        return False
    lead = fragment[: splice.prose].rstrip()
    return not lead.endswith(":") and not preamble_fence(fragment, splice.prose)


def _no_repeat(body: str) -> tuple[int, str]:
    return 0, ""


def _as_is(text: str) -> tuple[str, str]:
    return text, ""


def _never(text: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Seam:
    """What a format contributes to reading a fragment's start."""

    accept: Accept = _as_is
    #: A reading the format can make valid by a repair (CSV: end the cut row), tried only
    #: when no reading is valid as it stands.
    repair: Accept = _never
    #: The wrapper (prose and fence opener) to drop when no long overlap follows it.
    wrapper: Callable[[str], re.Match[str] | None] = fence_opener
    #: Characters of a repeat the format recognises at the body's start, and a warning.
    drop_repeat: Callable[[str], tuple[int, str]] = _no_repeat
    restart_min: int = RESTART_MIN
    #: False when the format drops a wrapper's closing fence itself (Markdown must check
    #: that the line does not close one of the document's own code blocks).
    strip_close: bool = True


@dataclass(frozen=True, slots=True)
class Reading:
    """One way of reading a fragment: what it drops, what it appends, what it warns."""

    splice: Splice
    append: str
    fence: str = ""  # marker of the wrapping fence, when its closing line is still to drop
    warnings: tuple[str, ...] = ()


def _unwrap(text: str, fence: str, seam: Seam, line_start: bool) -> tuple[str, str]:
    if not fence or not seam.strip_close:
        return text, fence
    return split_closing_fence(text, fence, line_start=line_start)[0], ""


def _either(seam: Seam, text: str) -> tuple[str, str] | None:
    accepted = seam.accept(text)
    return accepted if accepted is not None else seam.repair(text)


def _notes(*notes: str) -> tuple[str, ...]:
    return tuple(note for note in notes if note)


def _long_readings(
    tail: str,
    source: str,
    splices: list[Splice],
    seam: Seam,
    *,
    shift: int = 0,
    fence: str = "",
    notes: list[str],
) -> list[tuple[Reading, bool]]:
    """Accepted readings with an overlap of 8+ characters, best first, each flagged weak.

    ``source`` is the fragment, or what is left of it after ``shift`` dropped characters;
    ``splices`` are its candidates.
    Stops at the first reading that is not weak (see ``weak_preamble``).
    """
    line_start = not tail or tail.endswith("\n")
    out: list[tuple[Reading, bool]] = []
    for cand in splices:
        if cand.overlap < MIN_OVERLAP:
            break
        text, wrapper = _unwrap(
            source[cand.skip :], preamble_fence(source, cand.prose), seam, line_start
        )
        accepted = _either(seam, text)
        if accepted is None:
            continue
        said = _notes(*notes, *describe_splice(cand, source), accepted[1])
        weak = weak_preamble(tail, source, cand)
        splice = Splice(cand.overlap, shift + cand.prose)
        out.append((Reading(splice, accepted[0], wrapper or fence, said), weak))
        if not weak:
            break
    return out


def plan_seam(tail: str, total: int, head: str, fragment: str, seam: Seam) -> Reading | None:
    """Choose how to splice a cleaned, non-empty fragment onto the tail (see module doc).

    None when no reading passes the format's checks: a merge failure, never a guess.
    """
    opener = seam.wrapper(fragment)
    offset = opener.end() if opener else 0
    body, fence = _unwrap(fragment[offset:], opener.group("fence") if opener else "", seam, True)
    notes = [f"dropped a code fence wrapper: {fragment[:offset]!r:.80}"] if opener else []
    # A restart is tried first: repeated lines in it ("- item ") offer coincidental overlaps.
    restart = find_restart(tail, head, body, seam.restart_min)
    if restart is not None:
        start, splice, text, note = restart
        if not opener:
            line_start = not tail or tail.endswith("\n")
            text, fence = _unwrap(text, preamble_fence(body, start), seam, line_start)
        return Reading(Splice(splice.overlap, offset + splice.prose), text, fence, (*notes, note))

    splices = find_splices(tail, fragment)
    longs = _long_readings(tail, fragment, splices, seam, notes=[])
    dropped, note = seam.drop_repeat(body)
    if dropped:
        offset, body = offset + dropped, body[dropped:]
        notes.append(note)
    if offset:
        splices = find_splices(tail, body)
        longs += _long_readings(tail, body, splices, seam, shift=offset, fence=fence, notes=notes)
    strong = [reading for reading, weak in longs if not weak]
    if strong:
        return strong[0]
    repeat = line_overlap(tail, body, whole=len(tail) >= total)
    if repeat and (accepted := _either(seam, body[repeat:])) is not None:
        note = "dropped whole lines that repeat the received text"
        splice = Splice(repeat, offset)
        return Reading(splice, accepted[0], fence, _notes(*notes, note, accepted[1]))

    zero = seam.accept(body)
    ambiguous: list[int] = []
    for cand in splices:
        if cand.prose or not 0 < cand.overlap < MIN_OVERLAP:
            continue
        accepted = seam.accept(body[cand.overlap :])
        if accepted is None:
            continue
        if zero is None:
            note = f"accepted a {cand.overlap}-character overlap: the exact continuation breaks"
            splice = Splice(cand.overlap, offset)
            return Reading(splice, accepted[0], fence, _notes(*notes, note, accepted[1]))
        ambiguous.append(cand.overlap)
    if ambiguous:
        sizes = "/".join(map(str, ambiguous))
        notes.append(f"ambiguous short overlap ({sizes} characters) treated as exact continuation")
    if zero is not None:
        return Reading(Splice(0, offset), zero[0], fence, _notes(*notes, zero[1]))
    # Last resorts: a preamble that may be the cut line's rest, then a repaired seam.
    if longs:
        return longs[0][0]
    fixed = seam.repair(body)
    if fixed is not None:
        return Reading(Splice(0, offset), fixed[0], fence, _notes(*notes, fixed[1]))
    return None


def read_seam(
    tail: str, total: int, head: str, fragment: str, seam: Seam
) -> tuple[Reading | None, list[str], str]:
    """Clean a continuation and plan its seam: the reading (None: a merge failure, for
    the reason given), and the clean-up warnings."""
    text, warnings = clean_text(fragment)
    if not text:
        return None, warnings, EMPTY
    reading = plan_seam(tail, total, head, text, seam)
    return reading, warnings, NO_SEAM


def finish(reading: Reading, append: str, warnings: Iterable[str]) -> Merge:
    """The Merge for a reading whose final text is ``append``."""
    notes = [*warnings, *reading.warnings]
    if not append and REPEATED not in notes:
        notes.append(REPEATED)
    return Merge(ok=True, append=append, splice=reading.splice, warnings=tuple(notes))


def start_reading(fragment: str, opener: re.Match[str] | None) -> Reading:
    """The first fragment: only a wrapper (prose, fence opener) is dropped, nothing overlaps."""
    if opener is None:
        return Reading(Splice(0), fragment)
    note = f"dropped a code fence wrapper: {fragment[: opener.end()]!r:.80}"
    return Reading(
        Splice(0, opener.end()), fragment[opener.end() :], opener.group("fence"), (note,)
    )
