"""Reading a seam: how a continuation fragment joins what was received
(``docs/engine.md``, "Reading a seam").

A fragment can be read in several ways, and each way gives a different document:

- a **lead** of whole lines may be a wrapper to drop (prose, a fence opener: ``core.leads``)
  or the document's own first lines;
- after the lead, the content may **repeat** the end of what was received, exactly or
  with other whitespace (re-indented, re-minified, CRLF, trailing spaces, a blank line
  more or less), over any length, or not at all (an exact continuation);
- the end may hold a **closing fence** and a sign-off to drop.

Every reading is enumerated, the format keeps those that are valid for it (JSON must scan
from the cut, a CSV row must have the header's width, …), and the best is taken by
evidence: a repeat counts only when it could not be the document itself, i.e. when the
square it would otherwise leave in the document (``x x``) is implausible (``core.squares``:
a phrase or a long sentence twice, a word doubled with nothing between; not periodic text
nor records that documents do repeat). Then every other valid reading that gives a
*different* document is weighed: if one is plausible too, the
seam is **ambiguous**: the merge says so in ``Merge.doubts`` and the engine retries with a
request that removes the doubt, never silently choosing. When no reading is valid, the
merge fails (the engine retries); it never glues text on a guess.

Costs: candidates come from ``exact_overlaps`` (bounded anchor hits) and bounded
normalised windows; at most ``MAX_EVALS`` readings are checked by the format, so a
merge is O(fragment) whatever the periodicity of the text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from itertools import chain, islice, pairwise

from core.extraction import clean_text
from core.leads import (
    MAX_LEAD_LINES,
    NO_LEAD,
    Lead,
    Strength,
    about_the_task,
    any_fence,
    asks_to_go_on,
    closing_fence,
    copy_again,
    done_note,
    elided,
    end_mark,
    lead_candidates,
    sign_off,
    soft_chat,
    stopped,
)
from core.merge import Merge
from core.overlap import Splice, exact_overlaps, normalized_overlaps, visible
from core.squares import (
    CONFIRM,
    RECORD_LINES,
    breaks_line,
    completes_cut_word,
    completes_known_word,
    duplicate_line,
    ends_in_known_word,
    glue_known,
    line_prefix,
    no_structure,
    period_of,
    plausible_square,
    restarts_cut_word,
    token_cut,
    whole_lines,
)

#: Characters of the document's start kept in a scan, to recognise a fragment that restarts.
SCAN_HEAD_CHARS = 1024
#: How much of the document's start a fragment must repeat to count as a restart.
RESTART_MIN = 32
#: Repeat lengths weighed per lead (longest first; periodic text offers hundreds).
MAX_CANDIDATES = 48
#: Characters of a fragment looked at for the rest of a word the cut split.
MAX_WORD = 64
#: Readings checked by the format per fragment (the best and its rivals).
MAX_EVALS = 24
#: Distinct documents gathered before the rest are left unchecked: the best and its rivals.
MAX_READINGS = 6
#: Characters of a reply's start looked for in the tail, to recognise a cut-short repeat.
ECHO_PROBE = 64
#: Characters a reply must copy from before the cut to count as having gone back there.
ECHO_DIVERGED = 160
ECHOED, DIVERGED = "echoed", "diverged"
#: A format's note that starts so names a doubt (``Merge.doubts``), not just a repair.
AMBIGUOUS = "ambiguous "
#: A doubt about how a fragment *ends*: moot when it is the last (the model stopped).
AMBIGUOUS_END = "ambiguous end: "
#: The end doubt of a fragment whose wrapper closed: was the text before it finished?
END_BREAK = "the line break before the dropped closing text may be the wrapper's, not the text's"
REPEATED = "fragment repeated already received content"
EMPTY = "fragment is empty after clean-up"
NO_SEAM = "no reading of the seam passes the format's checks"

#: The text to append for one reading of the seam and a note (may be empty), or None when
#: the format rules that reading out.
Accept = Callable[[str], tuple[str, str] | None]


def _never_in_field(text: str) -> bool:
    return False


def _never(text: str) -> None:
    return None


def _as_is(text: str) -> tuple[str, str]:
    return text, ""


def _no_repeat(body: str, parted: bool) -> tuple[int, str, Strength]:
    return 0, "", Strength.NONE


@dataclass(frozen=True, slots=True)
class Seam:
    """What a format contributes to reading a fragment's start."""

    accept: Accept = _as_is
    #: A reading the format can make valid by a repair (CSV: end the cut row), tried for a
    #: reading that is not valid as it stands. A note starting with ``AMBIGUOUS`` is a doubt.
    repair: Accept = _never
    #: True for CSV, Markdown and text: whitespace differences are matched per line.
    lines: bool = True
    #: Whether prose lines can lead (False: only fences).
    prose: bool = True
    fence_strength: Callable[[str], Strength] = any_fence
    #: The fence of a wrapper opened by an earlier fragment and not closed yet.
    wrapper: str = ""
    #: False when the format drops a wrapper's closing fence itself (Markdown).
    strip_close: bool = True
    #: Characters of a repeat the format recognises at the body's start, a warning, and
    #: how sure the format is (WEAK: the text may be new, a table of other alignments);
    #: ``parted``: a blank line comes before the body, so a new block may start there.
    drop_repeat: Callable[[str, bool], tuple[int, str, Strength]] = _no_repeat
    restart_min: int = RESTART_MIN
    #: JSON: the cut is inside a string, so whitespace there is content.
    in_string: bool = False
    #: JSON: the cut is inside a number or literal (no key, no string).
    in_scalar: bool = False
    #: The cut is inside a quoted CSV field or a Markdown code block: the text there is the
    #: document's, whatever it says.
    in_field: bool = False
    #: Whether text appended at the cut leaves the document inside a quoted CSV field or a
    #: Markdown code block: closing text after it is the document's, whatever it says.
    ends_in_field: Callable[[str], bool] = _never_in_field
    #: CSV: a reply's text (LF line breaks) with the breaks that end records written CRLF
    #: and those inside quoted fields kept, and whether there were any of those.
    crlf_records: Callable[[str], tuple[str, bool]] | None = None
    #: CSV: the line break the document writes inside quoted fields ("": none seen yet).
    field_break: str = ""
    #: Whether ``square`` (text ending the tail, ``rest`` after it in the fragment) is
    #: whole records a document may repeat.
    aligned: Callable[[str, str, str], bool] = whole_lines
    #: Whether a square is structure a document cannot hold twice in a row (JSON: a key).
    structural: Callable[[str], bool] = no_structure
    #: Whether ``tail + append`` holds two equal records next to each other at the seam.
    duplicates: Callable[[str, str], bool] = duplicate_line
    #: Whether the cut line ``square``, ended where it was cut, would end in a unit (a
    #: word, a CSV value) the document never used, which the re-emission goes on with.
    token_cut: Callable[[str, str, str], bool] = token_cut
    #: Whether the tail ends in a unit the document never used whole (a word, a CSV
    #: value) that the text after it completes into one it uses ("pe" + "ople").
    rejoins: Callable[[str, str], bool] = completes_cut_word
    #: The fragment is known to continue the text exactly (a prefilled reply): no lead,
    #: no repeat, no restart is looked for.
    exact: bool = False
    #: Whether a body begins the document again, given the document's head (default: it
    #: starts with ``restart_min`` characters of the head, as they are).
    restarts: Callable[[str, str], bool] | None = None
    #: Whether the text may hold a blank line (CSV: no, a row has fields).
    blank_lines: bool = True


@dataclass(frozen=True, slots=True)
class Reading:
    """One way of reading a fragment: what it drops, what it appends, what it warns."""

    splice: Splice
    append: str
    fence: str = ""  # marker of the wrapping fence, when its closing line is still to drop
    warnings: tuple[str, ...] = ()
    doubts: tuple[str, ...] = ()
    closed: bool = False  # the wrapper's closing fence was found and dropped


@dataclass(frozen=True, slots=True)
class _Candidate:
    lead: Lead
    start: int  # where the content starts (after the lead and a recognised repeat)
    end: int  # where the new text starts (after the repeated part)
    info: int  # visible characters repeated
    exact: bool
    confirmed: bool
    notes: tuple[str, ...] = ()

    def key(self) -> tuple[int, int, int, int, int]:
        """Rank: a confirmed repeat (the longest first), then a sure wrapper, then size.

        Of two sure wrappers the longer is taken (prose, then its fence opener); of two
        unsure ones the shorter. A coincidence of 1-2 visible characters ranks below no
        repeat at all, a longer unconfirmed repeat above it (the model was asked to repeat;
        a doubt is reported either way).
        """
        strength = self.lead.strength
        lead = {Strength.STRONG: 2, Strength.NONE: 1, Strength.WEAK: 0}[strength]
        span = self.lead.end if strength is Strength.STRONG else -self.lead.end
        if self.confirmed:  # the longer proof wins, whatever was dropped before it
            return (1, self.info, lead, self.exact, span)
        size = self.info if self.info >= 3 else -self.info
        return (0, lead, size, self.exact, span)


@dataclass(slots=True)
class _Tried:
    cand: _Candidate
    append: str
    reading: Reading
    repaired: bool = False  # valid only as the format repaired it


@dataclass(slots=True)
class _Context:
    tail: str
    head: str
    total: int
    fragment: str
    seam: Seam
    line_start: bool
    notes: list[str] = field(default_factory=list)
    leads: list[Lead] | None = None  # ``_leads``, once found


#: A JSON string's text that ends inside an escape (``\\``, ``\\u00``: an odd run of
#: backslashes, then maybe ``u`` and up to three hex digits).
_OPEN_ESCAPE = re.compile(r"(\\+)(?:u[0-9a-fA-F]{0,3})?$")


