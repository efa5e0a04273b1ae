"""The third corpus's trials: a document, where it is cut, and what the model sends at a seam.

``generate(seed, index)`` draws a format and one behaviour, a document that can show it
(``docs.make_doc``), the behaviour's seam (``Seam``) and a few plain background cuts, and
assembles the fragments a model would have sent, the documents a right merge may give
(``accepts``: the first is the document meant) and the documents a clean merge may give
where a seam reads two ways (``alts``). Everything is seeded and deterministic: the same
seed and index give the same trial.

Ported from the independent author's ``gen.py`` with types added and long functions cut
into helpers; the random draws, their order and every judgement are unchanged (but for the
rare trial the original could not draw and crashed on: see ``generate``).
"""

from __future__ import annotations

import csv
import itertools
import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from benchmarks.indep3.docs import (
    STRONG_NOTE,
    WEAK_NOTE,
    DocInfo,
    Node,
    Record,
    Span,
    arr,
    csv_rows,
    emit_json,
    jstr,
    make_doc,
    num_norm,
    obj,
)

T = TypeVar("T")

APOLOGY = [
    "I apologize for the cutoff. Here's the rest:\n\n",
    "Sorry about that, the response was cut off. Continuing from where it stopped:\n\n",
    "My apologies, the previous message was truncated. Here is the remainder:\n\n",
    "Apologies for the interruption! Picking up where I left off:\n",
]
NOTES = {
    "csv": [
        "\n\nLet me know if you'd like more rows.",
        "\n\nThat's all 25 rows. Want me to add a totals row?",
    ],
    "json": [
        "\n\nLet me know if you need additional entries or a different structure!",
        "\n\nThis completes the JSON.",
    ],
    "markdown": [
        "\n\nLet me know if you'd like me to expand any section!",
        "\n\nI hope this helps! Feel free to ask if anything is unclear.",
    ],
    "text": [
        "\n\nI hope you enjoyed the story. Let me know if you want me to continue it.",
        "\n\n(End of the text.)",
    ],
}
DONE_NOTES = [
    "The document above is complete.",
    "That's the end of the document.",
    "It looks like the previous response was already complete. "
    "Let me know if you need anything else!",
    "(No further content.)",
]


# --------------------------------------------------------------------------- helpers
def line_start(doc: str, c: int) -> int:
    return doc.rfind("\n", 0, c) + 1


def para_start(doc: str, c: int) -> int:
    i = doc.rfind("\n\n", 0, c)
    return 0 if i < 0 else i + 2


def sentence_start(doc: str, c: int) -> int:
    ps = max(para_start(doc, c), line_start(doc, c))
    best = ps
    for m in re.finditer(r'[.!?]"? +(?=["A-Z])', doc[ps:c]):
        best = ps + m.end()
    return best


def positions(doc: str, pred: Callable[[int], bool]) -> list[int]:
    """the cuts (1 .. len(doc) - 1) where ``pred`` holds."""
    return [i for i in range(1, len(doc)) if pred(i)]


def pick(rng: random.Random, xs: Sequence[T]) -> T | None:
    return rng.choice(xs) if xs else None


def valid(kind: str, text: str) -> bool:
    if kind == "json":
        try:
            json.loads(text)
            return True
        except ValueError:
            return False
    if kind == "csv":
        try:
            rows = csv_rows(text)
        except csv.Error:
            return False
        n = len(rows[0]) if rows else 0
        return all(len(r) == n for r in rows if r)
    return True


# --------------------------------------------------------------------------- seams
@dataclass
class Seam:
    """what the model does at one cut ``c``: the fragment before it ends at ``doc[:c]``.

    The reply sends ``prefix``, then ``rep`` (standing for ``doc[s:c]``: a repeat, or what
    the model wrote instead), then goes on from ``doc[e]`` up to the next cut.
    """

    c: int
    s: int
    rep: str
    e: int
    exact: bool  # ``rep`` is a verbatim repeat (its overlap may read another way)
    last: bool = False  # the reply ends the document: no cut after it
    accepts: list[str] = field(default_factory=list)  # other right documents
    alts: list[str] = field(default_factory=list)  # other readings of the seam
    prefix: str = ""  # chatter before the reply
    suffix: str = ""  # chatter after the reply, when it is the last one
    pre0: str = ""  # before the first fragment
    every_prefix: str = ""  # before every background reply
    final_suffix: str = ""  # after the last reply, whichever seam it follows
    strip_prev: tuple[int, int] | None = None  # (a, c): the fragment before drops doc[a:c]
    replace_tail: str | None = None  # the reply rewrites doc[c:] as this
    progress: bool = False  # every fragment starts with a progress line
    bg: bool = False  # a background cut: not the behaviour's, a plain continuation
    bgrep: bool = False  # a background cut that repeats some of the end
    short: bool = False  # not a seam: the trial is many short fragments instead


def mk(
    c: int,
    s: int | None = None,
    rep: str = "",
    e: int | None = None,
    *,
    exact: bool,
    last: bool = False,
    accepts: list[str] | None = None,
    alts: list[str] | None = None,
) -> Seam:
    return Seam(
        c,
        c if s is None else s,
        rep,
        c if e is None else e,
        exact=exact,
        last=last,
        accepts=accepts or [],
        alts=alts or [],
    )


