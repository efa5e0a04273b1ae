"""Markdown stitching: keep blocks apart, code blocks intact, headings where they are.

The seed's merger glued ``"Content" + "## Section"`` into one line, lost track of code
fences across a cut, and deleted a heading whenever a similar one existed elsewhere. Here:

- a fragment that starts a block (heading, list item, table row, fence, quote, rule) after
  a cut that left a line unfinished gets its line break back;
- the scan carries the open code fence, so inside a code block nothing is inserted and
  ``#`` lines are code, not headings;
- the scan carries the open table's header, so a continuation that re-emits the header row
  and its ``|---|`` separator loses them once;
- only the seam is ever de-duplicated (overlap, repeated lines, a restart); content that
  merely resembles earlier content, headings included, is always kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from itertools import pairwise

from pydantic import BaseModel, ConfigDict

from core.extraction import clean_text
from core.leads import Strength
from core.merge import Merge
from core.seam import (
    AMBIGUOUS,
    AMBIGUOUS_END,
    EMPTY,
    Accept,
    Seam,
    closing_doubts,
    finish,
    grow_head,
    read_seam,
    split_closing_fence,
    start_reading,
)

#: Characters of the unfinished and the last line kept in the scan: enough to classify a
#: line and to recognise a table header, without carrying a whole paragraph.
LINE_CAP = 1024
WRAPPER_TAGS = frozenset({"markdown", "md"})

_FENCE_LINE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>.*)")
_BLOCK_START = re.compile(
    r"#{1,6}(?:[ \t]|$)|[-*+][ \t]|\d{1,9}[.)][ \t]|>|```|~~~|(?:-{3,}|\*{3,}|_{3,})[ \t]*$",
    re.MULTILINE,
)
_FENCE_START = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n]*\n", re.MULTILINE)
_MARKDOWN_OR_PROSE = re.compile(
    r"#{1,6} \S|[-*+] \S|\| |> |\d{1,4}[.)] |[A-Z][a-z'\u2019-]*(?: |\r?$)"
)
_ORDERED = re.compile(r"[ \t]*\d{1,9}[.)][ \t]")
#: A line holding only block markers has no content yet: what follows continues them.
_MARKERS_ONLY = re.compile(r"[\s#>*+\-|`~]*")


class MarkdownScan(BaseModel):
    """Resumable state of a Markdown accumulation (the text itself lives elsewhere)."""

    model_config = ConfigDict(frozen=True)

    length: int = 0
    records: int = 0  # complete lines
    head: str = ""
    partial: str = ""  # the unfinished last line ('' after a line break)
    last_line: str = ""  # the last complete line: the header when a separator follows
    fence: str = ""  # marker of the open code fence (```, ~~~~, …), '' outside code
    wrapper: str = ""  # the fence a wrapper opened and did not close yet
    shared: int = 0  # the last merge kept a closer that could end the wrapper or a code block
    table: str = ""  # header row + "\n" + separator row of the open table, '' outside one


def _opens(line: str) -> str:
    match = _FENCE_LINE.match(line)
    if match is None or (match.group("fence")[0] == "`" and "`" in match.group("info")):
        return ""
    return match.group("fence")


def _closes(line: str, fence: str) -> bool:
    mark = line.strip()
    return len(mark) >= len(fence) and mark == fence[0] * len(mark)


def _is_separator(line: str) -> bool:
    mark = line.strip()
    return "-" in mark and "|" in mark and not set(mark) - set("|-: \t")


def _is_row(line: str) -> bool:
    return "|" in line and bool(line.strip())


def _pipes(line: str) -> int:
    return line.count("|") - line.count("\\|")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _step(fence: str, table: str, last: str, line: str) -> tuple[str, str]:
    """Fence and table state after one complete line."""
    if fence:
        return ("" if _closes(line, fence) else fence), table
    opened = _opens(line)
    if opened:
        return opened, ""
    if table:
        return "", (table if _is_row(line) else "")
    if _is_separator(line) and _is_row(last) and not _is_separator(last):
        return "", f"{last.rstrip()}\n{line.rstrip()}"
    return "", ""


def _advance(scan: MarkdownScan, append: str) -> MarkdownScan:
    parts = append.split("\n")
    fence, table, last = scan.fence, scan.table, scan.last_line
    if len(parts) == 1:
        partial = scan.partial + append[: LINE_CAP - len(scan.partial)]
    else:
        lines = [scan.partial + parts[0][: LINE_CAP - len(scan.partial)], *parts[1:-1]]
        for line in lines:
            fence, table = _step(fence, table, last, line)
            last = line
        partial, last = parts[-1][:LINE_CAP], last[:LINE_CAP]
    return MarkdownScan(
        length=scan.length + len(append),
        records=scan.records + len(parts) - 1,
        head=grow_head(scan.head, append),
        partial=partial,
        last_line=last,
        fence=fence,
        table=table,
    )


def _in_code(scan: MarkdownScan) -> bool:
    """Whether the seam lies inside a code block (an unfinished closing line ends it)."""
    return bool(scan.fence) and not (scan.partial and _closes(scan.partial, scan.fence))


def _ends_in_code(scan: MarkdownScan, text: str) -> bool:
    """Whether ``text``, appended, leaves a code block open; not where it ends in a bare
    fence line (the closer of a wrapper the scan does not count, before its remark)."""
    last = text.rstrip().rsplit("\n", 1)[-1].strip()
    if last and last[0] in "`~" and last == last[0] * len(last) and len(last) >= 3:
        return False
    return _in_code(_advance(scan, text))


def _row_complete(scan: MarkdownScan) -> bool:
    """Whether a fragment starting with ``|`` starts a new row rather than ending the cut one."""
    cut = scan.partial.strip()
    if not cut.startswith("|"):
        return True
    if scan.table:
        return _pipes(cut) >= _pipes(scan.table.split("\n", 1)[0])
    return cut.endswith("|") and _pipes(cut) >= 2


def needs_break(scan: MarkdownScan, text: str) -> bool:
    """Whether ``text`` starts a block that the unfinished last line must not swallow."""
    if not scan.partial or not text or text[0] in "\r\n":
        return False
    if scan.fence:
        return not _in_code(scan) and _BLOCK_START.match(text) is not None
    if text.startswith("|"):
        return _row_complete(scan)
    if scan.partial.lstrip().startswith("|") and not _row_complete(scan):
        return False  # inside a table row ("| --- | :--" + "- |"): no block starts there
    if _MARKERS_ONLY.fullmatch(scan.partial) or scan.partial[-1] in " \t":
        return False  # a cut after a space is mid-sentence: "founded in " + "2019. It grew"
    if scan.partial[-1].isdigit() and text[0].isdigit():
        return False  # mid-number: "1" + "999. It grew" is one number
    match = _BLOCK_START.match(text)
    if match is None:
        return False
    if match.group()[0].isdigit():  # "1998. " mid-line is a year, unless a list goes on
        return any(_ORDERED.match(line) for line in (scan.partial, scan.last_line))
    return True


def _layout(row: str) -> list[str]:
    """A table row's cells without padding; a delimiter row's as alignments ("l", "c", ...)."""
    body = row.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    cells = [cell.strip() for cell in body.split("|")]
    if _is_separator(row):
        return [f"{c[:1] == ':'}{c[-1:] == ':'}" for c in cells]
    return cells


def _table_dropper(scan: MarkdownScan) -> Callable[[str, bool], tuple[int, str, Strength]]:
    def drop(body: str, parted: bool) -> tuple[int, str, Strength]:
        if not scan.table or _in_code(scan):
            return 0, "", Strength.NONE
        if scan.partial and not (body.startswith("|") and _row_complete(scan)):
            return 0, "", Strength.NONE
        lines = body.split("\n", 2)
        header, _, separator = scan.table.partition("\n")
        if len(lines) < 2 or not _is_separator(lines[1]) or _cells(lines[0]) != _cells(header):
            return 0, "", Strength.NONE
        same = [_layout(lines[0]), _layout(lines[1])] == [_layout(header), _layout(separator)]
        # Other names or alignments after a blank line: the header again, or a new table
        # of as many columns? Without one, a delimiter row cannot be the table's own.
        sure = Strength.STRONG if same or not parted else Strength.WEAK
        size = len(lines[0]) + len(lines[1]) + len(lines) - 1
        return size, "dropped a repeated table header", sure

    return drop


def wrapper_fence(info: str) -> Strength:
    """A ```markdown fence wraps a reply; any other may open the document's own code block."""
    return Strength.STRONG if info.lower() in WRAPPER_TAGS else Strength.WEAK


def _row_fits(scan: MarkdownScan, text: str) -> bool:
    """Whether the table row the seam completes has its table's cell count.

    Only a row completed at the seam is checked (``"|---:|---:"`` + ``"|---:|---:|"`` is a
    separator of four cells, not two); a table's own ragged rows later are its business.
    """
    if _in_code(scan) or not scan.partial.lstrip().startswith("|"):
        return True
    end = text.find("\n")
    if end < 0:
        return True
    line = scan.partial + text[:end]
    if scan.table:
        header = scan.table.split("\n", 1)[0]
    elif _is_separator(line) and _is_row(scan.last_line):
        header = scan.last_line
    else:
        return True
    return len(_cells(line)) == len(_cells(header))


def _delimiter_fits(scan: MarkdownScan, text: str) -> bool:
    """Whether a delimiter row (``|---|---|``) among the two lines the seam completes
    follows a row of as many cells.

    A table's header and delimiter rows have as many cells (GFM); a delimiter row after
    another line makes no table: a reading that puts one there (``"| A | B |\n"`` + ``"
    |\n|---|---|"``: a line `` |`` between them) is the header's end repeated, no document.
    """
    if _in_code(scan):
        return True
    lines = (scan.partial + text).split("\n", 2)[:-1]  # complete lines only
    previous = scan.last_line
    for line in lines:
        if _opens(line):
            return True  # code from here on: its lines are no table
        if _is_separator(line) and len(_layout(line)) != len(_layout(previous)):
            return False
        previous = line
    return True


def _accept(scan: MarkdownScan, nl: str = "\n") -> Accept:
    """Read as it stands, or with a line break (the document's ``nl``) before a fragment
    that starts a block the unfinished cut line must not swallow."""

    def accept(text: str) -> tuple[str, str] | None:
        if needs_break(scan, text):
            if not (_row_fits(scan, "\n" + text) and _delimiter_fits(scan, "\n" + text)):
                return None
            note = "inserted a line break: the fragment starts a new block"
            return nl + text, "; ".join(filter(None, (_header_again(scan, "\n" + text), note)))
        if not (_row_fits(scan, text) and _delimiter_fits(scan, text)):
            return None
        return text, _header_again(scan, text)

    return accept


#: Lines of a reading looked at for the open table's header again.
HEADER_AGAIN_LINES = 4


def _header_again(scan: MarkdownScan, text: str) -> str:
    """A doubt where the reading writes the open table's header row and a delimiter row
    again inside it after a row cut short (the reply began the table again, which no
    repeat reading removes), else ''."""
    if not scan.table or _in_code(scan) or not scan.partial.lstrip().startswith("|"):
        return ""  # (after a whole row, the table's own dropper reads a header again)
    header = _cells(scan.table.partition("\n")[0])
    lines = (scan.partial + text).split("\n", HEADER_AGAIN_LINES)[:HEADER_AGAIN_LINES]
    for above, line in pairwise(lines):
        if not above.strip():
            return ""  # (a table of its own after a blank line may have that header too)
        if _is_separator(line) and _cells(above) == header:
            return f"{AMBIGUOUS}seam: the table's header row again inside it: the table begun"
    return ""


def _close_wrapper(
    scan: MarkdownScan, text: str, fence: str, *, line_start: bool
) -> tuple[MarkdownScan, str]:
    """Drop the wrapper's closing fence, unless that line closes the document's own block.

    The scan returned remembers a wrapper still open (its closer may come in a later reply).
    """
    kept, closing = split_closing_fence(text, fence, line_start=line_start) if fence else (text, "")
    inner = _advance(scan, kept)
    if not closing:
        return inner.model_copy(update={"wrapper": fence}), kept
    mark = closing.strip().split("\n", 1)[0].strip()
    if inner.fence and _closes(mark, inner.fence) and len(fence) <= len(inner.fence):
        return _advance(inner, closing).model_copy(update={"wrapper": fence, "shared": 1}), text
    return inner.model_copy(update={"wrapper": ""}), kept


def _first_fence(text: str) -> Callable[[str], Strength]:
    """At the start of a first reply, a bare fence before prose or Markdown is a wrapper (a
    document seldom opens with a code block; code seldom starts with a capitalised phrase)."""
    fence = _FENCE_START.search(text, 0, 4 * LINE_CAP)
    after = text[fence.end() : fence.end() + LINE_CAP].lstrip("\r\n") if fence else ""
    looks = _MARKDOWN_OR_PROSE.match(after.split("\n", 1)[0]) is not None

    def strength(info: str) -> Strength:
        return Strength.STRONG if looks and not info else wrapper_fence(info)

    return strength


def _fence_at_end(closing: str) -> bool:
    """Whether a dropped wrapper closer is a bare fence that ends the fragment: in a reply
    that was cut, it may as well open the document's next code block."""
    mark = closing.strip()
    return len(mark) >= 3 and mark == mark[0] * len(mark) and mark[0] in "`~"


