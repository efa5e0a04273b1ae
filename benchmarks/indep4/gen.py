# ruff: noqa: RUF001
"""Trial generator for the indep4 seam corpus, written without reading the engine.

A trial is one document cut into 2-6 fragments at plausible token-limit points. One seam
carries the behaviour under test (what a real model or serving stack does there); the
other seams are exact continuations or short exact repeats of the end.

`accepts` lists the documents a correct merge may return (the first is the intended one);
`alts` lists other readings of a seam a careful human could also defend. A behaviour
whose right document cannot be recovered from the fragments (elided or lost text) keeps
the true document in `accepts`, so only flagging it counts as right.
"""

from __future__ import annotations

import bisect
import json
import random
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.indep4.docs import ASCII_MAP, Doc, Needs, asciify, make_doc

KINDS = ("json", "csv", "markdown", "text")
MIN_PIECE = 16
WHAT = {"json": "JSON", "csv": "CSV", "markdown": "document", "text": "text"}
LANG = {"json": "json", "csv": "csv", "markdown": "markdown", "text": ""}


@dataclass(frozen=True)
class Trial:
    fmt: str
    kind: str
    behaviour: str
    fragments: tuple[str, ...]
    accepts: tuple[str, ...]
    alts: tuple[str, ...]
    seams: tuple[int, ...] = ()  # offsets of the seams in accepts[0] (approximate if lossy)
    behaviour_seam: int = 0  # index into seams of the seam carrying the behaviour


# --- tokenish cut points --------------------------------------------------------------

_PRETOKEN = re.compile(
    r"'(?:[sdmt]|ll|ve|re)|[^\r\n\w]?[^\W\d_]+|\d{1,3}| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")


def _is_cjk(ch: str) -> bool:
    return _CJK.match(ch) is not None


def token_cuts(text: str, rng: random.Random) -> list[int]:
    """Positions a BPE tokenizer could end a reply at: pretoken starts and subword splits."""
    out: list[int] = []
    rand = rng.random
    for m in _PRETOKEN.finditer(text):
        a, b = m.start(), m.end()
        out.append(a)
        if b - a > 5 or (b - a > 1 and _CJK.search(text, a, b)):
            lo, span = (1, 2) if _is_cjk(text[b - 1]) else (3, 4)
            q = a + lo + int(rand() * span)
            while q < b:
                out.append(q)
                q += lo + int(rand() * span)
    return sorted(set(out))


# --- plan -----------------------------------------------------------------------------


@dataclass
class Plan:
    rng: random.Random
    doc: Doc
    cuts: list[int]  # 0, interior cuts..., len(text)
    seam: int
    fenced: bool
    lead: list[str] = field(default_factory=list)
    rep: list[str] = field(default_factory=list)
    trail: list[str] = field(default_factory=list)
    body: dict[int, str] = field(default_factory=dict)
    extra: dict[int, list[str]] = field(default_factory=dict)
    touched: set[int] = field(default_factory=set)
    expected: str | None = None
    more_accepts: list[str] = field(default_factory=list)
    alts: list[str] = field(default_factory=list)
    close: str = ""
    at_seam: bool = True  # False: the behaviour sits inside the last reply, not at a seam

    @property
    def t(self) -> str:
        return self.doc.text

    @property
    def kind(self) -> str:
        return self.doc.kind

    @property
    def n(self) -> int:
        return len(self.cuts) - 1

    @property
    def c(self) -> int:
        return self.cuts[self.seam]

    def piece(self, i: int) -> str:
        return self.body.get(i, self.t[self.cuts[i] : self.cuts[i + 1]])

    def recut(
        self, pred: Callable[[str, int], bool], i: int | None = None, tries: int = 800
    ) -> bool:
        """Move cut `i` (default: the behaviour seam) to a position satisfying pred."""
        i = self.seam if i is None else i
        lo, hi = self.cuts[i - 1] + MIN_PIECE, self.cuts[i + 1] - MIN_PIECE
        if hi <= lo:
            return False
        orig = min(max(self.cuts[i], lo), hi - 1)
        salt = self.rng.getrandbits(32)
        done = 0
        for band in range(0, max(orig - lo, hi - orig) + 150, 150):  # prefer near the planned cut
            ring = [
                q
                for q in range(orig - band - 149, orig - band + 1)
                if lo <= q < hi and orig - q >= band
            ]
            ring += [q for q in range(orig + band + 1, orig + band + 150) if lo <= q < hi]
            ring.sort(key=lambda q: (q * 2654435761 ^ salt) & 0xFFFFFFFF)
            for q in ring:
                if pred(self.t, q):
                    self.cuts[i] = q
                    return True
                done += 1
                if done >= tries:
                    return False
        return False


def dark_right(t: str, p: int) -> bool:
    return not t[p].isspace() and not t[p - 1].isspace()


def mid_word(t: str, p: int) -> bool:
    return t[p - 1].isalnum() and t[p].isalnum()


def lead_pred(kind: str) -> Callable[[str, int], bool]:
    """Seams a lead can be put on without making the seam's whitespace a guess."""
    if kind in ("text", "markdown"):
        return lambda t, p: dark_right(t, p) and (mid_word(t, p) or random.Random(p).random() < 0.4)
    return lambda t, p: not t[p].isspace()


def line_start(t: str, p: int) -> int:
    return t.rfind("\n", 0, p) + 1


def unit_start(doc: Doc, p: int) -> int:
    k = bisect.bisect_right(doc.units, p) - 1
    return doc.units[k] if k >= 0 else -1


