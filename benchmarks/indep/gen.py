"""The independent corpus's generators: documents, cuts and what a model sends at a seam.

A trial (``Trial``: format, document ``doc``, cut positions, one behaviour and seed per
seam) is drawn by ``make_trial(seed, index)``; ``render`` turns it into the fragments a
model would have sent, the documents a right merge may give (``accepts``), the other
documents a clean merge may give where a seam reads two ways (``alts``), and the spans a
shrinker must not delete (``windows``). Everything is seeded and deterministic: the same
seed and index give the same trial, the fragments and the verdicts the same.

Ported from the independent author's ``gen.py`` with types added and long functions cut
into helpers; the random draws, their order and every judgement are unchanged.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import random
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

Json: TypeAlias = bool | int | float | str | list["Json"] | dict[str, "Json"] | None
Edit: TypeAlias = tuple[int, int, str]  # replace doc[a:b] with the text

T_AMB = 8  # a literal reading of a repeat of <= T_AMB chars is still plausible

# --------------------------------------------------------------------------- banks
_WORD_TEXT = """the of and to in is that it was for on are as with his they at be this from have
or by one had not but what all were when we there can an your which their said if do will
each about how up out them then she many some so these would other into has more her two
like him see time could no make than first been its who now people my made over did down
only way find use may water long little very after words called just where most know get
through back much before go good new write our used me man too any day same right look
think also around another came come work three word must because does part even place well
such here take why things help put years different away again off went old number great tell
men say small every found still between name should home big give air line set own under
read last never us left end along while might next sound below saw something thought both few
those always looked show large often together asked house don't world going want school
important until form food keep children feet land side without boy once animals life enough
took sometimes four head above kind began almost live page got earth need far hand high year
mother light parts country father let night following picture being study second eyes soon
times story boys since white days ever paper hard near sentence better best across during
today others however sure means knew it's try told young miles sun ways thing whole hear
example heard several change answer room sea against top turned learn point city play toward
five using himself usually money seen didn't car morning i'm body upon family later turn move
face door cut done group true leave"""
WORDS = _WORD_TEXT.split()
SYN = {
    "quick": "fast",
    "big": "large",
    "small": "little",
    "said": "stated",
    "began": "started",
    "often": "frequently",
    "near": "close to",
    "learn": "study",
    "turned": "rotated",
    "house": "home",
    "young": "youthful",
    "story": "tale",
    "hard": "difficult",
    "important": "crucial",
    "always": "consistently",
    "enough": "sufficient",
    "together": "jointly",
    "example": "instance",
    "change": "alter",
    "show": "display",
}
CJK = [
    "東京",
    "大阪",
    "数据",
    "分析",
    "报告",
    "日本語",
    "テスト",
    "中文",
    "北京",
    "上海",
    "한국어",
    "서울",
    "会議",
    "資料",
    "結果",
    "今日は",
    "ありがとう",
    "你好世界",
    "株式会社",
    "第一章",
]
CJK_SENT = [
    "今日は天気がとても良いので、公園を散歩しました。",
    "这份报告总结了第三季度的销售数据。",
    "東京の人口は約一千四百万人です。",
    "我们需要在下周之前完成所有测试。",
    "会議は午後三時から始まります。",
    "서울은 한국의 수도입니다。",
    "この章では、データの前処理について説明します。",
    "结果表明，新方法的准确率提高了百分之十二。",  # noqa: RUF001  (Chinese punctuation)
]
EMOJI = ["😀", "🚀", "✅", "🎉", "👨‍👩‍👧", "🇯🇵", "❤️", "👍🏽", "🔥", "é", "ñ", "ü", "Å", "e\u0301"]
FIRST = [
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Eve",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Victor",
    "Walter",
    "Zoë",
    "José",
    "Łukasz",
    "François",
    "山田",
    "李",
    "김",
]
LAST = [
    "Smith",
    "Johnson",
    "O'Brien",
    "García",
    "Müller",
    "Nguyen",
    "Kowalski",
    "Rossi",
    "Tanaka",
    "Chen",
    "Dubois",
    "van der Berg",
    "太郎",
    "伟",
    "민수",
]
CITIES = [
    "Paris",
    "Berlin",
    "New York",
    "São Paulo",
    "Tokyo",
    "東京",
    "Zürich",
    "Lagos",
    "Mumbai",
    "Toronto",
    "Sydney",
    "Kraków",
    "Reykjavík",
]
CATS = [
    ["A", "B", "C"],
    ["yes", "no"],
    ["low", "medium", "high"],
    ["active", "inactive"],
    ["0", "1"],
    ["red", "green", "blue", "red"],
    ["N/A", "ok"],
]


def sentence(r: random.Random, lo: int = 5, hi: int = 16) -> str:
    n = r.randint(lo, hi)
    ws = [r.choice(WORDS) for _ in range(n)]
    if r.random() < 0.3:
        ws[r.randrange(n)] = r.choice(list(SYN))
    if r.random() < 0.15:
        ws[r.randrange(n)] = r.choice(EMOJI + CJK)
    if r.random() < 0.15:
        number: list[float] = [
            r.randint(0, 99),
            r.randint(100, 99999),
            round(r.uniform(0, 1000), 2),
        ]
        ws[r.randrange(n)] = str(r.choice(number))
    if r.random() < 0.1:
        i = r.randrange(n)
        ws[i] = '"' + ws[i] + '"'
    if r.random() < 0.1:
        ws[r.randrange(n)] += ","
    s = " ".join(ws)
    ends = [".", ".", ".", "!", "?", ";"] if n > 8 else ["."]
    return s[0].upper() + s[1:] + r.choice(ends)


def paragraph(r: random.Random, lo: int = 2, hi: int = 6) -> str:
    if r.random() < 0.08:
        return "".join(r.choice(CJK_SENT) for _ in range(r.randint(2, 5)))
    return " ".join(sentence(r) for _ in range(r.randint(lo, hi)))


# --------------------------------------------------------------------------- docs
def gen_text(r: random.Random) -> str:
    parts: list[str] = []
    wrap = r.random() < 0.5
    width = r.randint(50, 80)
    for _ in range(r.randint(2, 9)):
        x = r.random()
        if x < 0.1:
            line = r.choice(["OK", "-", "0", "PASS", "....", "=" * 20, "TODO"])
            parts.append("\n".join([line] * r.randint(3, 12)))
        elif x < 0.18:
            parts.append(
                "\n".join(
                    f"{r.choice(WORDS).title()}: {r.randint(0, 9)}" for _ in range(r.randint(3, 8))
                )
            )
        else:
            p = paragraph(r)
            if wrap and not any("\u3000" <= ch <= "\uffff" for ch in p[:5]):
                p = "\n".join(textwrap.wrap(p, width))
            if r.random() < 0.05:
                p = "\n".join(ln + "  " for ln in p.split("\n"))  # trailing spaces
            parts.append(p)
    doc = "\n\n".join(parts)
    if r.random() < 0.1:
        doc = opener(r) + doc
    return doc + ("\n" if r.random() < 0.7 else "")


# first lines that are document content although they open like a chat reply
OPENERS = [
    "Of course, nothing went as planned.\n",
    "Sure enough, the rain came.\n",
    "Absolutely nobody came.\n",
    "Here lies the problem: nobody checked.\n",
    "Certainly the hardest part was the wait.\n",
]


def opener(r: random.Random) -> str:
    return r.choice(OPENERS)


def md_table_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def md_table(r: random.Random) -> str:
    ncol = r.randint(2, 5)
    hdr = [r.choice(WORDS).title() for _ in range(ncol)]
    al = [r.choice(["---", ":---", "---:", ":---:", "-----"]) for _ in range(ncol)]
    rows: list[list[str]] = []
    rep = r.random() < 0.25
    for _ in range(r.randint(2, 12)):
        if rep and rows:
            rows.append(rows[-1])
            continue
        rows.append(
            [
                r.choice(
                    [
                        str(r.randint(0, 500)),
                        r.choice(WORDS),
                        "0",
                        "✅",
                        "N/A",
                        f"{r.uniform(0, 100):.1f}",
                        r.choice(CJK),
                    ]
                )
                for _ in range(ncol)
            ]
        )
    return "\n".join([md_table_row(hdr), md_table_row(al), *(md_table_row(x) for x in rows)])


CODE_BODIES = [
    "def f(x):\n    return x * 2\n\nprint(f(21))",
    "for i in range(10):\n    if i % 2 == 0:\n        print(i, end=', ')",
    '{\n  "key": "value",\n  "list": [1, 2, 3]\n}',
    'echo "hello" | tr a-z A-Z\nls -la /tmp',
    "x = [0, 0, 0, 0]\ny = {'a': 1}",
]


def md_block(r: random.Random) -> str:
    """one block of a Markdown section."""
    x = r.random()
    if x < 0.3:
        return paragraph(r, 1, 4)
    if x < 0.45:
        b = r.choice(["-", "*", "-"])
        rep = r.random() < 0.2
        item = sentence(r, 2, 8)
        return "\n".join(
            f"{b} {item if rep else sentence(r, 2, 8)}" for _ in range(r.randint(2, 7))
        )
    if x < 0.57:
        return "\n".join(f"{i + 1}. {sentence(r, 2, 9)}" for i in range(r.randint(2, 8)))
    if x < 0.72:
        return md_table(r)
    if x < 0.85:
        lang = r.choice(["python", "json", "bash", ""])
        body = r.choice(CODE_BODIES)
        return f"```{lang}\n{body}\n```"
    return "\n".join("> " + ln for ln in textwrap.wrap(paragraph(r, 1, 3), r.randint(50, 80)))


def gen_markdown(r: random.Random) -> str:
    out = [f"# {sentence(r, 2, 6).rstrip('.!?;')}"]
    for s in range(r.randint(1, 5)):
        out.append(f"{'#' * r.choice([2, 2, 3])} {r.choice(WORDS).title()} {s + 1}")
        for _ in range(r.randint(1, 4)):
            out.append(md_block(r))
    doc = "\n\n".join(out)
    if r.random() < 0.08:
        doc = opener(r) + "\n" + doc
    return doc + ("\n" if r.random() < 0.8 else "")


def rand_str(r: random.Random) -> str:
    x = r.random()
    if x < 0.4:
        return " ".join(r.choice(WORDS) for _ in range(r.randint(1, 6)))
    if x < 0.55:
        return r.choice(FIRST) + " " + r.choice(LAST)
    if x < 0.65:
        return r.choice(CJK) + r.choice(CJK)
    if x < 0.75:
        return r.choice(EMOJI) + " " + r.choice(WORDS)
    if x < 0.9:
        return r.choice(
            [
                'He said "hi"',
                "C:\\path\\to\\file",
                "line1\nline2",
                "tab\there",
                "a/b/c",
                'quote " and backslash \\',
                "50% off, today only",
                "unicode é ü ß",
                "emoji 🎉🎉",
                "\u00a0nbsp",
            ]
        )
    return ""


def rand_json_scalar(r: random.Random) -> Json:
    y = r.random()
    if y < 0.3:
        return rand_str(r)
    if y < 0.55:
        return r.choice([0, 0, 1, r.randint(-100, 100), r.randint(1000, 10**7)])
    if y < 0.7:
        floats = [0.0, 0.5, round(r.uniform(-1000, 1000), r.randint(1, 4)), 1e-05, 12.0]
        return r.choice(floats)
    if y < 0.85:
        return r.choice([True, False])
    return None


def rand_json_value(r: random.Random, depth: int = 0) -> Json:
    x = r.random()
    if depth > 2 or x < 0.45:
        return rand_json_scalar(r)
    if x < 0.7:
        if r.random() < 0.4:
            choices: list[Json] = [0, 1, "x", None, True, 0.0]
            v = r.choice(choices)
            return [v] * r.randint(2, 15)
        return [rand_json_value(r, depth + 1) for _ in range(r.randint(0, 6))]
    return {
        r.choice(WORDS) + ("_" + str(i) if r.random() < 0.3 else ""): rand_json_value(r, depth + 1)
        for i in range(r.randint(0, 5))
    }


def json_record(r: random.Random, i: int) -> dict[str, Json]:
    rec: dict[str, Json] = {
        "id": i + 1,
        "name": r.choice(FIRST) + " " + r.choice(LAST),
        "email": f"user{i + 1}@example.com",
        "score": round(r.uniform(0, 100), 2),
        "active": r.choice([True, False]),
        "tags": list(r.sample(WORDS, r.randint(0, 3))),
    }
    if r.random() < 0.4:
        rec["address"] = {"city": r.choice(CITIES), "zip": f"{r.randint(0, 99999):05d}"}
    if r.random() < 0.3:
        rec["notes"] = rand_str(r)
    if r.random() < 0.2:
        zeros: list[Json] = [0]
        rec["history"] = zeros * r.randint(1, 8)
    return rec


def gen_json_value(r: random.Random) -> Json:
    k = r.random()
    if k < 0.35:
        recs: list[Json] = [json_record(r, i) for i in range(r.randint(3, 25))]
        return recs if r.random() < 0.5 else {"count": len(recs), "results": recs}
    if k < 0.5:
        n = r.randint(3, 12)
        data: list[Json] = [
            [r.choice([0, 0, 0, 1, r.randint(0, 9)]) for _ in range(r.randint(3, 10))]
            for _ in range(n)
        ]
        return {"name": "grid", "rows": n, "data": data}
    if k < 0.6:
        series: list[Json] = [
            round(r.uniform(-5, 5), r.randint(0, 3)) for _ in range(r.randint(10, 60))
        ]
        return {"series": series, "unit": r.choice(["°C", "m/s", "%", "ms"])}
    if k < 0.75:
        return {
            "title": sentence(r),
            "body": paragraph(r, 1, 3),
            "translations": {
                "ja": r.choice(CJK_SENT),
                "zh": r.choice(CJK_SENT),
                "emoji": "".join(r.sample(EMOJI, 4)),
            },
            "escapes": r.choice(
                ['tab\t newline\n quote" backslash\\ slash/', "\u0000\u001f\u2028"]
            ),
            "paragraphs": [paragraph(r, 1, 2) for _ in range(r.randint(1, 4))],
        }
    return {r.choice(WORDS): rand_json_value(r) for _ in range(r.randint(3, 9))}


def dump_json(r: random.Random, v: Json) -> str:
    style = r.choice(["i2", "i2", "i4", "min", "compact", "tab"])
    ea = r.random() < 0.3
    if style == "i2":
        return json.dumps(v, indent=2, ensure_ascii=ea)
    if style == "i4":
        return json.dumps(v, indent=4, ensure_ascii=ea)
    if style == "tab":
        return json.dumps(v, indent="\t", ensure_ascii=ea)
    if style == "min":
        return json.dumps(v, ensure_ascii=ea)
    return json.dumps(v, separators=(",", ":"), ensure_ascii=ea)


def gen_json(r: random.Random) -> str:
    return dump_json(r, gen_json_value(r)) + ("\n" if r.random() < 0.3 else "")


def csv_field(r: random.Random, c: str, i: int, *, rep: bool, zero: bool, vocab: list[str]) -> str:
    """the value of column ``c`` in record ``i``."""
    if c == "id":
        return str(i + 1) if not (rep and r.random() < 0.5) else "0"
    if c == "name":
        return r.choice(
            [f"{r.choice(LAST)}, {r.choice(FIRST)}", f"{r.choice(FIRST)} {r.choice(LAST)}"]
        )
    if c == "city":
        return r.choice(CITIES)
    if c in ("category", "status", "flag"):
        return r.choice(vocab)
    if c == "amount":
        return "0.00" if zero and r.random() < 0.6 else f"{r.uniform(0, 5000):.2f}"
    if c == "qty":
        return "0" if zero and r.random() < 0.6 else str(r.randint(0, 1000))
    if c == "date":
        return f"2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
    return r.choice(
        [
            "",
            sentence(r, 2, 8),
            'He said "yes", then left',
            "multi\nline note",
            "a, b, and c",
            r.choice(CJK_SENT),
            r.choice(EMOJI) + " ok",
        ]
    )


def gen_csv(r: random.Random) -> str:
    cols = [
        "id",
        *r.sample(
            ["name", "city", "category", "amount", "qty", "date", "note", "status", "flag"],
            r.randint(2, 6),
        ),
    ]
    vocab = r.choice(CATS)
    rows: list[list[str]] = []
    rep = r.random() < 0.25
    zero = r.random() < 0.3
    for i in range(r.randint(5, 60)):
        if rep and rows and r.random() < 0.6:
            rows.append(list(rows[-1]))
            continue
        rows.append([csv_field(r, c, i, rep=rep, zero=zero, vocab=vocab) for c in cols])
    term = "\r\n" if r.random() < 0.25 else "\n"
    buf = io.StringIO()
    w = csv.writer(
        buf, lineterminator=term, quoting=csv.QUOTE_ALL if r.random() < 0.1 else csv.QUOTE_MINIMAL
    )
    w.writerow(cols)
    w.writerows(rows)
    doc = buf.getvalue()
    return doc if r.random() < 0.85 else doc[: -len(term)]


GENS: dict[str, Callable[[random.Random], str]] = {
    "json": gen_json,
    "csv": gen_csv,
    "markdown": gen_markdown,
    "text": gen_text,
}


# --------------------------------------------------------------------------- validity
def csv_rows(doc: str) -> list[list[str]] | None:
    try:
        return list(csv.reader(io.StringIO(doc, newline=""), strict=True))
    except csv.Error:
        return None


def valid(fmt: str, doc: str) -> bool:
    if fmt == "json":
        try:
            json.loads(doc)
            return True
        except ValueError:
            return False
    if fmt == "csv":
        rows = csv_rows(doc)
        if not rows:
            return False
        return all(len(x) == len(rows[0]) for x in rows)
    return True


def json_val(doc: str) -> tuple[str, Json] | None:
    try:
        return ("ok", json.loads(doc))
    except ValueError:
        return None


def canon(v: Json) -> str:
    return json.dumps(v, sort_keys=True, ensure_ascii=True)


def norm(s: str) -> str:
    """trailing line breaks are not compared."""
    return s.rstrip("\r\n")


def same(fmt: str, a: str, b: str) -> bool:
    if norm(a) == norm(b):
        return True
    if fmt == "json":
        va, vb = json_val(a), json_val(b)
        return va is not None and vb is not None and canon(va[1]) == canon(vb[1])
    return False


def equivalent(fmt: str, a: str, b: str) -> bool:
    """a reader-equivalent variant (used to decide whether a variant is acceptable)."""
    if same(fmt, a, b):
        return True
    if fmt == "csv":
        ra, rb = csv_rows(a), csv_rows(b)
        return ra is not None and ra == rb
    return False


# --------------------------------------------------------------------------- scanners
def json_state(s: str, c: int) -> tuple[bool, int, list[list[int]]]:
    """state just before index c: (in_string, string_start, stack of [open_pos, last_comma])."""
    stack: list[list[int]] = []
    in_str = esc = False
    sstart = -1
    for i in range(c):
        ch = s[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str, sstart = True, i
        elif ch in "[{":
            stack.append([i, -1])
        elif ch in "]}":
            if stack:
                stack.pop()
        elif ch == "," and stack:
            stack[-1][1] = i
    return in_str, sstart, stack


@dataclass
class _Container:
    """an open JSON container, for ``json_elements``."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    expect: bool = True


