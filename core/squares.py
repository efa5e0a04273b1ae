"""When is a repeat proof? The *square* a seam would leave (``docs/engine.md``, "Reading a seam").

Reading a fragment that starts with the tail's last characters ``x`` as an exact
continuation means the document holds ``x x``. Whether it plausibly can decides whether
the repeat is evidence: a document may hold periodic text (``0,0,0,``), records again (a
short line, a CSV row, scalars), a word or number twice ("the the", "19 19"); it does not
hold a phrase or a long sentence twice in a row, a word doubled with nothing between
("bicybicycle"), or JSON object structure twice (``"id": "id":``). Every check here is a C
string operation over a bounded window, so weighing a seam stays O(fragment).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from itertools import pairwise

from core.overlap import visible

#: Visible characters from which a repeat cannot be a coincidence (outside periodic text).
CONFIRM = 8
#: Places where a square's start recurs that are checked for a period, and the length of
#: that start.
PERIOD_TRIES = 8
PERIOD_PROBE = 32
#: A square up to this long is looked for, doubled, in the tail's last PERIODIC_WINDOW.
PERIODIC_SEARCH = 256
PERIODIC_WINDOW = 8192
#: A word: letters and digits, with the combining marks that decorate them ("e\u0301").
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_WORDS = re.compile(rf"[^\W_](?:[^\W_]|[{_MARKS}])*")
_MARK = re.compile(rf"[{_MARKS}]")
#: Zero-width joiner and variation selectors: they bind to the character before them.
_JOINERS = "\u200d\ufe0e\ufe0f"
#: Regional indicators: a flag is two of them.
_FLAG_HALVES = "".join(map(chr, range(0x1F1E6, 0x1F200)))
_FLAG_HALF = re.compile("[\U0001f1e6-\U0001f1ff]")
_SENTENCE_START = re.compile(r"[.!?] +[A-Z]")
#: A list or quote marker before a line's content, up to this long.
MARKER_CHARS = 16
_SENTENCE_END = re.compile(r"[.!?] ")
_MARKER = re.compile(r"[ \t]*(?:[-*+>]|\d{1,9}[.)])[ \t]+")
#: A recombination of known records or values is a plausible coincidence up to this many
#: bits of surprise (one in 65,536).
SURPRISE_BITS = 16
#: Characters of text before a cut word from which a word it never used is telling.
SPLIT_EVIDENCE = 200
#: A line this short (visible characters) recurs in documents: a note, a label, a row.
RECORD_VISIBLE = 48
#: Whole lines up to this many, repeated, make a record a document may hold twice.
RECORD_LINES = 3
#: Characters of a square looked at for letters cut off a word (``_short_cut_letters``).
SHORT_SQUARE = 64

#: Whether ``square`` (text ending the tail, ``rest`` after it in the fragment) is whole
#: records a document may repeat.
Aligned = Callable[[str, str, str], bool]


def no_structure(square: str) -> bool:
    return False


def whole_lines(tail: str, square: str, rest: str) -> bool:
    """Whether ``square`` is the tail's last line, whole (a document may repeat a record),
    or a block of lines each of which the document already used.

    ``rest`` is what follows the square in the fragment: a cut right at a line's end
    (before its line break) leaves that line complete, and a fragment that starts with it
    and then a line break may be its re-emission or the same line again.
    """
    if len(square) >= len(tail):
        return False  # the whole document again is a restart, not a repeated record
    cut = len(tail) - len(square)
    nl = tail.rfind("\n", max(0, cut - MARKER_CHARS), cut)
    # A line's start, or its content after a list or quote marker ("4. Note: ..." holds
    # "Note: ..." as its record: the next line may be that text again).
    marker = tail[nl + 1 : cut]
    starts = square[0] == "\n" or (nl >= 0 and (not marker or bool(_MARKER.fullmatch(marker))))
    # Or the last sentences of the line, read as a line of their own after it.
    sentences = square.endswith("\n") and _SENTENCE_END.fullmatch(tail, max(0, cut - 2), cut)
    starts = starts or bool(sentences)
    ends = square.endswith("\n") or rest.startswith(("\n", "\r\n"))
    record = square.strip("\r\n")
    if starts and ends and record.count("\n") < RECORD_LINES:
        # A line, a table row, a short code block: a record a document may repeat, where
        # it is short or the document used it before (a fresh sentence twice is no text).
        before = tail[-PERIODIC_WINDOW : len(tail) - len(square)]
        if visible(record) < RECORD_VISIBLE or record in before:
            return True
    if "\n" not in square:
        return False
    # Lines: the square doubled repeats, whole, the lines it spans; that is plausible where
    # each of them is a line the document already used (a small vocabulary of rows).
    before = tail[: len(tail) - len(square)]
    lines = square.split("\n")
    lines[0] = before[before.rfind("\n") + 1 :] + lines[0]
    lines[-1] += rest.split("\n", 1)[0] if "\n" in rest else "\0"  # an open last line: no
    seen = set(before[-PERIODIC_WINDOW:].split("\n"))
    if len(lines) * math.log2(max(2, len(seen))) > SURPRISE_BITS:
        return False  # that many lines in that order: a coincidence too unlikely
    if all(line.rstrip("\r") in seen or line in seen for line in lines if line.strip()):
        return True
    return _block_again(tail, square, rest)


def _block_again(tail: str, square: str, rest: str) -> bool:
    """Whether the square's second copy, read exactly, is made of lines the document holds.

    The second copy runs on from the first: its lines are the square's last line glued to
    its first, the lines between, and the last line again, completed by the fragment.
    Where each is a line the tail already has, the document repeats a block of lines (a
    note, a list) once more; where the glued line is new, the repeat is no block.
    """
    parts = square.split("\n")
    if "\n" not in rest:
        return False  # the last line is still open: nothing to compare it with
    ends = [parts[-1] + parts[0], parts[-1] + rest.split("\n", 1)[0]]
    window = tail[-PERIODIC_WINDOW:].split("\n")
    known = set(window[:-1] if len(tail) <= PERIODIC_WINDOW else window[1:-1])
    if (len(parts) - 1) * math.log2(max(2, len(known))) > SURPRISE_BITS:
        return False
    lines = [line for line in ends if line.strip() and line.rstrip("\r") not in known]
    if not lines:
        return True
    cells = _table_cells(window if len(tail) <= PERIODIC_WINDOW else window[1:])
    return all(_known_row(line, cells) for line in lines)


def _table_cells(lines: list[str]) -> set[str]:
    """The cells of the table rows among ``lines``, the open cut row's included."""
    return {cell for line in lines for cell in _row_cells(line, whole=False) or ()}


