"""Plain-text stitching and the shared seam rules (docs/engine.md, "Reading a seam": the
same safety rules as JSON).

Overlaps of 8+ characters are removed once; shorter ones are ambiguous and read as exact
continuation with a warning; a restart never duplicates; wrappers and prose go.
"""

from __future__ import annotations

import pytest

from core.merge import Merge
from core.overlap import Splice, normalized_overlaps
from core.seam import (
    REPEATED,
    split_closing_fence,
)
from core.text_stitch import (
    TextScan,
    close_text,
    merge_text,
    start_text,
)

TAIL = 65536


def stitch(*fragments: str) -> tuple[str, TextScan, list[Merge]]:
    """Feed fragments as the engine does: the tail is the last 64 KiB of what was kept."""
    scan, merge = start_text(fragments[0])
    text, merges = merge.append, [merge]
    for fragment in fragments[1:]:
        scan, merge = merge_text(scan, text[-TAIL:], fragment)
        assert merge.ok, merge.error
        text += merge.append
        merges.append(merge)
    assert scan.length == len(text)
    return text, scan, merges


def warned(merges: list[Merge], words: str) -> bool:
    return any(words in warning for merge in merges for warning in merge.warnings)


@pytest.mark.parametrize(
    ("fragments", "expected", "splice"),
    [
        pytest.param(["Hello ", "world"], "Hello world", Splice(0), id="exact-continuation"),
        pytest.param(
            ["The quick brown fox", "brown fox jumps"],
            "The quick brown fox jumps",
            Splice(9),
            id="overlap-of-8-or-more-is-removed-once",
        ),
        pytest.param(
            ["The quick brown fox", "Here is the rest:\nbrown fox jumps"],
            "The quick brown fox jumps",
            Splice(9, 18),
            id="prose-line-before-the-overlap-is-dropped",
        ),
        pytest.param(
            ["The quick brown fox", "```text\nbrown fox jumps\n```"],
            "The quick brown fox jumps\n",
            Splice(9, 8),
            id="fence-wrapper-around-an-overlap-is-dropped-with-its-closing-line",
        ),
        pytest.param(
            ["Line one\n", "```\nLine two\n```"],
            "Line one\nLine two\n",
            Splice(0, 4),
            id="fence-wrapper-around-an-exact-continuation-is-dropped",
        ),
        pytest.param(
            ["aaaaaaaaaaaa", "aaaaaaaaaaaaaaab"],
            "aaaaaaaaaaaaaaab",
            Splice(12),
            id="periodic-text-takes-the-longest-overlap",
        ),
    ],
)
def test_overlap_merge(fragments: list[str], expected: str, splice: Splice) -> None:
    text, _, merges = stitch(*fragments)
    assert text == expected
    assert merges[-1].splice == splice


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        pytest.param(
            ["Entry number 1: a\nEntry number 2: b\nEntry number ", "3: c\nEntry number 4: d\n"],
            "Entry number 1: a\nEntry number 2: b\nEntry number 3: c\nEntry number 4: d\n",
            id="rest-of-the-cut-line-is-not-a-preamble-before-a-shared-line-prefix",
        ),
        pytest.param(
            ["The quick brown fox\njumps over", "Sure thing.\nbrown fox\njumps over the dog"],
            "The quick brown fox\njumps over the dog",
            id="prose-without-a-colon-before-a-repeat-across-lines-is-dropped",
        ),
        pytest.param(
            ["Entry number 1: a\nEntry number ", "Here it is:\nEntry number 2: b\n"],
            "Entry number 1: a\nEntry number 2: b\n",
            id="prose-ending-with-a-colon-before-a-repeat-of-the-cut-line-is-dropped",
        ),
    ],
)
def test_preamble_or_rest_of_the_cut_line(fragments: list[str], expected: str) -> None:
    """In lines sharing a prefix, an exact continuation looks like "preamble + repeat"."""
    assert stitch(*fragments)[0] == expected


def test_overlap_near_the_end_of_a_repetitive_tail_is_found() -> None:
    """The overlap search bounds its anchor hits; the end of a long list is still reached."""
    doc = "".join(f"Line {i} of some text with words.\n" for i in range(100_000))
    cut = doc.index("Line 50000 ") + len("Line 50000 ") + 200  # the overlap starts at "of some"
    fragment = doc[cut - 200 : cut + 100_000]  # a long fragment: the whole tail is searched
    text, _, merges = stitch(doc[:cut], fragment)
    assert text == doc[: cut + 100_000]
    assert merges[-1].splice == Splice(200)


@pytest.mark.parametrize(
    ("fragments", "expected", "doubt"),
    [
        pytest.param(["Hello wor", "world"], "Hello world", False, id="word-re-emitted"),
        pytest.param(["1234567", "1234567 end"], "1234567 end", True, id="number-re-emitted"),
        pytest.param(["abc lo", "lo there"], "abc lolo there", True, id="two-characters"),
        pytest.param(["the bookke", "eper"], "the bookkeeper", True, id="one-letter"),
        pytest.param(["It was. ", " Then"], "It was.  Then", True, id="white-space"),
    ],
)
def test_short_overlap(fragments: list[str], expected: str, doubt: bool) -> None:
    """A word re-emitted from its start is a repeat ("worworld" is no text); a number is
    taken as re-emitted but doubted (1234567 1234567 is data), and so is a shorter
    coincidence, where the exact continuation is taken."""
    text, _, merges = stitch(*fragments)
    assert text == expected
    assert bool(merges[-1].doubts) is doubt