def _element_spans(top: _Container, last: int) -> list[tuple[int, int]]:
    """the spans of a closed container's elements, each with its separator."""
    if len(top.ends) < len(top.starts):
        top.ends.append(last + 1)
    st, en = top.starts, top.ends
    spans = []
    for j in range(len(st)):
        if j + 1 < len(st):
            spans.append((st[j], st[j + 1]))
        elif j > 0:
            spans.append((en[j - 1], en[j]))
        else:
            spans.append((st[0], en[0]))
    return spans


def _note_element(
    stack: list[_Container], spans: list[tuple[int, int]], ch: str, i: int, last: int
) -> None:
    """one non-blank character outside strings at ``i`` (``last``: the one before)."""
    if stack and stack[-1].expect and ch not in "]}":
        stack[-1].starts.append(i)
        stack[-1].expect = False
    if ch in "[{":
        stack.append(_Container())
    elif ch in "]}" and stack:
        spans.extend(_element_spans(stack.pop(), last))
    elif ch == "," and stack:
        stack[-1].ends.append(last + 1)
        stack[-1].expect = True


def json_elements(s: str) -> list[tuple[int, int]]:
    """deletable spans: one element of some container, with its separator."""
    spans: list[tuple[int, int]] = []
    stack: list[_Container] = []
    in_str = esc = False
    last = -1
    for i, ch in enumerate(s):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
                last = i
            continue
        if ch.isspace():
            continue
        _note_element(stack, spans, ch, i, last)
        in_str = ch == '"'
        last = i
    return spans


