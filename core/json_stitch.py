"""Merging truncated JSON fragments (SPEC 2.2, seed 000).

The merge works against the *cut* text, never a closed one: the overlap a continuation
repeats lives at the cut. A candidate splice is accepted only when the text it appends
scans as a valid continuation from the scanner state at the cut:

1. overlaps of at least ``MIN_OVERLAP`` characters, exact first, then ignoring whitespace
   outside the repeated text (re-indented repeats), longest first;
2. a fragment that restarts the document from its beginning without adding to it is a
   merge failure (retrying is the only way forward);
3. a shorter overlap only when the exact-continuation reading does not scan;
4. the exact continuation.
Nothing else is ever guessed: when no reading scans, the merge fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from core.extraction import clean_text, find_json_start
from core.json_scan import Carry, JsonScanner
from core.merge import Merge, describe_splice
from core.overlap import MIN_OVERLAP, Splice, exact_overlaps, preamble_starts, splice_candidates

_FENCE_AT = re.compile(r"\s*(```|~~~)[^\n]*(?:\n\s*)?\Z")
_NON_WS = re.compile(r"\S+")
# A preamble line is blank, a fence opener, or prose: it starts with a letter, holds none
# of the characters that make JSON structure, and reads like words ("Here is", or ends
# with a colon). A cut inside a string or a literal continues with letters ("ull,").
_PROSE_LINE = re.compile(
    r"[ \t]*(?:(?:```|~~~)[A-Za-z0-9_+-]*[ \t]*"
    r"|(?!(?:true|false|null)\b)(?=[^\n]*(?:[A-Za-z] [A-Za-z]|:[ \t]*\n))[A-Za-z][^\n\"{}\[\]]*)?\n"
)
#: How much of a fragment the whitespace-insensitive search looks at.
_COMPACT_LIMIT = 8192
#: Characters of the document's beginning that identify a restart.
HEAD_CHARS = 256
_RESTART_PROBE = 64
#: Non-whitespace characters a re-indented repeat needs to win over an exact continuation.
_STRONG_COMPACT = 3 * MIN_OVERLAP


def start_json(fragment: str) -> tuple[JsonScanner, Merge]:
    """Read the first fragment: drop what surrounds the payload, then scan it."""
    text, warnings = clean_text(fragment)
    start, found = find_json_start(text)
    warnings += found
    scanned = _scan_appended(JsonScanner(), text[start:])
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
    scan: JsonScanner, tail: str, fragment: str, head: str = ""
) -> tuple[JsonScanner, Merge]:
    """Merge a continuation fragment into text whose scanner state is ``scan``.

    ``tail`` is the end of the accumulated cut text (at least as long as the fragment when
    the document is), ``head`` its first characters (to recognise restarts).
    """
    text, warnings = clean_text(fragment)
    if not text:
        return scan, Merge.failed("the fragment is empty", *warnings)
    candidates = splice_candidates(tail, text)
    # A repeat must say something: one made only of whitespace (the indentation at the
    # cut) matches by coincidence as often as not, so it only counts as a short one.
    informative = [c for c in candidates if c.overlap >= MIN_OVERLAP and _says(text, c)]
    direct = [c for c in informative if c.prose == 0]
    for splice in direct:
        if (done := _accept(scan, text, splice, warnings)) is not None:
            return done
    after_prose = _prose_first([c for c in informative if c.prose > 0], text)
    compact = list(_compact_splices(tail, text, in_string=scan.carry_kind is Carry.STRING))
    if _restarts(head, text):
        # A restart is only usable when it re-emits everything received and goes on.
        for splice in (*after_prose, *compact):
            if (done := _accept(scan, text, splice, warnings)) is not None:
                return done
        return scan, Merge.failed(
            "the fragment restarted the document from the beginning", *warnings
        )
    strong = [c for c in after_prose if c.overlap >= _STRONG_COMPACT]
    strong += [c for c in compact if c.overlap >= _STRONG_COMPACT]
    for splice in strong:
        # A long repeat after a prose line, or one that differs only in indentation, is
        # not a coincidence; an exact one is the better evidence, so it comes first.
        if (done := _accept(scan, text, splice, warnings)) is not None:
            return done
    short = [c for c in candidates if c.overlap and c not in informative]
    zero = _scan_appended(scan, text)
    if zero is not None:
        # An exact continuation that scans beats any reading that needs a preamble or
        # whitespace-blind matching: those readings are where coincidences hide.
        new, kept, more = zero
        if short:
            warnings.append(
                f"ambiguous {short[0].overlap}-character repeat at the seam"
                " treated as exact continuation"
            )
        return new, Merge(ok=True, append=kept, splice=Splice(0), warnings=(*warnings, *more))
    for splice in (*after_prose, *compact, *short):
        if (done := _accept(scan, text, splice, warnings)) is not None:
            return done
    err = scan.copy().feed(text).error
    why = f"{err.message} at fragment character {err.at - scan.length}" if err else "?"
    return scan, Merge.failed(
        f"no overlap with the cut text and no valid continuation ({why})", *warnings
    )


def _says(text: str, splice: Splice) -> bool:
    """Does the repeated part hold anything but whitespace?"""
    return not text[splice.prose : splice.skip].isspace()


def _accept(
    scan: JsonScanner, text: str, splice: Splice, warnings: list[str]
) -> tuple[JsonScanner, Merge] | None:
    scanned = _scan_appended(scan, text[splice.skip :])
    if scanned is None:
        return None
    new, kept, more = scanned
    notes = (*warnings, *describe_splice(splice, text), *more)
    return new, Merge(ok=True, append=kept, splice=splice, warnings=notes)


def _prose_first(splices: list[Splice], text: str) -> list[Splice]:
    return [s for s in splices if _is_prose(text, s.prose)]


def _scan_appended(scan: JsonScanner, text: str) -> tuple[JsonScanner, str, list[str]] | None:
    """Scan ``text`` after ``scan``: the new state, the text to keep, warnings; or None."""
    trial = scan.copy().feed(text)
    if trial.error is None:
        if trial.trailing_at < 0:
            return trial, text, []
        cut = trial.trailing_at - scan.length
        kept, dropped = text[:cut], text[cut:]
        note = f"dropped text after the JSON: {dropped.strip()!r:.80}"
        return scan.copy().feed(kept), kept, [note]
    at = trial.error.at - scan.length
    if at >= 0 and _FENCE_AT.match(text, at):
        kept = text[:at]
        again = scan.copy().feed(kept)
        if again.error is None:
            return again, kept, ["dropped a closing code fence"]
    return None


def _restarts(head: str, text: str) -> bool:
    """Does the fragment begin the document again (after any preamble, any indentation)?"""
    probe = "".join(_NON_WS.findall(head[:_RESTART_PROBE]))
    if len(probe) < MIN_OVERLAP:
        return False
    for start in (0, *preamble_starts(text)):
        if not _is_prose(text, start):
            break
        window = text[start : start + 4 * _RESTART_PROBE]
        if "".join(_NON_WS.findall(window)).startswith(probe):
            return True
    return False


def _compact_splices(tail: str, text: str, *, in_string: bool) -> Iterator[Splice]:
    """Splices found ignoring whitespace (a repeat the model re-indented), longest first.

    Whitespace that ends the tail is matched exactly when the cut is inside a string (it
    is content there); otherwise the fragment's whitespace after the repeat is skipped.
    """
    window = tail[-2 * _COMPACT_LIMIT :]
    ctail = "".join(_NON_WS.findall(window))
    tail_ws = tail[len(tail.rstrip()) :]
    for start in (0, *preamble_starts(text)):
        if not _is_prose(text, start):
            break
        part = text[start : start + _COMPACT_LIMIT]
        pieces = [(m.start(), m.group()) for m in _NON_WS.finditer(part)]
        ctext = "".join(p for _, p in pieces)
        for k in exact_overlaps(ctail, ctext):
            if k < MIN_OVERLAP:
                break
            end = start + _compact_end(pieces, k)
            if not in_string:
                end = len(text) - len(text[end:].lstrip()) if tail_ws else end
            elif text.startswith(tail_ws, end):
                end += len(tail_ws)
            else:
                continue
            yield Splice(overlap=end - start, prose=start)


def _is_prose(text: str, end: int) -> bool:
    """Is ``text[:end]`` made of whole lines of prose or fence openers?"""
    pos = 0
    while pos < end:
        m = _PROSE_LINE.match(text, pos)
        if m is None or m.end() > end:
            return False
        pos = m.end()
    return True


def _compact_end(pieces: list[tuple[int, str]], k: int) -> int:
    """Offset in the original text just after its ``k``-th non-whitespace character."""
    for offset, piece in pieces:
        if k <= len(piece):
            return offset + k
        k -= len(piece)
    raise ValueError("k beyond the compacted text")