def test_a_repeated_whole_line_is_dropped_and_doubted() -> None:
    """A short line repeated at a line's end is the usual repeat, but documents repeat
    short lines (notes, labels, rows) too: taken and doubted."""
    text, _, merges = stitch("Line one\nLine two of it\n", "Line two of it \r\nLine three\n")
    assert text == "Line one\nLine two of it\nLine three\n"
    assert merges[-1].doubts


def test_a_long_fresh_sentence_repeated_whole_is_a_repeat() -> None:
    """A long sentence the document never used before does not come twice in a row: its
    repeat at a line's end is proof enough, no doubt."""
    line = "The committee met in Oslo and agreed on the budget for the next two years.\n"
    text, _, merges = stitch("Intro.\n" + line, line + "Next.\n")
    assert text == "Intro.\n" + line + "Next.\n"
    assert not merges[-1].doubts


DOC = "Once upon a time there was a kingdom by the sea. It was"


@pytest.mark.parametrize(
    ("fragment", "expected", "warning"),
    [
        pytest.param(DOC[:40], DOC, REPEATED, id="restart-repeating-only-received-text"),
        pytest.param(DOC + " small.", DOC + " small.", None, id="restart-extending-it"),
        pytest.param(
            "Let me start over:\n" + DOC[:45], DOC, REPEATED, id="restart-after-a-prose-line"
        ),
        pytest.param(DOC[-12:], DOC, REPEATED, id="fragment-repeating-only-the-tail-end"),
    ],
)
def test_restart_never_duplicates(fragment: str, expected: str, warning: str | None) -> None:
    text, _, merges = stitch(DOC, fragment)
    assert text == expected
    if warning:
        assert warned(merges, warning)


def test_restart_beyond_the_tail_window_appends_only_the_new_part() -> None:
    doc = "Chapter one of a rather long story.\n" + "".join(
        f"Line {i} of the story.\n" for i in range(4000)
    )
    assert len(doc) > TAIL
    text, _, merges = stitch(doc[:-9], doc + "The end.\n")
    assert text == doc + "The end.\n"
    assert warned(merges, "restarted")


def test_restart_beyond_the_tail_window_repeating_old_text_appends_nothing() -> None:
    doc = "Chapter one of a rather long story.\n" + "x y z\n" * 20000
    text, _, merges = stitch(doc, doc[:500])
    assert text == doc
    assert warned(merges, REPEATED)


def test_a_recurring_short_line_is_not_a_restart() -> None:
    """Only a long repeat of the document's start is a restart: short lines recur."""
    text, _, _ = stitch("Chapter one\nText.\n", "Chapter one\n")
    assert text == "Chapter one\nText.\nChapter one\n"


@pytest.mark.parametrize(
    ("fragments", "expected", "words"),
    [
        pytest.param(["\ufeffabc"], "abc", "byte-order mark", id="leading-bom-of-the-first"),
        pytest.param(["abc", "\ufeffdef"], "abcdef", "byte-order mark", id="leading-bom-of-a-next"),
        pytest.param(["a\x00b", "c\x00"], "abc", "NUL", id="nul"),
        pytest.param(["a\ud800b", "c\udfff"], "abc", "surrogate", id="lone-surrogates"),
    ],
)
def test_encoding_debris_is_removed_with_a_warning(
    fragments: list[str], expected: str, words: str
) -> None:
    text, _, merges = stitch(*fragments)
    assert text == expected
    assert warned(merges, words)


@pytest.mark.parametrize(
    ("text", "fence", "line_start", "split"),
    [
        pytest.param("a\n```", "```", True, ("a\n", "```"), id="closing-line"),
        pytest.param("a\n````\n", "```", True, ("a\n", "````\n"), id="longer-closing-line"),
        pytest.param("a\n``", "```", True, ("a\n``", ""), id="too-short"),
        pytest.param("a\n~~~", "```", True, ("a\n~~~", ""), id="other-character"),
        pytest.param("```", "```", False, ("```", ""), id="continues-a-cut-line"),
        pytest.param("a ```", "```", True, ("a ```", ""), id="not-on-its-own-line"),
    ],
)
def test_split_closing_fence(
    text: str, fence: str, line_start: bool, split: tuple[str, str]
) -> None:
    assert split_closing_fence(text, fence, line_start=line_start) == split


@pytest.mark.parametrize(
    ("tail", "body", "end"),
    [
        pytest.param("x\nsame line  \n", "same line\nnew", 10, id="trailing-spaces-stripped"),
        pytest.param("x\r\nsame line\r\n", "same line\nnew", 10, id="crlf-against-lf"),
        pytest.param("x\npara one.\n\n", "para one.\nnew", 10, id="blank-line-dropped"),
    ],
)
def test_line_repeats_match_up_to_white_space(tail: str, body: str, end: int) -> None:
    """A repeat that differs only in trailing spaces, CRLF or blank lines is still found."""
    assert end in [found[0] for found in normalized_overlaps(tail, body, lines=True)]


def test_records_count_complete_lines_and_close_keeps_everything() -> None:
    text, scan, _ = stitch("a\nb", "c\nd")
    assert scan.records == 2
    assert close_text(scan) == (len(text), "")


def test_empty_fragment_is_a_merge_failure_and_leaves_the_scan_unchanged() -> None:
    scan, _ = start_text("abc")
    again, merge = merge_text(scan, "abc", "\ufeff")
    assert not merge.ok
    assert again is scan
    assert not start_text("")[1].ok


def test_scan_survives_a_json_round_trip() -> None:
    _, scan, _ = stitch("héllo\nwörld 🌍")
    assert TextScan.model_validate_json(scan.model_dump_json()) == scan
