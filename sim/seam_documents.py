"""Documents for the seam corpus: realistic, small-vocabulary, deterministic from an rng.

``document(fmt, rng, size=..., multibyte=...)`` writes a JSON, CSV, Markdown or text
document of about ``size`` characters; ``periodic_document(fmt, rng)`` one whose middle is
periodic (zeros, identical rows, identical list lines) and the span of that region.

They are awkward at a seam, as real documents are: prose that reads like an assistant's
preamble ("Note: the following…", "Here is what…", "Continuing the work…", "Sure enough…"),
numbers sharing prefixes (19, 1998, 2019), recurring headings, repeated CSV rows, quoted
fields with commas, ``""`` and line breaks, JSON escapes (``\\"``, ``\\n``, ``\\u00e9``),
emoji, ZWJ sequences, flags, CJK and decomposed accents. CSV, Markdown and text documents
end with one line break, JSON ones with the closing bracket.
"""

from __future__ import annotations

import json
import random
import textwrap
from collections.abc import Callable
from typing import Any

FIRST = ("Amara", "Priya", "Jonas", "Wei", "Sofia", "Mateo", "Aiko", "Lars", "Noor", "Olu")
LAST = ("Okafor", "Wei", "Lindqvist", "Haddad", "Moreau", "Tanaka", "Silva", "Novak", "Kaur")
CITIES = ("Austin", "Zürich", "São Paulo", "Kraków", "Lyon", "東京", "Reykjavík", "Oslo", "Nairobi")
NOUNS = (
    "bicycle", "package", "harbor", "ledger", "bookkeeper", "lantern", "archive", "chart",
    "river", "survey", "kettle", "committee", "bridge", "orchard", "warehouse",
)  # fmt: skip
ORGS = ("Soylent", "Acme Corp", "the cooperative", "Northwind", "the museum", "Blue Heron Ltd")
ADJS = ("late", "fine", "too small", "excellent", "overpriced", "a relief")
MONTHS = ("March", "May", "June", "October", "December")
MULTI = (
    "👩\u200d💻", "👨\u200d👩\u200d👧", "🇫🇷", "👍🏽", "cafe\u0301", "Ame\u0301lie", "man\u0303ana",
    "東京都", "漢字テスト", "한국어", "🚀", "✈\ufe0f", "🎉🎉", "Zürich", "naïve", "ẞtraße",
)  # fmt: skip
SENTENCES = (
    "{org} was founded in {year}.",
    "Founded in {year}, {org} now employs {n} people.",
    "{name} moved to {city} in {year}.",
    "The {noun} in {city} grew by {pct}% between {year} and {year2}.",
    "See the {noun} report for details.",
    "It grew.",
    "Note: the following figures are preliminary.",
    "Here is what the {noun} survey found:",
    "Sure enough, the {noun} arrived {adj}.",
    '{name} said the {noun} was "{adj}".',
    "Sales rose to {n} units, up from {n2}.",
    "The {noun} cost ${price}, roughly {pct}% more than in {year}.",
    "Continuing the work of {name}, the team opened an office in {city}.",
    "Most of the {noun}s were sold by {month}.",
    "{name} kept the books for the {noun} from {year} to {year2}.",
    "In {year} the {noun} was moved to {city}; nobody complained.",
)
MULTI_SENTENCES = (
    "The team celebrated with {mb} after the {noun} shipped.",
    "{name} wrote {mb} on the {noun}.",
    "The sign in {city} read {mb} {mb}.",
    "東京の{mb}は{n}人です。",
)
HEADINGS = ("Overview", "Notes", "Results", "Background", "Notes", "Open questions", "History")
CODE = (
    "```python\n# compute the total\ndef total(xs):\n    return sum(xs)\n```",
    '```json\n{"cpu": "500m", "replicas": 3}\n```',
    "```\n# not a heading\nmake build\n```",
    "```sh\n$ continuum submit --format csv\n```",
)


