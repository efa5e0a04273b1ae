"""What a real model sends when asked to continue a document that was cut off.

``continue_reply(doc, cut, end, behaviour, fmt, rng)`` is the reply to "continue" after the
model had delivered ``doc[:cut]`` of the true document ``doc``: the reply carries the new
content ``doc[cut:end]``, and ``Reply.adds`` is what the right document gains from it. Pure
and deterministic for an rng; stdlib only (the simulated LLM draws its chaos from it).

Behaviours (``Behaviour``): exact, repeat (1-300 characters of the delivered end, from
anywhere), prose_repeat and prose_exact (prose and/or a fence first; a closing fence and a
sign-off after the last reply), unit_restart (the word, number, line, CSV row or JSON string
in progress re-emitted from its start), reformatted_repeat (JSON: same tokens, another
layout, and the continuation in that layout), whitespace (CRLF/LF switched, trailing blanks
stripped or a blank line dropped or added in the repeat, an empty line before the closing
fence), periodic (the seam in zeros, identical rows, identical lines; any repeat), restart
(the whole document again), syntax_slip (JSON), blank (an empty or white-space reply: it
carries nothing), multibyte (cuts and repeats inside ZWJ sequences, accents, flags, CJK).

The right document, when the reply is not the document's own text:

- a reply in other line breaks (CRLF for LF or back): the document keeps the line breaks it
  was started with; the reply's are read back (the document is one file, in one convention);
- a repeat with its trailing blanks stripped or a blank line dropped or added: the repeat is
  discarded, so the document is unchanged; the new content is taken as written;
- reformatted JSON: JSON white space is not content, so the new content is taken as the
  reply lays it out (``[\\n  [\\n    8895,\\n    5489`` + ``8895, 5489, 969]\\n]`` is
  ``[\\n  [\\n    8895,\\n    5489, 969]\\n]``); delivered white space is kept as it is;
- syntax slips: a trailing comma before ``]``/``}`` and single-quoted strings are the
  model's slips in writing the JSON it meant, so the right document is that JSON (comma
  dropped, double quotes); a number split at the cut (``[1, 2`` then ``3, 4]``) is read as
  written, ``[1, 23, 4]``: the separator the model may have meant is not in the fragments,
  and ``, 3]`` after ``[1, 2`` is the plain continuation ``[1, 2, 3]``;
- white space before a closing fence: a document ends with exactly one line break; the
  empty lines between it and the fence are the wrapper's.

Labels (implemented in ``sim.seam_truth``). A trial has one right answer unless a careful
reader holding only the fragments could read some seam another way that gives a different
document valid for the format (JSON parses; CSV rows all have the header's field count and
no quote is stray; a Markdown delimiter row has its header's cell count and code fences
pair up; one line-break convention throughout; any other text is valid text). At each seam:

1. Another overlap: the reply re-states more, or less, of the delivered end than it does.
   Candidates are the lengths at which the reply's start equals the delivered end with each
   white-space run counted as one unit (a line break, or a blank; in JSON, outside strings,
   as nothing); delivered trailing white space is taken whole where the reply repeats it
   exactly, at any length where the reply's differs.
   - Keeping less than the truth (the truth holds ``XX`` across the seam, the reading takes
     the second ``X`` for a re-statement) is always plausible: models re-state one character
     as readily as a hundred ("bookke" + "eper": "bookkeeper" or "bookkeper"; a "0" after
     "[0,0,"; a "\\n" after a line break).
   - Keeping more (a duplicate ``DD`` the truth does not have) is plausible only where
     documents hold such duplicates: ``D`` has no letter or digit (white space, punctuation;
     not half a grapheme: an accent, joiner, skin tone or flag half alone); ``D`` is one or
     two letters or digits ("ee", "00"); ``D`` holds one run of digits, whole or not (digits
     make a number whatever they are: ``[68,1`` + ``, 19`` may be ``1, 19``); ``D`` is one
     whole word with its separators ("the the"); ``DD`` already occurs in the delivered
     text; or ``D`` is whole lines that occur twice in it already (rows that repeat).
2. Content taken for wrapper: a reply's first content line that reads like a preamble
   ("Here is…", "Sure…", "Note:…", "Continuing…": the documents hold such lines) or is a
   code fence; the last reply's last content line if it is a fence or reads like a sign-off
   ("Thank you for reading."); a line break right after a wrapper, or a blank there when
   the delivered text ends in one; a CSV wrapper line with the header's field count;
   a document that starts or ends with a fence line when any reply is fenced.
3. Wrapper taken for content is not a reading: the wrapper's prose is talk to the user
   ("Here is the rest", "Let me know…") that the documents never contain, and a blank
   reply carries nothing.
4. Format detection (``auto``): Markdown and text may be taken for each other; a CSV whose
   first reply holds fewer than two whole lines with the same fields could be prose.

JSON readings that differ from the truth only in white space outside strings are the same
document: they are accepted as right (``Trial.accepted``), not counted as ambiguous.
"""

