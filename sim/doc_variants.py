"""The document knobs: a target made periodic, or rich in multibyte text.

``vary(text, fmt=..., prompt=..., seed=..., periodic=..., multibyte=...)`` changes the
document ``sim.documents.target`` wrote, with a generator of its own (seeded like the
document, so the result is as deterministic, and a knob at 0 leaves the text as it was):

- ``periodic``: the share of blocks followed by a periodic run, where a merger cannot tell
  a repeat by its content: JSON arrays of zeros (or nulls, ``"n/a"``, ``[0, 0]``) after an
  item's ``sku``; identical CSV rows, or rows of zeros; runs of identical lines
  (``- TBD``, ``| 0 | 0 | 0 |``, ``La la la.``) or one line of ``ha ha ha`` between the
  paragraphs of text and Markdown (never inside a code fence);
- ``multibyte``: the share of the vocabulary's words turned into ZWJ sequences, flags,
  skin tones, decomposed accents and CJK.

Valid documents stay valid: JSON parses, CSV rows keep the header's width.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from sim.documents import WORDS
from sim.seam_documents import MULTI

_WORD = re.compile(r"\b(?:" + "|".join(sorted(set(WORDS), key=len, reverse=True)) + r")\b")
_SKU = re.compile(r'^( *)"sku": "SKU-\d+",\n', re.MULTILINE)
_UNITS: tuple[Any, ...] = (0, 0, 0, None, False, "n/a", [0, 0])
_LINES = ("- TBD", "- [ ] todo", "La la la.", "0 0 0 0", "=====", "* * *")
_TABLE = "| A | B | C |\n| --- | --- | --- |"


def _rng(prompt: str, fmt: str, seed: int, what: str) -> random.Random:
    key = f"continuum-sim-{what}\0{fmt}\0{seed}\0{prompt}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def vary(text: str, *, fmt: str, prompt: str, seed: int, periodic: float, multibyte: float) -> str:
    """``text`` with the document knobs applied (unchanged when both are 0)."""
    if multibyte > 0:
        rng = _rng(prompt, fmt, seed, "multibyte")
        text = _WORD.sub(lambda m: rng.choice(MULTI) if rng.random() < multibyte else m[0], text)
    if periodic > 0:
        rng = _rng(prompt, fmt, seed, "periodic")
        if fmt == "json":
            text = _json(text, rng, periodic)
        elif fmt == "csv":
            text = _csv(text, rng, periodic)
        else:
            text = _lines(text, rng, periodic, markdown=fmt == "markdown")
    return text


def _json(text: str, rng: random.Random, share: float) -> str:
    def add(m: re.Match[str]) -> str:
        if rng.random() >= share:
            return m[0]
        run = json.dumps([rng.choice(_UNITS)] * rng.randint(6, 40), indent=2)
        return f'{m[0]}{m[1]}"samples": {run.replace(chr(10), chr(10) + m[1])},\n'

    return _SKU.sub(add, text)


def _records(text: str) -> list[str]:
    """The CSV rows of ``text``, each with its line break (quoted line breaks inside)."""
    rows, start, quoted = [], 0, False
    for i, c in enumerate(text):
        if c == '"':
            quoted = not quoted
        elif c == "\n" and not quoted:
            rows.append(text[start : i + 1])
            start = i + 1
    if start < len(text):
        rows.append(text[start:])
    return rows


def _csv(text: str, rng: random.Random, share: float) -> str:
    rows = _records(text)
    if not rows:
        return text
    width = rows[0].count(",") + 1  # the header's fields: plain names, never quoted
    out = rows[:1]
    for row in rows[1:]:
        out.append(row)
        if row.endswith("\n") and rng.random() < share:
            unit = row if rng.random() < 0.7 else ",".join(["0"] * width) + "\n"
            out += [unit] * rng.randint(2, 12)
    return "".join(out)


def _lines(text: str, rng: random.Random, share: float, *, markdown: bool) -> str:
    out: list[str] = []
    fenced = False
    lines = text.split("\n")
    for index, line in enumerate(lines):
        out.append(line)
        if line.startswith("```"):
            fenced = not fenced
        last = index == len(lines) - 1
        if fenced or last or line or not lines[index + 1] or rng.random() >= share:
            continue
        roll = rng.random()
        count = rng.randint(6, 40)
        if roll < 0.2:
            out += [("ha " * count).rstrip(), ""]
        elif roll < 0.35 and markdown:
            out += [_TABLE, *["| 0 | 0 | 0 |"] * count, ""]
        else:
            out += [*[rng.choice(_LINES)] * count, ""]
    return "\n".join(out)
