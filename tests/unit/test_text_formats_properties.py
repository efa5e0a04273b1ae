"""Properties of the CSV, Markdown and text stitchers: cut anywhere, get the document back.

A document of each format is generated, cut at random points into 2-20 fragments, and each
fragment after the first repeats 0 or 8-300 characters of what came before it; when the
repeat is 8 or more it is sometimes led by a prose line or wrapped in a code fence. Fed
through start/merge (the tail being the last 64 KiB of what was kept), the fragments must
give the document back exactly (CSV: the same rows through ``csv.reader``).

Seams that are ambiguous by construction are excluded, each for a stated reason:

- in ``unambiguous`` (with ``assume``): a seam where some other overlap of 8+ characters
  also matches, e.g. in periodic text, or where a fragment that repeats nothing happens to
  start with 8+ characters (or whole lines, up to trailing white space) equal to the end of
  what was received: the stitcher rightly reads those as repeats (a match after a
  "preamble" that is only the rest of the cut line does not count: rows sharing a prefix
  produce those, and the stitcher refuses them); and a fence-wrapped fragment whose own
  last line is a bare fence marker (cut right after a code block's backticks): it reads
  as the wrapper's closing line;
- by the generators' design: a repeat of 1-7 characters is never generated (it is ambiguous
  by definition: the tables pin that down); documents start with a line that never recurs
  (else a fragment could look like a restart); CSV data never contains the header's ``H``
  (else a data row could look like a re-emitted header) and Markdown table rows never equal
  their header; Markdown inline text holds no block markers (a cut before ``- x`` in the
  middle of a line would rightly get a line break); a wrapper's closing fence is only added
  where the document is outside a code block (else it would close the document's block).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core.csv_stitch import merge_csv, start_csv
from core.markdown_stitch import merge_markdown, start_markdown
from core.merge import Merge
from core.overlap import MIN_OVERLAP, Splice
from core.seam import (
    find_splices,
    line_overlap,
    split_closing_fence,
    weak_preamble,
)
from core.text_stitch import (
    merge_text,
    start_text,
)

TAIL = 65536
PROSE = "Here is the continuation of the document:\n"

PROFILE = settings(max_examples=200, deadline=None)

LETTERS = st.characters(categories=("Ll", "Lu", "Lo"), exclude_characters="HQ")
WORD = st.text(LETTERS, min_size=1, max_size=7)
WORDS = st.lists(WORD, min_size=1, max_size=6).map(" ".join)


# --- Documents ----------------------------------------------------------------------------

FIELD_CHARS = st.one_of(
    st.sampled_from(list('ab ,"\n;:-.0123456789é日ß')),
    st.characters(categories=("Ll", "Lo"), exclude_characters="H"),
)


@st.composite
def csv_documents(draw: st.DrawFn) -> str:
    """A header of distinct ``H`` names, then rows with quoted commas, quotes, newlines."""
    width = draw(st.integers(1, 4))
    field = st.text(FIELD_CHARS, max_size=10)
    rows = draw(st.lists(st.lists(field, min_size=width, max_size=width), min_size=1, max_size=40))
    if draw(st.booleans()):  # rows sharing a long prefix: cuts inside it look like repeats
        rows = [[f"2024-05-{n:05d}", *row] for n, row in enumerate(rows)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([f"H{i}" for i in range(len(rows[0]))])
    writer.writerows(rows)
    return out.getvalue()


@st.composite
def tables(draw: st.DrawFn) -> str:
    """A header of ``H`` cells (never a body row), its separator, one to five rows."""
    width = draw(st.integers(1, 3))
    header = "| " + " | ".join(f"H{chr(65 + i)}" for i in range(width)) + " |"
    separator = "|" + " --- |" * width
    cells = st.lists(WORD, min_size=width, max_size=width).map(
        lambda c: "| " + " | ".join(c) + " |"
    )
    return "\n".join([header, separator, *draw(st.lists(cells, min_size=1, max_size=5))])


@st.composite
def code_blocks(draw: st.DrawFn) -> str:
    """A fenced block whose lines look like headings and lists: they are code."""
    line = st.one_of(
        WORDS.map(lambda w: "# " + w),
        st.tuples(WORD, WORDS).map(lambda t: f"{t[0]} = 1 # {t[1]} - x"),
        WORDS,
        st.just("## not a heading"),
    )
    return "\n".join(["```python", *draw(st.lists(line, min_size=1, max_size=5)), "```"])


@st.composite
def markdown_documents(draw: st.DrawFn) -> str:
    """Headings (repeated ones too), paragraphs, lists, quotes, tables, code with ``#`` lines."""
    heading = st.tuples(st.integers(1, 4), WORDS).map(lambda t: "#" * t[0] + " " + t[1])
    block = st.one_of(
        heading,
        st.sampled_from(["## Notes", "## Summary"]),  # identical headings must all survive
        st.lists(WORDS, min_size=1, max_size=3).map("\n".join),
        st.lists(WORDS, min_size=1, max_size=4).map(
            lambda items: "\n".join("- " + i for i in items)
        ),
        st.lists(WORDS, min_size=1, max_size=9).map(
            lambda items: "\n".join(f"- Item number {n}: {i}" for n, i in enumerate(items))
        ),
        st.lists(WORDS, min_size=1, max_size=4).map(
            lambda items: "\n".join(f"{n}. {i}" for n, i in enumerate(items, 1))
        ),
        WORDS.map(lambda w: "> " + w),
        tables(),
        code_blocks(),
    )
    blocks = draw(st.lists(block, min_size=1, max_size=25))
    return "# Report 2026 on the generated document\n\n" + "\n\n".join(blocks) + "\n"