def _fill(rng: random.Random, multibyte: bool = False) -> dict[str, str]:
    year = rng.choice((1998, 1999, 2001, 2019, 1987, 2020, 19, 1990))
    return {
        "org": rng.choice(ORGS), "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
        "city": rng.choice(CITIES), "noun": rng.choice(NOUNS), "adj": rng.choice(ADJS),
        "year": str(year), "year2": str(rng.choice((2003, 2019, 2020, 2024))),
        "n": str(rng.choice((19, 40, 120, 1998, 5489, 8895, 70))), "n2": str(rng.randint(3, 999)),
        "pct": str(rng.choice((5, 12, 19, 50, 8))),
        "price": f"{rng.randint(1, 99)}.{rng.randint(0, 99):02d}",
        "month": rng.choice(MONTHS), "mb": rng.choice(MULTI) if multibyte else rng.choice(CITIES),
    }  # fmt: skip


def sentence(rng: random.Random, multibyte: bool = False) -> str:
    """One sentence of realistic prose (more multibyte text when ``multibyte``)."""
    pool = MULTI_SENTENCES if multibyte and rng.random() < 0.6 else SENTENCES
    return rng.choice(pool).format(**_fill(rng, multibyte))


def paragraph(rng: random.Random, multibyte: bool = False, width: int = 0) -> str:
    text = " ".join(sentence(rng, multibyte) for _ in range(rng.randint(1, 4)))
    if width:
        text = textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)
    if rng.random() < 0.15:  # a pasted line with trailing white space, or a hard break
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        lines[i] += rng.choice(("  ", " ", "\t"))
        text = "\n".join(lines)
    return text


# text and Markdown ---------------------------------------------------------------------


def _text(rng: random.Random, size: int, multibyte: bool) -> str:
    width = rng.choice((0, 0, 60, 72))
    parts = [rng.choice(("Annual report", "Notes from the survey", "The package", "Minutes"))]
    while sum(map(len, parts)) < size:
        roll = rng.random()
        if roll < 0.1:
            parts.append(f"Here is the summary for {rng.choice(CITIES)}:")
        elif roll < 0.18:
            start = rng.choice((1, 1998))
            items = [f"{start + i}. {sentence(rng, multibyte)}" for i in range(rng.randint(2, 4))]
            parts.append("\n".join(items))
        elif roll < 0.22:
            parts.append(rng.choice(("---", "* * *", "Thank you for reading.")))
        else:
            parts.append(paragraph(rng, multibyte, width))
    return "\n\n".join(parts) + "\n"


def _table(rng: random.Random, multibyte: bool) -> str:
    cols = rng.choice((("City", "Year", "Share"), ("A", "B", "C", "D"), ("Item", "Qty")))
    align = "|" + "|".join(rng.choice(("---", ":---", "---:", ":---:")) for _ in cols) + "|"
    rows = ["| " + " | ".join(cols) + " |", align]
    for _ in range(rng.randint(1, 5)):
        cells = [str(rng.choice((1, 2, 19, 1998, 40))) for _ in cols]
        cells[0] = rng.choice(MULTI if multibyte else CITIES)
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _markdown(rng: random.Random, size: int, multibyte: bool) -> str:
    parts = [f"# {rng.choice(('The package', 'Doc', 'Quarterly notes', 'Title'))}"]
    while sum(map(len, parts)) < size:
        roll = rng.random()
        if roll < 0.15:
            parts.append(f"## {rng.choice(HEADINGS)}")
        elif roll < 0.27:
            bullet = rng.choice(("- ", "* ", "1. "))
            items = [sentence(rng, multibyte) for _ in range(rng.randint(2, 5))]
            if bullet == "1. ":
                parts.append("\n".join(f"{i + 1}. {s}" for i, s in enumerate(items)))
            else:
                parts.append("\n".join(bullet + s for s in items))
        elif roll < 0.37:
            parts.append(_table(rng, multibyte))
        elif roll < 0.45:
            parts.append(rng.choice(CODE))
        elif roll < 0.52:
            parts.append("> " + sentence(rng, multibyte) + "\n> " + sentence(rng, multibyte))
        elif roll < 0.58:
            parts.append(f"1998. {sentence(rng, multibyte)}")
        elif roll < 0.63:
            parts.append("Note: the following table lists every branch.")
        else:
            parts.append(paragraph(rng, multibyte, rng.choice((0, 0, 70))))
    return "\n\n".join(parts) + "\n"


