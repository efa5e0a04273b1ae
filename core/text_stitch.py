"""Plain-text stitching: the shared seam rules (``core.seam``) with no format checks."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from core.extraction import clean_text
from core.merge import Merge
from core.seam import (
    EMPTY,
    Reading,
    Seam,
    fence_opener,
    finish,
    grow_head,
    read_seam,
    split_closing_fence,
    start_reading,
)


class TextScan(BaseModel):
    """Resumable state of a plain-text accumulation (the text itself lives elsewhere)."""

    model_config = ConfigDict(frozen=True)

    length: int = 0
    records: int = 0  # complete lines
    head: str = ""


def _advance(scan: TextScan, append: str) -> TextScan:
    return TextScan(
        length=scan.length + len(append),
        records=scan.records + append.count("\n"),
        head=grow_head(scan.head, append),
    )


def _closed(reading: Reading, *, line_start: bool) -> str:
    if not reading.fence:
        return reading.append
    return split_closing_fence(reading.append, reading.fence, line_start=line_start)[0]


def start_text(fragment: str) -> tuple[TextScan, Merge]:
    """Clean the first fragment; a code fence wrapping it is dropped."""
    text, warnings = clean_text(fragment)
    reading = start_reading(text, fence_opener(text))
    append = _closed(reading, line_start=True)
    if not append:
        return TextScan(), Merge.failed(EMPTY, *warnings, *reading.warnings)
    return _advance(TextScan(), append), finish(reading, append, warnings)


def merge_text(scan: TextScan, tail: str, fragment: str) -> tuple[TextScan, Merge]:
    """Append a continuation: overlap of 8+ characters, restart, repeated lines, or exact."""
    if not scan.length:
        return start_text(fragment)
    reading, warnings, error = read_seam(tail, scan.length, scan.head, fragment, Seam())
    if reading is None:
        return scan, Merge.failed(error, *warnings)
    return _advance(scan, reading.append), finish(reading, reading.append, warnings)


def close_text(scan: TextScan) -> tuple[int, str]:
    """All of the text is presentable."""
    return scan.length, ""