from __future__ import annotations

import random
import re
from typing import Literal, get_args

from sim import seam_json, seam_wrappers
from sim.seam_cuts import inside_cluster, unit_start
from sim.seam_reply import Reply, apply_fixes, repeat_length
from sim.seam_whitespace import whitespace_reply

__all__ = [
    "BEHAVIOURS",
    "JSON_ONLY",
    "Behaviour",
    "Reply",
    "applies",
    "apply_fixes",
    "continue_reply",
    "repeat_length",
]

Behaviour = Literal[
    "exact", "repeat", "prose_repeat", "prose_exact", "unit_restart", "reformatted_repeat",
    "whitespace", "periodic", "restart", "syntax_slip", "blank", "multibyte",
]  # fmt: skip
BEHAVIOURS: tuple[Behaviour, ...] = get_args(Behaviour)
JSON_ONLY: frozenset[Behaviour] = frozenset({"reformatted_repeat", "syntax_slip"})
BLANKS = ("", " ", "\n", "\n\n", "  \n", "\t", " \n ")


def applies(behaviour: Behaviour, fmt: str) -> bool:
    return fmt == "json" or behaviour not in JSON_ONLY


def _wrap(
    content: str, doc: str, end: int, *, fmt: str, rng: random.Random, overlap: int, variant: str
) -> Reply:
    """``content`` after prose and/or a fence; after the last reply a fence and sign-off."""
    pre = seam_wrappers.prefix(fmt, rng)
    suf = ""
    if end == len(doc) and rng.random() < 0.6:
        suf = seam_wrappers.suffix(content, rng, "```" in pre)
    return Reply(pre + content + suf, end, pre, suf, overlap, variant=variant + ", wrapped")


def _reformatted(doc: str, cut: int, end: int, rng: random.Random) -> Reply:
    tokens = [t for t in seam_json.lex(doc) if t.start < cut and cut - t.start <= 300]
    if rng.random() < 0.7 and tokens:
        start = rng.choice(tokens[-rng.randint(1, min(12, len(tokens))) :]).start
    else:
        start = cut - repeat_length(doc, cut, rng)
    layout = seam_json.other_layout(doc, rng)
    content, at = seam_json.relayout(doc, start, end, cut, layout)
    name = f"{layout[0]}{layout[1] or ''}, repeat {cut - start}"
    if rng.random() < 0.3:
        pre = seam_wrappers.prefix("json", rng)
        return Reply(pre + content, end, pre, overlap=at, variant=name + ", prose")
    return Reply(content, end, overlap=at, variant=name)


def _slip(doc: str, cut: int, end: int, rng: random.Random) -> Reply:
    k = repeat_length(doc, cut, rng) if rng.random() < 0.4 else 0
    content = doc[cut - k : end]
    number = doc[cut - 1 : cut].isdigit()
    if number and doc[cut : cut + 1].isdigit():
        return Reply(content, end, overlap=k, variant="number split at the cut")
    gap = len(content) - len(content[k:].lstrip(", \n"))  # separator after a complete number
    separated = content[k:gap].strip() == "," and content[gap:][:1].isdigit()
    separated = separated and re.search(r"(^|[^\d.eE+-])-?0$", doc[:cut]) is None  # no "01"
    if number and separated and rng.random() < 0.4:
        return Reply(content[:k] + content[gap:], end, overlap=k, variant="separator omitted")
    quotes = seam_json.single_quoted(content, k, doc, cut - k)
    if quotes and rng.random() < 0.5:
        slipped = list(content)
        for lo, _, _ in quotes:
            slipped[lo] = "'"
        return Reply("".join(slipped), end, overlap=k, fixes=tuple(quotes), variant="single quotes")
    fix = seam_json.trailing_comma(content, k, doc, cut - k)
    if fix is None:
        return Reply(content, end, overlap=k, variant="no slip possible")
    slipped_text = content[: fix[0]] + "," + content[fix[0] :]
    return Reply(slipped_text, end, overlap=k, fixes=(fix,), variant="trailing comma")