def csv_record_starts(s: str) -> list[int]:
    starts = [0]
    inq = False
    for i, ch in enumerate(s):
        if ch == '"':
            inq = not inq
        elif ch == "\n" and not inq and i + 1 < len(s):
            starts.append(i + 1)
    return starts


def csv_in_quotes(s: str, c: int) -> bool:
    return s[:c].count('"') % 2 == 1


# --------------------------------------------------------------------------- unit starts
def _csv_unit_starts(doc: str, c: int) -> dict[str, int]:
    out = {}
    rs = [x for x in csv_record_starts(doc) if x < c]
    if rs:
        out["row"] = rs[-1]
    if not csv_in_quotes(doc, c):
        f = max(doc.rfind(",", 0, c) + 1, out.get("row", 0))
        out["field"] = f
    else:
        out["field"] = doc.rfind('"', 0, c)
    return out


def _member_start(doc: str, c: int, op: int, lc: int) -> int:
    """where the member after the last comma (or the opener) of a container begins."""
    ms = (lc if lc > op else op) + 1
    while ms < c and doc[ms].isspace():
        ms += 1
    return ms


def _json_unit_starts(doc: str, c: int, ls: int) -> dict[str, int]:
    out = {}
    in_str, ss, stack = json_state(doc, c)
    out["line"] = ls
    if in_str:
        out["string"] = ss
    if stack:
        op, lc = stack[-1]
        out["member"] = _member_start(doc, c, op, lc)
        if c - op < 600:
            out["container"] = op
        if len(stack) > 1 and c - stack[-2][0] < 600:
            # the element of the parent that contains the cut
            op2, lc2 = stack[-2]
            out["element"] = _member_start(doc, c, op2, lc2)
    j = c
    while (
        j > 0
        and (doc[j - 1].isdigit() or doc[j - 1] in ".-+eE" or doc[j - 1].isalpha())
        and not in_str
    ):
        j -= 1
    out["token"] = j
    return out


def _text_unit_starts(doc: str, c: int, ls: int) -> dict[str, int]:
    out = {}
    out["line"] = ls
    j = c
    while j > 0 and not doc[j - 1].isspace():
        j -= 1
    out["word"] = j
    k = max(
        doc.rfind(". ", 0, c) + 2,
        doc.rfind("\n", 0, c) + 1,
        doc.rfind("! ", 0, c) + 2,
        doc.rfind("? ", 0, c) + 2,
        doc.rfind("。", 0, c) + 1,
    )
    out["sentence"] = k
    return out


def unit_starts(fmt: str, doc: str, c: int) -> dict[str, int]:
    """candidate positions u < c where a model might restart the cut unit."""
    ls = doc.rfind("\n", 0, c) + 1
    if fmt == "csv":
        out = _csv_unit_starts(doc, c)
    elif fmt == "json":
        out = _json_unit_starts(doc, c, ls)
    else:
        out = _text_unit_starts(doc, c, ls)
    return {k: v for k, v in out.items() if 0 <= v < c}