# --- text pools -----------------------------------------------------------------------

LEADS = [
    "Sure! Continuing from where I left off:\n\n",
    "Continuing:\n\n",
    "Of course — here's the rest:\n\n",
    "Apologies for the interruption. Picking up where I stopped:\n\n",
    "",
]
ENDS = [
    "<|im_end|>",
    "<|eot_id|>",
    "</s>",
    "<|endoftext|>",
    "<end_of_turn>",
    "<｜end▁of▁sentence｜>",
    "<|end|>",
    "<|im_end|>\n<|im_start|>user\nThanks, that's exactly what I needed!<|im_end|>\n"
    "<|im_start|>assistant\nYou're welcome! Let me know if there's anything else.<|im_end|>",
    "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nGreat, thanks!<|eot_id|>",
    "<end_of_turn>\n<start_of_turn>user\nthanks<end_of_turn>",
]
STARTS = [
    "<|im_start|>assistant\n",
    "assistant\n\n",
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "<start_of_turn>model\n",
    "<s>",
    "<|begin_of_text|>",
    "<|assistant|>\n",
    "Assistant: ",
]


def reasoning(p: Plan, left: str, right: str, long: bool = False) -> str:
    rng, what = p.rng, WHAT[p.kind]
    parts = [
        rng.choice(
            [
                f"Okay, the user wants me to continue the {what} from exactly where it stopped.",
                f"Alright, I need to pick up the {what} where the last message was cut off.",
                f"The previous response was truncated. Let me continue the {what}"
                " without repeating anything.",
                "Hmm, the output got cut off because of the length limit."
                " I should just keep going.",
            ]
        )
    ]
    if rng.random() < 0.6:
        tail = left[-rng.randint(20, 70) :]
        fmt = rng.choice(
            [
                "The last part was:\n\n{}\n\nSo I continue right after that.",
                "It ended with `{}`.",
                "Last lines:\n```\n{}\n```",
            ]
        )
        parts.append(fmt.format(tail))
    if rng.random() < 0.4:
        parts.append(f"Next comes something like: {right[: rng.randint(15, 45)]}")
    if long:
        for _ in range(rng.randint(3, 6)):
            parts.append(
                rng.choice(
                    [
                        "Wait, let me double-check the structure so far."
                        " The open brackets need to be closed at the end.",
                        "Let me count how many entries there are left."
                        " I think we were around the middle.",
                        "Should I repeat the last line? No — the instructions say to"
                        f" continue the {what} exactly.",
                        "Also I need to keep the same formatting and indentation as before.",
                        "Actually, let me reconsider whether the last item was complete or not.",
                    ]
                )
            )
    parts.append(
        rng.choice(
            [
                "I must not add any commentary.",
                "Let me make sure it stays valid.",
                "No need to restart from the beginning.",
                "Let me write it.",
            ]
        )
    )
    return "\n\n".join(parts)


# --- plain seams and assembly ---------------------------------------------------------


def plain_seams(p: Plan) -> None:
    for i in range(1, p.n):
        if i in p.touched or p.rng.random() >= 0.2:
            continue
        c = p.cuts[i]
        prev = p.piece(i - 1)
        ls = line_start(p.t, c)
        k = c - ls if 8 <= c - ls <= 80 else p.rng.randint(10, 40)
        k = min(k, len(prev) - 1)
        if k >= 8 and p.t[c - k : c] == prev[-k:]:
            p.rep[i] = p.t[c - k : c]


def reading_alts(d: str, c: int, rep: str, min_k: int = 3) -> list[str]:
    """Other readings of a seam: the reply's start taken as an exact repeat of any length."""
    left, cont = d[:c], rep + d[c:]
    r = len(rep) if left.endswith(rep) else -1
    top = min(len(cont), c, max(r, 0) + 400)
    out = [left + cont[k:] for k in range(min_k, top + 1) if k != r and left.endswith(cont[:k])]
    if 0 < r < 8:
        out.append(left + cont)
    return out


def assemble(p: Plan, fmt: str, behaviour: str) -> Trial:
    frags: list[str] = []
    for i in range(p.n):
        frags.extend(p.extra.get(i, []))
        text = p.lead[i] + p.rep[i] + p.piece(i)
        if i == p.n - 1:
            text += p.close
        frags.append(text + p.trail[i])
    joined = "".join(p.piece(i) for i in range(p.n))
    want = p.expected if p.expected is not None else joined
    alts = list(p.alts)
    if p.expected is None:
        for i in range(1, p.n):
            c = sum(len(p.piece(j)) for j in range(i))
            exact = joined[:c].endswith(p.rep[i])
            alts.extend(reading_alts(joined, c, p.rep[i], 3 if exact else 8))
    accepts = [want, *(a for a in p.more_accepts if a != want)]
    alts = [a for a in dict.fromkeys(alts) if a not in accepts]
    offsets = tuple(sum(len(p.piece(j)) for j in range(i)) for i in range(1, p.n))
    return Trial(
        fmt,
        p.kind,
        behaviour,
        tuple(frags),
        tuple(accepts),
        tuple(alts),
        offsets,
        p.seam - 1 if p.at_seam else -1,
    )


# --- behaviours -----------------------------------------------------------------------


def _lead_seam(p: Plan) -> bool:
    return p.recut(lead_pred(p.kind))


def _lead_everywhere(p: Plan) -> bool:
    """Every seam gets a lead: none may start with whitespace the lead would make a guess."""
    pred = lead_pred(p.kind)
    return all(pred(p.t, p.cuts[i]) or p.recut(pred, i) for i in range(1, p.n))


