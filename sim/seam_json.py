"""JSON token helpers for the seam corpus: lex a document, re-emit tokens in another layout,
and the slips a model makes in the JSON it continues (trailing commas, single quotes).

Only whole documents (or prefixes that start outside a string) are lexed: a model's reply
is always built from the true document's tokens, never lexed from the middle of a string.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERAL = re.compile(r"true|false|null")
_WS = " \t\r\n"

Layout = tuple[str, int]  # ("compact" | "spaced" | "pretty", indent)


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    kind: str  # "s" string, "n" number, "l" literal, "p" punctuation
    depth: int  # containers open before the token


def lex(text: str) -> list[Token]:
    """The tokens of ``text`` (valid JSON, or a prefix of it that starts outside a string)."""
    out: list[Token] = []
    i, depth = 0, 0
    while i < len(text):
        c = text[i]
        if c in _WS:
            i += 1
            continue
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(Token(i, min(j + 1, len(text)), "s", depth))
            i = j + 1
            continue
        if c in "{[":
            out.append(Token(i, i + 1, "p", depth))
            depth += 1
        elif c in "}]":
            depth -= 1
            out.append(Token(i, i + 1, "p", depth))
        elif c in ",:":
            out.append(Token(i, i + 1, "p", depth))
        else:
            match = _NUMBER.match(text, i) or _LITERAL.match(text, i)
            end = match.end() if match else i + 1
            out.append(Token(i, end, "n" if c in "-0123456789" else "l", depth))
            i = end
            continue
        i += 1
    return out


def ends_in_string(text: str) -> bool:
    """Whether ``text`` (starting outside a string) ends inside a JSON string."""
    inside, i = False, 0
    while i < len(text):
        if inside and text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            inside = not inside
        i += 1
    return inside


def _gap(text: str, a: Token, b: Token, layout: Layout) -> str:
    style, indent = layout
    left, right = text[a.start : a.end], text[b.start : b.end]
    if style == "compact":
        return ""
    if style == "spaced":
        return " " if left in ",:" else ""
    if left in "{[" and right in "}]" and a.kind == "p" and b.kind == "p":
        return ""
    if a.kind == "p" and left in "{[,":
        return "\n" + " " * indent * b.depth if left == "," else "\n" + " " * indent * (a.depth + 1)
    if b.kind == "p" and right in "}]":
        return "\n" + " " * indent * b.depth
    return " " if left == ":" and a.kind == "p" else ""


def relayout(text: str, start: int, end: int, cut: int, layout: Layout) -> tuple[str, int]:
    """``text[start:end]`` re-emitted in ``layout`` (same tokens, other white space), and the
    offset in the result that stands for ``cut`` (``start <= cut <= end``).

    A token cut by ``start`` or ``end`` keeps only its part inside. When ``cut`` falls in the
    white space between two tokens, the offset is after the new white space there: what was
    already delivered keeps its own white space, and the reply's adds none before its first
    new token.
    """
    tokens = [t for t in lex(text) if t.end > start and t.start < end]
    out: list[str] = []
    size = 0
    at = -1
    for index, tok in enumerate(tokens):
        if index:
            gap = _gap(text, tokens[index - 1], tok, layout)
            out.append(gap)
            size += len(gap)
        lo, hi = max(tok.start, start), min(tok.end, end)
        if at < 0 and cut <= hi and cut >= lo:
            at = size + cut - lo
        elif at < 0 and cut < lo:
            at = size
        out.append(text[lo:hi])
        size += hi - lo
    return "".join(out), size if at < 0 else at


def layout_of(text: str) -> Layout:
    """The layout ``text`` was printed in."""
    match = re.search(r"\n( +)\S", text)
    if match:
        return ("pretty", len(match.group(1)))
    return ("spaced", 0) if re.search(r"[,:] ", text) else ("compact", 0)


def other_layout(text: str, rng: random.Random) -> Layout:
    """A layout other than the one ``text`` uses, as a model drifts into."""
    mine = layout_of(text)
    options: list[Layout] = [("compact", 0), ("spaced", 0), ("pretty", 2), ("pretty", 4)]
    return rng.choice([o for o in options if o != mine])


Fix = tuple[int, int, str]  # (start, stop, replacement) in a reply's content


def trailing_comma(content: str, since: int, lexed_from: str, offset: int) -> Fix | None:
    """Insert a comma after the last value before the first closing bracket at or after
    ``since`` in ``content``: returns the fix that removes it, applied to the slipped text.

    ``lexed_from`` is the true document, ``offset`` where ``content`` starts in it.
    """
    tokens = lex(lexed_from)
    for index, tok in enumerate(tokens[1:], 1):
        pos = tok.start - offset
        if pos < since or pos > len(content) or tok.kind != "p":
            continue
        if lexed_from[tok.start] in "}]":
            prev = tokens[index - 1]
            if prev.kind == "p" and lexed_from[prev.start] in "{[,":
                continue
            at = prev.end - offset
            if at < since:
                continue
            return (at, at + 1, "")
    return None


def single_quoted(content: str, since: int, lexed_from: str, offset: int) -> list[Fix]:
    """Positions of the quotes to turn into ``'`` in plain strings wholly after ``since``."""
    fixes: list[Fix] = []
    for tok in lex(lexed_from):
        lo, hi = tok.start - offset, tok.end - offset
        if tok.kind != "s" or lo < since or hi > len(content):
            continue
        body = lexed_from[tok.start + 1 : tok.end - 1]
        if any(c in body for c in "'\"\\"):
            continue
        fixes += [(lo, lo + 1, '"'), (hi - 1, hi, '"')]
    return fixes


def same_tokens(a: str, b: str) -> bool:
    """Whether two valid JSON texts hold the same tokens (differ at most in white space)."""
    return _SQUEEZE.sub(r"\1", a) == _SQUEEZE.sub(r"\1", b)


_SQUEEZE = re.compile(r'("(?:[^"\\]|\\.)*")|[ \t\r\n]+')