def _with_doubts(merge: Merge, closing: str, scan: MarkdownScan) -> Merge:
    """The merge, doubted when the wrapper's closer it dropped may be the document's, or
    the document's closer it kept may be the wrapper's."""
    if scan.shared:
        doubt = "ambiguous fence: a closing fence ends the wrapper or the document's code block"
        merge = replace(merge, warnings=(*merge.warnings, doubt), doubts=(*merge.doubts, doubt))
    if closing and (dropped := closing_doubts(closing)):
        merge = replace(
            merge, warnings=(*merge.warnings, *dropped), doubts=(*merge.doubts, *dropped)
        )
    if not _fence_at_end(closing):
        return merge
    doubt = (
        f"{AMBIGUOUS_END}a bare {closing.strip()} at the very end closes the wrapper, "
        "or opens a code block the next reply goes on with"
    )
    return replace(merge, warnings=(*merge.warnings, doubt), doubts=(*merge.doubts, doubt))


def start_markdown(fragment: str) -> tuple[MarkdownScan, Merge]:
    """Clean the first fragment; a wrapper (chat prose, a ```markdown fence) is dropped."""
    text, warnings = clean_text(fragment)
    reading = start_reading(
        text,
        fence_strength=_first_fence(text),
        ends_in_field=lambda t: _ends_in_code(MarkdownScan(), t),
    )
    scan, append = _close_wrapper(MarkdownScan(), reading.append, reading.fence, line_start=True)
    if not append.strip():
        return MarkdownScan(), Merge.failed(EMPTY, *warnings, *reading.warnings)
    closing = reading.append[len(append) :]
    merge = _with_doubts(finish(reading, append, warnings), closing, scan)
    return scan.model_copy(update={"shared": 0}), _code_or_wrapper(merge, append)