# --------------------------------------------------------------------------- chat junk
PREAMBLES = [
    "Continuing from where I left off:\n",
    "Here's the remainder:\n\n",
    "Sure — picking up right where it stopped:\n\n",
    "Of course! Continuing:\n\n",
    "Continued:\n",
    "(continued)\n",
    "Certainly. Here is the rest of the document\n\n",
    "Apologies for the cutoff. Here's the rest:\n\n",
    "**Continuation:**\n\n",
    "Resuming the output:\n",
    "OK, continuing.\n\n",
    "Here you go:\n\n",
    "I'll continue from the last complete line:\n\n",
    "Continuing the {fmt}:\n",
    "Sure, here is the continuation of the {fmt} output:\n\n",
    'Picking up from "{tail}":\n\n',
    "...continuing from `{tail}`\n\n",
    "Continuing\n\n",
    "Here is the rest of the {fmt}, starting exactly where it was cut off:\n",
    "Got it, resuming below.\n\n",
    "No problem! Here's the remaining part.\n",
    "Part 2:\n\n",
]
FIRST_PRE = [
    "Here is the {fmt} you asked for:\n\n",
    "Sure! Below is the complete {fmt}.\n\n",
    "Certainly — here's the document:\n\n",
    "",
    "Here it is:\n",
]
SIGNOFFS = [
    "\n\nLet me know if you'd like any changes!",
    "\n\nThat completes the document.",
    "\n\nIs there anything else you need?",
    "\n\nThis completes the {fmt} with all entries.",
    "\n\nHope this helps! 😊",
    "\n\n---\n*End of document.*",
    "\n\nLet me know if you need more rows.",
]
FENCE_LANG = {
    "json": ["json", "", "JSON"],
    "csv": ["csv", "", "text"],
    "markdown": ["markdown", "md", ""],
    "text": ["", "text", "plaintext"],
}


def fill(r_s: str, fmt: str, doc: str, c: int) -> str:
    tail = (
        doc[max(0, c - 20) : c].rsplit("\n", maxsplit=1)[-1].strip()
        or doc[max(0, c - 8) : c].strip()
    )
    return r_s.replace("{fmt}", fmt.upper() if fmt in ("json", "csv") else fmt).replace(
        "{tail}", tail
    )