# CSV ------------------------------------------------------------------------------------

SCHEMAS: tuple[tuple[str, ...], ...] = (
    ("id", "name", "city", "year", "comment"),
    ("date", "item", "qty", "price", "note"),
    ("q1", "q2"),
    ("year", "event"),
)


def csv_field(value: str, quote_all: bool = False) -> str:
    """A field as a spreadsheet writes it: quoted when it must be (or always, if asked)."""
    if quote_all or any(c in value for c in ',"\r\n') or value != value.strip():
        return '"' + value.replace('"', '""') + '"'
    return value


def _csv_value(rng: random.Random, column: str, row: int, multibyte: bool) -> str:
    simple: dict[str, Callable[[], str]] = {
        "id": lambda: str(row + 1),
        "year": lambda: str(rng.choice((1998, 1999, 2019, 19, 2001))),
        "q1": lambda: rng.choice(("yes", "no", "agree", "yes", "disagree")),
        "qty": lambda: str(rng.choice((1, 19, 70, 5489))),
        "price": lambda: f"{rng.randint(1, 99)}.50",
        "date": lambda: f"2019-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "name": lambda: f"{rng.choice(FIRST)} {rng.choice(LAST)}",
        "city": lambda: rng.choice(CITIES),
        "item": lambda: rng.choice(NOUNS) + (f" {rng.choice(MULTI)}" if multibyte else ""),
    }
    if column in simple or column == "q2":
        return simple[column if column != "q2" else "q1"]()
    options = (
        sentence(rng, multibyte), "", 'said "fine", then left', "line one\nline two",
        "Note: the following rows are estimates", "Here is the rest, as promised", "none",
    )  # fmt: skip
    return rng.choice(options)


def _csv(rng: random.Random, size: int, multibyte: bool) -> str:
    header = rng.choice(SCHEMAS)
    quote_all = rng.random() < 0.2
    lines = [",".join(header)]
    row = 0
    while sum(map(len, lines)) < size:
        if row and rng.random() < 0.1:
            lines.append(lines[-1])  # a repeated row
        else:
            values = [_csv_value(rng, c, row, multibyte) for c in header]
            lines.append(",".join(csv_field(v, quote_all and not v.isdigit()) for v in values))
        row += 1
    text = "\n".join(lines) + "\n"
    return text.replace("\n", "\r\n") if rng.random() < 0.25 else text


# JSON -----------------------------------------------------------------------------------

AWKWARD = (
    'a "quoted" word', "C:\\temp\\new", "line one\nline two", "tab\there", "50% off, today",
    "{braces} and [brackets]", "trailing comma,", "Here is the rest:", "café", "Ωmega",
)  # fmt: skip


def _record(rng: random.Random, i: int, multibyte: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": i, "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "city": rng.choice(CITIES),
        "year": rng.choice((1998, 2019, 19, 2001)), "score": round(rng.uniform(0, 100), 2),
        "active": rng.random() < 0.5, "tags": rng.sample(("a", "beta", "ε", "new", "x"), 2),
        "note": None if rng.random() < 0.4 else rng.choice(AWKWARD + MULTI * multibyte),
    }  # fmt: skip
    for key in rng.sample(sorted(rec), rng.randint(0, 3)):
        if key != "id":
            del rec[key]
    return rec