def _row_cells(line: str, *, whole: bool = True) -> list[str] | None:
    """A Markdown table row's cells, or None for a line that is no table row (``whole``
    False: a row may still be open, its last cell cut)."""
    body = line.strip()
    if len(body) < 2 or body[0] != "|" or (whole and body[-1] != "|"):
        return None
    inner = body[1:-1] if body[-1] == "|" else body[1:]  # one pipe each side, as written
    return [cell.strip() for cell in inner.split("|")]


def _known_row(line: str, cells: set[str]) -> bool:
    """Whether ``line`` is a table row made of cells the table uses, in an order a table
    of that vocabulary writes by chance (``SURPRISE_BITS``): "| Rome | 2 |" after "| Lima
    | 2 |" and a cut "| Rome ", a row again or a new one."""
    row = _row_cells(line)
    if not row or not all(cell in cells for cell in row):
        return False
    return len(row) * math.log2(max(2, len(cells))) <= SURPRISE_BITS


def breaks_line(append: str, text: str) -> bool:
    """Whether the format inserted a line break before ``text`` (a lost one, restored)."""
    return append.startswith(("\n", "\r\n")) and not text.startswith(("\n", "\r\n"))


def line_prefix(tail: str, square: str) -> bool:
    """Whether ``square`` is only the start of the tail's unfinished last line."""
    return "\n" not in square and (len(square) >= len(tail) or tail[-len(square) - 1] == "\n")