@st.composite
def text_documents(draw: st.DrawFn) -> str:
    """Lines of unicode words and punctuation, some blank."""
    line = st.one_of(
        st.just(""),
        st.lists(st.one_of(WORD, st.sampled_from(list(",.;:!?-#|>*0123456789"))), max_size=12).map(
            " ".join
        ),
    )
    lines = draw(st.lists(line, min_size=1, max_size=40))
    if draw(st.booleans()):  # lines sharing a long prefix: cuts inside it look like repeats
        lines = [f"Entry number {n}: {line}" for n, line in enumerate(lines)]
    return "Opening line 2026 of the generated text document\n" + "\n".join(lines)


# --- Fragments ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """One fragment as fed, and what the stitcher should read in it."""

    fed: str
    cut: int  # where the new text starts in the document
    repeat: int  # characters of the document before ``cut`` that it repeats
    lead: str  # prose or fence opener before the repeat
    closed: bool = False  # whether a wrapper's closing fence was added


def inside_code(doc: str, end: int) -> bool:
    """Whether ``doc[:end]`` ends inside a fenced code block (the generator's fences)."""
    return sum(line.startswith("```") for line in doc[:end].split("\n")) % 2 == 1


@st.composite
def pieces(draw: st.DrawFn, doc: str, fence: str) -> list[Piece]:
    count = draw(st.integers(1, min(19, len(doc) - 1)))
    cuts = sorted(draw(st.sets(st.integers(1, len(doc) - 1), min_size=count, max_size=count)))
    out = [Piece(doc[: cuts[0]], 0, 0, "")]
    for cut, end in zip(cuts, [*cuts[1:], len(doc)], strict=True):
        repeat = min(cut, draw(st.one_of(st.just(0), st.integers(MIN_OVERLAP, 300))))
        repeat = repeat if repeat >= MIN_OVERLAP else 0
        lead = draw(st.sampled_from(["", PROSE, fence])) if repeat else ""
        fed = lead + doc[cut - repeat : end]
        closable = fed.endswith("\n") and not inside_code(doc, end)
        closed = lead == fence and closable and draw(st.booleans())
        if closed:
            fed += fence[:3]  # the wrapper's closing fence
        out.append(Piece(fed, cut, repeat, lead, closed))
    return out


