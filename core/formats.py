"""One interface over the four mergers, and ``auto`` detection
(``docs/engine.md``, "JSON" and "CSV, Markdown, text").

A :class:`Stitcher` is one format's merger at the cut of a document. Its ``scan`` is a
small serialisable model that travels with the job (``ScanState``); the accumulated text
itself never does. ``close`` says how to present what was accumulated as a result
(``text[:n] + suffix``); ``complete`` whether the document is known finished by its own
syntax (only JSON can say so).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from core.csv_stitch import CsvMode, CsvScan, close_csv, merge_csv, scan_rows, start_csv
from core.extraction import clean_text, strip_wrapper_fence
from core.json_scan import JsonScan, JsonScanner
from core.json_stitch import merge_json, start_json
from core.markdown_stitch import MarkdownScan, close_markdown, merge_markdown, start_markdown
from core.merge import Merge
from core.models import OutputFormat
from core.prompts import json_path, json_prompt_context
from core.seam import start_reading
from core.text_stitch import TextScan, close_text, merge_text, start_text

ScanState = JsonScan | CsvScan | MarkdownScan | TextScan
#: The scan model of each format: a stored scan holds no type tag, its job's format does.
SCAN_MODELS: dict[OutputFormat, type[ScanState]] = {
    OutputFormat.JSON: JsonScan,
    OutputFormat.CSV: CsvScan,
    OutputFormat.MARKDOWN: MarkdownScan,
    OutputFormat.TEXT: TextScan,
}


class Stitcher(Protocol):
    """One format's merger, holding the scan state at the cut."""

    @property
    def scan(self) -> ScanState: ...
    @property
    def records(self) -> int: ...
    @property
    def complete(self) -> bool: ...
    @property
    def element_start(self) -> int | None:
        """Where the element the cut is in starts (an offset in the text), if known."""

    def merge(
        self, tail: str, fragment: str, head: str, *, exact: bool = False
    ) -> tuple[Stitcher, Merge]: ...
    def close(self) -> tuple[int, str] | None: ...
    def context(self, tail: str, head: str, budget: int) -> str:
        """The document around the cut, as the next request shows it."""

    def cut_point(self, length: int) -> str:
        """Where a text of ``length`` characters was cut: a JSON path, ``row:N``, ``char:N``."""


class JsonStitcher:
    """JSON: the resumable scanner at the cut (``core.json_scan``)."""

    __slots__ = ("scanner",)

    def __init__(self, scanner: JsonScanner) -> None:
        self.scanner = scanner

    @classmethod
    def start(cls, fragment: str) -> tuple[JsonStitcher, Merge]:
        scanner, merge = start_json(fragment)
        return cls(scanner), merge

    @property
    def scan(self) -> JsonScan:
        return self.scanner.snapshot()

    @property
    def records(self) -> int:
        return self.scanner.records

    @property
    def complete(self) -> bool:
        return self.scanner.complete

    @property
    def element_start(self) -> int | None:
        """Just after the innermost container's last complete member."""
        frames = self.scanner.frames
        return frames[-1].safe if frames else None

    def merge(
        self, tail: str, fragment: str, head: str, *, exact: bool = False
    ) -> tuple[JsonStitcher, Merge]:
        scanner, merge = merge_json(self.scanner, tail, fragment, head, exact=exact)
        return JsonStitcher(scanner), merge

    def close(self) -> tuple[int, str] | None:
        return self.scanner.close()

    def context(self, tail: str, head: str, budget: int) -> str:
        return json_prompt_context(self.scanner, tail, budget)

    def cut_point(self, length: int) -> str:
        return json_path(self.scanner)


class _Lines:
    """What CSV, Markdown and text share: no syntax says they are complete, and the next
    request shows the last lines."""

    __slots__ = ()

    @property
    def complete(self) -> bool:
        return False

    @property
    def element_start(self) -> int | None:
        return None

    def context(self, tail: str, head: str, budget: int) -> str:
        return _last_lines(tail, budget)

    def cut_point(self, length: int) -> str:
        return f"char:{length}"


@dataclass(frozen=True, slots=True)
class CsvStitcher(_Lines):
    scan: CsvScan

    @classmethod
    def start(cls, fragment: str) -> tuple[CsvStitcher, Merge]:
        scan, merge = start_csv(fragment)
        return cls(scan), merge

    @property
    def records(self) -> int:
        return self.scan.records

    def merge(
        self, tail: str, fragment: str, head: str, *, exact: bool = False
    ) -> tuple[CsvStitcher, Merge]:
        scan, merge = merge_csv(self.scan, tail, fragment, exact=exact)
        return CsvStitcher(scan), merge

    def close(self) -> tuple[int, str]:
        return close_csv(self.scan)

    def context(self, tail: str, head: str, budget: int) -> str:
        header = head.split("\n", 1)[0]
        return f"(header) {header}\n...\n" + _last_lines(tail, budget)

    def cut_point(self, length: int) -> str:
        return f"row:{self.scan.records}"


@dataclass(frozen=True, slots=True)
class MarkdownStitcher(_Lines):
    scan: MarkdownScan

    @classmethod
    def start(cls, fragment: str) -> tuple[MarkdownStitcher, Merge]:
        scan, merge = start_markdown(fragment)
        return cls(scan), merge

    @property
    def records(self) -> int:
        return self.scan.records

    def merge(
        self, tail: str, fragment: str, head: str, *, exact: bool = False
    ) -> tuple[MarkdownStitcher, Merge]:
        scan, merge = merge_markdown(self.scan, tail, fragment, exact=exact)
        return MarkdownStitcher(scan), merge

    def close(self) -> tuple[int, str]:
        return close_markdown(self.scan)


@dataclass(frozen=True, slots=True)
class TextStitcher(_Lines):
    scan: TextScan

    @classmethod
    def start(cls, fragment: str) -> tuple[TextStitcher, Merge]:
        scan, merge = start_text(fragment)
        return cls(scan), merge

    @property
    def records(self) -> int:
        return self.scan.records

    def merge(
        self, tail: str, fragment: str, head: str, *, exact: bool = False
    ) -> tuple[TextStitcher, Merge]:
        scan, merge = merge_text(self.scan, tail, fragment, exact=exact)
        return TextStitcher(scan), merge

    def close(self) -> tuple[int, str]:
        return close_text(self.scan)


_STARTS: dict[OutputFormat, Callable[[str], tuple[Stitcher, Merge]]] = {
    OutputFormat.JSON: JsonStitcher.start,
    OutputFormat.CSV: CsvStitcher.start,
    OutputFormat.MARKDOWN: MarkdownStitcher.start,
    OutputFormat.TEXT: TextStitcher.start,
}


def start_stitcher(fmt: OutputFormat, fragment: str) -> tuple[Stitcher, Merge]:
    """Read the first fragment of a document in ``fmt`` (a format, not ``auto``)."""
    return _STARTS[fmt](fragment)


def resume_stitcher(scan: ScanState) -> Stitcher:
    """The stitcher at the cut a stored scan state describes."""
    if isinstance(scan, JsonScan):
        return JsonStitcher(JsonScanner.resume(scan))
    if isinstance(scan, CsvScan):
        return CsvStitcher(scan)
    if isinstance(scan, MarkdownScan):
        return MarkdownStitcher(scan)
    return TextStitcher(scan)


def _last_lines(tail: str, budget: int) -> str:
    part = tail[-budget:]
    newline = part.find("\n")
    return part[newline + 1 :] if 0 <= newline < len(part) // 2 else part


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
