"""Plain-text stitching: the shared seam rules (``core.seam``) with no format checks."""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel, ConfigDict

from core.extraction import clean_text
from core.merge import Merge
from core.seam import (
    EMPTY,
    Reading,
    Seam,
    closing_doubts,
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
    wrapper: str = ""  # the fence a wrapper opened and did not close yet


def _advance(scan: TextScan, append: str, wrapper: str) -> TextScan:
    return TextScan(
        length=scan.length + len(append),
        records=scan.records + append.count("\n"),
        head=grow_head(scan.head, append),
        wrapper=wrapper,
    )


def close_wrapper(reading: Reading, *, line_start: bool) -> tuple[str, str, list[str]]:
    """The text to append, the wrapper still open after it, and a warning."""
    if not reading.fence:
        return reading.append, "", []
    kept, dropped = split_closing_fence(reading.append, reading.fence, line_start=line_start)
    if not dropped:
        return kept, reading.fence, []
    return kept, "", [f"dropped the wrapper's closing fence: {dropped.strip()!r:.80}"]


def start_text(fragment: str) -> tuple[TextScan, Merge]:
    """Clean the first fragment; a wrapper (chat prose, a code fence) is dropped."""
    text, warnings = clean_text(fragment)
    reading = start_reading(text)
    append, wrapper, notes = close_wrapper(reading, line_start=True)
    if not append.strip():
        return TextScan(), Merge.failed(EMPTY, *warnings, *reading.warnings)
    doubts = closing_doubts(reading.append[len(append) :])
    if doubts:  # an end line after the fence: the fence may be the document's own block's
        reading = replace(reading, doubts=(*reading.doubts, *doubts))
        notes += doubts
    return _advance(TextScan(), append, wrapper), finish(reading, append, [*warnings, *notes])


def merge_text(
    scan: TextScan, tail: str, fragment: str, *, exact: bool = False
) -> tuple[TextScan, Merge]:
    """Append a continuation: the best reading of the seam (see ``core.seam``)."""
    if not scan.length:
        return start_text(fragment)
    seam = Seam(wrapper=scan.wrapper, exact=exact)
    reading, warnings, error = read_seam(tail, scan.length, scan.head, fragment, seam)
    if reading is None:
        return scan, Merge.failed(error, *warnings)
    wrapper = "" if reading.closed else reading.fence or scan.wrapper
    return _advance(scan, reading.append, wrapper), finish(reading, reading.append, warnings)


def close_text(scan: TextScan) -> tuple[int, str]:
    """All of the text is presentable."""
    return scan.length, ""
