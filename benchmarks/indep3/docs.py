"""The third corpus's documents: JSON, CSV, Markdown and plain text, drawn from a seeded rng.

``make_doc(kind, rng, want)`` draws one document of ``kind`` and returns its text with what
the behaviours may know of it beyond the text (``DocInfo``: for JSON the value written and
where each of its values stands, for CSV its records). ``want`` asks for a feature a
behaviour needs (an escaped string, a duplicated record, a table, a fenced block...).

Ported from the independent author's ``docs.py`` with types added and long functions cut
into helpers; the random draws, their order and the documents are unchanged.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from dataclasses import dataclass, field
from decimal import Decimal

# --------------------------------------------------------------------------- vocabulary
FIRST = [
    "Ana", "Bruno", "Chloé", "Dmitri", "Eszter", "Farid", "Greta", "Hiro", "Inés", "Jonas",
    "Kaja", "Léa", "Mateo", "Nnamdi", "Olga", "Pål", "Quentin", "Renée", "Søren", "Tomás",
    "Uma", "Wen", "Yusuf", "Zoë",
]  # fmt: skip
LAST = [
    "Smith", "Müller", "García", "O'Brien", "Nakamura", "Kowalski", "Dubois", "Rossi", "Novák",
    "Andersson", "Öztürk", "Silva", "Nguyen", "Ferreira", "D'Angelo",
]  # fmt: skip
CITY = [
    "Zürich", "São Paulo", "Kraków", "Montréal", "Reykjavík", "Málaga", "Berlin", "Oslo",
    "Lyon", "Austin", "東京", "Delhi", "Cork", "Porto",
]  # fmt: skip
WORDS = [
    "alpha", "beta", "gamma", "delta", "report", "server", "queue", "cache", "river", "harbor",
    "signal", "window", "budget", "figure", "policy", "sample", "metric", "target", "review",
    "draft", "module", "export", "import", "record", "filter", "batch", "cluster", "ledger",
    "invoice", "shipment", "account", "profile",
]  # fmt: skip
TAGS = ["new", "vip", "beta", "legacy", "eu", "us", "trial", "priority", "archived", "café"]

SUBJ = [
    "The committee", "Marta", "The old lighthouse keeper", "Our team", "The server",
    "Each participant", "The river", "Dr. Okafor", "The new policy",
    "A small group of volunteers", "Her brother", "The auditor",
]  # fmt: skip
VERB = [
    "reviewed", "noticed", "carried", "rejected", "described", "measured", "repaired",
    "announced", "questioned", "followed", "ignored", "rebuilt",
]  # fmt: skip
OBJ = [
    "the quarterly figures", "a faint light on the horizon", "every request in the queue",
    "the proposal without comment", "the results in detail", "the distance to the harbor",
    "the broken gate", "a change to the schedule", "the assumptions behind the model",
    "the path along the cliffs", "the café's old sign", "the naïve estimate",
]  # fmt: skip
TAIL = [
    "before noon", "with some reluctance", "for the third time that week", "despite the rain",
    "in under an hour", "as expected", "without telling anyone", "after a long pause",
    "at the end of the meeting", "while the others slept",
]  # fmt: skip
QUOTES = [
    "I don't think so", "The train leaves at six", "We should have checked the logs first",
    "Nobody told me about the meeting", "It's colder than yesterday",
    "Are you sure that's right", "Leave it on the table", "That was never the plan",
    "Ask Tomás, he knows",
]  # fmt: skip
SPEAKERS = [
    "Marta said", "said the keeper", "Jonas replied", "she whispered", "he asked",
    "Inés said quietly",
]  # fmt: skip

# lines that look like model chatter but are real content
STRONG_NOTE = [
    "Note: All prices exclude VAT.",
    "Note: the figures below are preliminary.",
    "Summary: the migration completed without data loss.",
    "Update: the deadline moved to 14 March.",
    "Sure enough, the door was open.",
    "Continuing down the road, they reached the old mill.",
    "Certainly not, she thought.",
    "Here the trail splits in two.",
]
WEAK_NOTE = [
    "Here is the full list of supported options:",
    "Here's the complete schedule for the week:",
    "Below is the rest of the configuration:",
    "The remaining steps are:",
]


def sentence(rng: random.Random, dialogue: bool = True) -> str:
    r = rng.random()
    if dialogue and r < 0.25:
        q1, q2 = rng.choice(QUOTES), rng.choice(QUOTES)
        end = "?" if q1.startswith(("Are", "Is")) else ","
        return f'"{q1}{end}" {rng.choice(SPEAKERS)}. "{q2}."'
    s = f"{rng.choice(SUBJ)} {rng.choice(VERB)} {rng.choice(OBJ)}"
    if rng.random() < 0.7:
        s += " " + rng.choice(TAIL)
    if rng.random() < 0.2:
        s += f", and {rng.choice(SUBJ).lower()} {rng.choice(VERB)} {rng.choice(OBJ)}"
    return s + rng.choice([".", ".", ".", "!", "?"] if r > 0.9 else ["."])


def paragraph(
    rng: random.Random, n: int | None = None, dialogue: bool = True, md: bool = False
) -> str:
    n = n or rng.randint(2, 6)
    out = []
    for _ in range(n):
        s = sentence(rng, dialogue)
        if md and rng.random() < 0.25:
            w = rng.choice(
                [
                    "`timeout`",
                    "**important**",
                    "*carefully*",
                    f"[the guide](https://example.com/docs/guide?id={rng.randint(1, 99)})",
                    "[RFC 8259](https://www.rfc-editor.org/rfc/rfc8259)",
                    "<kbd>Ctrl</kbd>+<kbd>C</kbd>",
                    "`--dry-run`",
                ]
            )
            s = s[:-1] + " (see " + w + ")" + s[-1]
        out.append(s)
    return " ".join(out)


@dataclass
class DocInfo:
    """what a behaviour may know of a document beyond its text."""

    spans: list[Span] = field(default_factory=list)  # JSON: every value, inner ones first
    style: Style | None = None  # JSON: how it is laid out
    root: Node | None = None  # JSON: the value written
    records: list[Record] = field(default_factory=list)  # CSV: the header, then the rows
    eol: str = "\n"  # CSV: the line terminator


# --------------------------------------------------------------------------- JSON
SCALARS = "snl"


@dataclass
class Node:
    """a JSON value as written: a scalar's text, an object's members or an array's items."""

    kind: str  # "s" string, "n" number, "l" true/false/null, "o" object, "a" array
    raw: str = ""  # a scalar's text
    members: list[tuple[str, Node]] = field(default_factory=list)  # (key as written, value)
    items: list[Node] = field(default_factory=list)


