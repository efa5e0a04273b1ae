"""Where a model's reply gets cut, and where the unit it was writing began.

Token limits cut replies anywhere: mid-word, mid-number, mid-string, inside a JSON escape
(``\\u00|e9``), between the two characters of a CRLF, right after a line break or an
indentation, and (Python indexes code points) between the parts of a ZWJ emoji, before a
combining accent, inside a flag or a CJK run. ``pick_cut`` chooses among those classes.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Callable

from sim.seam_json import lex

CUT_KINDS = ("any", "word", "number", "line", "indent", "crlf", "escape", "string", "multibyte")


def is_mark(ch: str) -> bool:
    """A code point that only modifies the one before it (accent, joiner, tone, flag half)."""
    code = ord(ch)
    return (
        unicodedata.combining(ch) > 0
        or ch in "\u200d\ufe0f"
        or 0x1F3FB <= code <= 0x1F3FF
        or 0x1F1E6 <= code <= 0x1F1FF
    )


def inside_cluster(doc: str, p: int) -> bool:
    """Whether ``p`` splits multibyte text: a ZWJ sequence, an accent from its letter, a flag,
    a skin tone from its emoji, or a run of wide (CJK, emoji) characters."""
    if not 0 < p < len(doc):
        return False
    a, b = doc[p - 1], doc[p]
    return is_mark(b) or a == "\u200d" or (ord(a) > 0x2E7F and ord(b) > 0x2E7F)


def _in_string(doc: str) -> Callable[[int], bool]:
    spans = [(t.start, t.end) for t in lex(doc) if t.kind == "s"]
    inside = bytearray(len(doc) + 1)
    for lo, hi in spans:
        inside[lo + 1 : hi] = b"\x01" * (hi - lo - 1)
    return lambda p: bool(inside[p])


def _matches(doc: str, fmt: str, kind: str) -> Callable[[int], bool]:
    if kind == "word":
        return lambda p: doc[p - 1].isalpha() and doc[p].isalpha()
    if kind == "number":
        return lambda p: doc[p - 1].isdigit() and doc[p].isdigit()
    if kind == "line":
        return lambda p: doc[p - 1] == "\n"
    if kind == "indent":
        return lambda p: doc[p - 1] in " \t" and doc[p] not in " \t\n" and _line_lead(doc, p)
    if kind == "crlf":
        return lambda p: doc[p - 1] == "\r" and doc[p] == "\n"
    if kind == "escape":
        return lambda p: doc[p - 1] == "\\" or "\\u" in doc[max(0, p - 5) : p]
    if kind == "string" and fmt == "json":
        return _in_string(doc)
    if kind == "multibyte":
        return lambda p: inside_cluster(doc, p) or ord(doc[p]) > 0x7F or ord(doc[p - 1]) > 0x7F
    return lambda p: True


def _line_lead(doc: str, p: int) -> bool:
    start = doc.rfind("\n", 0, p) + 1
    return not doc[start:p].strip()


def pick_cut(
    doc: str, fmt: str, rng: random.Random, lo: int, hi: int, *, kind: str | None = None
) -> int:
    """A cut ``lo < p < hi`` (clamped to the document) of the given kind, or of a random kind
    (half the time any position); a uniform position when no position of that kind exists."""
    lo, hi = max(lo, 0), min(hi, len(doc))
    if hi - lo < 2:
        return min(lo + 1, len(doc))
    if kind is None:
        kind = "any" if rng.random() < 0.5 else rng.choice(CUT_KINDS[1:])
    test = _matches(doc, fmt, kind)
    candidates = [p for p in range(lo + 1, hi) if test(p)]
    if not candidates:
        return rng.randint(lo + 1, hi - 1)
    return rng.choice(candidates)


def _csv_row_starts(doc: str) -> list[int]:
    starts, quoted = [0], False
    for i, c in enumerate(doc):
        if c == '"':
            quoted = not quoted
        elif c == "\n" and not quoted:
            starts.append(i + 1)
    return starts


def unit_start(doc: str, fmt: str, cut: int, rng: random.Random) -> tuple[int, str]:
    """Where the unit holding ``doc[cut - 1]`` began (< cut), and what kind of unit it is:
    the word or number, the line (with or without its indentation), the CSV row, the JSON
    string. A model that restarts "the thing it was writing" re-emits from there."""
    options: list[tuple[int, str]] = []
    w = cut
    while w > 0 and (doc[w - 1].isalnum() or (doc[w - 1] == "." and doc[w - 2 : w - 1].isdigit())):
        w -= 1
    if w < cut:
        options.append((w, "word"))
    line = doc.rfind("\n", 0, cut - 1) + 1
    options.append((line, "line"))
    body = line + len(doc[line:cut]) - len(doc[line:cut].lstrip(" \t"))
    if body < cut:
        options.append((body, "line text"))
    if fmt == "csv":
        row = max(s for s in _csv_row_starts(doc) if s < cut)
        options.append((row, "row"))
    if fmt == "json":
        for tok in lex(doc):
            if tok.kind == "s" and tok.start < cut <= tok.end - 1:
                options.append((tok.start, "string"))
    return rng.choice(options)