def _splits_escape(tail: str, square: str) -> bool:
    """Whether the square starts inside an escape of the JSON string: its letters are hex
    digits, not a word's, so the square says nothing against being the text said twice
    (``\\u000b\\u000`` + ``b\\u0007``: one control character twice)."""
    before = tail[max(0, len(tail) - len(square) - 8) : len(tail) - len(square)]
    match = _OPEN_ESCAPE.search(before)
    return match is not None and len(match.group(1)) % 2 == 1


def _plausible_square(
    tail: str, square: str, seam: Seam, rest: str = "", *, glued: bool = True
) -> bool:
    if not seam.lines and square and _splits_escape(tail, square):
        return True
    return plausible_square(
        tail,
        square,
        rest,
        aligned=seam.aligned,
        structural=seam.structural,
        compact=not seam.lines and not seam.in_string,
        glued=glued,
    )


def _candidates(ctx: _Context, lead: Lead, start: int, notes: tuple[str, ...]) -> list[_Candidate]:
    body = ctx.fragment[start:]
    seam = ctx.seam
    out = [_Candidate(lead, start, start, 0, True, False, notes)]
    weak = lead.strength is Strength.WEAK
    for k in islice(exact_overlaps(ctx.tail, body), MAX_CANDIDATES):
        square = body[:k]
        info = visible(square)
        confirmed = not _plausible_square(ctx.tail, square, seam, body[k:]) or (
            line_prefix(ctx.tail, square) and seam.token_cut(ctx.tail, square, body[k:])
        )
        if weak:  # an unsure preamble needs a long repeat, not the cut line's start again
            prefix = line_prefix(ctx.tail, square.lstrip("\r\n")) and info < RESTART_MIN
            confirmed = confirmed and info >= CONFIRM and not prefix
            confirmed = confirmed and not _whole_lines_again(ctx.tail, square)
        out.append(_Candidate(lead, start, start + k, info, True, confirmed, notes))
    normalized = normalized_overlaps(ctx.tail, body, lines=seam.lines, in_string=seam.in_string)
    for end, info, size in islice(normalized, MAX_CANDIDATES):
        if info < 2 and seam.lines and "\n" not in body[:end]:
            continue  # one character matched modulo white space, within a line, says nothing
        if end == 1 and body[0] == "\n" and ctx.tail.endswith("\r"):
            continue  # the LF of the CRLF the cut split: the text's own, no repeat
        square = ctx.tail[-size:]
        if _splits_token_after_space(ctx, body, size):
            continue
        confirmed = not _plausible_square(ctx.tail, square, seam, body[end:])
        if weak:  # as above: blank lines bent before the cut line's start prove no more
            prefix = line_prefix(ctx.tail, square.lstrip("\r\n")) and info < RESTART_MIN
            confirmed = confirmed and info >= CONFIRM and not prefix
        out.append(_Candidate(lead, start, start + end, info, False, confirmed, notes))
    return out


def _whole_lines_again(tail: str, square: str) -> bool:
    """Whether ``square`` is the tail's last lines whole: after an unsure preamble ("—
    continued —"), a document says them again too (a refrain after a break)."""
    return square.endswith("\n") and tail[-len(square) - 1 : -len(square)] in ("\n", "")


def _splits_token_after_space(ctx: _Context, body: str, size: int) -> bool:
    """JSON, the cut in a number or literal: a reply that starts with white space re-states
    whole tokens, so a repeat bent over white space cannot begin inside the cut one
    ("[3291" + "\n  1E-7," is no repeat of "1": it would glue 3291E-7)."""
    if not ctx.seam.in_scalar or not body[:1].isspace():
        return False
    before = ctx.tail[-size - 1 : -size]
    return before.isalnum() and ctx.tail[-size].isalnum()


def _restarted(ctx: _Context, lead: Lead, body: str) -> bool:
    """Does ``body`` (after ``lead``) begin the document again, a wrapper's closing fence
    aside (so it cannot be new text as it stands)?"""
    fence = lead.fence or ctx.seam.wrapper
    if fence:
        body = closing_fence(body, fence, line_start=True)[0]
    if ctx.seam.restarts is not None:
        return ctx.seam.restarts(ctx.head, body)
    size = min(len(ctx.head), len(body))
    return size >= ctx.seam.restart_min and body.startswith(ctx.head[:size])


#: Characters of the tail's end whose period a restart is checked against.
RESTART_PERIOD_PROBE = 512


def _restart_continues(ctx: _Context, body: str) -> bool:
    """Whether a body that begins the document again goes on the tail's period as well:
    a document periodic from its start ("word word ..." cut every 100 characters) gains
    the same text whether the reply restarts it or continues it, so it is no sure restart
    (read as one, every fragment was dropped as a repeat: 200,000 characters came back as
    10,000). The seam's repeats are then weighed as any periodic seam's are."""
    probe = ctx.tail[-RESTART_PERIOD_PROBE:]
    period = period_of(probe)
    if 2 * period > len(probe):
        return False
    joined = probe[-period:] + body[: min(len(ctx.head), len(body))]
    return joined[period:] == joined[:-period]


def _evaluate(ctx: _Context, cand: _Candidate) -> _Tried | None:
    seam = ctx.seam
    text = ctx.fragment[cand.end :]
    fence = cand.lead.fence or seam.wrapper
    warnings = list(cand.notes)
    end_doubts: list[str] = []
    copy, size = copy_again(text, ctx.head) if seam.lines else (len(text), 0)
    if copy < len(text):  # "For reference, here's the full CSV:" and all of it again
        warnings.append(f"{COPY_DROPPED}: {text[copy : copy + 80].strip()!r:.80}")
        if size < ctx.total:  # shorter than the document, or the document's own words?
            end_doubts.append(f"{AMBIGUOUS}seam: {COPY_DROPPED}: it may be the document's")
        text = text[:copy]
    if cand.lead.end:
        warnings.append(f"dropped a {cand.lead.end}-character preamble: {cand.lead.text!r:.80}")
        if not cand.confirmed and any(soft_chat(line) for line in cand.lead.text.splitlines()):
            # No repeat proves it the reply's: "Of course, nothing went as planned." may
            # be the document's next sentence (dropped, the whole reply was lost).
            end_doubts.append(f"{AMBIGUOUS}seam: {SOFT_WRAPPER}")
    closed = False
    if fence and seam.strip_close:
        # The text starts a line where a lead ends in a line break ("```\n" + "```": an
        # empty block), as where the delivered text does.
        starts = ctx.fragment[: cand.end].endswith("\n") if cand.end else ctx.line_start
        text, dropped = closing_fence(text, fence, line_start=starts)
        if dropped:
            closed = True
            warnings.append(f"dropped the wrapper's closing fence: {dropped.strip()!r:.80}")
            end_doubts += closing_doubts(dropped)
            _note_stopped(dropped, warnings)
            text, breaks = _closed_text(ctx, text)
            end_doubts += breaks
    if not closed:
        text = _closing_text(ctx, text, warnings, end_doubts)
    accepted = seam.accept(text)
    repaired = accepted is None
    if repaired:
        accepted = seam.repair(text)
    if accepted is None:
        return None
    append, note = accepted
    noted = tuple(n for n in cand.notes if n.startswith(AMBIGUOUS))
    doubts = (*noted, *((note,) if note.startswith(AMBIGUOUS) else ()), *end_doubts)
    if note:
        warnings.append(note)
    warnings += end_doubts
    splice = Splice(cand.end - cand.lead.end, cand.lead.end)
    fence = "" if closed else fence
    reading = Reading(splice, append, fence, tuple(warnings), doubts, closed=closed)
    return _Tried(cand, append, reading, repaired)


def _closing_text(ctx: _Context, text: str, warnings: list[str], doubts: list[str]) -> str:
    """The reply without the closing chat after its text (a note that the document was
    complete, one that the reply stopped short, a sign-off paragraph), with warnings and
    doubts."""
    if _at_rest(ctx) and done_note(text):
        # The whole reply says the document was complete: nothing to add, no line break.
        warnings.append(f"{DONE_DROPPED}: {text.strip()!r:.80}")
        doubts += closing_doubts(text.strip())
        return ""
    said = stopped(text) or elided(text)
    meta = not said and about_the_task(text)
    if said or meta:
        # The whole reply says it stops, asks to go on ("Would you like me to continue?"),
        # leaves the rest out ("(The remaining rows follow the same pattern.)") or talks
        # about the task ("I'm unable to continue with this request."): nothing to add.
        # In a string or a quoted field it may be the text.
        warnings.append(f"{STOPPED_NOTE}: {text.strip()!r:.80}")
        doubts += closing_doubts(text)
        if not _at_rest(ctx) or asks_to_go_on(text):  # a story may ask "Shall I go on?"
            doubts.append(f"{AMBIGUOUS}seam: {STOPPED_NOTE}: it may be the document's")
        if meta:
            doubts.append(f"{AMBIGUOUS}seam: {ABOUT_TASK}: {text.strip()!r:.60}")
        elif ctx.seam.in_string or ctx.seam.in_field:
            doubts.append(f"{AMBIGUOUS}seam: {STOPPED_NOTE} inside a string or quoted field")
        return ""
    if done_note(text):  # not at rest: kept, and the document may not go on so
        doubts.append(f"{AMBIGUOUS}seam: {DONE_KEPT}: {text.strip()!r:.60}")
    text = _without_elided_end(ctx, text, warnings, doubts)
    cut = sign_off(text)
    if cut == len(text) or ctx.seam.ends_in_field(text[:cut]):
        return text
    remark = text[cut:].strip()
    warnings.append(f"dropped a closing remark: {remark!r:.80}")
    doubts += closing_doubts(remark)
    _note_stopped(remark, warnings)
    text, breaks = _closed_text(ctx, text[:cut])
    doubts += breaks
    return text


def _without_elided_end(ctx: _Context, text: str, warnings: list[str], doubts: list[str]) -> str:
    """The text without a last line that says the rest was left out ("(remaining 4 rows
    omitted for brevity)", "..."), doubted: the document is not all there."""
    body = text.rstrip()
    start = body.rfind("\n") + 1
    if not start or not elided(body[start:]) or ctx.seam.ends_in_field(body[:start]):
        return text
    warnings.append(f"{STOPPED_NOTE}: {body[start:]!r:.80}")
    doubts += closing_doubts(body[start:])
    return body[:start]