def background(c: int) -> Seam:
    return Seam(c, c, "", c, exact=True, bg=True)


Behaviour = Callable[[str, DocInfo, str, random.Random], Seam | None]


# --------------------------------------------------------------------------- behaviours
def b_exact(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: True))
    return None if c is None else mk(c, exact=True)


def b_tail_repeat(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    if len(doc) <= 21:
        return None
    c = rng.randint(20, len(doc) - 1)
    n = rng.choice([1, 2, 3, 5, 8, 13, 21, 40, 80, 150])
    n = min(n, c)
    return mk(c, c - n, doc[c - n : c], exact=True)


def b_line_restart(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: doc[i - 1] != "\n" and i - line_start(doc, i) >= 2))
    if c is None:
        return None
    s = line_start(doc, c)
    return mk(c, s, doc[s:c], exact=True)


def b_prev_line(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: line_start(doc, i) >= 2))
    if c is None:
        return None
    s = line_start(doc, line_start(doc, c) - 1)
    return mk(c, s, doc[s:c], exact=True)


def b_para_restart(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: doc[i - 1] != "\n" and para_start(doc, i) < i - 30))
    if c is None:
        return None
    s = para_start(doc, c)
    return mk(c, s, doc[s:c], exact=True)


def b_sentence_restart(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(
        rng, positions(doc, lambda i: doc[i - 1] not in "\n " and sentence_start(doc, i) < i - 5)
    )
    if c is None:
        return None
    s = sentence_start(doc, c)
    return mk(c, s, doc[s:c], exact=True)


def indent_at(doc: str, i: int) -> str | None:
    """the indent of the line ``i`` is on, if ``i`` is past it (and not at a line start)."""
    ls = line_start(doc, i)
    m = re.match(r"[ \t]+", doc[ls:i])
    if m and m.end() < i - ls and doc[i - 1] != "\n":
        return m.group(0)
    return None


def b_indent_trimmed(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: indent_at(doc, i) is not None))
    if c is None:
        return None
    ls = line_start(doc, c)
    ind = indent_at(doc, c) or ""
    return mk(c, ls, doc[ls + len(ind) : c], exact=False)


