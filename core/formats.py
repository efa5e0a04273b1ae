"""One interface over the four mergers, and ``auto`` detection
(``docs/engine.md``, "JSON" and "CSV, Markdown, text").

Each format keeps a small serialisable scan state (a dict) that travels with the job; the
accumulated text itself never does. ``close`` says how to present what was accumulated
as a result (``text[:n] + suffix``); ``complete`` whether the document is known finished
by its own syntax (only JSON can say so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from core import csv_stitch, markdown_stitch, text_stitch
from core.csv_stitch import CsvMode, scan_rows
from core.extraction import clean_text, strip_wrapper_fence
from core.json_scan import Carry, JsonScanner
from core.json_stitch import merge_json, start_json
from core.merge import Merge
from core.models import OutputFormat
from core.seam import start_reading

ScanState = dict[str, Any]


class Stitcher(Protocol):
    def start(self, fragment: str) -> tuple[ScanState, Merge]: ...
    def merge(
        self, state: ScanState, tail: str, fragment: str, head: str, *, exact: bool = False
    ) -> tuple[ScanState, Merge]: ...
    def close(self, state: ScanState) -> tuple[int, str] | None: ...
    def records(self, state: ScanState) -> int: ...
    def complete(self, state: ScanState) -> bool: ...
    def element_start(self, state: ScanState) -> int | None: ...
    def in_text(self, state: ScanState) -> bool: ...


class JsonStitcher:
    def start(self, fragment: str) -> tuple[ScanState, Merge]:
        scan, merge = start_json(fragment)
        return scan.to_dict(), merge

    def merge(
        self, state: ScanState, tail: str, fragment: str, head: str, *, exact: bool = False
    ) -> tuple[ScanState, Merge]:
        scan, merge = merge_json(JsonScanner.from_dict(state), tail, fragment, head, exact=exact)
        return scan.to_dict(), merge

    def close(self, state: ScanState) -> tuple[int, str] | None:
        return JsonScanner.from_dict(state).close()

    def records(self, state: ScanState) -> int:
        return JsonScanner.from_dict(state).records

    def complete(self, state: ScanState) -> bool:
        return int(state["done_at"]) >= 0

    def element_start(self, state: ScanState) -> int | None:
        frames = state["frames"]
        return int(frames[-1][4]) if frames else None

    def in_text(self, state: ScanState) -> bool:
        """Whether the cut is inside a string or a key, where white space is content."""
        scan = JsonScanner.from_dict(state)
        return scan.carry_kind is Carry.STRING or (
            scan.carry_kind is Carry.TOKEN and scan.carry.startswith('"')
        )


@dataclass(frozen=True)
class _ModelStitcher:
    """Adapter for the CSV, Markdown and text mergers (pydantic scan models)."""

    module: Any
    name: str

    def _load(self, state: ScanState) -> Any:
        return getattr(self.module, self._scan_class).model_validate(state)

    @property
    def _scan_class(self) -> str:
        return {"csv": "CsvScan", "markdown": "MarkdownScan", "text": "TextScan"}[self.name]

    def start(self, fragment: str) -> tuple[ScanState, Merge]:
        scan, merge = getattr(self.module, f"start_{self.name}")(fragment)
        return scan.model_dump(mode="json"), merge

    def merge(
        self, state: ScanState, tail: str, fragment: str, head: str, *, exact: bool = False
    ) -> tuple[ScanState, Merge]:
        merger = getattr(self.module, f"merge_{self.name}")
        scan, merge = merger(self._load(state), tail, fragment, exact=exact)
        return scan.model_dump(mode="json"), merge

    def close(self, state: ScanState) -> tuple[int, str] | None:
        result: tuple[int, str] = getattr(self.module, f"close_{self.name}")(self._load(state))
        return result

    def records(self, state: ScanState) -> int:
        return int(state["records"])

    def complete(self, state: ScanState) -> bool:
        return False

    def element_start(self, state: ScanState) -> int | None:
        return None

    def in_text(self, state: ScanState) -> bool:
        return False  # a blank reply in prose or rows is noise (the corpus's rule too)


STITCHERS: dict[OutputFormat, Stitcher] = {
    OutputFormat.JSON: JsonStitcher(),
    OutputFormat.CSV: _ModelStitcher(csv_stitch, "csv"),
    OutputFormat.MARKDOWN: _ModelStitcher(markdown_stitch, "markdown"),
    OutputFormat.TEXT: _ModelStitcher(text_stitch, "text"),
}

#: How much of a first reply ``auto`` reads to recognise CSV.
CSV_PROBE_CHARS = 4096
CSV_PROBE_ROWS = 6
_FENCE_TAG = re.compile(r"(?:^|\n)[ \t]*(?:```|~~~)[ \t]*([A-Za-z]+)")
_NAMED = re.compile(r"\b(json|csv|markdown)\b", re.IGNORECASE)
_MARKDOWN_LINE = re.compile(r"^(?:#{1,6} |[-*+] |\d+[.)] |> |\|.*\||```|~~~)", re.MULTILINE)
_TAGS = {
    "json": OutputFormat.JSON,
    "csv": OutputFormat.CSV,
    "markdown": OutputFormat.MARKDOWN,
    "md": OutputFormat.MARKDOWN,
    "text": OutputFormat.TEXT,
    "txt": OutputFormat.TEXT,
    "plaintext": OutputFormat.TEXT,
    "plain": OutputFormat.TEXT,
}


def detect_format(fragment: str) -> OutputFormat:
    """Guess the format of a first fragment (``auto``); the guess is then fixed."""
    return detect(fragment)[0]


def detect(fragment: str) -> tuple[OutputFormat, str]:
    """The format of a first fragment, and a doubt ('' when the evidence is clear).

    A wrapper's fence tag or words ("Here is the CSV:", "```json") decide; then JSON when
    the payload opens an object or array that scans; CSV when two or more complete rows
    have the same number (>1) of fields; Markdown when a line starts like a heading, list,
    quote, table or fence; else text. Text is doubted when its first line could be a CSV
    header that the fragment gave too few rows to prove.
    """
    text, _ = clean_text(fragment)
    lead = start_reading(text).splice.prose
    wrapper, text = text[:lead], text[lead:]
    tag = _FENCE_TAG.search(wrapper) or _FENCE_TAG.match(text)
    if tag is not None and tag.group(1).lower() in _TAGS:
        return _TAGS[tag.group(1).lower()], ""
    named = _NAMED.search(wrapper)
    if named is not None:
        return _TAGS[named.group(1).lower()], ""
    body, _ = strip_wrapper_fence(text)
    stripped = body.lstrip()
    if stripped[:1] in ("{", "["):
        scan = JsonScanner().feed(stripped)
        if scan.error is None or scan.error.at > 16:
            return OutputFormat.JSON, ""
    if _looks_like_csv(body):
        return OutputFormat.CSV, ""
    if _MARKDOWN_LINE.search(body):
        return OutputFormat.MARKDOWN, ""
    first = body.lstrip("\r\n").split("\n", 1)[0]
    if "," in first and body.count("\n") < 3:
        return OutputFormat.TEXT, "read as text, but the first line may be a CSV header"
    if body.strip().count("\n") < 1:
        return OutputFormat.TEXT, "read as text from less than two lines"
    return OutputFormat.TEXT, ""


def _looks_like_csv(text: str) -> bool:
    """Two or more complete rows (quotes read as CSV reads them) of the same width, >= 2."""
    _, _, rows = scan_rows(CsvMode.ROW_START, 0, text[:CSV_PROBE_CHARS], CSV_PROBE_ROWS)
    counts = [count for _, count in rows if count]
    if len(counts) < 2 or text.lstrip().startswith("#"):
        return False
    return len(set(counts)) == 1 and counts[0] >= 2