def _note_stopped(dropped: str, warnings: list[str]) -> None:
    """Say so where dropped closing text says the reply stopped short (the engine then
    goes on, whatever the finish reason)."""
    line = next((line for line in dropped.splitlines() if stopped(line) or elided(line)), None)
    if line is not None:
        warnings.append(f"{STOPPED_NOTE}: {line.strip()!r:.80}")


#: A warning: the reply said it stopped before the end ("[Continued in the next message]").
STOPPED_NOTE = "dropped a note that the reply stopped short"
COPY_DROPPED = "dropped the whole document sent again after the text"
LEFT_OUT = "the reply says it left part of the document out"
ABOUT_TASK = "dropped a reply that talks about the task, not the document"
END_MARK_DROPPED = "dropped a closing line that may be the document's own"
DONE_DROPPED = "dropped a note that the document was complete"
DONE_KEPT = "kept a reply that reads as a note that the document was complete, where it was cut"


def closing_doubts(remark: str) -> list[str]:
    """A doubt for dropped closing text a document may hold itself: an end-of-text line
    ("END OF DOCUMENT"), or a note that the document was complete ("No further content.",
    bracketed or not). After a wrapper's closing fence, that fence may close the
    document's own code block, and the line be its."""
    for line in remark.splitlines()[: MAX_LEAD_LINES + 2]:
        if end_mark(line) or done_note(line):
            return [f"{AMBIGUOUS}seam: {END_MARK_DROPPED}: {line.strip()!r:.60}"]
        if elided(line):  # the document is not all there: asked again
            return [f"{AMBIGUOUS}seam: {LEFT_OUT}: {line.strip()!r:.60}"]
    return []


#: What a text may end in where the document could be complete.
_RESTS = ".!?\"')]}*_`|>-\u201d\u2019"


def _at_rest(ctx: _Context) -> bool:
    """Whether the delivered text ends where the document may end: a line, a sentence, a
    closed value (not inside a word, a string, a quoted field or a code block)."""
    if ctx.seam.in_string or ctx.seam.in_field:
        return False
    if ctx.line_start:
        return True
    last = ctx.tail.rstrip()[-1:]
    return bool(last) and last in _RESTS


def _closed_text(ctx: _Context, text: str) -> tuple[str, list[str]]:
    """The text before dropped closing text, and its end doubt: the line break it leaves
    may be the text's or the wrapper's. Not in JSON: there it is never the document's.
    White space between tokens is no part of it (kept, no doubt), and none can split a
    token or stand raw in a string: after a cut number, literal or string it is dropped
    ("[68, 7" + "\n" + "0]" would not scan where the next reply goes on with the number)."""
    if ctx.seam.lines:
        return text, [f"{AMBIGUOUS_END}{END_BREAK}"]
    last = (text.rstrip("\r\n") or ctx.tail)[-1:]
    if ctx.seam.in_string or last.isalnum() or last in ".-+":
        return text.rstrip("\r\n"), []
    return text, []


def _verbatim_first(cands: list[_Candidate]) -> list[_Candidate]:
    """The candidates, best first, where a verbatim repeat outranks a white-space-bent one
    that ends at the same place and is only a few characters longer.

    The two differ in what they take the lead's last line for (a fence, a blank line); the
    bent one proves it a repeat only by bending white space. It does prove the repeat
    itself, so the verbatim one counts as confirmed too (a repeat after an unsure lead
    otherwise needs to be long).
    """
    bent: dict[int, int] = {}
    for c in cands:
        if c.confirmed and not c.exact and c.end > c.start:
            bent[c.end] = max(bent.get(c.end, 0), c.info)
    out = [
        replace(c, confirmed=True)
        if c.exact and c.end > c.start and c.end in bent and c.info + CONFIRM > bent[c.end]
        else c
        for c in cands
    ]
    verbatim: dict[int, int] = {}
    for c in out:
        if c.confirmed and c.exact and c.end > c.start:
            verbatim[c.end] = max(verbatim.get(c.end, 0), c.info)

    def key(c: _Candidate) -> tuple[int, ...]:
        rank = c.key()
        found = verbatim.get(c.end)
        if c.confirmed and not c.exact and found is not None and c.info < found + CONFIRM:
            return (1, found, -1, *rank[3:])
        return rank

    return sorted(out, key=key, reverse=True)


def _same_document(ctx: _Context, one: _Tried, other: _Tried) -> bool:
    if one.reading.fence != other.reading.fence:
        return False  # one reading still has a wrapper's closer to drop, the other not
    if one.append == other.append:
        return True
    if ctx.seam.lines or ctx.seam.in_string:
        return False
    longer, shorter = sorted((one.append, other.append), key=len, reverse=True)
    return longer.endswith(shorter) and longer[: len(longer) - len(shorter)].isspace()


#: One rule of ``_plausible``: its verdict on the rival, or None to ask the next rule.
_Rule = Callable[[_Context, _Tried, _Tried], bool | None]


def _plausible(ctx: _Context, best: _Tried, rival: _Tried) -> bool:
    """Is ``rival`` (a different document) a reading a careful reader would also accept?

    The readings drop different leads (``_LEAD_RULES``) or the same lead and different
    repeats (``_REPEAT_RULES``); the first rule with a verdict decides, and the last rule
    of each table always has one.
    """
    same_lead = best.cand.lead.end == rival.cand.lead.end
    rules = _REPEAT_RULES if same_lead else _LEAD_RULES
    return next(v for v in (rule(ctx, best, rival) for rule in rules) if v is not None)


def _blank_lines_between(ctx: _Context, best: _Tried, rival: _Tried) -> bool | None:
    """The leads differ by blank lines only: are they the wrapper's, or the text's?"""
    low, high = sorted((best.cand.lead.end, rival.cand.lead.end))
    if ctx.fragment[low:high].strip():
        return None
    run = ctx.tail[len(ctx.tail.rstrip()) :].count("\n")
    if run < 2 and _breaks_before_repeat(ctx, best, rival):
        return False
    after = ctx.fragment[high:]
    drops = best.cand.lead.end > rival.cand.lead.end
    glued = drops and _glued_on(ctx.tail, after)
    if not run and (glued or _goes_on_with_cut_line(ctx.tail, after)):
        return False
    return run != 2  # a paragraph break is there already, unless blank lines go on


def _breaks_before_repeat(ctx: _Context, best: _Tried, rival: _Tried) -> bool:
    """Kept as text, the blank lines would break the cut line (or, after a line break, open
    a paragraph) before text the best reading proved a repeat of it: the document does
    not say it twice (unless that is a whole
    line or row again, as lists and tables do)."""
    b, r = best.cand, rival.cand
    return (
        b.confirmed
        and b.end > b.start
        and r.end == r.start
        and not best.repaired
        and not (ctx.seam.lines and ctx.seam.duplicates(ctx.tail, rival.append))
    )


def _goes_on_with_cut_line(tail: str, after: str) -> bool:
    """The text after blank lines goes on with the cut line (a space, the rest of a word
    the document uses): kept, the blank lines would break a line in the middle."""
    spaced = after[:1] == " " and not after[1:2].isspace()  # not an indentation
    return spaced or completes_known_word(tail, after[:MAX_WORD])


def _reads_less_of_restart(ctx: _Context, best: _Tried, rival: _Tried) -> bool | None:
    """What the rival drops, lead and repeat, is the start of one longer repeat the best
    proved (a restart that re-sends the header): it reads less of it as one."""
    b, r = best.cand, rival.cand
    if not (b.lead.end < r.lead.end and b.confirmed and b.end >= r.end):
        return None
    square = ctx.fragment[r.end : b.end]
    rest = ctx.fragment[b.end :]
    return visible(square) < CONFIRM or _plausible_square(ctx.tail, square, ctx.seam, rest)


def _lead_restarts_cut_word(ctx: _Context, best: _Tried, rival: _Tried) -> bool | None:
    """What the best drops as a lead starts with the word the cut split, said again whole,
    and dropped, it leaves letters glued onto the cut word into one the document never
    used ("São Paulo. He" + "Here is\n" + "what the ...": "Hewhat"): the line may be the
    text going on, as well as a wrapper. (A cut word of one letter says nothing: "S" +
    "Sure! ...".)"""
    b, r = best.cand, rival.cand
    if b.lead.end <= r.lead.end or b.confirmed or not best.append[:1].isalpha():
        return None  # (a repeat proved after the lead makes it a wrapper)
    if completes_known_word(ctx.tail, best.append):
        return None  # the letters glued make a word the document uses: the cut word's end
    kept = ctx.fragment[r.lead.end : b.lead.end]
    return True if restarts_cut_word(ctx.tail, kept) else None


def _keeps_best_lead(ctx: _Context, best: _Tried, rival: _Tried) -> bool | None:
    """The best drops lines the rival keeps as content: plausible content where the lead
    was unsure, unless the best proved a repeat after it and the rival, keeping it,
    proves none (then the lines are no repeat). An elision mark the best drops is
    plausible text whatever follows it ("I said never again" + "... never again, she
    repeated": the text's own "..." and its echo)."""
    b, r = best.cand, rival.cand
    if b.lead.end <= r.lead.end:
        return None
    if _ELISION.fullmatch(ctx.fragment, 0, b.lead.end):
        return True
    proved = r.confirmed and r.info >= CONFIRM
    return b.lead.strength < Strength.STRONG and (not b.confirmed or proved)


def _drops_more_lead(ctx: _Context, best: _Tried, rival: _Tried) -> bool:
    """The rival drops lines the best keeps: prose or content, unless the best proved them
    a repeat of the received text (then they are no preamble)."""
    return rival.cand.lead.strength is Strength.STRONG or not best.cand.confirmed


