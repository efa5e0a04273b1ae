"""The simulator's target documents: deterministic, awkward where stitching is hard."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from sim.documents import FORMATS, format_from_prompt, target

PROMPT = "Write a long document about the rivers of Europe"


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_inputs_give_the_same_text_and_another_seed_another(fmt: str) -> None:
    one = target(PROMPT, fmt=fmt, size=5000, seed=7)
    assert one == target(PROMPT, fmt=fmt, size=5000, seed=7)
    assert one != target(PROMPT, fmt=fmt, size=5000, seed=8)
    assert one != target(PROMPT + "!", fmt=fmt, size=5000, seed=7)


def test_the_text_is_pinned_across_runs_and_machines() -> None:
    """A stable hash seeds the RNG (never the salted hash()): this prefix never changes."""
    assert target("pin", fmt="text", size=100, seed=0).startswith("Island mosaic marble")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("size", [2000, 20000, 100000])
def test_size_is_roughly_honoured(fmt: str, size: int) -> None:
    assert 0.85 * size <= len(target(PROMPT, fmt=fmt, size=size, seed=1)) <= 1.3 * size


def _walk(value: Any, path: str = "$") -> list[str]:
    """Paths of every value, with container kinds: '$.sections[].items[].dimensions'."""
    out = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _walk(child, f"{path}.{key}")
    elif isinstance(value, list):
        for child in value:
            out += _walk(child, f"{path}[]")
    return out


def test_json_parses_and_nests_objects_in_arrays_in_objects() -> None:
    text = target(PROMPT, fmt="json", size=20000, seed=3)
    doc = json.loads(text)
    paths = set(_walk(doc))
    assert "$.sections[].items[].dimensions.w" in paths
    assert "$.sections[].items[].history[].delta" in paths
    assert text.startswith('{\n  "title": ')  # indent=2


def test_json_has_unicode_escapes_and_every_scalar_kind() -> None:
    text = target(PROMPT, fmt="json", size=30000, seed=3)
    for raw in ("é", "漢字", "\\u00", '\\"', "\\\\", "\\n", "true", "false", "null", "e-0"):
        assert raw in text, raw
    assert any(0x1F300 <= ord(ch) <= 0x1FAFF for ch in text), "an emoji"
    assert "\\ud83" in text, "an emoji written as a surrogate pair escape"
    values = json.loads(text)["sections"][0]["items"][0]
    assert isinstance(values["price"], float)
    assert isinstance(values["quantity"], int)


def test_csv_parses_with_quoted_commas_quotes_and_newlines() -> None:
    text = target(PROMPT, fmt="csv", size=20000, seed=2)
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    assert header[0] == "id"
    assert len(body) > 50
    assert all(len(row) == len(header) for row in body)
    assert [int(row[0]) for row in body] == list(range(1, len(body) + 1))
    fields = [field for row in body for field in row]
    assert any("\n" in f for f in fields)
    assert any("," in f for f in fields)
    assert any('"' in f for f in fields)
    assert '""' in text
    assert text.endswith("\n")


def test_markdown_has_headings_lists_tables_and_fences_holding_hash_lines() -> None:
    text = target(PROMPT, fmt="markdown", size=30000, seed=4)
    lines = text.split("\n")
    assert lines[0] == f"# {PROMPT}"
    assert any(line.startswith("## ") for line in lines)
    assert any(line.startswith("- ") for line in lines)
    assert any(line.startswith("1. ") for line in lines)
    assert any(line.startswith("| --- |") for line in lines)
    in_fence, hash_in_fence = False, False
    for line in lines:
        if line.startswith("```"):
            in_fence = not in_fence
        elif in_fence and line.startswith("#"):
            hash_in_fence = True
    assert hash_in_fence
    assert not in_fence, "every fence is closed"


def test_text_is_paragraphs_of_prose() -> None:
    text = target(PROMPT, fmt="text", size=5000, seed=5)
    paragraphs = text.rstrip("\n").split("\n\n")
    assert len(paragraphs) > 5
    assert all(p[0].isupper() and p[-1] in ".!?" for p in paragraphs)


@pytest.mark.parametrize(
    ("prompt", "fmt"),
    [
        ("Return a JSON array of cities", "json"),
        ("Export the table as CSV", "csv"),
        ("Write a Markdown guide", "markdown"),
        ("Write a story", "text"),
        ("a csv file, then json", "json"),
        ("jsonl is not json?", "json"),
    ],
)
def test_format_from_prompt_keywords(prompt: str, fmt: str) -> None:
    assert format_from_prompt(prompt) == fmt


def test_unknown_format_and_bad_size_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        target(PROMPT, fmt="xml", size=100, seed=0)
    with pytest.raises(ValueError, match="size"):
        target(PROMPT, fmt="json", size=0, seed=0)