def b_think_lead(p: Plan) -> bool:
    if not _lead_seam(p):
        return False
    everywhere = p.rng.random() < 0.3
    if everywhere and not _lead_everywhere(p):
        return False
    for i in range(p.n) if everywhere else [p.seam]:
        c = p.cuts[i]
        block = "<think>\n" + reasoning(p, p.t[:c], p.t[c:]) + "\n</think>\n\n"
        p.lead[i] = block + p.lead[i]
    return True


def b_think_empty(p: Plan) -> bool:
    if not _lead_seam(p):
        return False
    block = p.rng.choice(
        ["<think>\n\n</think>\n\n", "<think>\n\n</think>\n\n", "<think></think>\n"]
    )
    everywhere = p.rng.random() < 0.7
    if everywhere and not _lead_everywhere(p):
        return False
    for i in range(p.n) if everywhere else [p.seam]:
        p.lead[i] = block + p.lead[i]
    return True


def b_think_no_open(p: Plan) -> bool:
    if not _lead_seam(p):
        return False
    everywhere = p.rng.random() < 0.5
    if everywhere and not _lead_everywhere(p):
        return False
    for i in range(p.n) if everywhere else [p.seam]:
        c = p.cuts[i]
        p.lead[i] = reasoning(p, p.t[:c], p.t[c:]) + "\n</think>\n\n" + p.lead[i]
    return True