def _rejoins_cut_line(ctx: _Context, best: _Tried, rival: _Tried) -> bool | None:
    """The rival's repair ends the cut line where it was cut, in a unit the document never
    used, that the text after the break completes into one it uses ("agree,agr" +
    "ee,agree"): the text goes on with the cut line, it starts no new one."""
    after = ctx.fragment[rival.cand.end :]
    restored = rival.repaired and not best.repaired and breaks_line(rival.append, after)
    rejoins = ctx.seam.rejoins
    if restored and (rejoins(ctx.tail, after) or rejoins(ctx.tail, best.append)):
        return False
    return None


def _glues_new_word(ctx: _Context, best: _Tried, rival: _Tried) -> bool | None:
    """The rival proves less repeat and glues the cut word into one the document never
    wrote ("70" + "8,11": "708"); the best keeps the document's words. A number the
    document never wrote is no less a number ("1" + "9": "19"): where the best's repeat
    is short and no proof (a coincidence, "548|9, 1" + "9, 11]" read as "9, 1" again), a
    number glued by the rival leaves both readings standing."""
    b = best.cand
    if b.info > rival.cand.info and glue_known(ctx.tail, best.append, rival.append):
        short = not b.confirmed and b.info < CONFIRM
        return None if short and _glues_number(ctx.tail, rival.append) else False
    return None


def _glues_number(tail: str, text: str) -> bool:
    """Whether the tail ends in digits and ``text`` goes on with digits."""
    return tail[-1:].isdigit() and text[:1].isdigit()


#: Characters of the tail looked at for how a JSON document spaces its separators.
SPACING_WINDOW = 2048
#: Separators seen, each followed by white space the document uses again, that make the
#: document's spacing a habit.
SPACING_HABIT = 4
_SEPARATED = re.compile(r"([,:])([ \t\r\n]*)(?=[^ \t\r\n])")
_JSON_SPACE = " \t\r\n"


def _breaks_spacing(ctx: _Context, best: _Tried, rival: _Tried) -> bool | None:
    """JSON: the rival joins a value straight onto the tail's comma or colon (and the white
    space after it) where the document always puts other white space ("72," + "0, 11":
    "72,0" where it writes ", "; "70,\n" + "1998,\n" with no indent where it indents every
    value), and the best keeps the document's habit: a model going on exactly would have
    written the white space, so the reply starts with a repeat that begins at the value.
    (A reply that starts with white space of its own says nothing: a model may indent a
    line it begins again anyhow.)"""
    seam = ctx.seam
    if seam.lines or seam.in_string:
        return None
    rival_run = _join_run(ctx.tail, rival.append)
    if rival_run is None or rival.append[:1] in _JSON_SPACE:
        return None
    window = ctx.tail[-SPACING_WINDOW:]
    window = window[: len(window.rstrip(_JSON_SPACE))]  # the cut's own run is the reading's
    seen = [m.groups() for m in _SEPARATED.finditer(window)]
    used = set(seen)
    if len(seen) < SPACING_HABIT or rival_run in used:
        return None
    best_run = _join_run(ctx.tail, best.append)
    return False if best_run is None or best_run in used else None


def _join_run(tail: str, append: str) -> tuple[str, str] | None:
    """The separator the tail ends in (a comma or colon) and the white space between it
    and the value ``append`` goes on with; None when there is no separator or no value in
    sight."""
    kept = tail.rstrip(_JSON_SPACE)
    value = append.lstrip(_JSON_SPACE)
    if kept[-1:] not in (",", ":") or not value:
        return None
    return kept[-1], tail[len(kept) :] + append[: len(append) - len(value)]


def _square_between(ctx: _Context, best: _Tried, rival: _Tried) -> bool:
    """The readings differ in how much they read as repeated: weigh the square, the text
    the shorter reading keeps and the longer drops."""
    b, r = best.cand, rival.cand
    low, high = sorted((b.end, r.end))
    square, after = ctx.fragment[low:high], ctx.fragment[high:]
    shorter = best if b.end == low else rival
    broken = breaks_line(shorter.append, ctx.fragment[low:])
    if broken and line_prefix(ctx.tail, square):
        # The reading with a line break inserted has two lines sharing a start: plausible,
        # unless the first would end in a word the document does not know. (Not ruled out
        # when the reply has no lead: a reply whose line break at the cut was stripped,
        # then a line that starts with all of the cut line, as lists of like items do,
        # reads the same; tests/unit/test_text_formats_properties.py finds such lists.)
        return shorter is best or not ctx.seam.token_cut(ctx.tail, square, after)
    if _record_again(ctx, square, shorter):
        return True
    if _plausible_square(ctx.tail, square, ctx.seam, after, glued=not broken):
        return True
    if shorter is best and b.exact and r.exact:
        # The best reads a short repeat (a cut word begun again) and keeps a long verbatim
        # copy of the tail's end as new text ("Here is t" + " then left ... Here is the
        # rest": " t" again, or 22 characters again): the document said twice is the
        # implausible reading, so the longer repeat stands beside it.
        return True
    return not (b.exact and r.exact) and not (b.confirmed and visible(square) >= CONFIRM)


def _record_again(ctx: _Context, square: str, shorter: _Tried) -> bool:
    """The shorter reading repeats a line or row, as lists and tables do (a longer block
    again is weighed whole, as a square; all that was received again is a restart, no
    record the document holds twice)."""
    few_lines = square.strip("\r\n").count("\n") < RECORD_LINES
    record = ctx.seam.lines and few_lines and len(square) < ctx.total
    return record and ctx.seam.duplicates(ctx.tail, shorter.append)


_LEAD_RULES: tuple[_Rule, ...] = (
    _blank_lines_between,
    _reads_less_of_restart,
    _lead_restarts_cut_word,
    _keeps_best_lead,
    _drops_more_lead,
)
_REPEAT_RULES: tuple[_Rule, ...] = (
    _rejoins_cut_line,
    _glues_new_word,
    _breaks_spacing,
    _square_between,
)


#: Characters that close what comes before them: a line never starts with one.
_CLOSERS = ",.;:!?)]}%"


def _glued_on(tail: str, text: str) -> bool:
    """Whether ``text`` can only go on with the cut line: it starts with punctuation that
    closes a phrase (", the team", ". It grew") after a visible character, or with a digit
    after a digit ("in 1" + "987"). Lines break at spaces, never before a comma or inside
    a number, so a line break kept between them would be no break the document has."""
    last, first = tail[-1:], text[:1]
    if not (last and first) or last.isspace():
        return False
    return first in _CLOSERS or (first.isdigit() and last.isdigit())


def _describe(tried: _Tried) -> str:
    c = tried.cand
    parts = []
    if c.lead.end:
        parts.append(f"{c.lead.text.strip()!r:.40} as a preamble")
    parts.append(f"a {c.end - c.start}-character repeat" if c.end > c.start else "no repeat")
    return " after ".join(reversed(parts)) if len(parts) > 1 else parts[0]


def plan_seam(
    tail: str, total: int, head: str, fragment: str, seam: Seam
) -> tuple[Reading | None, str]:
    """Choose how to splice a cleaned, non-empty fragment onto the tail (see module doc).

    Returns the reading (None: a merge failure, never a guess) and the failure's reason
    (``REPEATED`` with an empty reading: the fragment only restarted the document).
    """
    ctx = _Context(tail, head, total, fragment, seam, line_start=not tail or tail.endswith("\n"))
    found, restarted = _gather(ctx)
    cands = _verbatim_first(found)
    tried = _try(ctx, cands)
    if not tried:
        return _nothing_read(restarted, total)
    best = _best(tried)
    doubts = [*_rival_doubts(ctx, best, tried), *_echo_doubts(ctx, best, cands)]
    doubts += _comma_slip_doubts(ctx, best, cands, tried)
    doubts += _break_doubts(ctx, best)
    doubts += _near_copy_doubts(ctx, best)
    doubts += _line_again_doubts(ctx, best)
    doubts += _restyled_line_doubts(ctx, best)
    if ctx.seam.lines and _MARK_LINE.match(best.append) and ctx.tail[-1:].isalnum():
        doubts.append(f"{AMBIGUOUS}seam: {_MARK_IN_WORD}")
    if ctx.seam.lines and _GAP.search(best.append):
        doubts.append(f"{AMBIGUOUS}seam: a '[...]' line in the reply may mark text it left out")
    doubts += _reindented_doubts(ctx, best)
    doubts += _rewritten_restart(ctx, best)
    reading = best.reading
    if doubts:
        warnings, doubted = (*reading.warnings, *doubts), (*reading.doubts, *doubts)
        reading = replace(reading, warnings=warnings, doubts=doubted)
    return reading, NO_SEAM


#: A reply whose start matches the document's start to this ratio (``difflib``: over
#: ``RESTART_MIN`` characters at least, ``REWRITTEN_PROBE`` at most; a shorter document
#: whole, with one change allowed) begins it again.
REWRITTEN_SHARE = 0.9
REWRITTEN_PROBE = 256
#: ... and has three in four of its first this many characters in place.
REWRITTEN_START = 16
#: A document shorter than this is too little to tell a restart by.
REWRITTEN_MIN = 8
#: A rewritten restart is placed by this many characters of the tail's end, found once.
REWRITTEN_ANCHOR = 32


def _rewritten_restart(ctx: _Context, best: _Tried) -> list[str]:
    """A reply that begins the document again with a change (a row, a word rewritten) is
    no restart ``_restarted`` finds: read as new text, it would say the document twice
    ("id,state\n7,ok" ... then "id,state\n7,OK" ...). Doubted where the best reading
    keeps text from such a start (one that drops it all read it as a restart)."""
    if ctx.seam.exact:
        return []
    for end in sorted({0, *(lead.end for lead in _leads(ctx))}):
        body = ctx.fragment[end : end + REWRITTEN_PROBE]
        if best.cand.end < end + min(len(body), len(ctx.head)) and _starts_like_head(ctx, body):
            return [
                f"{AMBIGUOUS}seam: the reply begins like the document's start, changed: a "
                "restart rewritten, or new text"
            ]
    return []


