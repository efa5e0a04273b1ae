"""Properties of the CSV, Markdown and text stitchers: cut anywhere, never silently wrong.

A document of each format is generated, cut at random points into 2-20 fragments, and each
fragment after the first repeats 0 or 8-300 characters of what came before it; when the
repeat is 8 or more it is sometimes led by a prose line or wrapped in a code fence. Fed
through start/merge (the tail being the last 64 KiB of what was kept), the fragments must
give the document back exactly (CSV: the same rows through ``csv.reader``), or a seam must
be flagged (a doubt or a merge failure): a wrong document with no flag is the one outcome
that fails. How often each behaviour comes back exact is measured by the seam corpus
(``benchmarks/bench_seams.py``), not asserted here.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from core.csv_stitch import merge_csv, start_csv
from core.markdown_stitch import merge_markdown, start_markdown
from core.merge import Merge
from core.overlap import MIN_OVERLAP
from core.text_stitch import (
    merge_text,
    start_text,
)
from tests.hunting import profile

TAIL = 65536
PROSE = "Here is the continuation of the document:\n"

PROFILE = profile(200, deadline=None, database=None)

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


Start = Callable[[str], tuple[Any, Merge]]
Next = Callable[[Any, str, str], tuple[Any, Merge]]


def run(start: Start, merge: Next, feed: list[Piece]) -> tuple[str, Any, bool]:
    """Stitch as the engine does; also say whether any seam was flagged (doubt or failure)."""
    scan, result = start(feed[0].fed)
    assert result.ok, result.error
    text = result.append
    flagged = False
    for piece in feed[1:]:
        new, result = merge(scan, text[-TAIL:], piece.fed)
        flagged = flagged or not result.ok or bool(result.doubts)
        if result.ok:
            scan = new
            text += result.append
    assert scan.length == len(text)
    return text, scan, flagged


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


# --- Properties -------------------------------------------------------------------------------


@PROFILE
@given(st.data())
def test_csv_cut_anywhere_gives_the_same_rows(data: st.DataObject) -> None:
    doc = data.draw(csv_documents())
    assume(len(doc) > 1)
    feed = data.draw(pieces(doc, "```csv\n"))
    text, scan, flagged = run(start_csv, merge_csv, feed)
    assert flagged or rows(text) == rows(doc)
    assert flagged or scan.records == len(rows(doc)) - 1


@PROFILE
@given(st.data())
def test_markdown_cut_anywhere_gives_the_same_text(data: st.DataObject) -> None:
    doc = data.draw(markdown_documents())
    feed = data.draw(pieces(doc, "```markdown\n"))
    text, scan, flagged = run(start_markdown, merge_markdown, feed)
    assert flagged or text == doc
    assert flagged or (scan.records, scan.fence) == (doc.count("\n"), "")


@PROFILE
@given(st.data())
def test_text_cut_anywhere_gives_the_same_text(data: st.DataObject) -> None:
    doc = data.draw(text_documents())
    feed = data.draw(pieces(doc, data.draw(st.sampled_from(["```text\n", "```\n", "~~~\n"]))))
    text, scan, flagged = run(start_text, merge_text, feed)
    assert flagged or text == doc
    assert flagged or scan.records == doc.count("\n")


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
    text, _, flagged = run(start_markdown, merge_markdown, [Piece(f, 0, 0, "") for f in fed])
    assert flagged or text == doc