def obj(members: list[tuple[str, Node]]) -> Node:
    return Node("o", members=members)


def arr(items: list[Node]) -> Node:
    return Node("a", items=items)


@dataclass
class Style:
    """how a JSON document is laid out (``indent`` None: all on one line)."""

    indent: str | None
    sep: str  # between the items of a one-line container
    colon: str
    inline_scalars: bool  # an array of scalars stays on one line


@dataclass(eq=False)
class Span:
    """where one value of a JSON document stands in its text."""

    node: Node
    start: int
    depth: int
    elem: bool  # an array's item
    mstart: int | None  # an object's member: where its key starts
    parent: Span | None
    end: int = -1


def jstr(s: str, esc: str = "literal", slash: bool = False) -> str:
    """``s`` as a JSON string; ``esc`` "ascii" writes non-ASCII characters as \\u escapes."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "/" and slash:
            out.append("\\/")
        elif o > 126 and esc == "ascii":
            if o > 0xFFFF:
                o -= 0x10000
                out.append(f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}")
            else:
                out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def num_norm(raw: str) -> str | None:
    """another way a model might write the same number"""
    d = Decimal(raw)
    cands = []
    if d == d.to_integral_value() and abs(d) < 10**15:
        cands.append(str(int(d)))
    cands.append(format(d.normalize(), "f"))
    cands.append(repr(float(raw)))
    if "e" not in raw.lower() and d != 0 and abs(d) < Decimal("0.001"):
        cands.append(f"{float(raw):g}")
    for c in cands:
        if c != raw:
            return c
    return None


NUMS = [
    "0.10", "1e-5", "1.0", "2.50", "1.5E+3", "-0.001", "3.14159", "100", "0", "-42", "19.99",
    "0.00001", "6.02e23", "12.0", "0.5", "7", "1E-7", "250.00",
]  # fmt: skip


class _JsonWriter:
    """writes a value in a style and records where each of its values stands."""

    def __init__(self, style: Style) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.spans: list[Span] = []
        self.style = style

    def write(self, s: str) -> None:
        self.parts.append(s)
        self.pos += len(s)

    def emit(
        self,
        node: Node,
        depth: int,
        elem: bool = False,
        mstart: int | None = None,
        parent: Span | None = None,
    ) -> None:
        span = Span(node, self.pos, depth, elem, mstart, parent)
        if node.kind in SCALARS:
            self.write(node.raw)
        else:
            self._container(node, depth, span)
        span.end = self.pos
        self.spans.append(span)

    def _container(self, node: Node, depth: int, span: Span) -> None:
        st = self.style
        indent = st.indent
        if node.kind == "a" and st.inline_scalars and all(x.kind in SCALARS for x in node.items):
            indent = None
        n = len(node.members) if node.kind == "o" else len(node.items)
        self.write("{" if node.kind == "o" else "[")
        for i in range(n):
            if indent is None:
                if i:
                    self.write(st.sep)
            else:
                if i:
                    self.write(",")
                self.write("\n" + indent * (depth + 1))
            if node.kind == "o":
                key, value = node.members[i]
                ms = self.pos
                self.write(key + st.colon)
                self.emit(value, depth + 1, mstart=ms, parent=span)
            else:
                self.emit(node.items[i], depth + 1, elem=True, parent=span)
        if n and indent is not None:
            self.write("\n" + indent * depth)
        self.write("}" if node.kind == "o" else "]")


def emit_json(node: Node, style: Style, depth: int = 0) -> tuple[str, list[Span]]:
    w = _JsonWriter(style)
    w.emit(node, depth)
    return "".join(w.parts), w.spans


class _JsonDraws:
    """the values of one JSON document: its strings escaped one way throughout (or mixed)."""

    def __init__(self, rng: random.Random, want: tuple[str, ...]) -> None:
        self.rng = rng
        self.esc_mode = rng.choice(["literal", "ascii", "mixed", "literal"])
        self.slash = rng.random() < 0.25
        if "escape" in want:
            self.esc_mode = rng.choice(["ascii", "mixed"])

    def s(self, s: str) -> Node:
        e = self.esc_mode if self.esc_mode != "mixed" else self.rng.choice(["literal", "ascii"])
        return Node("s", jstr(s, e, self.slash))

    def n(self) -> Node:
        rng = self.rng
        return Node("n", rng.choice(NUMS) if rng.random() < 0.6 else str(rng.randint(-5, 5000)))

    def name(self) -> str:
        return f"{self.rng.choice(FIRST)} {self.rng.choice(LAST)}"

    def text(self) -> str:
        rng = self.rng
        t = paragraph(rng, rng.randint(1, 2))
        if rng.random() < 0.3:
            t += ' She wrote: "see \\\\share\\docs" and a tab\there.'
        if rng.random() < 0.2:
            t += "\nSecond line."
        return t


def _json_users(d: _JsonDraws, n: int, dup: bool) -> Node:
    rng, k = d.rng, jstr
    users: list[Node] = []
    for i in range(n):
        users.append(
            obj(
                [
                    (k("id"), Node("n", str(i + 1))),
                    (k("name"), d.s(d.name())),
                    (k("email"), d.s(f"user{i + 1}@example.com")),
                    (k("active"), Node("l", rng.choice(["true", "false"]))),
                    (k("score"), d.n()),
                    (k("tags"), arr([d.s(rng.choice(TAGS)) for _ in range(rng.randint(0, 3))])),
                    (
                        k("address"),
                        obj(
                            [
                                (k("city"), d.s(rng.choice(CITY))),
                                (k("zip"), d.s(f"{rng.randint(0, 99999):05d}")),
                                (k("url"), d.s(f"https://maps.example.com/{i}/view")),
                            ]
                        ),
                    ),
                    (k("bio"), d.s(d.text()) if rng.random() < 0.6 else Node("l", "null")),
                ]
            )
        )
        if dup and i == n // 2:
            users.append(users[-1])
    return obj(
        [
            (k("users"), arr(users)),
            (k("total"), Node("n", str(len(users)))),
            (k("generated"), d.s(f"2024-05-{rng.randint(1, 28):02d}T10:00:00Z")),
        ]
    )


def _json_products(d: _JsonDraws, n: int, dup: bool) -> Node:
    rng, k = d.rng, jstr
    products: list[Node] = []
    for i in range(n):
        products.append(
            obj(
                [
                    (k("sku"), d.s(f"SKU-{rng.randint(0, 9999):04d}")),
                    (k("title"), d.s(rng.choice(OBJ).capitalize())),
                    (k("price"), d.n()),
                    (k("dims"), arr([d.n(), d.n(), d.n()])),
                    (k("desc"), d.s(d.text())),
                    (k("in_stock"), Node("l", rng.choice(["true", "false", "null"]))),
                ]
            )
        )
        if dup and i == n // 2:
            products.append(products[-1])
    return arr(products)


def _json_config(d: _JsonDraws) -> Node:
    rng, k = d.rng, jstr
    return obj(
        [
            (k("version"), d.s(f"1.{rng.randint(0, 9)}")),
            (k("name"), d.s(f"{rng.choice(WORDS)}-{rng.choice(WORDS)}")),
            (
                k("settings"),
                obj(
                    [
                        (k(w), rng.choice([d.n(), d.s(rng.choice(CITY)), Node("l", "true")]))
                        for w in rng.sample(WORDS, rng.randint(2, 8))
                    ]
                ),
            ),
            (
                k("paths"),
                arr(
                    [
                        d.s(f"/var/{rng.choice(WORDS)}/{rng.choice(WORDS)}")
                        for _ in range(rng.randint(1, 5))
                    ]
                ),
            ),
            (k("notes"), d.s('Use "quotes" carefully; path C:\\temp\\new, café ✓ 😀')),
            (
                k("thresholds"),
                arr(
                    [
                        obj(
                            [
                                (k("level"), d.s(rng.choice(["low", "mid", "high"]))),
                                (k("value"), d.n()),
                            ]
                        )
                        for _ in range(rng.randint(1, 6))
                    ]
                ),
            ),
        ]
    )


def _json_events(d: _JsonDraws, n: int, dup: bool) -> Node:
    rng, k = d.rng, jstr
    events: list[Node] = []
    for i in range(n):
        day, hour, minute = rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59)
        ts = f"2024-03-{day:02d}T{hour:02d}:{minute:02d}:00Z"
        events.append(
            obj(
                [
                    (k("ts"), d.s(ts)),
                    (k("type"), d.s(rng.choice(["click", "view", "purchase", "error"]))),
                    (
                        k("payload"),
                        obj(
                            [
                                (k("message"), d.s(sentence(rng))),
                                (k("value"), d.n()),
                                (
                                    k("items"),
                                    arr([obj([(k("q"), d.n())]) for _ in range(rng.randint(0, 2))]),
                                ),
                            ]
                        ),
                    ),
                ]
            )
        )
        if dup and i == n // 2:
            events.append(events[-1])
    return obj([(k("events"), arr(events))])


def _json_matrix(d: _JsonDraws) -> Node:
    rng, k = d.rng, jstr
    rows = [arr([d.n() for _ in range(rng.randint(2, 5))]) for _ in range(rng.randint(2, 8))]
    return obj(
        [
            (k("matrix"), arr(rows)),
            (k("labels"), arr([d.s(rng.choice(CITY)) for _ in rows])),
            (k("unit"), d.s("µm")),
        ]
    )


def _json_style(rng: random.Random) -> Style:
    r = rng.random()
    if r < 0.15:
        return Style(indent=None, sep=",", colon=":", inline_scalars=True)
    if r < 0.25:
        return Style(indent=None, sep=", ", colon=": ", inline_scalars=True)
    return Style(
        indent=rng.choice(["  ", "  ", "    ", "\t"]),
        sep=", ",
        colon=": ",
        inline_scalars=rng.random() < 0.5,
    )


def json_doc(rng: random.Random, want: tuple[str, ...] = ()) -> tuple[str, DocInfo]:
    d = _JsonDraws(rng, want)
    tpl = rng.choice(["users", "products", "config", "events", "matrix"])
    dup = "dup" in want
    if dup:
        tpl = rng.choice(["users", "products", "events"])
    n = rng.randint(2, 14)
    if tpl == "users":
        root = _json_users(d, n, dup)
    elif tpl == "products":
        root = _json_products(d, n, dup)
    elif tpl == "config":
        root = _json_config(d)
    elif tpl == "events":
        root = _json_events(d, n, dup)
    else:
        root = _json_matrix(d)
    style = _json_style(rng)
    txt, spans = emit_json(root, style)
    if rng.random() < 0.5:
        txt += "\n"
    json.loads(txt)  # raises if the writer wrote invalid JSON
    return txt, DocInfo(spans=spans, style=style, root=root)


# --------------------------------------------------------------------------- CSV
@dataclass
class Record:
    """a CSV record: its span (without the line terminator) and its fields' (start, end, quoted)."""

    start: int
    end: int
    fields: list[tuple[int, int, bool]]