def b_tab_space(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: indent_at(doc, i) is not None))
    if c is None:
        return None
    ls = line_start(doc, c)
    ind = indent_at(doc, c) or ""
    if "\t" in ind:
        new = ind.replace("\t", "    ")
    else:
        new = "\t" * max(1, len(ind) // 4 if len(ind) % 4 == 0 else len(ind) // 2)
    return mk(c, ls, new + doc[ls + len(ind) : c], exact=False)


def b_apology(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    d = (b_line_restart if rng.random() < 0.5 else b_exact)(doc, info, kind, rng)
    if d is None:
        return None
    p = rng.choice(APOLOGY)
    if kind in ("json", "csv") and rng.random() < 0.5:
        p += f"```{kind}\n"
        d.suffix = "\n```"
    d.prefix = p
    d.every_prefix = p if rng.random() < 0.3 else ""
    return d


def b_continued(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    d = (b_line_restart if rng.random() < 0.5 else b_exact)(doc, info, kind, rng)
    if d is None:
        return None
    if kind == "markdown":
        hs = list(re.finditer(r"(?m)^#{1,3} .*$", doc[: d.c]))
        h = hs[-1].group(0) if hs else "## Part 2"
        d.prefix = rng.choice([h + " (continued)\n\n", "*(continued)*\n\n", h + " (cont.)\n\n"])
    else:
        d.prefix = rng.choice(
            ["(continued)\n\n", "...continuing from where I left off:\n\n", "[Continued]\n\n"]
        )
    return d


def b_trailing_note(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    d = (b_exact if rng.random() < 0.6 else b_line_restart)(doc, info, kind, rng)
    if d is None:
        return None
    d.suffix = rng.choice(NOTES[kind])
    d.last = True
    return d


def b_ws_stripped(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: (doc[i - 1] in " \n" or doc[i] in " \n") and i > 3))
    if c is None:
        return None
    a = c
    while a > 0 and doc[a - 1] in " \t\r\n":
        a -= 1
    b = c
    while b < len(doc) and doc[b] in " \t\r\n":
        b += 1
    side = rng.choice(["both", "frag", "reply"])
    strip_prev = (a, c) if side in ("both", "frag") and a < c else None
    lstrip = b - c if side in ("both", "reply") and b > c else 0
    if strip_prev is None and lstrip == 0:
        return None
    if b >= len(doc):
        return None
    lo = a if strip_prev else c
    hi = c + lstrip
    alts = [doc[:lo] + x + doc[hi:] for x in ("", " ", "\n", "\n\n") if x != doc[lo:hi]]
    d = mk(c, a, "", c + lstrip, exact=False, alts=alts)
    d.strip_prev = strip_prev
    return d


def b_short_frags(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    return Seam(0, 0, "", 0, exact=True, short=True)


def b_progress(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    d = (b_exact if rng.random() < 0.5 else b_tail_repeat)(doc, info, kind, rng)
    if d is None:
        return None
    d.progress = True
    return d


# -- honest trials: the document itself looks like a model's habit at the seam
def b_honest_coincide(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    cands = []
    for i in range(2, len(doc) - 1):
        for n in (1, 2, 3, 4, 6, 10, 20, 40):
            if n <= i and i + n <= len(doc) and doc[i : i + n] == doc[i - n : i]:
                cands.append(i)
                break
    c = pick(rng, cands)
    return None if c is None else mk(c, exact=True)


def b_honest_repeat_line(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    cands = []
    starts = [m.start() for m in re.finditer(r"(?m)^", doc)]
    for x, y in itertools.pairwise(starts):
        line = doc[x:y]
        if len(line) > 3 and doc.startswith(line, y) and y < len(doc) - 1:
            cands.append(y)
    c = pick(rng, cands)
    return None if c is None else mk(c, exact=True)


def b_honest_preamble(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    cands = []
    for note in STRONG_NOTE + WEAK_NOTE:
        for m in re.finditer(re.escape(note), doc):
            if m.start() > 0 and doc[m.start() - 1] == "\n":
                cands.append((m.start(), note))
    if not cands:
        return None
    c, note = rng.choice(cands)
    alts = []
    if note in WEAK_NOTE:
        j = doc.index("\n", c) + 1
        alts.append(doc[:c] + doc[j:].lstrip("\n"))
    return mk(c, exact=True, alts=alts)


def b_honest_fence(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    cands = [m.start() for m in re.finditer(r"(?m)^```[a-z]+\n", doc) if m.start() > 0]
    c = pick(rng, cands)
    if c is None:
        return None
    alts = []
    close = doc.find("\n```", c + 3)
    if close >= 0 and doc[close + 4 :].strip() == "":
        alts.append(doc[:c] + doc[doc.index("\n", c) + 1 : close + 1])
    return mk(c, exact=True, alts=alts)


# -- JSON
def innermost(info: DocInfo, c: int, pred: Callable[[Span], bool]) -> Span | None:
    best = None
    for sp in info.spans:
        if sp.start < c < sp.end and pred(sp) and (best is None or sp.start >= best.start):
            best = sp
    return best


def _member_or_elem(sp: Span) -> bool:
    return sp.elem or sp.mstart is not None


def restart_from(doc: str, sp: Span, rng: random.Random) -> int:
    """a model restarts at a natural token boundary: the key of a member, or an array element"""
    s = sp.mstart if sp.mstart is not None else sp.start
    ls = line_start(doc, s)
    if doc[ls:s].strip() == "" and rng.random() < 0.6:
        s = ls
    return s


def b_json_obj_restart(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: True))
    if c is None:
        return None
    sp = innermost(info, c, lambda sp: sp.node.kind == "o" and sp.depth > 0)
    if sp is None:
        return None
    s = restart_from(doc, sp, rng)
    return mk(c, s, doc[s:c], exact=True)


def b_json_elem_restart(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: True))
    if c is None:
        return None
    sp = innermost(info, c, lambda sp: sp.elem)
    if sp is None:
        return None
    s = restart_from(doc, sp, rng)
    return mk(c, s, doc[s:c], exact=True)


def b_json_reorder(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    assert info.style is not None
    objs = [
        sp
        for sp in info.spans
        if sp.node.kind == "o"
        and sp.depth > 0
        and len(sp.node.members) >= 2
        and sp.end < len(doc.rstrip())
    ]
    if not objs:
        return None
    sp = rng.choice(objs)
    if sp.end - sp.start < 4:
        return None
    c = rng.randint(sp.start + 1, sp.end - 1)
    members = list(sp.node.members)
    for _ in range(5):
        rng.shuffle(members)
        if members != sp.node.members:
            break
    else:
        return None
    txt, _ = emit_json(obj(members), info.style, sp.depth)
    s = sp.mstart if sp.mstart is not None else sp.start
    rep = doc[s : sp.start] + txt
    ls = line_start(doc, s)
    if doc[ls:s].strip() == "":
        rep, s = doc[ls:s] + rep, ls
    if c < s:
        return None
    return mk(c, s, rep, sp.end, exact=False)


def leaves(info: DocInfo, lo: int, hi: int, kinds: str) -> list[Span]:
    return [sp for sp in info.spans if sp.node.kind in kinds and lo <= sp.start and sp.end <= hi]


def renorm(
    doc: str, info: DocInfo, s: int, c: int, *, kinds: str, fn: Callable[[str], str | None]
) -> tuple[str, bool]:
    """``doc[s:c]`` with its scalars of ``kinds`` rewritten by ``fn``, and whether any was."""
    out, pos, changed = [], s, False
    for sp in sorted(leaves(info, s, c, kinds), key=lambda x: x.start):
        new = fn(sp.node.raw)
        if new is not None and new != sp.node.raw:
            out.append(doc[pos : sp.start])
            out.append(new)
            pos = sp.end
            changed = True
    out.append(doc[pos:c])
    return "".join(out), changed


def flip_str(raw: str) -> str | None:
    """the string written with its escapes the other way (None: it has none to flip)."""
    v = json.loads(raw)
    if (raw.isascii() and "\\u" in raw) or "\\/" in raw:
        return jstr(v, "literal", False)
    if not raw.isascii():
        return jstr(v, "ascii", False)
    return None


def _renormed_restart(
    doc: str, info: DocInfo, rng: random.Random, kinds: str, fn: Callable[[str], str | None]
) -> Seam | None:
    """a member or element restarted with its scalars of ``kinds`` rewritten (20 tries)."""
    for _ in range(20):
        c = rng.randint(1, len(doc) - 1)
        sp = innermost(info, c, _member_or_elem)
        if sp is None:
            continue
        s = restart_from(doc, sp, rng)
        rep, changed = renorm(doc, info, s, c, kinds=kinds, fn=fn)
        if changed:
            return mk(c, s, rep, exact=False)
    return None


def b_json_escape_norm(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    return _renormed_restart(doc, info, rng, "s", flip_str)


def b_json_num_norm(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    return _renormed_restart(doc, info, rng, "n", num_norm)


def b_json_reindent(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    assert info.style is not None
    ind = info.style.indent
    if ind is None:
        return None
    c = pick(rng, positions(doc, lambda i: doc[i - 1] != "\n"))
    if c is None:
        return None
    sp = innermost(info, c, _member_or_elem)
    if sp is None:
        return None
    s = line_start(doc, sp.mstart if sp.mstart is not None else sp.start)
    seg = doc[s:c]
    mode = rng.choice(["double", "half", "strip", "minify"])
    out = []
    for ln in seg.split("\n"):
        body = ln.lstrip(" \t")
        lead = ln[: len(ln) - len(body)]
        lvl = len(lead.replace("\t", "  ")) // max(1, len(ind.replace("\t", "  ")))
        if mode == "double":
            out.append("  " * (2 * lvl) + body)
        elif mode == "half":
            out.append(" " * lvl + body)
        else:
            out.append(body)
    rep = "".join(out) if mode == "minify" else "\n".join(out)
    if rep == seg:
        return None
    return mk(c, s, rep, exact=False)


def _main_array(info: DocInfo) -> tuple[Span, int | None] | None:
    """the document's main array (the root, or the root object's longest array member: the
    index of that member), if it has one."""
    root = info.root
    assert root is not None
    if root.kind == "a":
        return next(sp for sp in info.spans if sp.depth == 0), None
    cands = [
        (i, kv) for i, kv in enumerate(root.members) if kv[1].kind == "a" and len(kv[1].items) >= 2
    ]
    if not cands:
        return None
    idx, kv = max(cands, key=lambda x: len(x[1][1].items))
    return next(sp for sp in info.spans if sp.node is kv[1] and sp.depth == 1), idx


def b_json_new_doc(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    """the model starts a new document holding the rest of the main array."""
    assert info.root is not None and info.style is not None
    main = _main_array(info)
    if main is None:
        return None
    arr_sp, path = main
    elems = sorted((sp for sp in info.spans if sp.parent is arr_sp), key=lambda x: x.start)
    if len(elems) < 3:
        return None
    k = rng.randint(1, len(elems) - 1)
    if rng.random() < 0.5:
        el = elems[k]
        c = rng.randint(el.start + 1, el.end - 1) if el.end - el.start > 2 else el.start
    else:
        c = rng.choice([elems[k - 1].end, elems[k - 1].end + 1, elems[k].start])
    rest = arr([sp.node for sp in elems[k:]])
    new: Node = rest
    if path is not None:
        new = obj([(kk, rest if i == path else vv) for i, (kk, vv) in enumerate(info.root.members)])
    txt, _ = emit_json(new, info.style)
    d = mk(c, c, txt, len(doc), exact=False, last=True)
    if rng.random() < 0.5:
        d.prefix = "```json\n"
        d.rep = txt + "\n```"
    return d


def b_json_comma_lost(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    cands = [sp.end for sp in info.spans if sp.elem and doc[sp.end : sp.end + 2] == ",\n"]
    c = pick(rng, cands)
    return None if c is None else mk(c, c, "", c + 1, exact=False)


def b_json_cut_escape(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    cands = []
    for leaf in leaves(info, 0, len(doc), "s"):
        for m in re.finditer(r"\\(u[0-9a-fA-F]{4}|.)", leaf.node.raw):
            for j in range(1, m.end() - m.start()):
                cands.append(leaf.start + m.start() + j)
    c = pick(rng, cands)
    if c is None:
        return None
    r = rng.random()
    if r < 0.4:
        return mk(c, exact=True)
    sp = innermost(info, c, lambda sp: sp.node.kind == "s")
    assert sp is not None
    s = sp.start if r < 0.7 else line_start(doc, sp.start)
    return mk(c, s, doc[s:c], exact=True)


def _fenced(d: Seam, fence: str) -> Seam:
    """every fragment in a fence of its own: opened before it, closed after the last."""
    d.pre0 = d.every_prefix = d.prefix = fence
    d.final_suffix = "\n```"
    return d


def b_json_fenced(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    d = (b_exact if rng.random() < 0.5 else b_line_restart)(doc, info, kind, rng)
    return None if d is None else _fenced(d, "```json\n")


# -- CSV
def rec_at(info: DocInfo, c: int) -> Record | None:
    for r in info.records:
        if r.start <= c <= r.end:
            return r
    return None


def b_csv_row_restart(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    multi = [r for r in info.records[1:] if "\n" in doc[r.start : r.end]]
    pool = multi if multi and rng.random() < 0.7 else info.records[1:]
    r = rng.choice(pool)
    if r.end - r.start < 2:
        return None
    c = rng.randint(r.start + 1, r.end)
    if multi and r in multi and rng.random() < 0.6:
        nl = [i + 1 for i in range(r.start, r.end) if doc[i] == "\n"]
        c = rng.choice(nl + [min(x + rng.randint(0, 5), r.end) for x in nl])
    return mk(c, r.start, doc[r.start : c], exact=True)


def b_csv_header_reemit(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    head = info.records[0]
    hdr = doc[head.start : head.end]
    pool: list[Record | None] = [*info.records[2:]] or [None]
    r = rng.choice(pool)
    if r is None:
        return None
    if rng.random() < 0.5:
        return mk(r.start, r.start, hdr + info.eol, exact=False)
    c = rng.randint(r.start + 1, max(r.start + 1, r.end))
    return mk(c, r.start, hdr + info.eol + doc[r.start : c], exact=False)


def b_csv_cut_quoted(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    cands: list[int] = []
    for rec in info.records[1:]:
        for fs, fe, quoted in rec.fields:
            if quoted and fe - fs > 2:
                cands.extend(range(fs + 1, fe))
    c = pick(rng, cands)
    if c is None:
        return None
    r = rec_at(info, c)
    assert r is not None
    x = rng.random()
    if x < 0.4:
        return mk(c, exact=True)
    if x < 0.8:
        return mk(c, r.start, doc[r.start : c], exact=True)
    s = line_start(doc, c)
    return mk(c, s, doc[s:c], exact=True)


def b_csv_fenced(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    d = (b_csv_row_restart if rng.random() < 0.5 else b_exact)(doc, info, kind, rng)
    return None if d is None else _fenced(d, "```csv\n")


# -- Markdown
def table_lines(doc: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"(?m)^\|.*\|$", doc)]


def table_of(doc: str, pos: int) -> tuple[int, int, int]:
    """the start of the table holding ``pos``, and the ends of its header and separator lines"""
    i = line_start(doc, pos)
    while i > 0:
        prev = line_start(doc, i - 1)
        if not doc[prev : i - 1].startswith("|"):
            break
        i = prev
    hdr_end = doc.index("\n", i)
    sep_end = doc.index("\n", hdr_end + 1)
    return i, hdr_end, sep_end


def b_md_table_header(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    rows = []
    for a, b in table_lines(doc):
        ts, he, se = table_of(doc, a)
        if a > se:
            rows.append((a, b, ts, he, se))
    if not rows:
        return None
    a, b, ts, he, se = rng.choice(rows)
    hdr = doc[ts : se + 1]
    if rng.random() < 0.3:
        ncol = doc[ts:he].count("|") - 1
        hdr = doc[ts : he + 1] + "|" + "|".join(["---"] * ncol) + "|\n"
    if rng.random() < 0.5:
        return mk(a, a, hdr, exact=False)
    c = rng.randint(a + 1, b)
    return mk(c, a, hdr + doc[a:c], exact=False)


def b_md_table_cell(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    tl = table_lines(doc)
    if not tl:
        return None
    a, b = rng.choice(tl)
    c = rng.randint(a + 1, b)
    if rng.random() < 0.4:
        return mk(c, exact=True)
    return mk(c, a, doc[a:c], exact=True)


def code_regions(doc: str) -> list[tuple[int, int, str]]:
    """the fenced code blocks: where their content starts and ends, and their language"""
    return [
        (m.start(2), m.end(2), m.group(1))
        for m in re.finditer(r"(?m)^```([a-z]+)\n(.*?)^```$", doc, re.S)
    ]


def b_md_fence_reopen(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    regs = code_regions(doc)
    if not regs:
        return None
    ins, ine, lang = rng.choice(regs)
    if ine - ins < 3:
        return None
    c = rng.randint(ins + 1, ine - 1)
    x = rng.random()
    if x < 0.35:
        s = c
    elif x < 0.75:
        s = line_start(doc, c)
    else:
        s = ins
    return mk(c, s, f"```{lang}\n" + doc[s:c], exact=False)


def olist_items(doc: str) -> list[tuple[int, int, str]]:
    """the numbered list items: where each starts, its number and its indent"""
    return [
        (m.start(), int(m.group(2)), m.group(1)) for m in re.finditer(r"(?m)^( *)(\d+)\. ", doc)
    ]


def b_md_list_renumber(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    """the model numbers the rest of a list from 1 again (a right document too)."""
    items = olist_items(doc)
    cands = [(p, n) for (p, n, ind) in items if n >= 2 and ind == ""]
    if not cands:
        return None
    p, n = rng.choice(cands)
    # the rest of that list: following top-level items with consecutive numbers
    expect, pieces = n, []
    for q, m, ind in items:
        if q < p or ind != "":
            continue
        if m != expect:
            break
        pieces.append(q)
        expect += 1
    out, pos = [], p
    for i, q in enumerate(pieces):
        out.append(doc[pos:q])
        out.append(str(1 + i))
        pos = q + len(str(n + i))
    out.append(doc[pos:])
    renum = "".join(out)
    d = mk(p, p, "", p, exact=False, last=True, accepts=[doc[:p] + renum])
    d.replace_tail = renum
    return d


def b_md_list_restart(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    bullets = [(m.start(), 0, m.group(1)) for m in re.finditer(r"(?m)^( *)[-*] ", doc)]
    items = olist_items(doc) + bullets
    if not items:
        return None
    p, _, ind = rng.choice(items)
    eol = doc.find("\n", p)
    if eol < 0 or eol - p < 6:
        return None
    c = rng.randint(p + len(ind) + 2, eol)
    return mk(c, p, doc[p:c], exact=True)


def b_md_cut_link(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    links = list(re.finditer(r"\[[^\]\n]+\]\([^)\n]+\)", doc))
    if not links:
        return None
    m = rng.choice(links)
    c = rng.randint(m.start() + 1, m.end() - 1)
    x = rng.random()
    if x < 0.5:
        return mk(c, exact=True)
    s = m.start() if x < 0.8 else line_start(doc, c)
    return mk(c, s, doc[s:c], exact=True)


def b_word_restart(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    c = pick(rng, positions(doc, lambda i: doc[i - 1].isalnum() and doc[i].isalnum() and i > 2))
    if c is None:
        return None
    s = c
    while s > 0 and (doc[s - 1].isalnum() or doc[s - 1] in "_'"):
        s -= 1
    return mk(c, s, doc[s:c], exact=True)


def b_section_restart(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    hs = [m.start() for m in re.finditer(r"(?m)^#{1,3} ", doc) if m.start() > 0]
    if not hs:
        return None
    h = rng.choice(hs)
    nxt = [x for x in hs if x > h]
    end = nxt[0] if nxt else len(doc) - 1
    if end - h < 20:
        return None
    c = rng.randint(h + 10, end - 1)
    return mk(c, h, doc[h:c], exact=True)


def b_done_note(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    note = rng.choice(DONE_NOTES)
    c = len(doc) if rng.random() < 0.6 else len(doc.rstrip("\n"))
    lead = rng.choice(["", "\n\n"])
    return mk(c, c, lead + note, len(doc), exact=False, last=True)


def b_wrapped_fence(doc: str, info: DocInfo, kind: str, rng: random.Random) -> Seam | None:
    d = (b_exact if rng.random() < 0.5 else b_line_restart)(doc, info, kind, rng)
    if d is None:
        return None
    f = "```markdown\n" if kind == "markdown" else rng.choice(["```text\n", "```\n"])
    d.prefix = f
    d.every_prefix = f
    if rng.random() < 0.5:
        d.pre0 = f
    d.final_suffix = "\n```"
    return d


BEHAVIOURS: dict[str, dict[str, Behaviour]] = {
    "generic": {
        "exact": b_exact,
        "tail_repeat": b_tail_repeat,
        "line_restart": b_line_restart,
        "prev_line_repeat": b_prev_line,
        "apology_prefix": b_apology,
        "trailing_note": b_trailing_note,
        "ws_stripped": b_ws_stripped,
        "short_frags": b_short_frags,
        "progress_marker": b_progress,
        "honest_coincide": b_honest_coincide,
        "word_restart": b_word_restart,
        "done_note": b_done_note,
        "indent_trimmed": b_indent_trimmed,
        "tab_space": b_tab_space,
    },
    "json": {
        "json_obj_restart": b_json_obj_restart,
        "json_elem_restart": b_json_elem_restart,
        "json_reorder": b_json_reorder,
        "json_escape_norm": b_json_escape_norm,
        "json_num_norm": b_json_num_norm,
        "json_reindent": b_json_reindent,
        "json_new_doc": b_json_new_doc,
        "json_comma_lost": b_json_comma_lost,
        "json_cut_escape": b_json_cut_escape,
        "json_fenced": b_json_fenced,
        "honest_repeat_line": b_honest_repeat_line,
    },
    "csv": {
        "csv_row_restart": b_csv_row_restart,
        "csv_header_reemit": b_csv_header_reemit,
        "csv_cut_quoted": b_csv_cut_quoted,
        "csv_fenced": b_csv_fenced,
        "honest_repeat_line": b_honest_repeat_line,
    },
    "markdown": {
        "para_restart": b_para_restart,
        "sentence_restart": b_sentence_restart,
        "continued_marker": b_continued,
        "md_table_header": b_md_table_header,
        "md_table_cell": b_md_table_cell,
        "md_fence_reopen": b_md_fence_reopen,
        "md_list_renumber": b_md_list_renumber,
        "md_list_restart": b_md_list_restart,
        "md_cut_link": b_md_cut_link,
        "section_restart": b_section_restart,
        "wrapped_fence": b_wrapped_fence,
        "honest_preamble": b_honest_preamble,
        "honest_repeat_line": b_honest_repeat_line,
        "honest_fence": b_honest_fence,
    },
    "text": {
        "para_restart": b_para_restart,
        "sentence_restart": b_sentence_restart,
        "continued_marker": b_continued,
        "honest_preamble": b_honest_preamble,
        "wrapped_fence": b_wrapped_fence,
        "honest_repeat_line": b_honest_repeat_line,
    },
}
# what a behaviour needs the document to hold (``docs.make_doc``'s ``want``)
WANT = {
    "json_escape_norm": ("escape",),
    "json_cut_escape": ("escape",),
    "honest_repeat_line": ("dup",),
    "md_table_header": ("table",),
    "md_table_cell": ("table",),
    "md_fence_reopen": ("code",),
    "md_list_renumber": ("olist",),
    "md_cut_link": ("link",),
    "honest_preamble": ("note", "weak"),
    "honest_fence": ("fence",),
    "indent_trimmed": ("code",),
    "tab_space": ("code",),
}
NO_INDENT = {"text", "csv"}  # formats whose documents have no indented lines


def behaviours_for(kind: str) -> dict[str, Behaviour]:
    b = BEHAVIOURS["generic"] | BEHAVIOURS[kind]
    if kind in NO_INDENT:
        del b["indent_trimmed"], b["tab_space"]
    return b


# --------------------------------------------------------------------------- assembly
def choose_cuts(
    doc: str, rng: random.Random, m: int, lo_forbid: int, hi_forbid: int, *, limit: int
) -> list[int]:
    """``m`` background cuts (or fewer) up to ``limit``, none within 2 of the behaviour's span
    [lo_forbid, hi_forbid]: anywhere, at a line start or at a space."""
    n = len(doc)
    line_starts = [i + 1 for i in range(n - 1) if doc[i] == "\n"] or [1]
    spaces = [i for i in range(1, n - 1) if doc[i] == " "] or [1]
    cands: set[int] = set()
    for _ in range(m * 6):
        r = rng.random()
        if r < 0.5:
            x = rng.randint(1, n - 1)
        elif r < 0.8:
            x = rng.choice(line_starts)
        else:
            x = rng.choice(spaces)
        if 1 <= x <= limit and not (lo_forbid - 2 <= x <= hi_forbid + 2):
            cands.add(x)
        if len(cands) >= m:
            break
    return sorted(cands)


def overlap_alts(acc: str, core: str, t: int) -> list[str]:
    """what a reply ``core`` repeating ``t`` characters of ``acc`` would add to it if read as
    repeating some other ``k`` (0: none, where so short a repeat or one twice over reads so)."""
    last = acc[-1:]
    out = []
    for k in range(min(len(acc), len(core), 3000) + 1):
        if k == t:
            continue
        if k and (core[k - 1] != last or acc[-k:] != core[:k]):
            continue
        if k == 0 and not (t <= 4 or acc.endswith(core[:t] * 2)):
            continue
        out.append(core[k:])
    return out


Assembled = tuple[list[str], list[str], list[str]]  # fragments, accepts, alts


def _short_trial(doc: str, kind: str, rng: random.Random) -> Assembled | None:
    """4-7 cuts a few characters apart, some of them repeating the end."""
    n = rng.randint(4, 7)
    p = rng.randint(1, max(1, len(doc) - 40))
    cuts = {min(len(doc) - 1, p + sum(rng.randint(1, 6) for _ in range(j + 1))) for j in range(n)}
    seams = [background(c) for c in sorted(cuts)]
    for sm in seams:
        if rng.random() < 0.3:
            sm.bgrep = True
    return assemble(doc, kind, seams, rng, None)


def build(
    doc: str, info: DocInfo, kind: str, fn: Behaviour, rng: random.Random
) -> Assembled | None:
    n = len(doc)
    nfr = rng.choices([2, 3, 4, 5, 6, 7, 8], [40, 18, 14, 10, 8, 5, 5])[0]
    prim = fn(doc, info, kind, rng)
    if prim is None:
        return None
    if prim.short:
        return _short_trial(doc, kind, rng)
    c, s, e = prim.c, prim.s, prim.e
    if not (1 <= c <= n - 1 or (prim.last and 1 <= c <= n)):
        return None
    if e > n or s > c:
        return None
    if not prim.last and e >= n:
        return None
    if prim.last:
        others = choose_cuts(doc, rng, nfr - 2, s, n, limit=s - 2)
    else:
        others = choose_cuts(doc, rng, nfr - 2, s, e, limit=n - 1)
    seams = sorted([*map(background, others), prim], key=lambda d: d.c)
    if any(sm.c < 1 for sm in seams):
        return None
    return assemble(doc, kind, seams, rng, prim)


def _background_repeats(doc: str, seams: list[Seam], rng: random.Random) -> bool:
    """let some background replies repeat the end (or its line); False: the seams overlap."""
    prev_new = 0
    for sm in seams:
        if sm.bg:
            c = sm.c
            r = rng.random()
            if sm.bgrep or r < 0.12:
                n = rng.randint(1, max(1, min(40, c - prev_new)))
                if c - n >= prev_new:
                    sm.s, sm.rep = c - n, doc[c - n : c]
            elif r < 0.25:
                ls = line_start(doc, c)
                if prev_new <= ls < c:
                    sm.s, sm.rep = ls, doc[ls:c]
        if sm.s < prev_new:
            return False
        prev_new = sm.e
    return all(a.e < b.c for a, b in itertools.pairwise(seams))


def _fragments(doc: str, seams: list[Seam], prim: Seam | None) -> list[str] | None:
    """what the model sends (None: a fragment would be blank)."""
    ends = [sm.c for sm in seams[1:]] + [len(doc)]
    every = prim.every_prefix if prim else ""
    frags = [(prim.pre0 if prim else "") + doc[: seams[0].c]]
    for sm, end in zip(seams, ends, strict=True):
        body = doc[sm.e : end]
        if sm.replace_tail is not None:
            body = sm.replace_tail[sm.e - sm.c :]
        reply = (every if sm.bg else sm.prefix) + sm.rep + body
        if sm is seams[-1]:
            reply += "" if sm.bg else sm.suffix
            if prim and prim.final_suffix:
                reply += prim.final_suffix
        frags.append(reply)
    # whitespace stripped at the seam
    for j, sm in enumerate(seams):
        if sm.strip_prev:
            a, c = sm.strip_prev
            if not frags[j].endswith(doc[a:c]):
                return None
            frags[j] = frags[j][: len(frags[j]) - (c - a)]
            if frags[j].strip() == "":
                return None
    if any(f.strip() == "" for f in frags):
        return None  # blank replies are another corpus' topic and read two ways
    if prim and prim.progress:
        total = len(frags)
        frags = [
            f"[[progress: {int(100 * (i + 1) / (total + 1))}%]]\n" + f for i, f in enumerate(frags)
        ]
    return frags


def _labels(doc: str, kind: str, seams: list[Seam]) -> tuple[list[str], list[str]]:
    """the right documents, and the other readings of the seams."""
    accepts = [doc]
    alts: list[str] = []
    ends = [sm.c for sm in seams[1:]] + [len(doc)]
    for sm, end in zip(seams, ends, strict=True):
        accepts += sm.accepts
        alts += sm.alts
        if sm.replace_tail is not None:
            continue
        exact = sm.exact and sm.rep == doc[sm.s : sm.c] and sm.e == sm.c and not sm.strip_prev
        if exact:
            core = sm.rep + doc[sm.e : end]
            for v in overlap_alts(doc[: sm.c], core, len(sm.rep)):
                alt = doc[: sm.c] + v + doc[end:]
                if alt != doc and valid(kind, alt) and alt not in alts:
                    alts.append(alt)
    alts = [a for a in alts if valid(kind, a) and a not in accepts]
    return accepts, alts[:50]


def assemble(
    doc: str, kind: str, seams: list[Seam], rng: random.Random, prim: Seam | None
) -> Assembled | None:
    cuts = [sm.c for sm in seams]
    if len(set(cuts)) != len(cuts):
        return None
    if not _background_repeats(doc, seams, rng):
        return None
    frags = _fragments(doc, seams, prim)
    if frags is None:
        return None
    accepts, alts = _labels(doc, kind, seams)
    return frags, accepts, alts


@dataclass
class Trial:
    """what a model sent for a document, and what a merge of it may give."""

    seed: int
    index: int
    kind: str  # the document's format
    fmt: str  # the format ``stitch`` is asked for: ``kind``, or now and then "auto"
    behaviour: str
    fragments: list[str]
    accepts: list[str]  # the right documents: the first is the one the model meant
    alts: list[str]  # other readings of a seam that reads two ways: excusable if clean


def generate(seed: int, index: int) -> Trial:
    rng = random.Random(f"corpus3:{seed}:{index}")
    kind = rng.choices(["json", "csv", "markdown", "text"], [30, 20, 30, 20])[0]
    behs = behaviours_for(kind)
    name = rng.choice(sorted(behs))
    fmt = "auto" if rng.random() < 0.15 else kind
    for _ in range(10):
        doc, info = make_doc(kind, rng, WANT.get(name, ()))
        t = build(doc, info, kind, behs[name], rng) if len(doc) >= 12 else None
        if t is not None:
            return Trial(seed, index, kind, fmt, name, *t)
    # no seam for the behaviour in 10 documents: an exact continuation instead, drawn until
    # one assembles (the original drew once and crashed if that failed, as in 5 of the first
    # 1,000 trials of each of seeds 4-20; every trial it does give is given unchanged)
    while True:
        doc, info = make_doc(kind, rng)
        t = build(doc, info, kind, b_exact, rng)
        if t is not None:
            return Trial(seed, index, kind, fmt, "exact", *t)
