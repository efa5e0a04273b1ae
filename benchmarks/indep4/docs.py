# ruff: noqa: RUF001
"""Seeded document generators (JSON, CSV, Markdown, plain text) for the indep4 corpus.

Written without reading the engine: these are the kinds of documents people ask a model
for when the answer outgrows one reply (record dumps, articles with long escaped strings,
matrices, logs, translation tables, reports with front matter, tables and footnotes,
prose with typographic punctuation, and multilingual text with CJK, RTL scripts,
combining marks and emoji ZWJ sequences).

Each generator returns a `Doc`: the text plus the offsets the trial generator needs to
place realistic seams (record starts, table rows, long JSON strings, quoted CSV fields).
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

# --- shared pools ---------------------------------------------------------------------

NAMES = [
    "Alice Moreau",
    "Bob Tanaka",
    "Chiara Rossi",
    "Dmitri Volkov",
    "Emeka Okafor",
    "Fatima Zahra",
    "Grace O'Neill",
    "Hannah Schmidt",
    "Ivan Petrov",
    "Julia Santos",
    "Kofi Mensah",
    "Laura Bianchi",
    "Marcus Lee",
    "Nadia Haddad",
    "Oliver Brown",
    "Priya Nair",
    "Quentin Dubois",
    "Rosa Jiménez",
    "Sam Whitaker",
    "Tomás Ó Briain",
]
ML_NAMES = [
    "José Álvarez",
    "Zoë Müller",
    "Łukasz Wróbel",
    "Nguyễn Văn An",
    "李娜",
    "田中太郎",
    "김민준",
    "محمد علي",
    "דוד כהן",
    "Ольга Смирнова",
    "Søren Kierkegaard",
    "Siobhán O'Connor",
    "Renée D'Arcy",
    "Ana\u0301 Lo\u0301pez",  # NFD accents, as some macOS sources produce
]
CITIES = [
    "Lisbon",
    "Osaka",
    "Nairobi",
    "Toronto",
    "Kraków",
    "São Paulo",
    "Zürich",
    "Reykjavík",
    "Marseille",
    "Melbourne",
    "Hanoi",
    "Montréal",
    "Cork",
    "Bergen",
]
ML_LINES = [
    "东京的春天很短，樱花一周后就谢了。",
    "我们明天上午十点在三楼会议室开会，请准时参加。",
    "この文書は自動的に生成されました。内容をご確認ください。",
    "서울의 겨울은 매우 춥고 건조합니다. 따뜻하게 입으세요.",
    "مرحبا بكم في التقرير السنوي لعام ٢٠٢٤، ونشكركم على ثقتكم.",
    "הפגישה תתקיים ביום שלישי בשעה 10:30 באולם הגדול.",
    "नमस्ते, आपका ऑर्डर भेज दिया गया है और जल्द ही पहुँचेगा।",
    "Привет! Отчёт будет готов к пятнице, как и обещали.",
    "Η συνάντηση μετατέθηκε για την Τρίτη στις πέντε.",
    "Chúng tôi sẽ giao hàng trong vòng ba ngày làm việc.",
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำในประโยค",
    "The team 👩‍💻👨‍👩‍👧 shipped it on time 🎉🇯🇵👍🏽 — well done!",
    "Cafe\u0301 de\u0301cor with na\u0308ive touches and a pin\u0303ata (NFD text).",
    "🏳️‍🌈 Pride month kickoff ❤️‍🔥 starts at 18:00 🧑🏾‍🍳🍲.",
    "会議の資料は共有フォルダ「２０２４年度／営業」に置いてあります。",
    "新しい機能はまだテスト中なので、本番環境では使わないでください。",
]
SENTENCES = [
    "The quarterly review showed a {n}% increase in active accounts — the strongest result"
    " since {year}.",
    "“We didn’t expect the numbers to hold,” said {name}, “but they did.”",
    "{name} wasn’t convinced… at least not yet.",
    "Shipping to {city} takes 3–5 business days; express delivery costs extra.",
    "It’s worth noting that the API returns timestamps in UTC, not local time.",
    "The team’s new policy — announced on Monday — applies to all contractors.",
    "She paused, then whispered: “Are you sure about this?”",
    "Our tests ran {n} times without a single failure.",
    "According to {name}, the “temporary” fix has been in production for two years.",
    "Prices in {city} rose sharply in the spring; rents, however, stayed flat.",
    "He’d never seen the harbour so quiet — not even in winter.",
    "The results, while encouraging, aren’t conclusive.",
    "Please don’t hesitate to reach out if anything is unclear.",
    "“Let’s call it a day,” {name} suggested, closing the laptop.",
    "The committee met on {date} to discuss the budget for {year}.",
    "Nobody asked why the lights in the east wing kept flickering…",
    "In short: measure twice, cut once.",
    "The old bridge, built in {year}, still carries {n} thousand cars a day.",
    "Visitors to {city} often say the same thing: “I wish I’d stayed longer.”",
    "The data was cleaned, deduplicated and — where possible — cross-checked.",
    "{name}’s proposal was simple: fewer meetings, more written updates.",
    "Temperatures dropped to −{small}°C overnight, and the pipes froze.",
    "The word ‘deadline’ meant something different to everyone on the team.",
    "Results are rounded to two decimal places (e.g. 3.14 and 2.72).",
    "If the service is unavailable, the client retries up to {small} times with back-off.",
    "“It’s not a bug,” she said, “it’s an undocumented feature.”",
    "The café on the corner serves the best crème brûlée in {city}.",
    "Müller and Søren’s report covered Zürich, São Paulo and Kraków.",
    "The naïve approach — a single global lock — didn’t scale past {small} workers.",
    "The river rose {small} metres in a single night; the town had never seen anything like it.",
    "Every Friday, {name} brought pastries from the bakery on Rue de l’Église.",
    "Make sure the config file ends with a newline; some parsers are picky about that.",
    "The phrase “good enough” appears {small} times in the design doc.",
    "For more details, see section {small}.{small2} of the manual.",
    "It rained all week, and the trail stayed closed until further notice.",
    "The migration took {n} minutes — far less than the estimated three hours.",
    "“Where did you find this?” asked {name}. “In the attic, under a pile of old maps.”",
    "One reviewer wrote: “Solid work… but the conclusion feels rushed.”",
    "Inventory counts are reconciled at 23:00 every night.",
    "By {year}, the co-op had grown to {n} members across {small} towns.",
    "The fix was a one-liner, but finding it took {name} most of the week.",
    "Don’t store secrets in the repository — use the vault instead.",
]
TAGS = ["urgent", "billing", "beta", "legacy", "vip", "eu", "internal", "archived", "new"]
WORDS = [
    "alpha",
    "harbor",
    "quartz",
    "meadow",
    "signal",
    "copper",
    "lantern",
    "summit",
    "orbit",
    "willow",
    "ember",
    "cobalt",
]

ASCII_MAP = {
    "“": '"',
    "”": '"',
    "‘": "'",
    "’": "'",
    "—": "--",
    "–": "-",
    "…": "...",
    "−": "-",
}


def asciify(s: str) -> str:
    """Typographic punctuation to ASCII, as many models and editors write it."""
    for a, b in ASCII_MAP.items():
        s = s.replace(a, b)
    return s


@dataclass(frozen=True)
class Doc:
    """A document and the landmarks trials cut at."""

    kind: str
    text: str
    units: tuple[int, ...] = ()  # record / element / row / section starts
    header: str = ""  # CSV header line, or the JSON text before the first element
    tail_start: int = -1  # JSON: where the closing brackets after the last element begin
    tables: tuple[tuple[str, tuple[int, ...]], ...] = ()  # Markdown: (header+rule, row starts)
    strings: tuple[tuple[int, int], ...] = ()  # JSON: long string literals (start, end)
    quoted: tuple[tuple[int, int], ...] = ()  # CSV: quoted fields (start, end)
    delimiter: str = ","
    ensure_ascii: bool = False


@dataclass(frozen=True)
class Needs:
    """What a behaviour needs from the document it is applied to."""

    multilingual: bool = False
    raw_unicode: bool = False  # JSON: non-ASCII written raw, not as \\u escapes
    typographic: bool | None = None  # None: either
    tables: bool = False
    long_strings: bool = False
    multiline_fields: bool = False
    indented: bool = False


def _fill(rng: random.Random, ml: bool) -> dict[str, str]:
    names = NAMES + (ML_NAMES if ml else [])
    return {
        "name": rng.choice(names),
        "city": rng.choice(CITIES),
        "n": str(rng.randint(2, 97)),
        "year": str(rng.randint(1968, 2024)),
        "date": f"{rng.randint(1, 28)} {rng.choice(['March', 'June', 'October'])}",
        "small": str(rng.randint(2, 9)),
        "small2": str(rng.randint(1, 9)),
    }


def sentence(rng: random.Random, ml: bool = False) -> str:
    if ml and rng.random() < 0.3:
        return rng.choice(ML_LINES)
    return rng.choice(SENTENCES).format(**_fill(rng, ml))


def paragraph(rng: random.Random, ml: bool, lo: int = 2, hi: int = 5) -> str:
    out: list[str] = []
    for _ in range(rng.randint(lo, hi)):
        s = sentence(rng, ml)
        if s not in out:
            out.append(s)
    return " ".join(out)


def _typo(rng: random.Random, needs: Needs) -> bool:
    if needs.typographic is not None:
        return needs.typographic
    return rng.random() < 0.6


# --- JSON -----------------------------------------------------------------------------

JsonV = object


def _dump(v: JsonV, indent: int | None, ea: bool, level: int) -> str:
    s = json.dumps(v, indent=indent, ensure_ascii=ea)
    if indent is None:
        return s
    return s.replace("\n", "\n" + " " * (indent * level))


def _email(name: str, rng: random.Random) -> str:
    base = re.sub(r"[^a-z]", "", name.lower().split()[0]) or rng.choice(WORDS)
    return f"{base}.{rng.randint(1, 99)}@{rng.choice(['example.com', 'mail.test', 'corp.io'])}"


Shaped = tuple[str, dict[str, JsonV], list[JsonV], bool]
Conv = Callable[[str], str]


def _records(rng: random.Random, ml: bool, t: Conv) -> Shaped:
    items: list[JsonV] = []
    for i in range(rng.randint(8, 22)):
        name = rng.choice(NAMES + (ML_NAMES if ml else []))
        items.append(
            {
                "id": 1000 + i * rng.randint(1, 3),
                "name": name,
                "email": _email(name, rng),
                "city": rng.choice(CITIES),
                "score": round(rng.uniform(0, 100), rng.choice([1, 2])),
                "active": rng.random() < 0.7,
                "tags": rng.sample(TAGS, rng.randint(0, 3)),
                "address": {
                    "street": f"{rng.randint(1, 220)} {rng.choice(WORDS).title()} Street",
                    "postcode": f"{rng.randint(10000, 99999)}",
                },
                "notes": t(sentence(rng, ml)) if rng.random() < 0.6 else None,
            }
        )
    meta: dict[str, JsonV] = {
        "generated_at": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T09:30:00Z",
        "source": "crm/export",
        "count": len(items),
    }
    return "records", meta, items, False


def _articles(rng: random.Random, ml: bool, t: Conv) -> Shaped:
    items: list[JsonV] = []
    for i in range(rng.randint(3, 7)):
        body = "\n\n".join(paragraph(rng, ml, 2, 4) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.5:
            body += '\n\nQuote: "' + asciify(sentence(rng, ml)) + '"'
        items.append(
            {
                "id": i + 1,
                "title": t(rng.choice(SENTENCES).format(**_fill(rng, ml)))[:60],
                "author": rng.choice(NAMES + (ML_NAMES if ml else [])),
                "body": t(body),
                "tags": rng.sample(TAGS, 2),
                "url": f"https://example.com/posts/{i + 1}/{rng.choice(WORDS)}",
            }
        )
    return "articles", {"site": "blog.example.com", "lang": "en"}, items, False


def _cell(rng: random.Random) -> JsonV:
    r = rng.random()
    if r < 0.05:
        return None
    return rng.randint(-50, 900) if r < 0.4 else round(rng.uniform(-10, 1000), 3)


def _matrix(rng: random.Random, ml: bool, t: Conv) -> Shaped:
    cols = rng.sample(["x", "y", "z", "t", "load", "temp", "rpm", "err"], rng.randint(4, 7))
    rows: list[JsonV] = [[_cell(rng) for _c in cols] for _ in range(rng.randint(14, 36))]
    meta: dict[str, JsonV] = {"name": f"run-{rng.randint(100, 999)}", "unit": "mm", "columns": cols}
    return "rows", meta, rows, True


def _events(rng: random.Random, ml: bool, t: Conv) -> Shaped:
    items: list[JsonV] = []
    for _ in range(rng.randint(8, 20)):
        items.append(
            {
                "ts": f"2024-05-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
                f"{rng.randint(0, 59):02d}:07Z",
                "level": rng.choice(["INFO", "WARN", "ERROR", "DEBUG"]),
                "message": t(sentence(rng, ml))
                + (' (see "runbook")' if rng.random() < 0.2 else ""),
                "context": {
                    "path": f"/api/v1/{rng.choice(WORDS)}/{rng.randint(1, 999)}",
                    "latency_ms": round(rng.uniform(0.5, 900), 2),
                },
            }
        )
    return "", {}, items, False


def _messages(rng: random.Random, ml: bool, t: Conv) -> Shaped:
    items: list[JsonV] = []
    for _ in range(rng.randint(8, 18)):
        items.append(
            {
                "key": f"{rng.choice(WORDS)}.{rng.choice(['title', 'body', 'cta', 'error'])}",
                "text": rng.choice(ML_LINES) if ml or rng.random() < 0.5 else t(sentence(rng)),
                "max_len": rng.choice([40, 80, 120]),
            }
        )
    locale = rng.choice(["ja-JP", "zh-CN", "ar-EG", "he-IL", "hi-IN", "mixed"])
    return "messages", {"locale": locale, "version": rng.randint(1, 40)}, items, False


def _json_items(rng: random.Random, needs: Needs, ml: bool, typo: bool) -> Shaped:
    """(array key or "" for a top-level array, metadata, elements, rows-are-arrays)."""

    def t(s: str) -> str:
        return s if typo else asciify(s)

    shapes = [_records, _articles, _matrix, _events, _messages]
    if needs.long_strings:
        shapes = [_articles, _articles, _events]
    elif needs.multilingual:
        shapes = [_records, _articles, _messages, _messages]
    return rng.choice(shapes)(rng, ml, t)


def json_doc(rng: random.Random, needs: Needs) -> Doc:
    ml = needs.multilingual or rng.random() < 0.3
    typo = _typo(rng, needs)
    key, meta, items, rows = _json_items(rng, needs, ml, typo)
    r = rng.random()
    indent: int | None = 2 if r < 0.6 else 4 if r < 0.8 else None
    if needs.indented and indent is None:
        indent = 2
    ea = not needs.raw_unicode and rng.random() < 0.25
    units: list[int] = []
    if indent is None:
        if key:
            head = "{" + "".join(
                f"{json.dumps(k)}: {_dump(v, None, ea, 0)}, " for k, v in meta.items()
            )
            head += f"{json.dumps(key)}: ["
            tail = "]}"
        else:
            head, tail = "[", "]"
        parts = [_dump(e, None, ea, 0) for e in items]
        sep = ", "
    else:
        pad = " " * indent
        lvl = 2 if key else 1
        if key:
            head = "{\n" + "".join(
                f"{pad}{json.dumps(k)}: {_dump(v, indent, ea, 1)},\n" for k, v in meta.items()
            )
            head += f"{pad}{json.dumps(key)}: [\n"
            tail = f"\n{pad}]\n}}"
        else:
            head, tail = "[\n", "\n]"
        parts = [
            pad * lvl + (json.dumps(e, ensure_ascii=ea) if rows else _dump(e, indent, ea, lvl))
            for e in items
        ]
        sep = ",\n"
    text = head
    for i, p in enumerate(parts):
        if i:
            text += sep
        units.append(len(text))
        text += p
    tail_start = len(text)
    text += tail
    strings = tuple(
        (m.start(), m.end())
        for m in re.finditer(r'"(?:[^"\\]|\\.)*"', text)
        if m.end() - m.start() > 60
    )
    return Doc("json", text, tuple(units), head, tail_start, strings=strings, ensure_ascii=ea)


# --- CSV ------------------------------------------------------------------------------


def _quote_spans(text: str, delim: str) -> tuple[tuple[int, int], ...]:
    spans: list[tuple[int, int]] = []
    i, n, field_start = 0, len(text), True
    while i < n:
        ch = text[i]
        if field_start and ch == '"':
            j = i + 1
            while j < n:
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        j += 2
                        continue
                    break
                j += 1
            spans.append((i, j + 1))
            i = j + 1
            field_start = False
            continue
        field_start = ch in (delim, "\n")
        i += 1
    return tuple(spans)


Table = tuple[list[str], list[list[str]]]


def _customers(rng: random.Random, ml: bool, t: Conv) -> Table:
    rows: list[list[str]] = []
    for i in range(rng.randint(12, 40)):
        name = rng.choice(NAMES + (ML_NAMES if ml else []))
        note = "" if rng.random() < 0.3 else t(sentence(rng, ml))
        money = f"{rng.uniform(-500, 9000):.2f}"
        rows.append([str(100 + i), name, _email(name, rng), rng.choice(CITIES), money, note])
    return ["id", "name", "email", "city", "balance", "notes"], rows


ORDER_ITEMS = [
    'Cable, 2m "braided"',
    "Adapter (EU/UK)",
    'Monitor 27", matte',
    "Desk lamp",
    "Chair – ergonomic",
    "Café table, oak",
]


def _orders(rng: random.Random, ml: bool, t: Conv) -> Table:
    rows: list[list[str]] = []
    for i in range(rng.randint(12, 40)):
        rows.append(
            [
                f"SO-{5000 + i}",
                f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                f"{rng.choice(WORDS)[:3].upper()}-{rng.randint(100, 999)}",
                t(rng.choice(ORDER_ITEMS)),
                str(rng.randint(1, 12)),
                f"{rng.uniform(2, 400):.2f}",
                rng.choice(["shipped", "pending", "cancelled", ""]),
            ]
        )
    return ["order_id", "date", "sku", "description", "qty", "unit_price", "status"], rows


def _answer(rng: random.Random, ml: bool, t: Conv) -> str:
    r = rng.random()
    if r < 0.35:
        return t(sentence(rng, ml)) + "\n" + t(sentence(rng, ml))
    if r < 0.5:
        return 'I said "no", then "maybe", then yes.'
    if r < 0.6:
        return ""
    return t(paragraph(rng, ml, 1, 2))


def _survey(rng: random.Random, ml: bool, t: Conv) -> Table:
    rows = [
        [f"R{i + 1:03d}", str(rng.randint(18, 80)), _answer(rng, ml, t), str(rng.randint(1, 5))]
        for i in range(rng.randint(8, 24))
    ]
    return ["respondent", "age", "answer", "rating"], rows


def _translations(rng: random.Random, ml: bool, t: Conv) -> Table:
    rows = [
        [
            f"{rng.choice(WORDS)}.{rng.choice(['title', 'cta', 'hint'])}",
            t(sentence(rng)),
            rng.choice(ML_LINES),
            rng.choice(["ja", "zh", "ar", "he", "hi", "ko", "th"]),
        ]
        for _ in range(rng.randint(10, 24))
    ]
    return ["key", "en", "translation", "locale"], rows


def csv_doc(rng: random.Random, needs: Needs) -> Doc:
    ml = needs.multilingual or rng.random() < 0.25
    typo = _typo(rng, needs)
    delim = ";" if rng.random() < 0.1 else ","
    quote_all = rng.random() < 0.15
    shape = rng.choice([_customers, _orders, _survey, _translations])
    if needs.multiline_fields:
        shape = _survey
    elif needs.multilingual and rng.random() < 0.5:
        shape = _translations

    def t(s: str) -> str:
        return s if typo else asciify(s)

    header, rows = shape(rng, ml, t)
    out: list[str] = []
    units: list[int] = []
    pos = 0
    for k, row in enumerate([header, *rows]):
        buf = io.StringIO()
        if quote_all:
            csv.writer(buf, delimiter=delim, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(
                row
            )
        else:
            csv.writer(buf, delimiter=delim, lineterminator="\n").writerow(row)
        line = buf.getvalue()
        if k:
            units.append(pos)
        out.append(line)
        pos += len(line)
    text = "".join(out)
    return Doc("csv", text, tuple(units), out[0], quoted=_quote_spans(text, delim), delimiter=delim)


# --- Markdown -------------------------------------------------------------------------


def _table(rng: random.Random, ml: bool) -> tuple[str, list[str]]:
    cols = rng.choice(
        [["Name", "City", "Score"], ["Item", "Qty", "Price", "Status"], ["Step", "Owner", "Due"]]
    )
    body: list[list[str]] = []
    for _ in range(rng.randint(3, 9)):
        cells = []
        for c in cols:
            if c in ("Name", "Owner"):
                cells.append(rng.choice(NAMES + (ML_NAMES if ml else [])))
            elif c == "City":
                cells.append(rng.choice(CITIES))
            elif c in ("Score", "Price"):
                cells.append(f"{rng.uniform(1, 99):.2f}")
            elif c == "Qty":
                cells.append(str(rng.randint(1, 40)))
            elif c == "Status":
                cells.append(rng.choice(["✅ done", "in progress", "blocked", "—"]))
            elif c == "Due":
                cells.append(f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
            else:
                cells.append(rng.choice(WORDS).title())
        body.append(cells)
    widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(cols)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    head = line(cols) + "\n" + "|" + "|".join("-" * (w + 2) for w in widths) + "|\n"
    return head, [line(r) for r in body]


TITLES = [
    "Quarterly Report",
    "Migration Guide",
    "Field Notes",
    "Onboarding Handbook",
    "Release v2.3",
]
HEADINGS = [
    "Background",
    "Results",
    "Next steps",
    "Risks",
    "Open questions",
    "Timeline",
    "Notes from the field",
    "Appendix",
]


def _md_list(rng: random.Random, ml: bool, bullet: str, ordered: bool) -> str:
    if ordered:
        return "\n".join(f"{i + 1}. {sentence(rng, ml)}" for i in range(rng.randint(2, 6)))
    items = [f"{bullet} {sentence(rng, ml)}" for _ in range(rng.randint(2, 5))]
    if rng.random() < 0.4:
        items.insert(1, f"  {bullet} {sentence(rng, ml)}")
    return "\n".join(items)


def _md_quote(rng: random.Random, ml: bool) -> str:
    q = [f"> {sentence(rng, ml)}" for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        q.append(f"> > {sentence(rng, ml)}")
    return "\n".join(q)


def _md_prose(rng: random.Random, ml: bool) -> str:
    words = paragraph(rng, ml).split(" ")
    if rng.random() < 0.4 and len(words) > 3:
        i = rng.randrange(1, len(words) - 1)
        mark = rng.choice(["**", "*", "`"])
        words[i] = f"{mark}{words[i]}{mark}"
    return " ".join(words)


def _md_block(rng: random.Random, ml: bool, bullet: str, footnotes: list[str]) -> str:
    """One block that is not a table."""
    r = rng.random()
    if r < 0.22:
        return _md_list(rng, ml, bullet, ordered=False)
    if r < 0.36:
        return _md_list(rng, ml, bullet, ordered=True)
    if r < 0.46:
        return _md_quote(rng, ml)
    if r < 0.54:
        return (
            f"```python\ndef {rng.choice(WORDS)}(x):\n"
            f"    return x * {rng.randint(2, 9)}  # “{rng.choice(WORDS)}”\n```"
        )
    if r < 0.62:
        return (
            f"<details>\n<summary>{rng.choice(WORDS).title()} details</summary>\n\n"
            f"{paragraph(rng, ml, 1, 2)}\n\n</details>"
        )
    if r < 0.7:
        k = len(footnotes) + 1
        footnotes.append(f"[^{k}]: {sentence(rng, ml)}")
        return paragraph(rng, ml) + f"[^{k}] " + sentence(rng, ml)
    if r < 0.8 and ml:
        return " ".join(rng.sample(ML_LINES, 2))
    return _md_prose(rng, ml)


def markdown_doc(rng: random.Random, needs: Needs) -> Doc:
    ml = needs.multilingual or rng.random() < 0.25
    typo = _typo(rng, needs)
    bullet = rng.choice(["-", "*"])
    setext = rng.random() < 0.2
    blocks: list[str] = []
    sections: list[int] = []
    pending: list[tuple[int, str]] = []  # (block index, table header)
    title = rng.choice(TITLES)
    if rng.random() < 0.4:
        blocks.append(
            f'---\ntitle: "{title}"\nauthor: {rng.choice(NAMES)}\n'
            f"date: 2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}\n"
            f"tags: [{', '.join(rng.sample(TAGS, 2))}]\n---"
        )
    blocks.append(f"{title}\n{'=' * len(title)}" if setext else f"# {title}")
    blocks.append(paragraph(rng, ml))
    want_table = needs.tables or rng.random() < 0.6
    footnotes: list[str] = []
    for s in range(rng.randint(3, 6)):
        heading = rng.choice(HEADINGS)
        sections.append(len(blocks))
        blocks.append(f"{heading}\n{'-' * len(heading)}" if setext else f"## {s + 1}. {heading}")
        for _ in range(rng.randint(2, 4)):
            if want_table and (rng.random() < 0.18 or (s == 0 and not pending)):
                head, rows = _table(rng, ml)
                pending.append((len(blocks), head))
                blocks.append(head + "\n".join(rows))
            else:
                blocks.append(_md_block(rng, ml, bullet, footnotes))
    blocks.append("\n".join(footnotes) if footnotes else f"*Last updated by {rng.choice(NAMES)}.*")
    texts = blocks if typo else [asciify(b) for b in blocks]
    starts: list[int] = []
    pos = 0
    for b in texts:
        starts.append(pos)
        pos += len(b) + 2
    tables: list[tuple[str, tuple[int, ...]]] = []
    for bi, head in pending:
        h = head if typo else asciify(head)
        rs: list[int] = []
        p = starts[bi] + len(h)
        for line in texts[bi][len(h) :].split("\n"):
            rs.append(p)
            p += len(line) + 1
        tables.append((h, tuple(rs)))
    text = "\n\n".join(texts)
    return Doc("markdown", text, tuple(starts[i] for i in sections), tables=tuple(tables))


# --- plain text -----------------------------------------------------------------------


def text_doc(rng: random.Random, needs: Needs) -> Doc:
    ml = needs.multilingual or rng.random() < 0.25
    typo = _typo(rng, needs)
    paras: list[str] = []
    if rng.random() < 0.5:
        paras.append(
            rng.choice(
                [
                    "Chapter 3: The Harbour",
                    "Letter to the Board",
                    "Travel Log — Day 4",
                    "Minutes of the Meeting",
                ]
            )
        )
    for _ in range(rng.randint(6, 13)):
        r = rng.random()
        if r < 0.12:
            paras.append(
                "\n".join(sentence(rng, ml) for _ in range(rng.randint(3, 5)))
            )  # verse-like lines
        elif r < 0.22:
            who = rng.choice(NAMES)
            a, b = (
                rng.choice([x for x in SENTENCES if "“" not in x]).format(**_fill(rng, ml))
                for _ in "ab"
            )
            paras.append(f"“{a}” {who} said.\n“{b}”")
        elif ml and r < 0.4:
            paras.append("".join(rng.sample(ML_LINES, 3)))
        else:
            paras.append(paragraph(rng, ml, 2, 6))
    if not typo:
        paras = [asciify(p) for p in paras]
    units: list[int] = []
    pos = 0
    for p in paras:
        units.append(pos)
        pos += len(p) + 2
    return Doc("text", "\n\n".join(paras), tuple(units[1:]))


def make_doc(kind: str, rng: random.Random, needs: Needs) -> Doc:
    maker = {"json": json_doc, "csv": csv_doc, "markdown": markdown_doc, "text": text_doc}[kind]
    return maker(rng, needs)