def csv_field(v: str, allq: bool) -> str:
    if allq or any(c in v for c in ',"\n\r') or v != v.strip():
        return '"' + v.replace('"', '""') + '"'
    return v


CSV_SCHEMAS = [
    ["id", "name", "email", "city", "amount", "notes"],
    ["order_id", "customer", "address", "total", "status", "comment", "extra1", "extra2"],
    ["date", "description", "debit", "credit", "balance"],
    ["sku", "title", "price", "qty", "tags", ""],
]


def _csv_text_value(rng: random.Random, col: str, r: float) -> str:
    """a free-text column's value (``r`` drawn for it already)."""
    if col in ("notes", "comment", "description", "title"):
        opts = [
            sentence(rng, False),
            'He said ""ok"" twice',
            "",
            "line one\nline two",
            "contains, comma",
            '"quoted" start',
            "multi\nline\nnote, with comma",
            rng.choice(OBJ),
        ]
        return rng.choice(opts).replace('""', '"')
    if col == "address":
        if r < 0.5:
            return (
                f"{rng.randint(1, 200)} {rng.choice(WORDS).title()} St\n"
                f"Apt {rng.randint(1, 30)}\n{rng.choice(CITY)}"
            )
        return f"{rng.randint(1, 200)} Main St, {rng.choice(CITY)}"
    return "" if r < 0.85 else rng.choice(WORDS)


