"""The documents the simulated model writes: long, deterministic, awkward on purpose.

``target(prompt, fmt=..., size=..., seed=...)`` is a pure function of its arguments: the
same inputs give the same text on every machine and every run (a ``random.Random`` seeded
from a SHA-256 of the prompt, format and seed; never Python's salted ``hash()``). The size
only says when to stop, so a smaller document of the same prompt and seed is, for CSV,
Markdown and text, a prefix of a larger one.

Each format carries what makes stitching hard: JSON nests objects in arrays in objects and
mixes unicode, escapes (``\\"``, ``\\\\``, ``\\n``, ``\\u00e9``), numbers, booleans and
null; CSV quotes fields holding commas, ``""`` and newlines; Markdown has fenced code
blocks whose lines start with ``#``, tables, lists and headings.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
from collections.abc import Callable
from typing import Any

FORMATS = ("json", "csv", "markdown", "text")

_WORD_TEXT = (
    "river stone lantern orbit harbor meadow signal copper velvet summit archive canyon "
    "ember falcon glacier horizon ivory juniper kettle lagoon marble nectar oasis pepper "
    "quarry ribbon saffron timber umbra valley willow yonder zephyr atlas beacon cinder "
    "delta ferry garnet hollow island jasper kernel ledger mosaic north opal prism quill "
    "relay shore tundra upland vessel wharf anchor bramble cobalt drift"
)
_WORDS = tuple(_WORD_TEXT.split())
WORDS = _WORDS  # the vocabulary, for sim.doc_variants
_UNICODE_WORDS = (
    "café",
    "naïve",
    "Zürich",
    "São Paulo",
    "漢字",
    "東京",
    "Ωmega",
    "façade",
    "jalapeño",
    "🚀",
    "🌍",
    "crème brûlée",
)
_AWKWARD = (
    'a "quoted" word',
    "a back\\slash",
    "C:\\temp\\new",
    "line one\nline two",
    "tab\there",
    "50% off, today only",
    "{braces} and [brackets]",
    "trailing comma,",
)


def _rng(prompt: str, fmt: str, seed: int) -> random.Random:
    digest = hashlib.sha256(f"continuum-sim\0{fmt}\0{seed}\0{prompt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def named_format(text: str) -> str | None:
    """The format a text names: json, csv, markdown (or md), plain text; None if none."""
    lowered = text.lower()
    if re.search(r"\bjson\b", lowered):
        return "json"
    if re.search(r"\bcsv\b", lowered):
        return "csv"
    if re.search(r"\b(markdown|md)\b", lowered):
        return "markdown"
    if re.search(r"\bplain text\b", lowered):
        return "text"
    return None


def format_from_prompt(prompt: str) -> str:
    """The format a prompt asks for: json, csv or markdown by keyword; text otherwise."""
    return named_format(prompt) or "text"


def _word(rng: random.Random, unicode_share: float = 0.1) -> str:
    if rng.random() < unicode_share:
        return rng.choice(_UNICODE_WORDS)
    return rng.choice(_WORDS)


def _words(rng: random.Random, low: int, high: int, unicode_share: float = 0.1) -> str:
    return " ".join(_word(rng, unicode_share) for _ in range(rng.randint(low, high)))


def _sentence(rng: random.Random) -> str:
    text = _words(rng, 6, 16)
    if rng.random() < 0.3:
        text += ", " + _words(rng, 3, 8)
    return text[0].upper() + text[1:] + rng.choice("....!?")


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(2, 6)))


def _title(prompt: str) -> str:
    line = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "Untitled")
    return line[:80]


# JSON -------------------------------------------------------------------------------


_PLACEHOLDER = re.compile(r'"\\u0001sim-ascii-(\d+)\\u0001"')


def _json_item(rng: random.Random, index: int, escaped: list[str]) -> dict[str, Any]:
    description = _sentence(rng)
    if rng.random() < 0.5:
        description += " " + rng.choice(_AWKWARD)
    ascii_label = f"{_word(rng, 0.6)} {_word(rng, 0.6)}"
    placeholder = f"\x01sim-ascii-{len(escaped)}\x01"
    escaped.append(ascii_label)
    return {
        "sku": f"SKU-{index:05d}",
        "label": _words(rng, 1, 3, 0.3),
        "label_ascii": placeholder,
        "price": round(rng.uniform(0.5, 999), 2),
        "quantity": rng.randint(-5, 500),
        "ratio": rng.choice([0.0, 1e-05, 2.5e-07, 123456.789, -0.5]),
        "available": rng.random() < 0.5,
        "discontinued": None if rng.random() < 0.7 else rng.random() < 0.5,
        "tags": [_word(rng, 0.2) for _ in range(rng.randint(0, 4))],
        "dimensions": {"w": rng.randint(1, 99), "h": rng.randint(1, 99), "unit": "cm"},
        "history": [
            {"at": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}", "delta": d}
            for d in (rng.randint(-9, 9) for _ in range(rng.randint(0, 2)))
        ],
        "description": description,
    }


def _json(rng: random.Random, prompt: str, size: int) -> str:
    escaped: list[str] = []
    sections: list[dict[str, Any]] = []
    doc: dict[str, Any] = {
        "title": _title(prompt),
        "generator": {"name": "continuum-sim", "version": 1, "deterministic": True},
        "notes": None,
        "empty": {"list": [], "object": {}},
        "sections": sections,
    }
    budget = size - 300
    count = 0
    while budget > 0:
        items: list[dict[str, Any]] = []
        section = {
            "id": len(sections) + 1,
            "name": _words(rng, 1, 3, 0.3),
            "summary": _sentence(rng),
            "score": round(rng.uniform(-100, 100), 3),
            "items": items,
        }
        sections.append(section)
        budget -= 200
        for _ in range(rng.randint(2, 6)):
            item = _json_item(rng, count + 1, escaped)
            dumped = json.dumps(item, indent=2, ensure_ascii=False)
            cost = len(dumped) + 8 * dumped.count("\n") + 10  # nesting indents each line
            if count and cost > 2 * budget:
                budget = 0  # the nearest size is without this item
                break
            count += 1
            items.append(item)
            budget -= cost
            if budget <= 0:
                break
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    # Some strings are written with ensure_ascii (\u00e9, surrogate pairs for emoji).
    return _PLACEHOLDER.sub(lambda m: json.dumps(escaped[int(m.group(1))]), text)


# CSV --------------------------------------------------------------------------------

_CSV_HEADER = ("id", "name", "city", "quantity", "price", "active", "notes", "comment")


def _csv(rng: random.Random, prompt: str, size: int) -> str:
    del prompt
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CSV_HEADER)
    row_id = 0
    while out.tell() < size:
        row_id += 1
        notes = _words(rng, 1, 4)
        roll = rng.random()
        if roll < 0.2:
            notes += ", " + _words(rng, 1, 3)
        elif roll < 0.35:
            notes = f'she said "{notes}"'
        elif roll < 0.5:
            notes = f"{notes}\n{_words(rng, 1, 4)}"
        writer.writerow(
            (
                row_id,
                _words(rng, 1, 2, 0.3),
                rng.choice(("Paris", "Zürich", "東京", "São Paulo", "Oslo", "Lima, Peru")),
                rng.randint(0, 999),
                f"{rng.uniform(0, 5000):.2f}",
                rng.choice(("true", "false")),
                notes,
                _sentence(rng) if rng.random() < 0.5 else "",
            )
        )
    return out.getvalue()


# Markdown ---------------------------------------------------------------------------

_CODE = (
    "# {w}: configure the pipeline\nimport os\n\n# read the settings\n"
    "path = os.environ.get('{W}_PATH', '/tmp/{w}')\nprint(f\"using {{path}}\")",
    '#!/bin/sh\n# {w} setup\nset -eu\n## not a heading either\necho "{w} ready"',
    '{{\n  "name": "{w}",\n  "enabled": true\n}}',
)


def _md_table(rng: random.Random) -> list[str]:
    lines = ["| Name | Count | Note |", "| --- | ---: | :--- |"]
    for _ in range(rng.randint(2, 5)):
        note = _words(rng, 1, 4, 0.3).replace("|", "/")
        lines.append(f"| {_word(rng, 0.3)} | {rng.randint(0, 9999)} | {note} |")
    return lines


def _md_block(rng: random.Random, number: int) -> list[str]:
    roll = rng.random()
    if roll < 0.3:
        return [_paragraph(rng)]
    if roll < 0.45:
        return [f"- {_words(rng, 2, 8)}" for _ in range(rng.randint(2, 5))]
    if roll < 0.55:
        return [f"{i}. {_words(rng, 2, 8)}" for i in range(1, rng.randint(3, 6))]
    if roll < 0.7:
        word = rng.choice(_WORDS)
        lang = rng.choice(("python", "sh", "json"))
        code = _CODE[("python", "sh", "json").index(lang)]
        return [f"```{lang}", code.format(w=word, W=word.upper()), "```"]
    if roll < 0.85:
        return _md_table(rng)
    if roll < 0.93:
        return [f"> {_sentence(rng)}", f"> {_sentence(rng)}"]
    return [f"### {number}.{rng.randint(1, 9)} {_words(rng, 1, 4, 0.3).title()}"]


def _markdown(rng: random.Random, prompt: str, size: int) -> str:
    parts = [f"# {_title(prompt)}", "", _paragraph(rng)]
    length = sum(len(p) + 1 for p in parts)
    section = 0
    while length < size:
        section += 1
        blocks = [f"## {section}. {_words(rng, 1, 4, 0.2).title()}"]
        for _ in range(rng.randint(2, 5)):
            blocks.append("\n".join(_md_block(rng, section)))
        chunk = "\n\n".join(blocks)
        parts += ["", chunk]
        length += len(chunk) + 2
    return "\n".join(parts) + "\n"


# Text -------------------------------------------------------------------------------


def _text(rng: random.Random, prompt: str, size: int) -> str:
    del prompt
    paragraphs: list[str] = []
    length = 0
    while length < size:
        paragraph = _paragraph(rng)
        paragraphs.append(paragraph)
        length += len(paragraph) + 2
    return "\n\n".join(paragraphs) + "\n"


_WRITERS: dict[str, Callable[[random.Random, str, int], str]] = {
    "json": _json,
    "csv": _csv,
    "markdown": _markdown,
    "text": _text,
}


def target(prompt: str, *, fmt: str, size: int, seed: int) -> str:
    """The whole document the simulated model writes for ``prompt`` (about ``size`` chars)."""
    if fmt not in _WRITERS:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if size <= 0:
        raise ValueError("size must be positive")
    return _WRITERS[fmt](_rng(prompt, fmt, seed), prompt, size)