def _starts_like_head(ctx: _Context, body: str) -> bool:
    """Whether ``body`` starts as the document does, but for a few changes (see
    ``REWRITTEN_SHARE``)."""
    size = min(len(body), len(ctx.head), REWRITTEN_PROBE)
    if size < min(RESTART_MIN, max(REWRITTEN_MIN, ctx.total)):
        return False
    start = min(REWRITTEN_START, size)
    if sum(a == b for a, b in zip(body[:start], ctx.head, strict=False)) < 0.75 * start:
        return False  # a restart starts much as the document does (and that keeps this cheap)
    share = min(REWRITTEN_SHARE, 1 - 1 / size)  # one change at least, in a short head
    # Letters changed in place, counted as they stand (``difflib`` aligns periodic text
    # badly: one changed "x" in '{"x": 0}, ' ... rated 0.81); or text put in or left out.
    if sum(a == b for a, b in zip(body[:size], ctx.head, strict=False)) >= share * size:
        return True
    similar = SequenceMatcher(None, body[:size], ctx.head[:size], autojunk=False)
    return similar.quick_ratio() >= share and similar.ratio() >= share


def _gather(ctx: _Context) -> tuple[list[_Candidate], tuple[Lead, int] | None]:
    """Every candidate reading, and the first lead after which the fragment restarts the
    document, with the length of what follows it (None: no restart)."""
    if ctx.seam.exact:
        return [_Candidate(NO_LEAD, 0, 0, 0, True, False)], None
    cands: list[_Candidate] = []
    restarted: tuple[Lead, int] | None = None
    for lead in (NO_LEAD, *_leads(ctx)):
        body = ctx.fragment[lead.end :]
        cands += _header_candidates(ctx, lead, body)
        found = _candidates(ctx, lead, lead.end, ())
        found += _elided_restart(ctx, lead, body)
        exact = _restarted(ctx, lead, body) and not _restart_continues(ctx, body)
        rewritten = -1 if exact else _rewritten_past_tail(ctx, body)
        if exact or rewritten >= 0:
            # A restart is new text only past the cut; what keeps the restart (or the
            # wrapper before it) as content repeats the document.
            restarted = restarted or (lead, len(body))
            found = _past_restart(ctx, lead, body, found, rewritten)
            cands = [c for c in cands if c.confirmed]
        cands += found
    return cands, restarted


#: A line a model puts for text it leaves out when it begins the document again: an
#: elision mark, or words saying so ("[... earlier content unchanged ...]", "(rows omitted
#: for brevity)").
_ELIDED_LINE = re.compile(
    r"[ \t]*(?:(?:\.{3}|\u2026)[ \t]*\n|[\[(<][^\n]{0,80}?(?:\.{3}|\u2026|\b(?:omitted|unchanged"
    r"|truncated|elided|skipped|brevity|abbreviated|same as (?:above|before))\b)[^\n]{0,80}"
    r"[\])>][ \t]*\n)",
    re.IGNORECASE,
)
#: Lines of a reply looked at for an elision line.
ELIDED_LINES = 12
ELIDED = "the reply began the document again and left out the middle"


def _elided_restart(ctx: _Context, lead: Lead, body: str) -> list[_Candidate]:
    """A reply that begins the document again, leaves the middle out with an elision line,
    and goes on from a copy of the delivered end ("# Title\n\n...\n- Than began usually" +
    " just."): the text after the copy is new. The lines before the elision must be the
    document's first lines as delivered, and the copy ``CONFIRM`` visible characters of
    its end at least. Where the end is periodic (rows, lines alike), how much of it the copy
    holds is a guess: a doubt."""
    pos = 0
    for _ in range(ELIDED_LINES):
        line = _ELIDED_LINE.match(body, pos)
        # (A line the document holds is its own, no elision: "...", "[see above]".)
        own = line is not None and ("\n" + line.group()) in ("\n" + ctx.head + ctx.tail)
        if line is not None and pos and not own and ctx.head.startswith(body[:pos]):
            after = body[line.end() :]
            # The longest copy of the end, or none: the text may go on from the cut.
            copy = next(exact_overlaps(ctx.tail, after), 0)
            left_out = line.group().strip()
            note = f"{ELIDED} ({left_out!r:.60}); kept what follows its copy of the delivered end"
            if visible(after[:copy]) < CONFIRM:
                note = f"{AMBIGUOUS}seam: {note}, too short a copy to place the cut by"
            elif _plausible_square(ctx.tail, after[:copy], ctx.seam, after[copy:]):
                note = f"{AMBIGUOUS}seam: {note}, of periodic text: where it ends is a guess"
            end = lead.end + line.end() + copy
            info = visible(body[: line.end() + copy])
            return [_Candidate(lead, lead.end, end, info, True, True, (note,))]
        nl = body.find("\n", pos)
        if nl < 0 or not ctx.head.startswith(body[: nl + 1]):
            return []  # past the document's first lines
        pos = nl + 1
    return []