def _csv_value(rng: random.Random, col: str, i: int) -> str:
    r = rng.random()
    if col in ("id", "order_id", "qty"):
        return str(i + 1 if col != "qty" else rng.randint(0, 50))
    if col in ("name", "customer"):
        if r < 0.4:
            return f"{rng.choice(LAST)}, {rng.choice(FIRST)}"
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if col == "email":
        return f"user{i}@example.com" if r > 0.1 else ""
    if col == "city":
        return rng.choice(CITY)
    if col in ("amount", "total", "debit", "credit", "balance", "price"):
        if r < 0.5:
            return rng.choice(["", "12.50", "0.10", "1,200.00", "-3.99", "100", "7.0"])
        return f"{rng.random() * 500:.2f}"
    if col == "status":
        return rng.choice(["shipped", "pending", "", "cancelled"])
    if col == "date":
        return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if col == "tags":
        return ";".join(rng.sample(TAGS, rng.randint(0, 3)))
    return _csv_text_value(rng, col, r)


def csv_doc(rng: random.Random, want: tuple[str, ...] = ()) -> tuple[str, DocInfo]:
    schema = rng.choice(CSV_SCHEMAS)
    n = rng.randint(3, 25)
    rows = []
    for i in range(n):
        row = [_csv_value(rng, col, i) for col in schema]
        rows.append(row)
        if "dup" in want and i == n // 2:
            rows.append(list(row))
    allq = rng.random() < 0.2
    eol = "\r\n" if rng.random() < 0.1 else "\n"
    lines = [",".join(csv_field(h, allq and h != "") for h in schema)]
    for row in rows:
        lines.append(
            ",".join(
                csv_field(v, allq and v != "" and not re.fullmatch(r"-?[\d.]+", v)) for v in row
            )
        )
    txt = eol.join(lines) + (eol if rng.random() < 0.7 else "")
    return txt, DocInfo(records=csv_records(txt), eol=eol)