def _json_value(rng: random.Random, size: int, multibyte: bool) -> Any:
    shape = rng.choice((0, 1, 3)) if multibyte else rng.randrange(5)
    count = max(2, size // rng.choice((60, 110)))
    records = [_record(rng, i, multibyte) for i in range(count)]
    if shape == 0:
        return {"meta": {"title": rng.choice(NOUNS), "version": 1}, "items": records}
    if shape == 1:
        return records
    if shape == 2:
        nums = (8895, 5489, 969, 70, 68, 72, 11, 0, 19, 1998)
        rows = [[rng.choice(nums) for _ in range(rng.randint(2, 5))] for _ in range(count)]
        return {"series": rows}
    if shape == 3:
        pods = [
            {"name": f"{rng.choice(NOUNS)}-{j}", "cpu": rng.choice(("500m", "50m", "2")),
             "memory": rng.choice(("2Gi", "512Mi")), "env": {"TZ": rng.choice(CITIES)},
             "ports": [8080, 8443][: rng.randint(0, 2)], "d": {"w": j, "h": 2 * j}}
            for j in range(count // 2 + 1)
        ]  # fmt: skip
        return {"replicas": 3, "containers": pods}
    return {"values": [rng.choice((70, 68, 72, 11, 1998, 19, 0)) for _ in range(count * 3)]}


def json_text(value: Any, rng: random.Random) -> str:
    """``value`` as a model prints it: pretty (2 or 4 spaces) or minified, ASCII or not."""
    ascii_only = rng.random() < 0.3
    style = rng.randrange(4)
    if style < 2:
        return json.dumps(value, indent=2 + 2 * style, ensure_ascii=ascii_only)
    seps = (",", ":") if style == 2 else (", ", ": ")
    return json.dumps(value, separators=seps, ensure_ascii=ascii_only)


def document(fmt: str, rng: random.Random, size: int = 900, multibyte: bool = False) -> str:
    """A realistic document of about ``size`` characters in ``fmt``."""
    if fmt == "json":
        return json_text(_json_value(rng, size, multibyte), rng)
    if fmt == "csv":
        return _csv(rng, size, multibyte)
    text = _markdown(rng, size, multibyte) if fmt == "markdown" else _text(rng, size, multibyte)
    return text.replace("\n", "\r\n") if rng.random() < 0.1 else text


def periodic_document(fmt: str, rng: random.Random, size: int = 900) -> tuple[str, int, int]:
    """A document whose part ``[lo, hi)`` is periodic; returns (doc, lo, hi)."""
    reps = rng.randint(6, 40)
    if fmt == "json":
        unit: Any = rng.choice((0, False, None, {"x": 0}, [0, 0], "n/a"))
        text = json_text({"label": "zeros", "values": [unit] * reps, "after": [1, 2]}, rng)
        lo = text.index("[")
        return text, lo, text.rindex("]", 0, text.index('"after"'))
    if fmt == "csv":
        header = rng.choice(SCHEMAS)
        row = ",".join(rng.choice(("yes", "agree", "0", "")) for _ in header)
        last = ",".join(csv_field(_csv_value(rng, c, 1, False)) for c in header)
        newline = rng.choice(("\n", "\n", "\r\n"))
        first = (",".join(header) + "\n").replace("\n", newline)
        block = (row + newline) * reps
        text = first + block + (last + "\n").replace("\n", newline)
        return text, len(first), len(first) + len(block)
    head = document(fmt, rng, size // 3).replace("\r\n", "\n")
    line = rng.choice(
        ("- TBD", "| 0 | 0 | 0 |", "La la la.", "ha ", "0 0 0 0", "=====", "- [ ] todo", "")
    )
    sep = "" if line == "ha " else "\n"
    block = (line + sep) * reps
    if line == "| 0 | 0 | 0 |":
        block = "| A | B | C |\n|---|---|---|\n" + block
    text = head + "\n" + block + "\n" + sentence(rng) + "\n"
    lo = len(head) + 1
    return text, lo, lo + len(block)