def _repeat(
    doc: str, cut: int, end: int, behaviour: Behaviour, *, fmt: str, rng: random.Random
) -> Reply:
    """A reply that first repeats the end delivered (``repeat``, ``prose_repeat``, or
    ``multibyte``: cut inside a grapheme cluster, or not repeated at all)."""
    k = repeat_length(doc, cut, rng)
    if behaviour == "multibyte":
        inside = [p for p in range(max(1, cut - 300), cut) if inside_cluster(doc, p)]
        k = cut - rng.choice(inside) if inside and rng.random() < 0.6 else k
        k = 0 if rng.random() < 0.3 else k
    content = doc[cut - k : end]
    if behaviour == "prose_repeat":
        return _wrap(content, doc, end, fmt=fmt, rng=rng, overlap=k, variant=f"repeat {k}")
    return Reply(content, end, overlap=k, variant=f"repeat {k}")


def _restart(doc: str, cut: int, end: int, *, fmt: str, rng: random.Random) -> Reply:
    """A reply that starts the document again (wrapped in prose half the time); one in
    four rewrites a letter or digit of what it says again, as a model regenerating does
    (of 8 characters delivered at least: "No" then "Nstes from ..." is no restart a reader
    can tell from new text)."""
    content, variant = doc[:end], "restart"
    if rng.random() < 0.25 and cut >= 8:
        content, variant = rewrite_one(doc[:cut], 400, rng) + doc[cut:end], "restart, rewritten"
    if rng.random() < 0.5:
        return _wrap(content, doc, end, fmt=fmt, rng=rng, overlap=cut, variant=variant)
    return Reply(content, end, overlap=cut, variant=variant)


def rewrite_one(text: str, upto: int, rng: random.Random) -> str:
    """``text`` with one ASCII letter or digit among its first ``upto`` characters changed
    to another of its kind."""
    places = [i for i in range(min(upto, len(text))) if text[i].isascii() and text[i].isalnum()]
    if not places:
        return text
    at = rng.choice(places)
    kind = "0123456789" if text[at].isdigit() else "abcdefghijklmnopqrstuvwxyz"
    new = rng.choice([c for c in kind if c != text[at].lower()])
    new = new.upper() if text[at].isupper() else new
    return text[:at] + new + text[at + 1 :]


def continue_reply(
    doc: str, cut: int, end: int, behaviour: Behaviour, *, fmt: str, rng: random.Random
) -> Reply:
    """The reply continuing ``doc[:cut]`` that carries ``doc[cut:end]``, for ``behaviour``."""
    new = doc[cut:end]
    if behaviour == "blank":
        blank = rng.choice(BLANKS)
        return Reply(blank, cut, blank, variant=f"blank {blank!r}")
    if behaviour == "periodic":
        behaviour = rng.choice(("exact", "repeat", "repeat", "prose_repeat"))
    if behaviour == "exact":
        return Reply(new, end, variant="exact")
    if behaviour in ("repeat", "prose_repeat", "multibyte"):
        return _repeat(doc, cut, end, behaviour, fmt=fmt, rng=rng)
    if behaviour == "prose_exact":
        return _wrap(new, doc, end, fmt=fmt, rng=rng, overlap=0, variant="exact")
    if behaviour == "unit_restart":
        start, unit = unit_start(doc, fmt, cut, rng)
        return Reply(doc[start:end], end, overlap=cut - start, variant=f"{unit} restarted")
    if behaviour == "restart":
        return _restart(doc, cut, end, fmt=fmt, rng=rng)
    if behaviour == "whitespace":
        return whitespace_reply(doc, cut, end, fmt, rng)
    if behaviour == "reformatted_repeat":
        return _reformatted(doc, cut, end, rng)
    return _slip(doc, cut, end, rng)