def _csv_field_end(txt: str, i: int) -> tuple[int, bool]:
    """where the field starting at ``i`` ends, and whether it is quoted."""
    n = len(txt)
    if i < n and txt[i] == '"':
        i += 1
        while i < n:
            if txt[i] == '"':
                if i + 1 < n and txt[i + 1] == '"':
                    i += 2
                    continue
                i += 1
                break
            i += 1
        return i, True
    while i < n and txt[i] not in ",\r\n":
        i += 1
    return i, False


def csv_records(txt: str) -> list[Record]:
    recs, i, n = [], 0, len(txt)
    while i < n:
        start, fields = i, []
        while True:
            fs = i
            i, quoted = _csv_field_end(txt, i)
            fields.append((fs, i, quoted))
            if i < n and txt[i] == ",":
                i += 1
                continue
            break
        end = i
        if txt.startswith("\r\n", i):
            i += 2
        elif i < n:
            i += 1
        recs.append(Record(start, end, fields))
    return recs


def csv_rows(txt: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(txt, newline="")))


# --------------------------------------------------------------------------- Markdown
def _python_body(rng: random.Random) -> list[str]:
    fn = rng.choice(["load_config", "parse_rows", "retry", "merge_parts"])
    body = [
        f"def {fn}(path: str, limit: int = {rng.randint(1, 50)}) -> dict:",
        '    """Load *path* and return at most {limit} entries."""',
        '    with open(path, encoding="utf-8") as fh:',
        "        data = yaml.safe_load(fh) or {}",
        "    if not data:",
        '        raise ValueError(f"empty config: {path}")',
        "    for key, value in data.items():",
        "        if isinstance(value, str) and value.startswith('$'):",
        "            data[key] = os.environ.get(value[1:], '')",
        "    return dict(list(data.items())[:limit])",
    ]
    return body[: rng.randint(4, len(body))] + (
        ["", "", f"print({fn}('config.yaml'))"] if rng.random() < 0.4 else []
    )