def _rewritten_past_tail(ctx: _Context, body: str) -> int:
    """Where in ``body`` the cut is, for a restart with a change (``_starts_like_head``)
    that holds the tail's last ``REWRITTEN_ANCHOR`` characters once, as delivered, about
    as far in as the text is long; -1 for any other body. Read so, what comes before the
    cut was said already (its change is the restart's, and the delivered text stands),
    with a doubt: a document may say a block again with a change."""
    anchor = ctx.tail[-REWRITTEN_ANCHOR:]
    if len(anchor) < REWRITTEN_ANCHOR:
        return -1
    at = body.find(anchor)
    if at < 0 or body.find(anchor, at + 1) >= 0:
        return -1  # no anchor, or two places the cut could be
    cut = at + len(anchor)
    if abs(cut - ctx.total) > max(REWRITTEN_MIN, ctx.total // 10):
        return -1  # a restart says about as much as was delivered before the cut
    return cut if _starts_like_head(ctx, body) else -1


#: An elision mark a reply may start with ("...", "…", "[...]"), and a space after it.
_ELISION = re.compile(r"(?:\.{3}|\u2026|\[(?:\.{3}|\u2026)\]|\((?:\.{3}|\u2026)\))[ \t]?")


def _leads(ctx: _Context) -> list[Lead]:
    """The fragment's leads, made sure or unsure by where they join the cut; and an
    elision mark the reply starts with, an unsure lead (a mark of the continuation, or the
    text's own "..." going on)."""
    if ctx.leads is None:
        seam = ctx.seam
        found = lead_candidates(ctx.fragment, prose=seam.prose, fence_strength=seam.fence_strength)
        glued = _glued_fence(ctx.tail, ctx.fragment, found)
        ctx.leads = _read_on(ctx.tail, ctx.fragment, leads=glued)
        elision = _ELISION.match(ctx.fragment)
        if elision and not ctx.leads:
            ctx.leads = [Lead(elision.end(), Strength.WEAK, "", elision.group())]
    return ctx.leads


def _header_candidates(ctx: _Context, lead: Lead, body: str) -> list[_Candidate]:
    """The candidates after a repeat the format recognises at the body's start (a header
    again), read as part of the lead."""
    before = ctx.tail + ctx.fragment[: lead.end] if lead.end else ctx.tail
    parted = before.replace("\r\n", "\n").endswith("\n\n")
    dropped, note, sure = ctx.seam.drop_repeat(body, parted)
    if not dropped:
        return []
    end = lead.end + dropped
    header = Lead(end, sure, lead.fence, ctx.fragment[:end])
    return _candidates(ctx, header, end, (note,))


def _past_restart(
    ctx: _Context, lead: Lead, body: str, found: list[_Candidate], rewritten: int = -1
) -> list[_Candidate]:
    """The candidates after a lead whose body restarts the document: those that drop all
    of the document's head, and where the whole tail is in the body (or the cut is in a
    restart that changed the text: ``_rewritten_past_tail``, ``rewritten`` when it was
    found already), the text after it."""
    whole = visible(ctx.head)
    kept = [c for c in found if c.confirmed and c.info >= whole]
    at = body.find(ctx.tail) if len(ctx.tail) >= ctx.seam.restart_min else -1
    if at >= 0:  # past the tail window: the whole tail inside it marks the cut
        end = lead.end + at + len(ctx.tail)
        said = ("fragment restarted the document; kept only what follows the cut",)
        kept.append(_Candidate(lead, lead.end, end, visible(ctx.tail), True, True, said))
        return kept
    cut = rewritten if rewritten >= 0 else _rewritten_past_tail(ctx, body)
    if cut >= 0:
        # Doubted: a document may hold a block again with a change (a second table, a
        # second report with the same sign-off), which reads the same.
        said = (
            f"{AMBIGUOUS}seam: the reply starts the document again with changes; read the "
            "delivered text and what follows the cut, or it is new text",
        )
        kept.append(
            _Candidate(lead, lead.end, lead.end + cut, visible(body[:cut]), False, True, said)
        )
    return kept


def _try(ctx: _Context, cands: list[_Candidate]) -> list[_Tried]:
    """The readings the format accepts, one per document, best first. Past ``MAX_EVALS``
    checks or ``MAX_READINGS`` documents, only readings with no repeat are checked."""
    tried: list[_Tried] = []
    evals = 0
    for cand in cands:
        zero = cand.end == cand.start
        if (evals >= MAX_EVALS or len(tried) >= MAX_READINGS) and not zero:
            continue
        evals += 1
        result = _evaluate(ctx, cand)
        if result is None:
            continue
        same = next((i for i, t in enumerate(tried) if _same_document(ctx, result, t)), None)
        if same is None:
            tried.append(result)
        elif tried[same].repaired and not result.repaired:
            tried[same] = result  # the same document read with no repair needs none
    return tried


def _nothing_read(restarted: tuple[Lead, int] | None, total: int) -> tuple[Reading | None, str]:
    """No reading is valid: a failure, or a restart cut before it reached the cut."""
    if restarted is None:
        return None, NO_SEAM
    lead, size = restarted
    if size >= total:
        return None, REPEATED
    # The document again from its start, cut before it reached the cut: nothing new.
    warnings = (f"dropped a {lead.end}-character preamble: {lead.text!r:.80}",)
    return Reading(Splice(size, lead.end), "", "", warnings[: bool(lead.end)]), REPEATED


def _best(tried: list[_Tried]) -> _Tried:
    """A reading valid as it stands beats one the format had to repair, unless the repaired
    one has the better proof (a confirmed repeat); both are weighed."""
    best = tried[0]
    if best.repaired:
        best = next(
            (t for t in tried if not t.repaired and t.cand.confirmed >= best.cand.confirmed), best
        )
    return best


def _rival_doubts(ctx: _Context, best: _Tried, tried: list[_Tried]) -> list[str]:
    """A doubt for each of the first two other readings that are plausible too."""
    rivals = [t for t in tried if t is not best]
    plausible = islice((rival for rival in rivals if _plausible(ctx, best, rival)), 2)
    return [
        f"ambiguous seam: read {_describe(best)}; {_describe(rival)} would give another document"
        for rival in plausible
    ]


#: JSON's closers, which a slipped comma comes before.
_JSON_CLOSERS = ("]", "}")


def _comma_slip_doubts(
    ctx: _Context, best: _Tried, cands: list[_Candidate], tried: list[_Tried]
) -> list[str]:
    """JSON only: the tail ends in a comma (outside a string) and the reply reads as a
    repeat that closes the array or object where that comma is, i.e. the comma was a slip
    (a trailing comma before "]"). That comma was delivered already and cannot be taken
    back, so the reading cannot be made; it is as likely as the best's, and only asking
    again can tell. Two ways to see it:

    - the best needed a repair (a slipped comma of its own), and a repeat the format ruled
      out fails only for the delivered comma ("[[1998, 19," + "98, 19,], [5]]");
    - the reply repeats the text before the comma, ``CONFIRM`` characters or more, white
      space aside, and closes there ("[72, 68, 1998," + ",72,70],[72,68,1998],[5]"), text
      the document would not say twice (periodic values do: '"n/a",' ... '"n/a"]').
    """
    seam = ctx.seam
    stripped = ctx.tail.rstrip()
    if seam.lines or seam.in_string or not stripped.endswith(","):
        return []
    read = {t.cand.end for t in tried}
    size = next(
        (
            c.end - c.start
            for c in cands
            if best.repaired
            and c.end > c.start
            and c.end not in read
            and c.info >= 2
            and _closes(ctx.fragment[c.end :])
        ),
        0,
    )
    if not size:
        body = ctx.fragment[best.cand.lead.end :]
        before = stripped[:-1]
        exact = ((e, e) for e in exact_overlaps(before, body) if visible(body[:e]) >= CONFIRM)
        compact = normalized_overlaps(before, body, lines=False)
        ends = chain(exact, ((e, n) for e, info, n in compact if info >= CONFIRM))
        size = next(
            (
                e
                for e, n in islice(ends, MAX_CANDIDATES)
                if _closes(body[e:]) and not _plausible_square(before, before[-n:], seam, body[e:])
            ),
            0,
        )
    if not size:
        return []
    return [
        f"{AMBIGUOUS}seam: read {_describe(best)}; a {size}-character repeat would close "
        "the array or object where the delivered text has a comma (a slipped comma)"
    ]


def _closes(text: str) -> bool:
    return text.lstrip().startswith(_JSON_CLOSERS)


def _break_doubts(ctx: _Context, best: _Tried) -> list[str]:
    """The reply starts with a line break where the cut line is unfinished, and the text
    after the break can only go on with it: punctuation that closes a phrase ("saw in" +
    "\n."), or the rest of the cut word ("turn eac" + "\nh. Room"). The break may be the
    text's, or the reply's own start: only asking again can tell."""
    seam = ctx.seam
    if not seam.lines or ctx.line_start or best.repaired:
        return []  # (JSON white space is no text)
    text = ctx.fragment[best.cand.end :]
    after = text.lstrip("\r\n")
    if after == text or not after.strip() or after[:1].isspace():
        return []
    if not seam.blank_lines:
        # CSV: a line break ends a record, but inside a quoted field it is the field's:
        # one between two letters or digits there ('28,"Sm' + '\nith, Dave"') splits a word,
        # and one that opens the field ('"' + '\n1"') is no value's start.
        return [f"{AMBIGUOUS}seam: {QUOTED_BREAK}"] if _splits_field(ctx, after) else []
    starts_lines = "\n" + after[:1] in ctx.tail[-SPACING_WINDOW:]  # ("0" lines, "...." lines)
    glued = _glued_on(ctx.tail, after) and not starts_lines
    if glued or completes_cut_word(ctx.tail, after) or _breaks_mid_line(ctx.tail, text, after):
        return [
            f"{AMBIGUOUS}seam: the reply starts with a line break, and the text after it "
            "goes on with the cut line: the break may be the reply's, not the text's"
        ]
    return []


def _splits_field(ctx: _Context, after: str) -> bool:
    """CSV, the cut inside a quoted field, the reply a line break then a letter or digit:
    the break opens the field, splits a number, or splits a word the document never used
    whole ("Sm" + "ith"; "line one" + "line two" breaks after a word it uses)."""
    last = ctx.tail[-1:]
    if not ctx.seam.in_field or not after[:1].isalnum():
        return False
    if last == '"' or (last.isdigit() and after[:1].isdigit()):
        return True
    return last.isalnum() and not ends_in_known_word(ctx.tail)


QUOTED_BREAK = (
    "the reply starts with a line break inside a quoted field, before a letter or digit: "
    "the break may be the reply's, not the field's"
)
#: Wrapped lines a document must show before its wrapping width is taken as a habit.
WRAP_HABIT = 3
#: The share of that width a cut line must reach for a line break there to be a wrap.
WRAP_SHARE = 0.6
#: A line this long is a paragraph run on unwrapped.
UNWRAPPED = 120


def _breaks_mid_line(tail: str, text: str, after: str) -> bool:
    """A single line break between a letter and a lower-case letter, where the cut line is
    too short to be wrapped there: the document wraps no lines, or wraps them longer
    ("these night thi" + "\ns me kind", in a text whose wrapped lines run to 70
    characters). A line broken so is the reply's start, or a wrap the document never
    made."""
    if text.startswith(("\n\n", "\r\n\r\n")) or not (tail[-1:].isalnum() and after[:1].islower()):
        return False
    cut = tail[tail.rfind("\n") + 1 :]
    lines = tail[-SPACING_WINDOW:].split("\n")[int(len(tail) > SPACING_WINDOW) : -1]
    wrapped = sorted(
        len(line) for line, nxt in pairwise(lines) if line.strip() and nxt[:1].islower()
    )
    if len(wrapped) >= WRAP_HABIT:
        return len(cut) < WRAP_SHARE * wrapped[len(wrapped) // 2]
    # No wrapping seen: a break inside a sentence is none of the text's where the text
    # runs its paragraphs on in long lines, the cut one included (a short text says
    # nothing).
    return len(cut) > UNWRAPPED or any(len(line) > max(UNWRAPPED, 2 * len(cut)) for line in lines)


#: Characters of the tail's end, and of the reply's start, compared for a near copy.
NEAR_WINDOW = 256
#: Visible characters a near copy spans at least, and the share of them it keeps.
NEAR_MIN = 8
NEAR_SHARE = 0.85
#: Characters a near copy may start into the reply, or stop short of the cut.
NEAR_SLACK = 2


def _near_copy_doubts(ctx: _Context, best: _Tried) -> list[str]:
    """The best keeps as new text a reply that begins with a copy of the delivered end that
    is not exact (a typo, a word changed, other quotes, lines wrapped otherwise, an
    elision): read as new, the document says it twice; read as a repeat, the change is
    lost. Only asking again can tell."""
    if ctx.seam.exact or best.cand.confirmed or not ctx.seam.lines:
        return []  # (JSON records share their keys and layout: no near copy tells there)
    window = ctx.tail[-NEAR_WINDOW:]
    probe = ctx.fragment[best.cand.end : best.cand.end + NEAR_WINDOW]
    if visible(probe) < NEAR_MIN or visible(window) < NEAR_MIN:
        return []
    if not _anchored(window, probe):
        return []  # (the common case, found by a few C string searches)
    blocks = SequenceMatcher(None, window, probe, autojunk=False).get_matching_blocks()[:-1]
    start = next((b for b in blocks if b.b <= NEAR_SLACK), None)
    if start is not None:
        # A copy of the end is about as long as the end: matches far into the reply are
        # its new text's ("durin" + "ork\nsince duirng.\njust can write": "ri" of "write").
        span = len(window) - start.a
        near = probe[: span + max(NEAR_MIN, span * 2 // 5)]  # (a 0.85 match may insert 35%)
        found = SequenceMatcher(None, window, near, autojunk=False).get_matching_blocks()[:-1]
        if any(b.a + b.size >= len(window) - NEAR_SLACK for b in found):
            probe, blocks = near, found
    first = next((i for i, b in enumerate(blocks) if b.b <= NEAR_SLACK), None)
    last = next((i for i, b in enumerate(blocks) if b.a + b.size >= len(window) - NEAR_SLACK), None)
    if first is None or last is None or last < first:
        return []
    linked = blocks[first : last + 1]
    matched = sum(b.size for b in linked)
    copied = window[linked[0].a :]
    said = probe[: linked[-1].b + linked[-1].size]
    if visible(copied) < NEAR_MIN or 2 * matched < NEAR_SHARE * (len(copied) + len(said)):
        return []
    before = ctx.tail[-2 * len(copied) : -len(copied)]
    if SequenceMatcher(None, before, copied, autojunk=False).ratio() >= NEAR_SHARE:
        return []  # the text before is as like the end: records, periodic lines
    return [
        f"{AMBIGUOUS}seam: the reply begins with a near copy of the delivered end "
        f"({copied[-40:]!r} again as {said[-40:]!r}): a repeat with changes, or new text"
    ]


#: Runs of characters at the reply's start of which a near copy holds one at least as it is.
NEAR_ANCHOR = 5
NEAR_ANCHORS = 4


def _anchored(window: str, probe: str) -> bool:
    """Whether one of the probe's first ``NEAR_ANCHORS`` runs of ``NEAR_ANCHOR`` characters
    is in the window: a near copy of the window's end keeps one of them (a change or two
    spoil a run each), and most replies hold none."""
    anchors = (
        probe[i : i + NEAR_ANCHOR] for i in range(0, NEAR_ANCHORS * NEAR_ANCHOR, NEAR_ANCHOR)
    )
    return any(len(a) == NEAR_ANCHOR and a in window for a in anchors)


#: Visible characters of a cut line, and the share of them a reply's first line must
#: keep in place (quotes aside), for it to be that line begun again with changes.
LINE_AGAIN_MIN = 6
LINE_AGAIN_SHARE = 0.8
#: ... or begin as it does for this many characters.
LINE_AGAIN_PREFIX = 8


def _line_again_doubts(ctx: _Context, best: _Tried) -> list[str]:
    """The best ends the cut line where it was cut and starts a new line with the reply,
    whose first line is the cut line again with changes, quotes aside, or begins as it does
    ("* Took young old, like always days famil" + "* Took youthful old, ..."; "18,N/A," +
    '"18","N/A",ok'):
    the cut line begun again (a cut word is left in the document), or a new line like
    it, as lists and tables have."""
    if not ctx.seam.lines or ctx.line_start:
        return []
    text = ctx.fragment[best.cand.end :]
    if not best.append.startswith(("\n", "\r\n")) or text.startswith(("\n", "\r\n")):
        return []  # (no line break put in by the reading)
    cut = ctx.tail[ctx.tail.rfind("\n") + 1 :].rstrip("\r")[:NEAR_WINDOW]
    line = text[:NEAR_WINDOW].split("\n", 1)[0].rstrip("\r")
    if line.startswith(cut):
        return []  # the cut line again whole, then more: weighed as a repeat already
    bare_cut, bare_line = cut.replace('"', ""), line.replace('"', "")[: len(cut) + 4]
    if visible(bare_cut) < LINE_AGAIN_MIN:
        return []
    shared = next(
        (i for i, (a, b) in enumerate(zip(bare_cut, bare_line, strict=False)) if a != b),
        min(len(bare_cut), len(bare_line)),
    )
    like = SequenceMatcher(None, bare_cut, bare_line[: len(bare_cut)], autojunk=False)
    if shared < LINE_AGAIN_PREFIX and like.ratio() < LINE_AGAIN_SHARE:
        return []
    return [
        f"{AMBIGUOUS}seam: the reply's first line is the cut line again with changes "
        f"({line[:40]!r}): the cut line begun again, or a new line like it"
    ]


#: A line that is only an elision mark ("[...]", "(…)"): text the reply left out, or a
#: quotation's own cut.
_GAP = re.compile(r"^[ \t]*[\[(](?:\.\.\.|\u2026)[\])][ \t]*\r?$", re.MULTILINE)

#: A first line that is only a break mark ("* * *", "***", "---", "⁂"), after a text cut
#: inside a word: a scene break there, or the reply's marker before the word goes on.
_MARK_LINE = re.compile(r"[ \t]*(?:(?:\*[ \t]*){3,}|-{3,}|_{3,}|#{3,}|\u2042)[ \t]*\r?\n")
_MARK_IN_WORD = "a break mark opens the reply after a word cut short: the reply's, or the text's"

#: Characters of the cut line's start a reply must begin with, written in other quotes,
#: dashes or Unicode forms, to be that line begun again (and the fewest the line holds).
RESTYLED_PROBE = 48
_STYLES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2014": "-",
        "\u2013": "-",
        "\u2026": "...",
        "\u00a0": " ",
    }
)


def _restyled(text: str) -> str:
    """``text`` with typography folded: curly quotes, dashes, ellipses, composed forms."""
    return unicodedata.normalize("NFC", text).translate(_STYLES).replace("--", "-")


def _restyled_line_doubts(ctx: _Context, best: _Tried) -> list[str]:
    """The best keeps as new text a reply that begins the cut line again from its start,
    in other quotes, dashes or Unicode forms (“temporary” for "temporary", NFD accents):
    no repeat matched it, and read as new, the document says the line twice."""
    if not ctx.seam.lines or ctx.line_start or best.cand.confirmed:
        return []
    start = ctx.tail.rfind("\n") + 1
    if start == 0 and len(ctx.tail) < ctx.total:
        return []  # the cut line starts before the tail: not seen whole
    cut = _restyled(ctx.tail[start:][: 2 * RESTYLED_PROBE])[:RESTYLED_PROBE]
    text = ctx.fragment[best.cand.end :]
    if len(cut) < RESTYLED_PROBE // 2 or not text.startswith(cut[:1]):
        return []
    said = _restyled(text[: 2 * len(cut)])
    if not said.startswith(cut) or text.startswith(ctx.tail[start:][: len(cut)]):
        return []  # (the line again as it was is a repeat the reading weighed already)
    return [
        f"{AMBIGUOUS}seam: the reply begins the cut line again, written with other quotes, "
        f"dashes or accents ({text[:40]!r}): a repeat, or new text"
    ]


#: Visible characters of an indented cut line that a re-indented copy must hold.
REINDENTED_MIN = 1
_INDENT = re.compile(r"[ \t]+")


def _reindented_doubts(ctx: _Context, best: _Tried) -> list[str]:
    """The best glues the reply onto an indented cut line, and the reply starts with the
    cut line again, indented otherwise ("        retu" + "\t\treturn 1"): the line begun
    again with tabs for spaces (or back), which no repeat reading matches, or new text."""
    if not ctx.seam.lines or ctx.line_start or best.append[:1] not in (" ", "\t"):
        return []
    cut_line = ctx.tail[ctx.tail.rfind("\n") + 1 :][:NEAR_WINDOW]
    indent, again = _INDENT.match(cut_line), _INDENT.match(best.append)
    if indent is None or again is None or indent.group() == again.group():
        return []
    content = cut_line[indent.end() :]
    if visible(content) < REINDENTED_MIN or not best.append.startswith(content, again.end()):
        return []
    return [
        f"{AMBIGUOUS}seam: the reply begins with the cut line again, indented otherwise "
        f"({best.append[: again.end() + 20]!r}): the line begun again, or new text"
    ]


def _echo_doubts(ctx: _Context, best: _Tried, cands: list[_Candidate]) -> list[str]:
    """A copy of earlier text: a repeat the output limit cut before it reached the cut, or
    the document saying the same again. Only asking again can tell."""
    if ctx.seam.exact or best.cand.confirmed:
        return []
    echo = _echo(ctx, cands)
    if not echo:
        return []
    what = "is all" if echo == ECHOED else "begins with"
    return [f"{AMBIGUOUS}seam: the reply {what} a copy of text from before the cut"]


def _read_on(tail: str, fragment: str, *, leads: list[Lead]) -> list[Lead]:
    """Leads, made unsure where the first line reads on from the cut line: a space after
    the cut text and no closing punctuation (" Continuing" then "the work of ...") may be
    the sentence's own words, wrapped. Chat by its words, content by its place: a fence
    after it still makes it a wrapper. The space may end the cut text instead ("was
    overpriced. " then "Continuing\nthe work of ...")."""
    spaced = fragment[:1] in (" ", "\t") and tail[-1:].strip() != ""
    cut_spaced = tail[-1:] in (" ", "\t") and tail[-2:-1].strip() != "" and fragment[:1].isalnum()
    if not (spaced or cut_spaced):
        return leads
    first, _, after = fragment.partition("\n")
    first = first.rstrip()
    if first.endswith((":", "!", ".", "?", ")")):
        return leads
    if not spaced and (any(c in first for c in ".!?") or not after[:1].islower()):
        return leads  # after the cut's space: a phrase going on in lower case, no chat
    return [
        replace(lead, strength=Strength.WEAK)
        if lead.strength is Strength.STRONG and not lead.fence
        else lead
        for lead in leads
    ]


def _glued_fence(tail: str, fragment: str, leads: list[Lead]) -> list[Lead]:
    """Leads, made sure where they end in a fence the format may hold (Markdown: the
    document's own code block) but that sits inside a word: the tail ends in a word the
    document never used whole and the text after the fence completes it into one it uses
    ("bookkeeper arr" + "```" + "ived"), or both parts are words it never used ("the
    bridge arri" + "```" + "ved late": ``splits_word``), or the text after the fence can
    only go on with the cut line (", the team", "987" after "in 1": ``_glued_on``). Kept,
    the fence would split that word, or open a code block with the cut line's end.

    Or the cut line is unfinished and no blank line comes before the fence in the reply:
    the document's own fence starts a line, so the reply would have begun with the line
    break that ends the cut line (a blank line after any prose). Read as the document's,
    the fence needs the model to have dropped that line break; read as the wrapper's, it
    needs nothing unusual."""
    return [
        replace(lead, strength=Strength.STRONG)
        if lead.fence
        and lead.strength is Strength.WEAK
        and (
            _unbroken_fence(tail, lead, fragment[lead.end :])
            or _splits_cut_line(tail, fragment[lead.end :])
        )
        else lead
        for lead in leads
    ]


def _unbroken_fence(tail: str, lead: Lead, text: str) -> bool:
    """Whether the tail ends inside a line that is no start of the lead's fence line (its
    last), that line follows the reply's start or a line of prose directly, with no blank
    line before it, and the text after it re-sends the cut line's end (three visible
    characters or more): it goes on with the cut line, no code block's first line. (After
    whole words, "Run it in Zürich" + "```\nmake build", the model may have dropped the
    line break before a code block: that stays a doubt.)"""
    if not tail or tail.endswith(("\n", "\r")):
        return False
    if not any(visible(text[:k]) >= 3 for k in islice(exact_overlaps(tail, text), 8)):
        return False
    body = lead.text.rstrip("\r\n")
    before = body[: body.rfind("\n") + 1]  # the lead up to its fence line
    cut_line = tail[tail.rfind("\n") + 1 :].strip()
    if body[len(before) :].strip().startswith(cut_line):
        return False  # the cut line is the start of a fence ("`"): re-sent whole
    return not before or before[:-1].rstrip("\r")[-1:] not in ("\n", "")


def _splits_cut_line(tail: str, text: str) -> bool:
    after = text[:MAX_WORD]
    return completes_cut_word(tail, after) or _glued_on(tail, after)


def _elided(cand: _Candidate) -> bool:
    return any(ELIDED in note for note in cand.notes)


def _echo(ctx: _Context, cands: list[_Candidate]) -> str:
    """Whether the reply begins by re-sending received text from before the cut: all of it
    (``ECHOED``: a repeat cut short by the output limit, or text the document repeats) or
    a copy that then goes its own way (``DIVERGED``); '' when it does not."""
    body = ctx.fragment
    probe = body[:ECHO_PROBE]
    # (A repeat proved elsewhere says the reply is no copy; an elided restart the format
    # refused proves nothing.)
    if len(probe) < RESTART_MIN or any(c.confirmed and not _elided(c) for c in cands):
        return ""
    at = ctx.tail.rfind(probe)
    if at < 0:
        return ""
    if ctx.tail.startswith(body, at):
        return ECHOED
    # A copy that goes its own way: only a long one says the model went back; records
    # share their keys and layout for a line or two ("ctive": true, "tags": [ ...).
    longer = body[:ECHO_DIVERGED]
    return DIVERGED if len(longer) == ECHO_DIVERGED and longer in ctx.tail else ""


def read_seam(
    tail: str, total: int, head: str, fragment: str, seam: Seam
) -> tuple[Reading | None, list[str], str]:
    """Clean a continuation and plan its seam: the reading (None: a merge failure, for
    the reason given), and the clean-up warnings."""
    text, warnings = clean_text(fragment)
    if not text.strip():
        return None, warnings, EMPTY
    breaks: list[str] = []  # a doubt about the line breaks written as the document's
    text = _line_endings(head, tail, text, warnings, seam=seam, doubts=breaks)
    reading, error = plan_seam(tail, total, head, text, seam)
    if reading is not None and breaks:
        reading = replace(reading, doubts=(*reading.doubts, *breaks))
    if reading is not None and tail.endswith("\r") and reading.append[:1] not in ("\n", ""):
        # Cut between CR and LF: the model began the next line afresh, or (where no blank
        # line may follow, CSV) sent the whole CRLF again: end the break. Where a blank
        # line may, a CRLF after a repeat that took the LF is the blank line's.
        warnings.append("completed the line break cut between CR and LF")
        again = reading.append.startswith("\r\n") and not seam.blank_lines
        reading = replace(reading, append="\n" + reading.append[2 if again else 0 :])
    return reading, warnings, error


def _line_endings(
    head: str, tail: str, text: str, warnings: list[str], *, seam: Seam, doubts: list[str]
) -> str:
    """Write a fragment's line breaks the way the document does (CRLF or LF). A fragment
    that starts with the LF of a CRLF the cut split keeps it as it is."""
    if tail.endswith("\r") and text.startswith("\n"):
        return "\n" + _as_document(head, tail, text[1:], warnings, seam=seam, doubts=doubts)
    return _as_document(head, tail, text, warnings, seam=seam, doubts=doubts)


_BREAK_OR_QUOTE = re.compile(r'"|\r?\n')
_QUOTE_OR_CRLF = re.compile(r'"|\r\n')


def _quoted_lfs(text: str) -> bool:
    """Whether, from one of the two quote states the text may start in, every bare LF of
    ``text`` is inside double quotes and every CRLF outside them (CRLF records, LF inside
    quoted fields), with one of each at least. Line breaks before the first quote or CRLF
    and after the last are left out (a wrapper's: "```csv\n", a closing remark)."""
    first = _QUOTE_OR_CRLF.search(text)
    if first is None:
        return False
    span = text[first.start() : max(text.rfind('"') + 1, text.rfind("\r\n") + 2)]
    for quoted in (False, True):
        inside, bare, crlf = quoted, 0, 0
        for mark in _BREAK_OR_QUOTE.finditer(span):
            found = mark.group()
            if found == '"':
                inside = not inside
            elif inside != (found == "\n"):
                break  # a CRLF inside quotes, or a bare LF outside them
            else:
                bare, crlf = bare + (found == "\n"), crlf + (found != "\n")
        else:
            if bare and crlf:
                return True
    return False


def _bare_lf(text: str) -> bool:
    """Whether ``text`` holds a line break that is LF alone (in a CRLF document: one inside
    a quoted field)."""
    return text.count("\n") > text.count("\r\n")


_FIELD_BREAKS = (
    "the reply's line breaks inside quoted fields were written CRLF, as its records'; "
    "the document shows no line break inside a field to follow"
)


def _as_document(
    head: str, tail: str, text: str, warnings: list[str], *, seam: Seam, doubts: list[str]
) -> str:
    sample = head if "\n" in head else tail
    nl = sample.find("\n")
    if nl < 0 or "\n" not in text:
        return text
    if nl > 0 and sample[nl - 1] == "\r":
        # A fragment that writes CRLF for most of its line breaks, or between quoted
        # fields that hold its bare LFs (as spreadsheets export them), writes those on
        # purpose: kept as they are.
        crlf = text.count("\r\n")
        if text.count("\n") - crlf <= crlf or _quoted_lfs(text):
            return text
        warnings.append("wrote the fragment's line breaks as CRLF, as the document does")
        plain = text.replace("\r\n", "\n")
        if seam.crlf_records is not None:
            # CSV: only the breaks that end records (scanned from the cut's quote state);
            # those inside quoted fields as the document writes them, where it shows it.
            records, in_fields = seam.crlf_records(plain)
            known = seam.field_break or ("\n" if _bare_lf(head) or _bare_lf(tail) else "")
            if in_fields and known == "\n":
                warnings.append("kept the LFs inside quoted fields, as the document does")
                return records
            if in_fields and not known:
                doubts.append(f"{AMBIGUOUS}seam: {_FIELD_BREAKS}")
                warnings.append(doubts[-1])
        return plain.replace("\n", "\r\n")
    if "\r\n" in text:
        warnings.append("wrote the fragment's CRLF line breaks as LF, as the document does")
        return text.replace("\r\n", "\n")
    return text


def finish(reading: Reading, append: str, warnings: Iterable[str]) -> Merge:
    """The Merge for a reading whose final text is ``append``."""
    notes = [*warnings, *reading.warnings]
    if not append and REPEATED not in notes:
        notes.append(REPEATED)
    return Merge(
        ok=True, append=append, splice=reading.splice, warnings=tuple(notes), doubts=reading.doubts
    )


def grow_head(head: str, append: str) -> str:
    """The document's first ``SCAN_HEAD_CHARS`` characters, grown by an append (O(1))."""
    return head if len(head) >= SCAN_HEAD_CHARS else head + append[: SCAN_HEAD_CHARS - len(head)]


SOFT_WRAPPER = (
    "the first line, taken for the reply's chat, may be the document's own (an interjection "
    "and a comma, then words that say nothing of the answer)"
)


def start_reading(
    fragment: str,
    *,
    fence_strength: Callable[[str], Strength] = any_fence,
    ends_in_field: Callable[[str], bool] = _never_in_field,
) -> Reading:
    """The first fragment: a wrapper (chat prose, a fence opener) is dropped, and closing
    chat (a last paragraph that signs off or says the reply stopped short) unless the
    text before it leaves a quoted field or code block open (``ends_in_field``).

    Only a lead the evidence calls strong is dropped: there is no received text to prove a
    weak one wrong.
    """
    reading = _start_lead(fragment, fence_strength)
    if stopped(reading.append) or elided(reading.append) or about_the_task(reading.append):
        # The whole first reply talks about the task ("Would you like me to continue?"):
        # no document in it (the engine asks again; stitch fails the fragment).
        note = f"{STOPPED_NOTE}: {reading.append.strip()!r:.80}"
        return replace(reading, append="", warnings=(*reading.warnings, note))
    if reading.fence:
        return reading  # the wrapper's closing fence, and what follows it, are read later
    cut = sign_off(reading.append)
    if cut == len(reading.append) or ends_in_field(reading.append[:cut]):
        return reading
    remark = reading.append[cut:].strip()
    notes = [f"dropped a closing remark: {remark!r:.80}"]
    _note_stopped(remark, notes)
    doubts = [*closing_doubts(remark), f"{AMBIGUOUS_END}{END_BREAK}"]
    return replace(
        reading,
        append=reading.append[:cut],
        warnings=(*reading.warnings, *notes, *doubts),
        doubts=(*reading.doubts, *doubts),
    )


def _start_lead(fragment: str, fence_strength: Callable[[str], Strength]) -> Reading:
    strong = [
        lead
        for lead in lead_candidates(fragment, fence_strength=fence_strength)
        if lead.strength is Strength.STRONG
    ]
    if not strong:
        return Reading(Splice(0), fragment)
    lead = strong[-1]
    note = f"dropped a wrapper before the document: {lead.text!r:.80}"
    doubts: tuple[str, ...] = ()
    if any(soft_chat(line) for line in lead.text.splitlines()):
        doubts = (f"{AMBIGUOUS}seam: {SOFT_WRAPPER}",)
    return Reading(Splice(0, lead.end), fragment[lead.end :], lead.fence, (note, *doubts), doubts)


def split_closing_fence(text: str, fence: str, *, line_start: bool) -> tuple[str, str]:
    """Split off a last line that closes ``fence`` (and a sign-off after it)."""
    return closing_fence(text, fence, line_start=line_start)