def b_think_only(p: Plan) -> bool:
    if not _lead_seam(p):
        return False
    c = p.c
    r = reasoning(p, p.t[:c], p.t[c:], long=True)
    r = r[: p.rng.randint(len(r) * 2 // 3, len(r) - 1)]  # the limit hit while thinking
    opened = p.kind in ("text", "markdown") or p.rng.random() < 0.6
    p.extra[p.seam] = [("<think>\n" if opened else "") + r]
    if p.rng.random() < 0.6:
        p.lead[p.seam] = "<think>\n" + reasoning(p, p.t[:c], p.t[c:]) + "\n</think>\n\n"
    return True


def b_template_start(p: Plan) -> bool:
    if not _lead_seam(p):
        return False
    tok = p.rng.choice(STARTS)
    p.lead[p.seam] = tok + p.lead[p.seam]
    if p.rng.random() < 0.3:
        p.lead[0] = tok + p.lead[0]
    return True


def b_template_end(p: Plan) -> bool:
    p.seam = p.n - 1
    p.at_seam = False
    tok = p.rng.choice(ENDS)
    p.trail[p.n - 1] = p.rng.choice(["", "", "\n"]) + tok
    if p.kind == "markdown" and tok == "</s>":
        p.alts.append(p.t + p.trail[p.n - 1])
    return True


# normalisers: (name, function); the repeat the model writes is fn(overlap)


def to_smart(s: str, apostrophes_only: bool = False) -> str:
    out: list[str] = []
    prev = " "
    for ch in s:
        opening = prev.isspace() or prev in "([{—–-"
        if ch == '"' and not apostrophes_only:
            out.append("“" if opening else "”")
        elif ch == "'":
            out.append("‘" if opening and not apostrophes_only else "’")
        else:
            out.append(ch)
        prev = ch
    return "".join(out)


def quotes_norm(kind: str, s: str) -> str:
    only_apos = kind in ("json", "csv")
    if any(c in s for c in ("‘’" if only_apos else "“”‘’")):
        for a in "‘’" if only_apos else "“”‘’":
            s = s.replace(a, ASCII_MAP[a])
        return s
    return to_smart(s, only_apos)


def dashes_norm(kind: str, s: str) -> str:
    if any(c in s for c in "—–…−"):
        for a in "—–…−":
            s = s.replace(a, ASCII_MAP[a])
        return s
    s = re.sub(r"(?<=[\w ])--(?=[\w ])", "—", s)  # not table rules or front-matter fences
    return re.sub(r"(?<!\.)\.\.\.(?!\.)", "…", s)


def unicode_norm(kind: str, s: str) -> str:
    nfd = unicodedata.normalize("NFD", s)
    return nfd if nfd != s else unicodedata.normalize("NFC", s)


def _md_bullets(s: str) -> str:
    return re.sub(
        r"(?m)^(\s*)([-*])(?= )", lambda m: m.group(1) + ("*" if m.group(2) == "-" else "-"), s
    )


def _md_renumber(s: str) -> str:
    return re.sub(r"(?m)^(\s*)(\d+)\.(?= )", lambda m: f"{m.group(1)}{int(m.group(2)) + 1}.", s)


def _md_headings(s: str) -> str:
    s2 = re.sub(r"(?m)^([^\n]+)\n=+$", r"# \1", s)
    s2 = re.sub(r"(?m)^([^\n|>-][^\n]*)\n-{3,}$", r"## \1", s2)
    if s2 != s:
        return s2
    return re.sub(
        r"(?m)^(#{1,2}) ([^\n]+)(?=\n)",
        lambda m: m.group(2) + "\n" + ("=" if m.group(1) == "#" else "-") * len(m.group(2)),
        s,
    )


def _md_emphasis(s: str) -> str:
    if "**" in s:
        return re.sub(r"\*\*(\S[^*\n]*?)\*\*", r"__\1__", s)
    return re.sub(r"(?<![*\w])\*(\S[^*\n]*?)\*(?!\*)", r"_\1_", s)


def md_syntax_norm(kind: str, s: str) -> str:
    for fn in (_md_bullets, _md_renumber, _md_headings, _md_emphasis):
        s2 = fn(s)
        if s2 != s:
            return s2
    return s


def table_pad_norm(kind: str, s: str) -> str:
    lines = s.split("\n")
    for i, ln in enumerate(lines):
        if ln.startswith("|"):
            lines[i] = re.sub(r"-{4,}", "---", re.sub(r"(?<=\S) {2,}(?=\|)", " ", ln))
    return "\n".join(lines)


def _split_strings(s: str) -> list[tuple[bool, str]]:
    out: list[tuple[bool, str]] = []
    pos = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"?', s):
        out.append((False, s[pos : m.start()]))
        out.append((True, m.group()))
        pos = m.end()
    out.append((False, s[pos:]))
    return out


def _unescape_u(m: re.Match[str]) -> str:
    raw: str = json.loads('"' + m.group() + '"')
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        return m.group()
    return raw if raw.isprintable() else m.group()


def json_escape_norm(kind: str, s: str) -> str:
    if re.search(r"\\u[0-9a-fA-F]{4}", s):
        s2 = re.sub(r"(?:\\u[0-9a-fA-F]{4})+", _unescape_u, s)
        if s2 != s:
            return s2
    if re.search(r"[^\x00-\x7f]", s):
        return re.sub(r"[^\x00-\x7f]", lambda m: json.dumps(m.group())[1:-1], s)
    if "/" in s:
        return s.replace("/", "\\/")

    def refmt(m: re.Match[str]) -> str:
        x = m.group()
        return x.rstrip("0").rstrip(".") if x.endswith("0") else x + "0"

    parts = _split_strings(s)
    return "".join(
        seg if is_str else re.sub(r"-?\d+\.\d+(?=[,\s\]}])", refmt, seg) for is_str, seg in parts
    )


def csv_quoting_norm(doc: Doc, s: str) -> str:
    """Re-quote the complete fields of a partial record the other way round."""
    d = doc.delimiter
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        if s[i] == '"':
            j = i + 1
            while j < n:
                if s[j] == '"':
                    if j + 1 < n and s[j + 1] == '"':
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                out.append(s[i:])
                break
            field_text, end = s[i : j + 1], j + 1
            inner = field_text[1:-1].replace('""', '"')
            complete = end < n and s[end] in (d, "\n")
            needs_q = (
                any(c in inner for c in (d, '"', "\n")) or inner != inner.strip() or inner == ""
            )
            out.append(inner if complete and not needs_q else field_text)
        else:
            j = i
            while j < n and s[j] not in (d, "\n"):
                j += 1
            field_text, end = s[i:j], j
            complete = end < n
            out.append('"' + field_text + '"' if complete else field_text)
        if end < n:
            out.append(s[end])
        i = end + 1
    return "".join(out)


NORMS: dict[str, tuple[tuple[str, ...], Callable[[str, str], str], bool]] = {
    # behaviour: (kinds, normaliser, may drift into the rest of the reply)
    "repeat_norm_quotes": (KINDS, quotes_norm, True),
    "repeat_norm_dashes": (KINDS, dashes_norm, True),
    "repeat_norm_unicode": (KINDS, unicode_norm, True),
    "repeat_norm_md_syntax": (("markdown",), md_syntax_norm, False),
    "repeat_norm_table_pad": (("markdown",), table_pad_norm, False),
    "repeat_norm_json_escapes": (("json",), json_escape_norm, True),
}


def _overlap_start(p: Plan, c: int, how: str) -> int:
    t = p.t
    ls = line_start(t, c)
    if how == "prevline" and ls > 0:
        return line_start(t, ls - 1)
    if how == "twolines" and ls > 0:
        ls1 = line_start(t, ls - 1)
        return line_start(t, ls1 - 1) if ls1 > 0 else ls1
    if how == "unit":
        u = unit_start(p.doc, c)
        return u if u >= 0 else ls
    if how == "sentence":
        ends = [m.end() for m in re.finditer(r"[.!?…”] +", t[ls:c])]
        return ls + ends[-1] if ends else ls
    return ls


def make_norm_repeat(name: str) -> Callable[[Plan], bool]:
    _kinds, fn, drifts = NORMS[name]

    def run(p: Plan) -> bool:
        how = p.rng.choice(
            [
                "line",
                "line",
                "prevline",
                "twolines",
                "sentence" if p.kind in ("text", "markdown") else "unit",
            ]
        )
        if p.kind == "json" and (p.doc.units and "\n" not in p.t[p.doc.units[0] : p.doc.units[-1]]):
            how = "unit"

        def pred(t: str, c: int) -> bool:
            if t[c].isspace():
                return False
            a = _overlap_start(p, c, how)
            ov = t[a:c]
            return 8 <= len(ov) <= 400 and a > p.cuts[p.seam - 1] and fn(p.kind, ov) != ov

        if not p.recut(pred):
            return False
        c = p.c
        a = _overlap_start(p, c, how)
        ov = p.t[a:c]
        rep = fn(p.kind, ov)
        p.rep[p.seam] = rep
        p.touched.add(p.seam)
        if drifts and p.rng.random() < 0.5:
            p.body[p.seam] = fn(p.kind, p.piece(p.seam))
        d = "".join(p.piece(i) for i in range(p.n))
        p.more_accepts.append(d[: c - len(ov)] + rep + d[c:])
        return True

    return run


def b_csv_quoting(p: Plan) -> bool:
    def pred(t: str, c: int) -> bool:
        u = unit_start(p.doc, c)
        if u < 0 or u <= p.cuts[p.seam - 1] or c - u < 8 or t[c].isspace():
            return False
        ov = t[u:c]
        return csv_quoting_norm(p.doc, ov) != ov

    if not p.recut(pred):
        return False
    u = unit_start(p.doc, p.c)
    ov = p.t[u : p.c]
    rep = csv_quoting_norm(p.doc, ov)
    p.rep[p.seam] = rep
    p.touched.add(p.seam)
    p.more_accepts.append(p.t[:u] + rep + p.t[p.c :])
    return True


def _grapheme_inside(t: str, p: int) -> bool:
    ch, pr = t[p], t[p - 1]
    if unicodedata.category(ch) in ("Mn", "Mc", "Me") or ch in "\u200d\ufe0f" or pr == "\u200d":
        return True
    if 0x1F3FB <= ord(ch) <= 0x1F3FF:
        return True
    ri = 0x1F1E6 <= ord(ch) <= 0x1F1FF and 0x1F1E6 <= ord(pr) <= 0x1F1FF
    return ri and (p < 2 or not 0x1F1E6 <= ord(t[p - 2]) <= 0x1F1FF)


def b_grapheme_cut(p: Plan) -> bool:
    if not p.recut(_grapheme_inside, tries=100000):
        return False
    p.touched.add(p.seam)
    if p.rng.random() < 0.5:
        p.lead[p.seam] = p.rng.choice(LEADS[:4])
    return True


def b_cjk_repeat(p: Plan) -> bool:
    def start(t: str, c: int) -> int:
        ls = line_start(t, c)
        k = max(t.rfind(x, ls, c) for x in "。！？，、")
        return max(ls, k + 1)

    def pred(t: str, c: int) -> bool:
        if not (_is_cjk(t[c - 1]) and _is_cjk(t[c])):
            return False
        a = start(t, c)
        return 4 <= c - a <= 120 and a > p.cuts[p.seam - 1]

    if not p.recut(pred, tries=100000):
        return False
    a = start(p.t, p.c)
    p.rep[p.seam] = p.t[a : p.c]
    p.touched.add(p.seam)
    if p.rng.random() < 0.35:
        p.lead[p.seam] = p.rng.choice(
            ["好的，继续：\n\n", "続きです：\n\n", "계속하겠습니다:\n\n", "Continuing:\n\n"]
        )
    return True


def b_utf8_replacement(p: Plan) -> bool:
    def pred(t: str, c: int) -> bool:
        return ord(t[c - 1]) > 127 and not _grapheme_inside(t, c) and not _grapheme_inside(t, c - 1)

    if not p.recut(pred, tries=100000):
        return False
    s, c, t = p.seam, p.c, p.t
    p.touched.add(s)
    p.body[s - 1] = t[p.cuts[s - 1] : c - 1] + "\ufffd"
    r = p.rng.random()
    if r < 0.5:
        p.body[s] = t[c - 1 : p.cuts[s + 1]]  # the model writes the lost character again
    elif r < 0.75:
        p.body[s] = t[c : p.cuts[s + 1]]  # it reads U+FFFD as the character: lost
    else:
        p.body[s] = "\ufffd" + t[c : p.cuts[s + 1]]  # the rest of the bytes, decoded alone: lost
    p.expected = t
    return True


def b_summary_reply(p: Plan) -> bool:
    if not _lead_seam(p):
        return False
    t, c, rng = p.t, p.c, p.rng
    rest_units = [u for u in p.doc.units if u >= c]
    k = max(len(rest_units), 2)
    if p.kind == "json":
        junk = rng.choice(
            [
                f"The remaining {k} entries follow the same structure as the ones above"
                " (same keys, same types). Let me know if you want them written out in full.",
                "[... remaining items omitted for brevity ...]",
                f"I'll summarise the rest: {k} more objects with the same schema,"
                " then the closing brackets.",
            ]
        )
    elif p.kind == "csv":
        junk = rng.choice(
            [
                f"The rest of the file continues with the remaining {k} rows in the same format.",
                f"Remaining rows: {k} more, same columns as the header above.",
                "(The remaining rows follow the same pattern.)",
            ]
        )
    elif p.kind == "markdown":
        heads = re.findall(r"(?m)^#{1,3} (.+)$", t[c:]) or ["Conclusion"]
        junk = (
            "Here's an outline of what remains:\n\n"
            + "\n".join(f"{i + 1}. {h}" for i, h in enumerate(heads))
            + "\n\nWant me to write these sections out in full?"
        )
    else:
        junk = rng.choice(
            [
                "In the remaining part, the story returns to the harbour, where everything is"
                " resolved in an unexpected reunion. Shall I write it out in full?",
                "Summary of the rest: the letter closes with thanks to the team and a short"
                " note about next year's plans.",
            ]
        )
    p.extra[p.seam] = [junk]
    p.lead[p.seam] = rng.choice(LEADS)
    return True


def b_question_reply(p: Plan) -> bool:
    if not _lead_seam(p):
        return False
    what = WHAT[p.kind]
    tail = p.t[max(line_start(p.t, p.c), p.c - 40) : p.c]
    junk = p.rng.choice(
        [
            "I've reached the maximum length for a single response. Would you like me to continue?",
            f"Would you like me to continue with the rest of the {what}?",
            "Should I pick up exactly where I left off, or would you prefer that I start over?",
            f"It looks like my previous message was cut off after “{tail}”."
            " Do you want me to continue from there?",
            f"I’m sorry, but I can’t continue reproducing this {what} verbatim.",
            "I apologize, but I'm unable to continue with this request.",
            "Sure — just to confirm, do you want only the remaining part,"
            f" or the full {what} again?",
        ]
    )
    p.extra[p.seam] = [junk]
    p.lead[p.seam] = p.rng.choice(LEADS)
    return True


def b_elision_close(p: Plan) -> bool:
    s = p.seam = p.n - 1
    t, c, rng = p.t, p.cuts[s], p.rng
    rest = [u for u in p.doc.units if u > c + MIN_PIECE]
    if len(rest) < 2:
        return False
    u = rest[rng.randrange(0, len(rest) - 1)]
    left_k = len([x for x in p.doc.units if x >= u])
    if p.kind == "json":
        if p.doc.tail_start < 0 or t[u - 1] != "\n":
            return False
        ind = t[u : u + len(t[u:]) - len(t[u:].lstrip(" "))]
        marker = rng.choice(
            [
                f"// ... {left_k} more entries omitted for brevity",
                "...",
                f"/* remaining {left_k} items follow the same structure */",
            ]
        )
        p.body[s] = t[c:u] + ind + marker + t[p.doc.tail_start :]
    elif p.kind == "csv":
        p.body[s] = t[c:u] + rng.choice(
            ["...\n", "...,...,...\n", f"(remaining {left_k} rows omitted for brevity)\n"]
        )
    elif p.kind == "markdown":
        p.body[s] = t[c:u] + rng.choice(
            [
                "*[The remaining sections follow the same format and are omitted here"
                " for brevity.]*",
                "...\n\n(rest of the document unchanged)",
            ]
        )
    else:
        last = p.doc.units[-1]
        p.body[s] = t[c:u] + "[...]\n\n" + t[last:]
    p.expected = t
    p.touched.add(s)
    return True


def b_reemit_full(p: Plan) -> bool:
    s = p.seam = p.n - 1
    p.at_seam = False
    rng, what = p.rng, WHAT[p.kind]
    intro = rng.choice(
        [
            f"Here is the complete {what} in one piece for convenience:",
            f"For reference, here's the full {what}:",
            f"Full {what} (combined):",
        ]
    )
    lang = LANG[p.kind]
    if p.kind == "text" or (p.kind == "markdown" and rng.random() < 0.5):
        again = f"\n\n---\n\n{intro}\n\n{p.t}"
    else:
        again = f"\n\n{intro}\n\n```{lang}\n{p.t}\n```"
    p.trail[s] = again
    p.touched.add(s)
    return True


NOTES = [
    "[Continued in the next message due to length…]",
    "*(Response truncated — reply “continue” for the rest.)*",
    "... (continued below)",
    "---\n**Note:** I’ve reached the length limit for a single reply."
    " Say “continue” and I’ll pick up from here.",
]


def b_self_truncate_note(p: Plan) -> bool:
    def pred(t: str, c: int) -> bool:
        if p.kind == "csv":
            return c in p.doc.units
        ls = line_start(t, c)
        return ls > 0 and not t[ls:c].strip() and not t[c].isspace()

    if not p.recut(pred, tries=100000):
        return False
    s, rng = p.seam, p.rng
    note = rng.choice(NOTES)
    if p.fenced:
        p.trail[s - 1] = "```\n\n" + note
        p.lead[s] = rng.choice(["", "Continuing:\n\n"]) + f"```{LANG[p.kind]}\n"
    else:
        p.trail[s - 1] = "\n" + note
        p.lead[s] = rng.choice(["", "", "Continuing from where I left off:\n\n"])
    p.touched.add(s)
    if p.kind in ("text", "markdown"):
        left, right = p.t[: p.c].rstrip(), p.t[p.c :]
        p.alts.extend(left + sep + right for sep in ("\n", "\n\n"))
    return True


def b_header_repeat(p: Plan) -> bool:
    t, rng = p.t, p.rng
    if p.kind == "markdown":
        tabs = [(h, rs) for h, rs in p.doc.tables if len(rs) >= 3]
        if not tabs:
            return False
        rows = {r: h for h, rs in tabs for r in rs[1:]}
        row_list = sorted(rows)

        def row_of(c: int) -> int:
            k = bisect.bisect_right(row_list, c) - 1
            return row_list[k] if k >= 0 and "\n" not in t[row_list[k] : c] else -1

        def pred(tt: str, c: int) -> bool:
            r = row_of(c)
            return r > p.cuts[p.seam - 1] and (c == r or rng.random() < 0.5) and not tt[c].isspace()

        if not p.recut(pred, tries=100000):
            return False
        r = row_of(p.c)
        p.rep[p.seam] = rows[r] + t[r : p.c]
    else:
        if not p.doc.units or len(p.doc.units) < 3:
            return False
        first = p.doc.units[0]

        def pred2(tt: str, c: int) -> bool:
            u = unit_start(p.doc, c)
            return (
                u > first
                and u > p.cuts[p.seam - 1]
                and (c == u or rng.random() < 0.3)
                and not tt[c].isspace()
            )

        if not p.recut(pred2, tries=100000):
            return False
        u = unit_start(p.doc, p.c)
        p.rep[p.seam] = p.doc.header + t[u : p.c]
    if p.rng.random() < 0.4:
        p.lead[p.seam] = p.rng.choice(LEADS[:4]) + (f"```{LANG[p.kind]}\n" if p.fenced else "")
    p.touched.add(p.seam)
    return True


def b_ellipsis_lead(p: Plan) -> bool:
    pred = mid_word if p.kind in ("text", "markdown") else lead_pred(p.kind)
    if not p.recut(pred):
        return False
    p.lead[p.seam] = (
        p.rng.choice(["...", "…", "[...]", "... "])
        if p.kind in ("json", "csv")
        else p.rng.choice(["...", "…"])
    )
    p.touched.add(p.seam)
    return True


def b_lead_quotes_tail(p: Plan) -> bool:
    if not _lead_seam(p):
        return False
    c = p.c
    ls = line_start(p.t, c)
    words = p.t[ls:c].split(" ")
    tail = " ".join(words[-p.rng.randint(2, 6) :])[-60:]
    if len(tail) < 3:
        return False
    p.lead[p.seam] = p.rng.choice(
        [
            'Continuing from "{}":\n\n',
            "Picking up right after “{}”:\n\n",
            "(continuing from `{}`)\n\n",
            "Continuing from where I left off (“…{}”):\n\n",
        ]
    ).format(tail)
    p.touched.add(p.seam)
    return True


MARKERS = {
    "json": [
        "// continued\n",
        "/* continued */\n",
        "// ... continuing from the previous response\n",
    ],
    "csv": ["# continued\n", "--- continued ---\n"],
    "markdown": ["<!-- continued -->\n", "---\n\n", "**[Continued]**\n\n"],
    "text": ["* * *\n\n", "— continued —\n\n", "[continued]\n\n"],
}


def b_marker_lead(p: Plan) -> bool:
    pred = mid_word if p.kind in ("text", "markdown") else lead_pred(p.kind)
    if not p.recut(pred):
        return False
    p.lead[p.seam] = p.rng.choice(MARKERS[p.kind])
    p.touched.add(p.seam)
    return True


def b_csv_quoted_repeat(p: Plan) -> bool:
    spans = [
        (a, b)
        for a, b in p.doc.quoted
        if b - a > 20 and any(x in p.t[a:b] for x in ("\n", ",", '""'))
    ]
    if not spans:
        return False
    inside = {q for a, b in spans for q in range(a + 2, b - 1)}

    def pred(t: str, c: int) -> bool:
        return c in inside and unit_start(p.doc, c) > p.cuts[p.seam - 1]

    if not p.recut(pred, tries=100000):
        return False
    a = unit_start(p.doc, p.c) if p.rng.random() < 0.6 else line_start(p.t, p.c)
    if a <= p.cuts[p.seam - 1] or a >= p.c:
        return False
    p.rep[p.seam] = p.t[a : p.c]
    p.touched.add(p.seam)
    return True


def b_json_string_cut(p: Plan) -> bool:
    inside = {q for a, b in p.doc.strings for q in range(a + 2, b - 1)}
    if not inside:
        return False

    def escapy(t: str, c: int) -> bool:
        return bool(re.search(r"\\(?:u[0-9a-fA-F]{0,3})?$", t[max(0, c - 6) : c]))

    want_escape = p.rng.random() < 0.5

    def pred(t: str, c: int) -> bool:
        return c in inside and (escapy(t, c) or not want_escape)

    if not p.recut(pred, tries=100000) and not p.recut(lambda t, c: c in inside, tries=100000):
        return False
    r = p.rng.random()
    if r < 0.3:
        a = line_start(p.t, p.c)
        if a > p.cuts[p.seam - 1]:
            p.rep[p.seam] = p.t[a : p.c]
    elif r < 0.5:
        p.lead[p.seam] = p.rng.choice(LEADS[:4])
    p.touched.add(p.seam)
    return True


def _delims(s: str, d: str) -> int:
    """Delimiters outside quotes."""
    n, quoted = 0, False
    for ch in s:
        if ch == '"':
            quoted = not quoted
        elif ch == d and not quoted:
            n += 1
    return n


def b_skip_partial(p: Plan) -> bool:
    def pred(t: str, c: int) -> bool:
        u = unit_start(p.doc, c)
        if u < 0 or u <= p.cuts[p.seam - 1]:
            return False
        # the partial record must show what it was (a complete first field), or nobody
        # could tell that it was abandoned rather than repeated
        if p.kind == "json":
            if re.search(r'",\n|", ', t[u:c]) is None or c - u < 16:
                return False
        elif (
            not t[c - 1].isalnum()
            or not 1
            <= _delims(t[u:c], p.doc.delimiter)
            <= _delims(p.doc.header, p.doc.delimiter) - 2
        ):
            return False  # a short row must be visibly short, not a row with empty fields
        k = bisect.bisect_right(p.doc.units, c)
        return k < len(p.doc.units) and p.doc.units[k] < p.cuts[p.seam + 1] - 1

    if not p.recut(pred, tries=100000):
        return False
    k = bisect.bisect_right(p.doc.units, p.c)
    p.body[p.seam] = p.t[p.doc.units[k] : p.cuts[p.seam + 1]]
    p.expected = p.t
    p.touched.add(p.seam)
    return True


Behaviour = tuple[str, tuple[str, ...], float, Callable[[Plan], bool], Needs]
ML = Needs(multilingual=True, raw_unicode=True)
BEHAVIOURS: list[Behaviour] = [
    ("think_lead", KINDS, 3.0, b_think_lead, Needs()),
    ("think_empty", KINDS, 2.0, b_think_empty, Needs()),
    ("think_no_open", KINDS, 2.0, b_think_no_open, Needs()),
    ("think_only", KINDS, 2.0, b_think_only, Needs()),
    ("template_start", KINDS, 1.5, b_template_start, Needs()),
    ("template_end", KINDS, 2.5, b_template_end, Needs()),
    (
        "repeat_norm_quotes",
        KINDS,
        1.5,
        make_norm_repeat("repeat_norm_quotes"),
        Needs(indented=True),
    ),
    (
        "repeat_norm_dashes",
        KINDS,
        1.2,
        make_norm_repeat("repeat_norm_dashes"),
        Needs(indented=True),
    ),
    (
        "repeat_norm_unicode",
        KINDS,
        1.0,
        make_norm_repeat("repeat_norm_unicode"),
        Needs(multilingual=True, raw_unicode=True, indented=True),
    ),
    (
        "repeat_norm_md_syntax",
        ("markdown",),
        1.5,
        make_norm_repeat("repeat_norm_md_syntax"),
        Needs(),
    ),
    (
        "repeat_norm_table_pad",
        ("markdown",),
        1.2,
        make_norm_repeat("repeat_norm_table_pad"),
        Needs(tables=True),
    ),
    (
        "repeat_norm_json_escapes",
        ("json",),
        1.5,
        make_norm_repeat("repeat_norm_json_escapes"),
        Needs(indented=True),
    ),
    ("repeat_norm_csv_quoting", ("csv",), 1.5, b_csv_quoting, Needs()),
    ("grapheme_cut", KINDS, 1.2, b_grapheme_cut, ML),
    ("cjk_repeat", KINDS, 1.2, b_cjk_repeat, ML),
    ("utf8_replacement", KINDS, 1.0, b_utf8_replacement, ML),
    ("summary_reply", KINDS, 2.0, b_summary_reply, Needs()),
    ("question_reply", KINDS, 2.0, b_question_reply, Needs()),
    ("elision_close", KINDS, 1.2, b_elision_close, Needs(indented=True)),
    ("reemit_full", KINDS, 2.0, b_reemit_full, Needs()),
    ("self_truncate_note", KINDS, 2.0, b_self_truncate_note, Needs()),
    ("header_repeat", ("csv", "markdown", "json"), 2.5, b_header_repeat, Needs(tables=True)),
    ("ellipsis_lead", KINDS, 1.5, b_ellipsis_lead, Needs()),
    ("lead_quotes_tail", KINDS, 1.5, b_lead_quotes_tail, Needs()),
    ("marker_lead", KINDS, 1.0, b_marker_lead, Needs()),
    ("csv_quoted_repeat", ("csv",), 1.5, b_csv_quoted_repeat, Needs(multiline_fields=True)),
    ("json_string_cut", ("json",), 1.5, b_json_string_cut, Needs(long_strings=True)),
    ("skip_partial", ("json", "csv"), 0.8, b_skip_partial, Needs()),
]
BEHAVIOUR_NAMES = tuple(b[0] for b in BEHAVIOURS)


def _cuts(text: str, rng: random.Random, n: int) -> list[int]:
    cands = token_cuts(text, rng)
    size = len(text)
    out = [0]
    for i in range(1, n):
        target = int(size * i / n + rng.uniform(-0.15, 0.15) * size / n)
        k = min(bisect.bisect_left(cands, target), len(cands) - 1)
        pos = cands[k]
        if pos - out[-1] < 3 * MIN_PIECE or size - pos < 3 * MIN_PIECE:
            continue
        out.append(pos)
    out.append(size)
    return out


def _preamble(p: Plan) -> None:
    if p.kind in ("json", "csv") and p.fenced:
        intro = p.rng.choice(
            [
                "Here is the JSON:\n\n" if p.kind == "json" else "Here is the CSV:\n\n",
                "Sure! Here's the data:\n\n",
                "",
            ]
        )
        p.lead[0] = intro + f"```{LANG[p.kind]}\n"
        p.close = "\n```"


def generate(seed: int, index: int) -> Trial:
    rng = random.Random(f"{seed}:{index}")
    kind = rng.choice(KINDS)
    options = [b for b in BEHAVIOURS if kind in b[1]]
    chosen = rng.choices(options, weights=[b[2] for b in options])[0]
    fmt = "auto" if rng.random() < 0.15 else kind
    for attempt in range(40):
        behaviour = chosen if attempt < 30 else BEHAVIOURS[0]
        name, _kinds, _w, fn, needs = behaviour
        sub = random.Random(f"{seed}:{index}:{attempt}")
        doc = make_doc(kind, sub, needs)
        n = sub.randint(2, 6)
        cuts = _cuts(doc.text, sub, n)
        if len(cuts) < 3:
            continue
        n = len(cuts) - 1
        fenced = kind in ("json", "csv") and sub.random() < 0.35
        p = Plan(sub, doc, cuts, sub.randint(1, n - 1), fenced, [""] * n, [""] * n, [""] * n)
        _preamble(p)
        if not fn(p):
            continue
        p.touched.add(p.seam)
        plain_seams(p)
        return assemble(p, fmt, name)
    raise RuntimeError(f"no trial for {seed}:{index}")


def _selfcheck() -> None:  # pragma: no cover - a debugging aid
    for i in range(50):
        tr = generate(0, i)
        print(tr.behaviour, tr.kind, len(tr.fragments), [len(f) for f in tr.fragments])


if __name__ == "__main__":  # pragma: no cover
    _selfcheck()


__all__ = ["BEHAVIOUR_NAMES", "KINDS", "Trial", "asciify", "generate"]