def code_block(rng: random.Random) -> str:
    lang = rng.choice(["python", "sql", "yaml", "bash", "json", "python"])
    if lang == "python":
        body = _python_body(rng)
    elif lang == "sql":
        body = [
            "SELECT u.id, u.name, COUNT(o.id) AS orders",
            "FROM users AS u",
            "LEFT JOIN orders AS o ON o.user_id = u.id",
            f"WHERE u.created_at >= '2024-0{rng.randint(1, 9)}-01'",
            "  AND u.email NOT LIKE '%@test.%'",
            "GROUP BY u.id, u.name",
            f"HAVING COUNT(o.id) > {rng.randint(0, 5)}",
            "ORDER BY orders DESC",
            "LIMIT 10;",
        ]
    elif lang == "yaml":
        body = [
            "server:", "  host: 0.0.0.0", f"  port: {rng.choice([8080, 8000, 443])}",
            "  workers: 4", "database:", "  url: postgres://app@db:5432/app", "  pool:",
            "    min: 1", "    max: 10", "features:", "  - search", "  - export",
            "  - name: beta", "    enabled: false",
        ]  # fmt: skip
    elif lang == "bash":
        body = [
            "set -euo pipefail",
            "for f in data/*.csv; do",
            '  echo "processing $f"',
            '  python import.py --file "$f" --batch 500',
            "done",
        ]
    else:
        body = ["{", '  "name": "demo",', '  "retries": 3,', '  "paths": ["/tmp", "/var/log"]', "}"]
    return f"```{lang}\n" + "\n".join(body) + "\n```"