def token_cut(tail: str, square: str, after: str) -> bool:
    """Whether the cut line ``square`` ends inside a word that the fragment's copy of the
    line goes on with (``disagree,y`` then ``disagree,yes``), a word the document never
    used whole: ended there by a line break, the line would hold a token the text does not
    know, so it is the line re-emitted, not a line of its own."""
    if not (square[-1:].isalnum() and after[:1].isalnum()):
        return False
    word = _last_word(square)
    if word is None:
        return False
    return not _known_word(word.group(), tail[-PERIODIC_WINDOW : len(tail) - len(square)])


_LAST_WORD = re.compile(r"[^\W_]+\Z")


def _last_word(text: str) -> re.Match[str] | None:
    """The word ``text`` ends in. ``_LAST_WORD.search(text)`` would try every position of
    the text (5 ms on a 64 KiB tail, every hop); this looks at its end, widening only while
    the word found reaches the start of the part looked at."""
    start = max(0, len(text) - 64)
    while True:
        found = _LAST_WORD.search(text, start)
        if found is None or found.start() > start or start == 0:
            return found
        start = max(0, start - 4096)


_FIRST_WORD = re.compile(r"[^\W_]*")


def _first_word(text: str) -> str:
    match = _FIRST_WORD.match(text)
    return match.group() if match else ""


def _known_word(word: str, text: str) -> bool:
    return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", text) is not None


def ends_in_known_word(tail: str) -> bool:
    """Whether the tail ends in a word the text uses before it too."""
    last = _last_word(tail)
    return last is not None and _known_word(last.group(), tail[-PERIODIC_WINDOW : last.start()])


def completes_known_word(tail: str, text: str) -> bool:
    """Whether ``text`` goes on with the word the tail ends in, making one the document
    uses elsewhere ("pe" + "ople." is "people")."""
    last = _last_word(tail)
    start = _first_word(text)
    if last is None or not start:
        return False
    window = tail[-PERIODIC_WINDOW : last.start()]
    return _known_word(last.group() + start, window)


def splits_word(tail: str, text: str) -> bool:
    """Whether the tail ends in a part of a word the document never used, and ``text``
    starts with another it never used, in lower case ("pe" and "ople."): a line break
    between them would cut a word in two, where the document's own lines end in words."""
    last = _last_word(tail)
    start = _first_word(text)
    if last is None or not start or not text[:1].islower() or not last.group().isalpha():
        return False
    window = tail[-PERIODIC_WINDOW : last.start()]
    if len(window) < SPLIT_EVIDENCE or start == last.group():
        return False  # too little text to know its words; or a word said again
    return not _known_word(last.group(), window) and not _known_word(start, window)


def restarts_cut_word(tail: str, text: str) -> bool:
    """Whether the tail ends in letters that ``text``'s first word starts with and goes on
    from ("... São Paulo. He" + "Here is"): the word the cut split, said again whole."""
    last = _last_word(tail)
    start = _first_word(text)
    if last is None or len(last.group()) < 2:
        return False
    return len(start) > len(last.group()) and start.startswith(last.group())


def completes_cut_word(tail: str, text: str) -> bool:
    """Whether the tail ends in a word the document never used whole and ``text`` goes on
    with it, making one the document uses ("pe" + "ople." is "people")."""
    last = _last_word(tail)
    if last is None:
        return False
    window = tail[-PERIODIC_WINDOW : last.start()]
    return not _known_word(last.group(), window) and completes_known_word(tail, text)