def unambiguous(doc: str, piece: Piece) -> bool:
    """Whether the seam has one reading (see the module docstring)."""
    tail = doc[: piece.cut][-TAIL:]
    fence = piece.lead[:3] if piece.lead[:3] in ("```", "~~~") else ""
    if fence and not piece.closed and split_closing_fence(piece.fed, fence, line_start=False)[1]:
        return False  # a wrapped fragment cut right after a fence line's marker: which is it?
    longs = [
        s
        for s in find_splices(tail, piece.fed)
        if s.overlap >= MIN_OVERLAP and not weak_preamble(tail, piece.fed, s)
    ]
    if piece.repeat:
        return longs[:1] == [Splice(piece.repeat, len(piece.lead))]
    return not longs and not line_overlap(tail, piece.fed, whole=piece.cut <= TAIL)


Start = Callable[[str], tuple[Any, Merge]]
Next = Callable[[Any, str, str], tuple[Any, Merge]]


def run(start: Start, merge: Next, feed: list[Piece]) -> tuple[str, Any]:
    scan, result = start(feed[0].fed)
    assert result.ok, result.error
    text = result.append
    for piece in feed[1:]:
        scan, result = merge(scan, text[-TAIL:], piece.fed)
        assert result.ok, result.error
        text += result.append
    assert scan.length == len(text)
    return text, scan


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


# --- Properties -------------------------------------------------------------------------------


@PROFILE
@given(st.data())
def test_csv_cut_anywhere_gives_the_same_rows(data: st.DataObject) -> None:
    doc = data.draw(csv_documents())
    assume(len(doc) > 1)
    feed = data.draw(pieces(doc, "```csv\n"))
    assume(all(unambiguous(doc, piece) for piece in feed[1:]))
    text, scan = run(start_csv, merge_csv, feed)
    assert rows(text) == rows(doc)
    assert scan.records == len(rows(doc)) - 1


@PROFILE
@given(st.data())
def test_markdown_cut_anywhere_gives_the_same_text(data: st.DataObject) -> None:
    doc = data.draw(markdown_documents())
    feed = data.draw(pieces(doc, "```markdown\n"))
    assume(all(unambiguous(doc, piece) for piece in feed[1:]))
    text, scan = run(start_markdown, merge_markdown, feed)
    assert text == doc
    assert (scan.records, scan.fence) == (doc.count("\n"), "")


@PROFILE
@given(st.data())
def test_text_cut_anywhere_gives_the_same_text(data: st.DataObject) -> None:
    doc = data.draw(text_documents())
    feed = data.draw(pieces(doc, data.draw(st.sampled_from(["```text\n", "```\n", "~~~\n"]))))
    assume(all(unambiguous(doc, piece) for piece in feed[1:]))
    text, scan = run(start_text, merge_text, feed)
    assert text == doc
    assert scan.records == doc.count("\n")


BLOCK_LINE = re.compile(r"#{1,6} |[-*+] |\d+\. |> |\|")


@PROFILE
@given(st.data())
def test_markdown_line_break_lost_before_a_block_is_restored(data: st.DataObject) -> None:
    """Cut before a list item, table row or heading, the line break before it lost: it comes back.

    Only lines right after a non-blank line qualify (a lost break after a blank line leaves a
    line start, where nothing needs restoring), never inside code (nothing is inserted there).
    """
    doc = data.draw(markdown_documents())
    starts = [
        i
        for i in range(2, len(doc))
        if doc[i - 1] == "\n" != doc[i - 2] and BLOCK_LINE.match(doc, i) and not inside_code(doc, i)
    ]
    assume(starts)
    cuts = sorted(data.draw(st.sets(st.sampled_from(starts), min_size=1, max_size=10)))
    bounds = list(itertools.pairwise([0, *cuts, len(doc)]))
    fed = [doc[a : b - 1] for a, b in bounds[:-1]] + [doc[bounds[-1][0] :]]
    for cut, fragment in zip(cuts, fed[1:], strict=True):
        tail = doc[: cut - 1][-TAIL:]
        assume(not [s for s in find_splices(tail, fragment) if s.overlap >= MIN_OVERLAP])
    text, _ = run(start_markdown, merge_markdown, [Piece(f, 0, 0, "") for f in fed])
    assert text == doc