def _md_cell(rng: random.Random, c: str) -> str:
    r = rng.random()
    if c in ("Qty", "Q1", "Q2"):
        return str(rng.randint(0, 999))
    if c in ("Price", "Change"):
        return rng.choice(["$4.50", "-3%", "+12.5%", "€1,200", "0.10"])
    if c == "Default":
        return rng.choice(["`30`", "`true`", "`null`", "—", '`"utf-8"`'])
    if r < 0.2:
        return f"[{rng.choice(WORDS)}](https://example.com/{rng.choice(WORDS)})"
    if r < 0.3:
        return "a \\| b"
    return rng.choice(OBJ).capitalize()


def md_table(rng: random.Random) -> str:
    cols = rng.choice(
        [
            ["Name", "Qty", "Price"],
            ["Option", "Default", "Description"],
            ["Region", "Q1", "Q2", "Change"],
        ]
    )
    aligns = [rng.choice([":---", "---:", ":---:", "---", ":--"]) for _ in cols]
    pad = rng.random() < 0.5

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |" if pad else "|" + "|".join(cells) + "|"

    rows = [row(cols), row(aligns)]
    for _ in range(rng.randint(2, 9)):
        rows.append(row([_md_cell(rng, c) for c in cols]))
    return "\n".join(rows)


def md_list(rng: random.Random, numbered: bool) -> str:
    out, n = [], rng.randint(2, 7)
    for i in range(n):
        marker = f"{i + 1}." if numbered else rng.choice(["-", "-", "*"])
        out.append(f"{marker} {sentence(rng, False)}")
        if rng.random() < 0.35:
            sub_num = rng.random() < 0.5
            for j in range(rng.randint(1, 3)):
                sm = f"{j + 1}." if sub_num else "-"
                ind = "   " if numbered else "  "
                out.append(
                    f"{ind}{sm} {rng.choice(VERB).capitalize()} `{rng.choice(WORDS)}` "
                    f"{rng.choice(TAIL)}"
                )
    return "\n".join(out)


MD_HTML = [
    '<img src="https://example.com/chart.png" alt="Chart of Q1 results" width="600">',
    '<p align="center">Press <kbd>Ctrl</kbd>+<kbd>S</kbd> to save.<br>Then reload.</p>',
]