def _glues_unknown(tail: str, square: str, rest: str) -> bool:
    """Whether reading a letter or two again as text glues a word the document does not
    use where reading them as a repeat makes one it does (``Note: t`` + ``e: the``: "te:"
    against "the")."""
    last = _last_word(tail)
    if last is None:
        return False
    again = last.group() + _first_word(square + rest)
    once = last.group() + _first_word(rest)
    if again == once or not once.isalpha():
        return False
    window = tail[-PERIODIC_WINDOW : last.start()]  # the cut word itself proves nothing
    return _known_word(once, window) and not _known_word(again, window)


def glue_known(tail: str, best: str, rival: str) -> bool:
    """Whether the cut word, run on into ``best``'s first word, makes a word the document
    uses, where run on into ``rival``'s it makes one it never wrote ("70" + "8,11": "708",
    against "70" + ",70": "70"). A reading that invents a word at the cut, against one
    that keeps the document's vocabulary, is no reading a careful reader takes."""
    last = _last_word(tail)
    if last is None:
        return False
    glued = _first_word(rival)
    one = last.group() + _first_word(best)
    other = last.group() + glued
    if not glued or one == other:
        return False
    window = tail[-PERIODIC_WINDOW : last.start()]
    return _known_word(one, window) and not _known_word(other, window)


def _doubles_cut_word(tail: str, square: str, rest: str) -> bool:
    """Whether reading the square again as text runs the cut word on into its own start,
    three letters or more ("lin" + "line two": "linline"), a word the document never
    wrote, where reading it as a repeat makes one it uses ("line"). Words seldom say a
    syllable twice; one or two letters may double ("to" + "o small": "too")."""
    return len(_first_word(square)) >= 3 and _glues_unknown(tail, square, rest)


def duplicate_line(tail: str, append: str) -> bool:
    """Whether ``tail + append`` holds two equal non-blank lines next to each other at the
    seam (the line the cut is in, and the one before or after it, blank lines between
    them aside: a paragraph again), lines a document may repeat: short ones, or ones it
    used before."""
    before = tail[-4 * 1024 :].split("\n")
    after = append[: 4 * 1024].split("\n")
    cut_line = before[-1] + after[0]
    previous = [line for line in before[-4:-1] if line.strip()][-1:]
    following = [line for line in after[1:4] if line.strip()][:1]
    neighbours = [*previous, cut_line, *following]
    earlier = "\n".join(before[:-4])  # the lines before the ones compared
    return any(
        a.strip()
        and a.rstrip("\r") == b.rstrip("\r")
        and (visible(a) < RECORD_VISIBLE or a.rstrip("\r") in earlier)
        for a, b in pairwise(neighbours)
    )


def plausible_square(
    tail: str,
    square: str,
    rest: str = "",
    *,
    aligned: Aligned = whole_lines,
    structural: Callable[[str], bool] = no_structure,
    compact: bool = False,
    glued: bool = True,
) -> bool:
    """Could the document itself hold ``square`` twice in a row, the second at the cut?

    That is what a fragment starting with the tail's last characters means when it is read
    as an exact continuation. Plausible when the text is periodic there (the tail before
    the square, or the fragment after it, repeats it), when the
    square is whole records a document may repeat, or when it is short; implausible for a
    word or number repeated from its start ("the bicy" + "bicycle") or 8+ visible
    characters. ``glued`` False: the reading weighed puts a line break between the two
    copies, so the cut word does not run on into the second.
    """
    if not square:
        return False
    repeated = _repeated_there(tail, square, rest, compact=compact, glued=glued)
    if repeated is not None:
        return repeated
    if aligned(tail, square, rest):
        return True
    if visible(square) >= CONFIRM or structural(square):
        return False
    return _short_square(tail, square, rest)


def _repeated_there(
    tail: str, square: str, rest: str, *, compact: bool, glued: bool
) -> bool | None:
    """What the text around the cut says: True where it repeats the square (periodic, or
    text the document keeps using), False where the square's first copy splits a word;
    None where it says nothing."""
    if periodic(tail, square) or continues_with(rest, square):
        return True
    if _splits_a_word(tail, square):
        return False  # "enough, " then "ough, ": the second copy a word the text never used
    if _inside_cluster(tail, square):
        return False  # "café" + "\u0301.": the document would hold "cafe\u0301\u0301."
    if _short_cut_letters(tail, square, rest):
        # "then l" + " left": the document would hold "then l left". Before ``recurring``:
        # " t" recurs in every " the", as part of a word, never as one.
        return False
    if recurring(tail, square) and not (glued and _doubles_cut_word(tail, square, rest)):
        return True  # the document keeps using this text, so it may come again
    if compact and _repeated_compact(tail, square):
        return True
    return None