def _code_or_wrapper(merge: Merge, append: str) -> Merge:
    """The first reply's merge, doubted when it opens with a bare fence kept as the
    document's code block before a line too short to tell what follows (``"```\n# "``:
    a heading in a wrapper, or a comment in code)."""
    end = append.find("\n", 0, LINE_CAP)
    line, after = append[:end].strip(), append[end + 1 :]
    if end < 0 or len(line) < 3 or line != line[0] * len(line) or line[0] not in "`~":
        return merge  # no bare fence (```python: code, as the format reads it)
    if "\n" in after or not after.strip():
        return merge
    doubt = (
        f"{AMBIGUOUS}start: a bare fence opens the reply before a cut line: the wrapper's "
        "fence, or the document's own code block"
    )
    return replace(merge, warnings=(*merge.warnings, doubt), doubts=(*merge.doubts, doubt))


def merge_markdown(
    scan: MarkdownScan, tail: str, fragment: str, *, exact: bool = False
) -> tuple[MarkdownScan, Merge]:
    """Append a continuation without gluing blocks or breaking code blocks."""
    if not scan.length:
        return start_markdown(fragment)
    seam = Seam(
        accept=_accept(scan, "\r\n" if "\r\n" in tail and not tail.endswith("\r") else "\n"),
        fence_strength=wrapper_fence,
        wrapper=scan.wrapper,
        drop_repeat=_table_dropper(scan),
        strip_close=False,
        exact=exact,
        in_field=_in_code(scan),
        ends_in_field=lambda text: _ends_in_code(scan, text),
    )
    reading, warnings, error = read_seam(tail, scan.length, scan.head, fragment, seam)
    if reading is None:
        return scan, Merge.failed(error, *warnings)
    new, append = _close_wrapper(scan, reading.append, reading.fence, line_start=not scan.partial)
    closing = reading.append[len(append) :]
    return new.model_copy(update={"shared": 0}), _with_doubts(
        finish(reading, append, warnings), closing, new
    )


def close_markdown(scan: MarkdownScan) -> tuple[int, str]:
    """All of the text, plus a closing fence line when a code block is left open."""
    if not scan.fence or (scan.partial and _closes(scan.partial, scan.fence)):
        return scan.length, ""
    return scan.length, ("\n" if scan.partial else "") + scan.fence + "\n"