def _md_blocks(rng: random.Random, k: str) -> list[str]:
    """the blocks one kind of Markdown block is written as (a code block has an intro)."""
    if k == "para":
        return [paragraph(rng, md=True)]
    if k in ("ulist", "olist"):
        return [md_list(rng, k == "olist")]
    if k == "table":
        return [md_table(rng)]
    if k in ("code", "fence"):
        intro = rng.choice(["Example:", "Run the following:", "For instance:"])
        return [intro, code_block(rng)]
    if k == "quote":
        return ["\n".join("> " + sentence(rng) for _ in range(rng.randint(1, 3)))]
    if k == "html":
        details = (
            "<details>\n<summary>Show the raw output</summary>\n\n"
            + paragraph(rng, 1)
            + "\n\n</details>"
        )
        return [rng.choice([details, *MD_HTML])]
    if k == "hr":
        return ["---"]
    if k == "link":
        x = rng.randint(10, 999)
        return [
            "See [the deployment guide](https://example.com/docs/deploy#rollback-steps) and "
            f"[issue #{x}](https://github.com/acme/app/issues/{x}) for details."
        ]
    if k == "note":
        return [rng.choice(STRONG_NOTE[:4])]
    if k == "weak":
        return [rng.choice(WEAK_NOTE), md_list(rng, False)]
    ln = "- " + sentence(rng, False)  # "dup": a list item written twice
    return [ln + "\n" + ln]


MD_KINDS = [
    "para", "ulist", "olist", "table", "code", "quote", "html", "hr", "para", "code", "olist",
    "table",
]  # fmt: skip


def md_doc(rng: random.Random, want: tuple[str, ...] = ()) -> tuple[str, DocInfo]:
    blocks = [
        f"# {rng.choice(WORDS).title()} {rng.choice(['Guide', 'Report', 'Notes', 'Runbook'])}",
        paragraph(rng, md=True),
    ]
    wanted = ("table", "code", "olist", "link", "note", "weak", "dup", "fence")
    forced = [k for k in wanted if k in want]
    nsec = rng.randint(2, 5)
    for si in range(nsec):
        word = rng.choice(WORDS).title()
        topic = rng.choice(["setup", "results", "options", "usage", "caveats"])
        blocks.append(f"## {si + 1}. {word} {topic}")
        ks = [rng.choice(MD_KINDS) for _ in range(rng.randint(1, 4))]
        if si == nsec // 2 and forced:
            ks.insert(rng.randint(0, len(ks)), rng.choice(forced))
        for k in ks:
            blocks.extend(_md_blocks(rng, k))
    return "\n\n".join(blocks) + "\n", DocInfo()


# --------------------------------------------------------------------------- text
def text_doc(rng: random.Random, want: tuple[str, ...] = ()) -> tuple[str, DocInfo]:
    paras = []
    if rng.random() < 0.3:
        paras.append(f"Chapter {rng.randint(1, 12)}")
    n = rng.randint(2, 8)
    for i in range(n):
        paras.append(paragraph(rng, dialogue=True))
        if i != n // 2:
            continue
        if "note" in want:
            paras.append(rng.choice(STRONG_NOTE) + " " + sentence(rng))
        if "dup" in want:
            line = rng.choice(
                [
                    "And still the river ran.",
                    "Nobody answered.",
                    "Again the bell.",
                    '"No," she said.',
                ]
            )
            paras.append(line + "\n" + line + "\n" + sentence(rng))
        if "weak" in want:
            intro = rng.choice(WEAK_NOTE)
            items = "\n".join("- " + rng.choice(OBJ) for _ in range(3))
            paras.append(intro + "\n" + items)
    txt = "\n\n".join(paras) + ("\n" if rng.random() < 0.8 else "")
    return txt, DocInfo()


def make_doc(kind: str, rng: random.Random, want: tuple[str, ...] = ()) -> tuple[str, DocInfo]:
    return {"json": json_doc, "csv": csv_doc, "markdown": md_doc, "text": text_doc}[kind](rng, want)