def _repeated_compact(tail: str, square: str) -> bool:
    """Whether the tail doubles or keeps using the square, white space aside (JSON: white
    space is no part of the period)."""
    unit = "".join(square.split())
    window = "".join(tail[-PERIODIC_WINDOW:].split())
    return bool(unit) and (periodic(window, unit) or recurring(window, unit))


def _short_square(tail: str, square: str, rest: str) -> bool:
    """Whether a short square (under ``CONFIRM`` visible characters) may double by chance.

    Punctuation, white space or a couple of letters can ("ll", "00", ", "); so can one
    number ("19 19", "1919") and one whole word with a separator ("the the"). A word
    doubled with nothing between ("bicy" + "bicycle": "bicybicycle") or a phrase ("* In 2"
    + "* In 2001") is no text.
    """
    words = _WORDS.findall(square)
    if sum(map(len, words)) <= 2:
        return not _glues_unknown(tail, square, rest)
    if len(words) != 1:
        # A short sentence may be said twice ("It grew. It grew."); a phrase cut anywhere
        # else is not.
        return _SENTENCE_START.match(square) is not None and rest[:1] in (".", "!", "?")
    if words[0].isdigit():
        return True
    if token_cut(tail, square, rest) and _piece_proved(tail, square):
        return False  # " eno" twice, the second going on ("eno enough"): no word doubled
    if _cuts_letters(tail, square, rest):
        return False  # "The p" + "ackage\n": the second copy a line "ackage", no word
    return not (square[0].isalnum() and (square[-1].isalnum() or _MARK.match(square[-1])))


def _inside_cluster(tail: str, square: str) -> bool:
    """Whether the square's first copy starts inside a character as a reader sees it: on
    a combining accent, a joiner, a variation selector or a skin tone, or on the second
    half of a flag. Text repeats whole characters ("👍🏽👍🏽"), never the second half of
    one: read as text, the square would put an accent on an accent, or a tone on a tone."""
    first = square[:1]
    if not first:
        return False
    if _MARK.match(first) or first in _JOINERS or "\U0001f3fb" <= first <= "\U0001f3ff":
        return True
    if not _FLAG_HALF.match(first):
        return False
    before = tail[: len(tail) - len(square)]
    halves = len(before) - len(before.rstrip(_FLAG_HALVES))
    return halves % 2 == 1  # flags pair their halves from the run's start


def _short_cut_letters(tail: str, square: str, rest: str) -> bool:
    """``_cuts_letters`` for a square of two letters or digits at most (up to
    ``SHORT_SQUARE`` characters, so that its cost stays bounded: a longer one is weighed
    by the checks after it, as before)."""
    if len(square) > SHORT_SQUARE or not _cuts_letters(tail, square, rest):
        return False
    return sum(map(len, _WORDS.findall(square))) <= 2


def _cuts_letters(tail: str, square: str, rest: str) -> bool:
    """Whether a square of one word that holds a letter and a separator (``" l"``,
    ``"c\\n"``, ``"ackage\\n"``) has a copy whose letters are part of a word: its first
    copy starts inside the cut word ("# Do|c\\n" + "c\\n": a line "c"), or its second runs
    on into a word ("then l" + " left": "then l left"). Letters doubled inside a word
    ("ll", "ee") hold no separator and digits make a number whatever they are; a separator
    with letters beside it is a word boundary, and the letters there are then a piece cut
    off a longer word, which text does not write twice in a row."""
    if square.isalnum() or not any(c.isalpha() for c in square):
        return False
    before = tail[len(tail) - len(square) - 1 : len(tail) - len(square)]
    inside_left = square[0].isalnum() and before.isalnum() and _piece_proved(tail, square, True)
    inside_right = square[-1].isalnum() and rest[:1].isalnum() and _piece_proved(tail, square)
    return inside_left or inside_right