# --------------------------------------------------------------------------- transforms
def ws_transform(kind: str, text: str, crlf: bool) -> str:
    if kind == "strip_trailing":
        return re.sub(r"[ \t]+(?=\r?\n)", "", text)
    if kind == "eol":
        return text.replace("\r\n", "\n") if crlf else text.replace("\n", "\r\n")
    if kind == "add_blank":
        i = text.find("\n")
        return text if i < 0 else text[: i + 1] + ("\r\n" if crlf else "\n") + text[i + 1 :]
    if kind == "drop_blank":
        return text.replace("\n\n", "\n", 1).replace("\r\n\r\n", "\r\n", 1)
    if kind == "rewrap":
        return re.sub(r"(?<![\n\r])\r?\n(?=[^\r\n])", " ", text)
    if kind == "indent":
        return re.sub(r"\n( +)", lambda m: "\n" + m.group(1)[: len(m.group(1)) // 2], text)
    return text


def json_reformat(kind: str, text: str, in_str0: bool) -> str:
    out = []
    in_str = in_str0
    esc = False
    for ch in text:
        if in_str:
            out.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
            out.append(ch)
            continue
        if ch.isspace():
            # minify drops the space, reindent doubles a blank; the other kinds keep it
            if kind != "minify":
                out.append("  " if kind == "reindent" and ch == " " else ch)
            continue
        out.append(ch)
        if kind == "spaces" and ch in ",:":
            out.append(" ")
        if kind == "pretty" and ch in ",[{":
            out.append("\n  ")
    s = "".join(out)
    if kind == "spaces":
        s = s.replace(",  ", ", ").replace(":  ", ": ")
    return s


def _u_escape(ch: str) -> str:
    o = ord(ch)
    if o > 0xFFFF:
        o -= 0x10000
        return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
    return f"\\u{o:04x}"


def _u_unescape(m: re.Match[str]) -> str:
    code = int(m.group(1), 16)
    return chr(code) if 0x20 <= code < 0x7F and chr(code) not in '"\\' else m.group(0)


def json_escape_swap(text: str) -> str:
    if any(ord(ch) > 127 for ch in text):
        return "".join(_u_escape(ch) if ord(ch) > 127 else ch for ch in text)
    s = re.sub(r"\\u00([0-7][0-9a-f])", _u_unescape, text)
    if s == text:
        s = text.replace("/", "\\/")
    return s


def text_quote_swap(text: str) -> str:
    s = text.replace("'", "\u2019")
    out, opn = [], True
    for ch in s:
        if ch == '"':
            out.append("\u201c" if opn else "\u201d")
            opn = not opn
        else:
            out.append(ch)
    s = "".join(out).replace("\n- ", "\n* ")
    if s == text:
        s = text.replace("\u2019", "'").replace("...", "…").replace(" - ", " — ")
    return s


def csv_requote(text: str) -> str:
    """re-quote the complete fields of a partial CSV row."""
    # split text into complete fields (terminated by a comma) and the partial tail
    fields, inq, i = [], False, 0
    raw_starts = [0]
    while i < len(text):
        ch = text[i]
        if ch == '"':
            inq = not inq
        elif ch == "," and not inq:
            fields.append(text[raw_starts[-1] : i])
            raw_starts.append(i + 1)
        i += 1
    tail = text[raw_starts[-1] :]
    out = []
    for f in fields:
        if f.startswith('"') and f.endswith('"') and len(f) >= 2:
            inner = f[1:-1]
            out.append(inner if not re.search(r'[",\r\n]', inner.replace('""', '"')) else f)
        else:
            out.append('"' + f + '"')
    return "".join(x + "," for x in out) + tail


def typo(r: random.Random, text: str) -> str:
    idx = [i for i, ch in enumerate(text) if ch.isalnum()]
    if not idx:
        return text
    i = r.choice(idx)
    ch = text[i]
    if ch.isdigit():
        new = str((int(ch) + r.randint(1, 8)) % 10) if ch in "0123456789" else "1"
    elif ch.isalpha() and ch.isascii():
        new = r.choice([x for x in "aeiourstnl" if x != ch.lower()])
    else:
        new = r.choice(["x", "了", "の"])
    if r.random() < 0.3 and i + 1 < len(text) and text[i + 1].isalnum():
        return text[:i] + text[i + 1] + text[i] + text[i + 2 :]  # transposition
    return text[:i] + new + text[i + 1 :]


# --------------------------------------------------------------------------- behaviours
BEHAVIOURS = [
    "exact",
    "repeat",
    "preamble",
    "restart_unit",
    "reformat_json",
    "ws_repeat",
    "restart_doc",
    "syntax_slip",
    "empty_mid",
    "newline_seam",
    "drop_newline",
    "typo_repeat",
    "rephrase",
    "ellipsis_prefix",
    "header_repeat",
    "quote_change",
    "elided_restart",
    "space_seam",
    "fresh_container",
    "mixed",
]
CONTENT_CHANGING = {"typo_repeat", "rephrase", "quote_change"}
MIXABLE = [
    "exact",
    "exact",
    "repeat",
    "repeat",
    "preamble",
    "restart_unit",
    "ws_repeat",
    "reformat_json",
    "empty_mid",
    "newline_seam",
    "restart_doc",
    "header_repeat",
    "space_seam",
]


def pick_n(r: random.Random) -> int:
    x = r.random()
    if x < 0.35:
        return r.randint(1, 6)
    if x < 0.75:
        return r.randint(7, 60)
    return r.randint(61, 300)


@dataclass
class Seam:
    """one seam of a trial: what the model does there, and the seed of its draws."""

    b: str
    rng: int


@dataclass
class Trial:
    """a document, where it is cut, and what the model does at each cut."""

    seed: int
    idx: int
    fmt: str
    beh: str  # the trial's behaviour ("mixed": one drawn per seam)
    doc: str
    cuts: list[int]
    seams: list[Seam]
    pass_fmt: str  # the format ``stitch`` is asked for: fmt, or now and then "auto"
    rng0: int


def _trial_behaviour(beh: str, fmt: str, doc: str) -> str:
    """a behaviour the format cannot show falls back to a near one."""
    if beh == "reformat_json" and fmt != "json":
        beh = "repeat"
    if beh == "syntax_slip" and fmt not in ("json", "csv"):
        beh = "restart_unit"
    if beh == "header_repeat" and fmt not in ("csv", "markdown"):
        beh = "restart_unit"
    if beh == "fresh_container" and not (fmt == "json" and doc.lstrip().startswith("[")):
        beh = "repeat"
    return beh


def _pick_cuts(r: random.Random, doc: str) -> list[int]:
    nfr = r.randint(2, 8)
    ncut = min(nfr - 1, max(1, len(doc) // 15))
    cuts: set[int] = set()
    nls = [i for i, ch in enumerate(doc) if ch == "\n"]
    digits = [i for i in range(1, len(doc)) if doc[i].isdigit() and doc[i - 1].isdigit()]
    tries = 0
    while len(cuts) < ncut and tries < 1000:
        tries += 1
        x = r.random()
        if x < 0.5 or not nls:
            c = r.randint(1, len(doc) - 1)
        elif x < 0.65:
            c = r.choice(nls) + 1  # line start
        elif x < 0.75:
            c = r.choice(nls)  # just before newline
        elif x < 0.85 and digits:
            c = r.choice(digits)
        else:
            c = r.randint(1, len(doc) - 1)
        if 0 < c < len(doc):
            cuts.add(c)
    return sorted(cuts)


def _seam_behaviour(
    r: random.Random, beh: str, fmt: str, i: int, *, ncuts: int, content_seam: int
) -> str:
    if beh == "mixed":
        return r.choice(
            [
                x
                for x in MIXABLE
                if not (
                    (x == "reformat_json" and fmt != "json")
                    or (x == "header_repeat" and fmt not in ("csv", "markdown"))
                )
            ]
        )
    if beh in CONTENT_CHANGING:
        return beh if i == content_seam else "exact"
    return beh if (r.random() < 0.7 or i == ncuts - 1) else "exact"


def _fresh_container_cut(doc: str, p: int) -> bool:
    """a cut before an element of the top-level array, after its comma."""
    if (doc[p - 1] == "," and not doc[p].isspace()) or (
        doc[p - 1].isspace() and doc[p] in '{["-0123456789tfn'
    ):
        j = p - 1
        while j > 0 and doc[j].isspace():
            j -= 1
        if doc[j] == ",":
            st = json_state(doc, p)
            if not st[0] and len(st[2]) == 1 and doc[st[2][0][0]] == "[":
                return True
    return False


def _shaped_cuts(b: str, doc: str, lo: int, hi: int) -> list[int] | None:
    """where in [lo, hi] a seam of behaviour ``b`` can be cut (None: anywhere)."""
    if b == "drop_newline":
        return [p for p in range(lo, hi + 1) if doc[p] == "\n"]
    if b == "space_seam":
        return [p for p in range(lo, hi + 1) if doc[p].isalpha() and doc[p - 1].isalpha()]
    if b == "fresh_container":
        return [p for p in range(lo, hi + 1) if _fresh_container_cut(doc, p)]
    if b == "newline_seam":
        return [p for p in range(lo, hi + 1) if doc[p] not in "\r\n" and doc[p - 1] not in "\r\n"]
    return None


def _move_cuts(doc: str, cuts: list[int], seams: list[Seam]) -> None:
    """move cuts that need a particular shape (or make their seam exact)."""
    for i, (c, s) in enumerate(zip(cuts, seams, strict=False)):
        lo = cuts[i - 1] + 1 if i else 1
        hi = cuts[i + 1] - 1 if i + 1 < len(cuts) else len(doc) - 1
        cand = _shaped_cuts(s.b, doc, lo, hi)
        if cand is None:
            continue
        if cand:
            cuts[i] = min(cand, key=lambda p: abs(p - c))
        else:
            s.b = "exact"


def make_trial(seed: int, idx: int) -> Trial:
    r = random.Random(f"{seed}:{idx}")
    fmt = r.choice(["json", "csv", "markdown", "text"])
    doc = GENS[fmt](r)
    while len(doc) < 40:
        doc = GENS[fmt](r)
    beh = _trial_behaviour(r.choice(BEHAVIOURS), fmt, doc)
    cuts = _pick_cuts(r, doc)
    seams = []
    content_seam = r.randrange(len(cuts)) if beh in CONTENT_CHANGING else -1
    for i in range(len(cuts)):
        b = _seam_behaviour(r, beh, fmt, i, ncuts=len(cuts), content_seam=content_seam)
        seams.append(Seam(b=b, rng=r.randint(0, 10**9)))
    trial = Trial(
        seed=seed,
        idx=idx,
        fmt=fmt,
        beh=beh,
        doc=doc,
        cuts=cuts,
        seams=seams,
        pass_fmt=fmt if r.random() < 0.85 else "auto",
        rng0=r.randint(0, 10**9),
    )
    _move_cuts(doc, cuts, seams)
    return trial


def apply_edits(doc: str, edits: list[Edit]) -> str | None:
    out, pos = [], 0
    for a, b, rep in sorted(edits):
        if a < pos:
            return None
        out.append(doc[pos:a])
        out.append(rep)
        pos = b
    out.append(doc[pos:])
    return "".join(out)


# --------------------------------------------------------------------------- render
@dataclass
class Rendering:
    """what a trial sends and what a merge of it may give."""

    frags: list[str]  # the fragments, in order
    accepts: list[str]  # the right documents (the first is the one the model meant)
    alts: list[str]  # other readings of an ambiguous seam: a clean merge to one is excusable
    windows: list[tuple[int, int]]  # spans around the seams a shrinker must not delete


@dataclass
class _RenderState:
    """what the seams of one trial share."""

    fenced: bool = False
    content_accept: list[list[Edit]] = field(default_factory=list)
    rephrase_alt: str | None = None


@dataclass
class _SeamWork:
    """one seam being rendered: its inputs, then what the model emits there."""

    fmt: str
    doc: str
    c: int  # the cut
    e: int  # the end of the piece after it
    crlf: bool
    r: random.Random
    b: str
    piece: str
    pre: str = ""
    post: str = ""
    r_text: str = ""  # emitted repeat text (possibly transformed)
    r_true: int = 0  # how many chars of doc[:c] the emitted r_text stands for
    lo: int = 0
    extra_empty: list[str] = field(default_factory=list)
    seam_variants: list[tuple[list[Edit], str]] = field(default_factory=list)
    body_override: str | None = None
    alts: list[list[Edit]] = field(default_factory=list)

    def repeat_tail(self, n: int) -> None:
        """repeat the last ``n`` characters before the cut (at most all of them)."""
        n = min(n, self.c)
        self.r_text, self.r_true = self.doc[self.c - n : self.c], n

    def line_break(self) -> str:
        return "\r\n" if self.crlf else "\n"


def _exact(w: _SeamWork, st: _RenderState) -> None:
    pass


def _repeat(w: _SeamWork, st: _RenderState) -> None:
    w.repeat_tail(pick_n(w.r))


def _preamble(w: _SeamWork, st: _RenderState) -> None:
    r = w.r
    w.pre = fill(r.choice(PREAMBLES), w.fmt, w.doc, w.c)
    if st.fenced or r.random() < 0.4:
        w.pre += "```" + r.choice(FENCE_LANG[w.fmt]) + "\n"
        st.fenced = True
    k = r.random()
    if k < 0.3:
        w.repeat_tail(pick_n(r))
    elif k < 0.55:
        us = unit_starts(w.fmt, w.doc, w.c)
        if us:
            u = us[r.choice(sorted(us))]
            w.r_text, w.r_true = w.doc[u : w.c], w.c - u


def _repeated_header(fmt: str, doc: str, c: int, us: dict[str, int]) -> tuple[str, dict[str, int]]:
    """the header a model repeats (CSV header, Markdown table head) and where it restarts."""
    if fmt == "csv":
        rs = csv_record_starts(doc)
        hdr = doc[: rs[1]] if len(rs) > 1 else ""
        return hdr, {"row": max([x for x in rs if x <= c])}
    ls = doc.rfind("\n", 0, c) + 1
    if doc[ls : ls + 1] == "|":
        # find the table start
        j = ls
        while j > 0:
            pj = doc.rfind("\n", 0, j - 1) + 1
            if doc[pj : pj + 1] != "|":
                break
            j = pj
        hdr_end = doc.find("\n", doc.find("\n", j) + 1) + 1
        if hdr_end > 0 and hdr_end <= ls:
            return doc[j:hdr_end], {"line": ls}
    return "", us


def _restart_unit(w: _SeamWork, st: _RenderState) -> None:
    """restart_unit and header_repeat."""
    r, doc, c = w.r, w.doc, w.c
    us = unit_starts(w.fmt, doc, c)
    hdr = ""
    if w.b == "header_repeat":
        hdr, us = _repeated_header(w.fmt, doc, c, us)
        if r.random() < 0.4:
            w.pre = fill(
                r.choice(
                    [
                        "Continuing the table:\n\n",
                        "Here are the remaining rows:\n\n",
                        "Sure, continuing (header repeated for clarity):\n",
                    ]
                ),
                w.fmt,
                doc,
                c,
            )
    if us:
        kname = r.choice(sorted(us))
        u = us[kname]
        w.r_text, w.r_true = hdr + doc[u:c], c - u
        w.lo = u
        if hdr and u == c:
            w.r_text, w.r_true = hdr, 0
    else:
        w.r_text, w.r_true = hdr, 0
    if hdr:
        w.lo = 0


def _reformat_json(w: _SeamWork, st: _RenderState) -> None:
    r, doc, c = w.r, w.doc, w.c
    us = unit_starts(w.fmt, doc, c)
    u = us.get("line" if r.random() < 0.5 else "member", us.get("container", max(0, c - 40)))
    u = min(u, c)
    in0 = json_state(doc, u)[0]
    kind = r.choice(["minify", "reindent", "pretty", "spaces"])
    w.r_text = json_reformat(kind, doc[u:c], in0)
    w.r_true = c - u
    w.lo = u


def _ws_repeat(w: _SeamWork, st: _RenderState) -> None:
    r, doc, c, fmt = w.r, w.doc, w.c, w.fmt
    kinds = ["strip_trailing", "eol", "add_blank", "drop_blank", "indent"] + (
        ["rewrap", "rewrap"] if fmt in ("text", "markdown") else []
    )
    kind = r.choice(kinds)
    n = min(r.randint(20, 300), c)
    r_orig = doc[c - n : c]
    r_text = ws_transform(kind, r_orig, w.crlf)
    if r_text == r_orig:
        for k2 in kinds:
            r_text = ws_transform(k2, r_orig, w.crlf)
            if r_text != r_orig:
                kind = k2
                break
    w.r_text, w.r_true = r_text, n
    if kind in ("strip_trailing", "eol", "rewrap") and fmt in ("text", "markdown"):
        w.seam_variants.append(([(c - n, c, r_text)], "any"))
    elif fmt in ("csv", "json"):
        w.seam_variants.append(([(c - n, c, r_text)], "equiv"))


def _restart_doc(w: _SeamWork, st: _RenderState) -> None:
    r, doc, c, fmt = w.r, w.doc, w.c, w.fmt
    if r.random() < 0.5:
        w.pre = fill(
            r.choice(
                [
                    "Here is the complete document from the beginning:\n\n",
                    "Let me start over so it's all in one piece:\n\n",
                    "Restarting:\n",
                ]
            ),
            fmt,
            doc,
            c,
        )
        if st.fenced or r.random() < 0.5:
            w.pre += "```" + r.choice(FENCE_LANG[fmt]) + "\n"
    w.r_text, w.r_true = doc[:c], c
    if fmt == "json" and r.random() < 0.4:
        w.r_text = json_reformat(
            r.choice(["minify", "reindent", "pretty", "spaces"]), doc[:c], False
        )
    w.lo = 0


def _trailing_comma_at(piece: str, in0: bool) -> int | None:
    """where a trailing comma goes before the first closer in the piece (None: nowhere)."""
    st, esc = in0, False
    for j, ch in enumerate(piece):
        if st:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                st = False
            continue
        if ch == '"':
            st = True
        elif ch in "]}":
            k = j - 1
            while k >= 0 and piece[k].isspace():
                k -= 1
            if k >= 0 and piece[k] not in "[{,":
                return k + 1
    return None


def _syntax_slip(w: _SeamWork, st: _RenderState) -> None:
    doc, c, piece = w.doc, w.c, w.piece
    if w.fmt == "json":
        in0 = json_state(doc, c)[0]
        # insert a trailing comma before the first closer in the piece
        pos = _trailing_comma_at(piece, in0)
        if pos is not None:
            w.piece = piece[:pos] + "," + piece[pos:]
        else:
            # slip at the seam instead: the model re-emits the separator
            j = c - 1
            while j > 0 and doc[j].isspace():
                j -= 1
            if doc[j] == "," and not in0:
                w.r_text, w.r_true = ",", 0  # doubled comma
    # csv: blank line at the seam (cut at a row start) or a trailing comma on the row
    elif doc[c - 1] == "\n":
        w.r_text, w.r_true = w.line_break(), 0
    else:
        k = piece.find("\n")
        if k > 0 and not csv_in_quotes(doc, c) and '"' not in piece[:k]:
            k2 = k - 1 if piece[k - 1] == "\r" else k
            w.piece = piece[:k2] + "," + piece[k2:]


def _empty_mid(w: _SeamWork, st: _RenderState) -> None:
    r = w.r
    w.extra_empty = [
        r.choice(
            ["", " ", "\n", "\n\n", "```\n```", "```" + FENCE_LANG[w.fmt][0] + "\n\n```", "  \n"]
        )
        for _ in range(r.randint(1, 2))
    ]
    if r.random() < 0.4:
        w.repeat_tail(pick_n(r))


def _space_seam(w: _SeamWork, st: _RenderState) -> None:
    w.r_text, w.r_true = " ", 0
    w.alts.append([(w.c, w.c, " ")])  # "some" + " times": a space can be meant (kept if valid)


def _fresh_container(w: _SeamWork, st: _RenderState) -> None:
    r = w.r
    if r.random() < 0.4:
        w.pre = fill(
            r.choice(
                [
                    "Here are the remaining records:\n\n",
                    "Continuing the array:\n",
                    "Sure, here are the rest of the items:\n\n```json\n",
                ]
            ),
            w.fmt,
            w.doc,
            w.c,
        )
        st.fenced = st.fenced or w.pre.endswith("```json\n")
    w.r_text, w.r_true = "[" + ("\n" + " " * r.choice([2, 4]) if "\n" in w.doc else ""), 0


def _breaks_freely(fmt: str, doc: str, c: int) -> bool:
    """a line break at the cut can be content: prose, or inside a quoted CSV field."""
    return fmt in ("text", "markdown") or (fmt == "csv" and csv_in_quotes(doc, c))


def _newline_seam(w: _SeamWork, st: _RenderState) -> None:
    doc, c = w.doc, w.c
    w.r_text, w.r_true = w.line_break(), 0
    if _breaks_freely(w.fmt, doc, c) and (doc[c - 1] == " " or doc[c] == " "):
        w.alts.append([(c, c, w.r_text)])


def _drop_newline(w: _SeamWork, st: _RenderState) -> None:
    doc, c = w.doc, w.c
    nl = "\r\n" if doc[c : c + 2] == "\r\n" else "\n"
    if doc[c : c + len(nl)] == nl and len(w.piece) > len(nl):
        w.piece = w.piece[len(nl) :]
        if _breaks_freely(w.fmt, doc, c):
            w.alts.append([(c, c + len(nl), "")])  # the line break is lost: merged reads fine


def _typo_repeat(w: _SeamWork, st: _RenderState) -> None:
    doc, c = w.doc, w.c
    n = min(w.r.randint(4, 120), c)
    r_orig = doc[c - n : c]
    w.r_text = typo(w.r, r_orig)
    w.r_true = n
    w.seam_variants.append(([(c - n, c, w.r_text)], "valid"))


def _json_close(doc: str, u: int) -> int | None:
    """the end of the container opened at ``u`` (None: not closed)."""
    depth, st, esc = 0, False, False
    for j in range(u, len(doc)):
        ch = doc[j]
        if st:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                st = False
            continue
        if ch == '"':
            st = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return j + 1
    return None


def _rephrase_json(w: _SeamWork, u: int) -> Edit | None:
    """the object the cut is in, begun again with a number or a word changed."""
    r = w.r
    # find matching end of that object
    endp = _json_close(w.doc, u)
    if endp and endp <= w.e:
        seg = w.doc[u:endp]
        nums = list(re.finditer(r"(?<=[:\[, ])-?\d+(\.\d+)?(?=[,\]}\s])", seg))
        new: str | None
        if nums:
            m = r.choice(nums)
            newnum = str(int(float(m.group(0))) + r.randint(1, 9))
            new = seg[: m.start()] + newnum + seg[m.end() :]
        else:
            new = None
            sm = list(re.finditer(r'": "([a-z]+)', seg))
            if sm:
                m = r.choice(sm)
                new = seg[: m.start(1)] + m.group(1).upper() + seg[m.end(1) :]
        if new and new != seg:
            return (u, endp, new)
    return None


def _digit_plus_3(m: re.Match[str]) -> str:
    return str((int(m.group(0)) + 3) % 10)


def _rephrase_csv(w: _SeamWork, u: int) -> Edit | None:
    """the cut row begun again with a digit or a word changed."""
    r, doc, c = w.r, w.doc, w.c
    rs = [*csv_record_starts(doc), len(doc)]
    endp = min(x for x in rs if x > u)
    if endp <= w.e and endp > c:
        seg = doc[u:endp]
        new = (
            re.sub(r"\d", _digit_plus_3, seg, count=1)
            if r.random() < 0.5 and re.search(r"\d", seg[seg.find(",") :])
            else None
        )
        if new is None:
            ws = list(re.finditer(r"[A-Za-z]{3,}", seg))
            if ws:
                m = r.choice(ws)
                new = seg[: m.start()] + r.choice(WORDS) + seg[m.end() :]
        if new and new != seg:
            return (u, endp, new)
    return None


def _rephrase_text(w: _SeamWork, u: int) -> Edit | None:
    """the cut sentence begun again with a word or two changed."""
    r, doc, c = w.r, w.doc, w.c
    m = re.search(r"[.!?。](?=\s|$)|\n", doc[c:])
    endp = c + m.end() if m else len(doc)
    if endp <= w.e:
        seg = doc[u:endp]
        toks = seg.split(" ")
        cands = [
            i2
            for i2, word in enumerate(toks)
            if word.strip('.,!?;"').lower() in SYN or (len(word) > 3 and word.isalpha())
        ]
        if cands:
            for i2 in r.sample(cands, min(len(cands), r.randint(1, 2))):
                word = toks[i2]
                stem = word.strip('.,!?;"')
                rep = SYN.get(stem.lower(), r.choice(WORDS))
                toks[i2] = word.replace(stem, rep, 1) if stem else word
            new = " ".join(toks)
            if new != seg:
                return (u, endp, new)
    return None


def _rephrase(w: _SeamWork, st: _RenderState) -> None:
    doc, c, fmt = w.doc, w.c, w.fmt
    us = unit_starts(fmt, doc, c)
    done: Edit | None = None
    if fmt == "json" and "container" in us and doc[us["container"]] == "{":
        done = _rephrase_json(w, us["container"])
    elif fmt == "csv" and "row" in us:
        done = _rephrase_csv(w, us["row"])
    elif fmt in ("text", "markdown") and "sentence" in us:
        done = _rephrase_text(w, us["sentence"])
    if done is None:
        return  # behaves like exact (no change)
    u, endp, new = done
    w.body_override = new + doc[endp : w.e]
    st.content_accept.append([(u, endp, new)])
    if new.endswith(doc[c:endp]):
        st.content_accept.append([])  # the first emission + the continuation is doc itself
    if fmt == "csv" and doc[c:endp].strip() == "":
        st.rephrase_alt = doc[:endp] + new + doc[endp:]  # the cut row was complete: a new row
    elif fmt in ("csv", "json") and valid(fmt, doc[:c] + new + doc[endp:]):
        st.rephrase_alt = (
            doc[:c] + new + doc[endp:]
        )  # read literally, it still makes a valid document
    w.lo = u
    w.r_true = c - u
    w.r_text = new[:0]


def _ellipsis_prefix(w: _SeamWork, st: _RenderState) -> None:
    doc, c, fmt = w.doc, w.c, w.fmt
    w.r_text, w.r_true = w.r.choice(["...", "…", "... ", "[...] "]), 0
    if fmt in ("text", "markdown") and not (doc[c - 1].isalpha() and doc[c].isalpha()):
        w.alts.append([(c, c, w.r_text)])  # an ellipsis can be prose
    elif (
        fmt == "json" and json_state(doc, c)[0] and not (doc[c - 1].isalpha() and doc[c].isalpha())
    ):
        w.alts.append([(c, c, w.r_text)])  # inside a JSON string
    elif fmt == "csv" and not (doc[c - 1].isalnum() and doc[c].isalnum()):
        w.alts.append([(c, c, w.r_text)])


def _quote_change(w: _SeamWork, st: _RenderState) -> None:
    r, doc, c, fmt = w.r, w.doc, w.c, w.fmt
    if fmt == "csv":
        u = unit_starts(fmt, doc, c).get("row", c)
        if u < c and not csv_in_quotes(doc, c) and doc[u:c].count("\n") == 0:
            w.r_text = csv_requote(doc[u:c])
            w.r_true = c - u
            w.lo = u
            w.seam_variants.append(([(u, c, w.r_text)], "equiv"))
        else:
            w.repeat_tail(pick_n(r))
        return
    n = min(r.randint(10, 200), c)
    r_orig = doc[c - n : c]
    if fmt == "json":
        # only swap when the tail is not mid-escape
        if re.search(r"\\(u[0-9a-fA-F]{0,3})?$", r_orig):
            w.r_text = r_orig
        else:
            w.r_text = json_escape_swap(r_orig)
    else:
        w.r_text = text_quote_swap(r_orig)
    w.r_true = n
    if w.r_text != r_orig:
        w.seam_variants.append(([(c - n, c, w.r_text)], "equiv" if fmt == "json" else "any"))


def _elided_restart(w: _SeamWork, st: _RenderState) -> None:
    r, doc, c, fmt = w.r, w.doc, w.c, w.fmt
    m = min(r.randint(0, 100), c)
    nl_pos = [p for p in range(len(doc)) if doc[p] == "\n" and p < c - m]
    a = nl_pos[min(len(nl_pos) - 1, r.randint(0, 3))] + 1 if nl_pos else 0
    if 0 < a < c - m:
        el = r.choice(
            [
                "...\n",
                "…\n",
                "[... earlier content unchanged ...]\n",
                "(rows omitted for brevity)\n" if fmt == "csv" else "...\n",
            ]
        )
        if fmt == "json":
            el = r.choice(["...\n", "  // ... previous entries unchanged ...\n", "  ...\n"])
        w.r_text, w.r_true = doc[:a] + el + doc[c - m : c], c
        w.lo = 0
    else:
        w.r_text, w.r_true = doc[c - m : c], m


SEAM_RENDERERS: dict[str, Callable[[_SeamWork, _RenderState], None]] = {
    "exact": _exact,
    "repeat": _repeat,
    "preamble": _preamble,
    "restart_unit": _restart_unit,
    "header_repeat": _restart_unit,
    "reformat_json": _reformat_json,
    "ws_repeat": _ws_repeat,
    "restart_doc": _restart_doc,
    "syntax_slip": _syntax_slip,
    "empty_mid": _empty_mid,
    "space_seam": _space_seam,
    "fresh_container": _fresh_container,
    "newline_seam": _newline_seam,
    "drop_newline": _drop_newline,
    "typo_repeat": _typo_repeat,
    "rephrase": _rephrase,
    "ellipsis_prefix": _ellipsis_prefix,
    "quote_change": _quote_change,
    "elided_restart": _elided_restart,
}


def _first_fragment(t: Trial, r0: random.Random, st: _RenderState, first: str) -> str:
    """fragment 0, with a chat opener (and an opening fence) now and then."""
    behs = {s.b for s in t.seams}
    if ("preamble" in behs or (t.beh == "mixed" and r0.random() < 0.5)) and r0.random() < 0.6:
        st.fenced = r0.random() < 0.75
        pre = fill(r0.choice(FIRST_PRE), t.fmt, t.doc, 0)
        if st.fenced:
            pre += "```" + r0.choice(FENCE_LANG[t.fmt]) + "\n"
        return pre + first
    return first


def _sign_off(w: _SeamWork, st: _RenderState, r0: random.Random, body: str) -> str:
    """what follows the last fragment: a closing fence, a chat sign-off."""
    r = w.r
    if st.fenced or (w.b == "preamble" and r.random() < 0.5):
        so = (
            fill(r.choice(SIGNOFFS), w.fmt, w.doc, w.c)
            if (w.b == "preamble" or r0.random() < 0.5) and r.random() < 0.6
            else ""
        )
        if st.fenced:
            return ("" if body.endswith("\n") else "\n") + "```" + so
        return so
    return ""


def _csv_repeat_alts(w: _SeamWork) -> None:
    """CSV: a repeat of whole records after a cut at a record end reads as duplicated rows too."""
    doc, c, r_text, r_true = w.doc, w.c, w.r_text, w.r_true
    if (
        w.fmt == "csv"
        and r_text
        and r_true
        and (c - r_true) in set(csv_record_starts(doc))
        and csv_rows(r_text) == csv_rows(doc[c - r_true : c])
    ):
        if c in set(csv_record_starts(doc)):
            w.alts.append([(c, c, r_text)])
        elif doc[c : c + 1] in ("\r", "\n"):
            w.alts.append([(c, c, w.line_break() + r_text)])


def _overlap_alts(w: _SeamWork, body: str) -> None:
    """generic alternative readings: body[:k] == doc[:c][-k:]."""
    doc, c, e, r_text, piece = w.doc, w.c, w.e, w.r_text, w.piece
    rlen = len(r_text)
    maxk = min(len(body), c, 700)
    for k in range(maxk + 1):
        if k == rlen and r_text == doc[c - k : c]:
            continue  # the true reading
        if k and body[:k] != doc[c - k : c]:
            continue
        if k == 0 and (rlen == 0 or w.r_true == 0):
            continue  # junk (not a repeat): specific alternatives are added above
        if k < rlen and rlen - k > T_AMB:
            continue
        w.alts.append([(c, e, body[k:] if k <= len(r_text) else piece[k - len(r_text) :])])
    if r_text and w.r_true == 0:
        # junk before the continuation (a line break, an ellipsis...): once the junk is
        # dropped, a chance overlap of the continuation with the tail is another reading
        for k in range(1, min(len(piece), c, 700) + 1):
            if piece[:k] == doc[c - k : c]:
                w.alts.append([(c, e, piece[k:])])


def _render_seam(t: Trial, i: int, st: _RenderState, r0: random.Random) -> tuple[_SeamWork, str]:
    """seam ``i``: its work (alternatives, window) and the fragment after it."""
    doc, cuts = t.doc, t.cuts
    c = cuts[i]
    e = cuts[i + 1] if i + 1 < len(cuts) else len(doc)
    s = t.seams[i]
    w = _SeamWork(
        fmt=t.fmt,
        doc=doc,
        c=c,
        e=e,
        crlf="\r\n" in doc,
        r=random.Random(s.rng),
        b=s.b,
        piece=doc[c:e],
        lo=c,
    )
    SEAM_RENDERERS.get(w.b, _exact)(w, st)
    body = w.body_override if w.body_override is not None else w.r_text + w.piece
    if i == len(cuts) - 1:
        w.post = _sign_off(w, st, r0, body)
    fragment = w.pre + body + w.post
    if not fragment.strip() and body == w.piece:
        w.alts.append([(c, e, "")])
    _csv_repeat_alts(w)
    if w.body_override is None:
        _overlap_alts(w, body)
    return w, fragment


def _accepted(
    fmt: str, doc: str, st: _RenderState, variants: list[list[tuple[list[Edit], str]]]
) -> list[str]:
    """the right documents: doc, or doc with some seams' acceptable variants."""
    if st.content_accept:
        return [d for ed in st.content_accept if (d := apply_edits(doc, ed)) is not None]
    accepts = [doc]
    for combo in itertools.islice(itertools.product(*[[None, *v] for v in variants]), 64):
        chosen = [x for x in combo if x is not None]
        if not chosen:
            continue
        edits = [e2 for ed, _ in chosen for e2 in ed]
        d2 = apply_edits(doc, edits)
        if d2 is None or any(d2 == a for a in accepts):
            continue
        modes = {m for _, m in chosen}
        if "equiv" in modes and not equivalent(fmt, doc, d2):
            continue
        if "valid" in modes and not valid(fmt, d2):
            continue
        accepts.append(d2)
    return accepts


def _alternatives(
    fmt: str, doc: str, st: _RenderState, seam_alts: list[list[list[Edit]]], accepts: list[str]
) -> list[str]:
    """the other valid readings of the seams that read two ways."""
    alt_docs: list[str] = []
    # single-seam and multi-seam combinations of alternative readings (the other seams
    # read as intended, or as one of their own alternatives)
    groups = [[None, *ga] for ga in seam_alts]
    for combo in itertools.islice(itertools.product(*groups), 256):
        chosen = [x for x in combo if x is not None]
        if not chosen:
            continue
        base = st.content_accept[0] if st.content_accept else []
        d2 = apply_edits(doc, base + [e2 for ed in chosen for e2 in ed])
        if d2 is None or any(same(fmt, d2, a) for a in accepts + alt_docs):
            continue
        if valid(fmt, d2):
            alt_docs.append(d2)
    if st.rephrase_alt is not None and valid(fmt, st.rephrase_alt):
        alt_docs.append(st.rephrase_alt)
    return alt_docs


def render(t: Trial) -> Rendering:
    """fragments, acceptable docs, plausible alternatives, protected windows."""
    fmt, doc, cuts = t.fmt, t.doc, t.cuts
    r0 = random.Random(t.rng0)
    st = _RenderState()
    frags = [_first_fragment(t, r0, st, doc[: cuts[0] if cuts else len(doc)])]
    variants = []  # per seam: list of alternative edit-lists acceptable (besides none)
    seam_alts = []  # per seam: its alternative readings (edit lists)
    windows = []
    for i in range(len(cuts)):
        w, fragment = _render_seam(t, i, st, r0)
        frags.extend(w.extra_empty)
        frags.append(fragment)
        hi = w.e if w.b in ("syntax_slip", "rephrase", "drop_newline") else w.c + 2
        windows.append((min(w.lo, w.c - w.r_true) - 22, hi))
        variants.append(w.seam_variants)
        seam_alts.append(w.alts)
    accepts = _accepted(fmt, doc, st, variants)
    return Rendering(
        frags=frags,
        accepts=accepts,
        alts=_alternatives(fmt, doc, st, seam_alts, accepts),
        windows=windows,
    )