def _piece_proved(tail: str, square: str, first: bool = False) -> bool:
    """Whether the letters the square ends in (``first``: starts with) are proved a piece
    cut off a longer word, not a word of their own that the next one happens to start
    with, or the last one to end with ("We walked to" + " town": "to town", or "town"
    with " to" re-sent; "a man" + " many"; "Austin " + "in 1990"): only one letter the
    text never uses as a word ("then l" + " left"). Two letters or more may be a word the
    text has not used yet, however long it is (most words of a text come once: 200
    characters without "in" proved nothing, found by a random-seed hunt); without a word
    list both readings stand, and the seam is doubted."""
    if first:
        letters = _first_word(square)
    else:
        found = _last_word(square)
        letters = found.group() if found else ""
    if len(letters) != 1:
        return False
    return not _known_word(letters, tail[-PERIODIC_WINDOW : len(tail) - len(square)])


def _splits_a_word(tail: str, square: str) -> bool:
    """Whether the square's first copy begins inside a word ("en|ough, ") and its start,
    as a word of its own, is one the text never used: the document would hold "enough,
    ough, ". Only where enough text precedes it to know its words."""
    before = tail[-PERIODIC_WINDOW : len(tail) - len(square)]
    if not (square[:1].isalpha() and before[-1:].isalpha()) or len(before) < SPLIT_EVIDENCE:
        return False
    first = _first_word(square)
    if len(first) < 3 or _known_word(first, before):
        return False
    return not completes_known_word(tail, square)  # "disag" + "ree": the cut word goes on


def periodic(tail: str, square: str) -> bool:
    """Whether the tail already repeats ``square``'s period just before it (zeros, rows),
    or doubles it elsewhere: the document has written this text twice in a row."""
    if not tail.endswith(square):
        return False
    before = tail[: len(tail) - len(square)]
    if before.endswith(square):
        return True
    if len(square) <= PERIODIC_SEARCH and square + square in tail[-PERIODIC_WINDOW:]:
        return True  # the document doubles this text: it may again
    period = period_of(square)
    return period < len(square) and before.endswith(square[:period])


def recurring(tail: str, square: str) -> bool:
    """Whether the document keeps using ``square`` (three times or more, the cut's own
    included), so that it may come round again right after itself."""
    if len(square) > PERIODIC_SEARCH or not tail.endswith(square):
        return False
    return tail[-PERIODIC_WINDOW:].count(square) >= 3


def continues_with(rest: str, square: str) -> bool:
    """Whether the fragment goes on with the square again (white space aside): the text
    is periodic there, whatever the tail shows so far."""
    period = period_of(square)  # a periodic square goes on with its last period
    unit = "".join(square[len(square) - period :].split())
    if len(unit) < 2:
        return False
    after = "".join(rest[: 2 * period + 64].split())
    if after.startswith(unit):
        return True
    # The fragment ends within the next period, half of it at least ("It g" + "rew. It g"
    # + "rew."): as far as it goes, the text goes on periodic.
    short = len(rest) < 2 * period + 64 and 2 * len(after) >= len(unit)
    return short and len(after) >= 2 and unit.startswith(after)


def period_of(text: str) -> int:
    """The smallest p with ``text[p:] == text[:-p]``, found by the C string search: each
    place the text's start recurs is checked whole (a few at most: ``PERIOD_TRIES``)."""
    probe = text[: min(len(text) // 2, PERIOD_PROBE)]
    at = 0
    for _ in range(PERIOD_TRIES):
        at = text.find(probe, at + 1) if probe else -1
        if at < 0:
            break
        if text.startswith(text[at:]):
            return at
    return len(text)
