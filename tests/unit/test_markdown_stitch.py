"""Markdown stitching (docs/engine.md, "CSV, Markdown, text"): blocks stay apart, code
stays code, headings stay.

One table per behaviour; each row's id says what it pins down. The seed's merger glued
``"Content" + "## Section"``, lost the code-fence state and deleted headings that had a
similar heading elsewhere; those cases come first.
"""

from __future__ import annotations

import itertools

import pytest

from core.markdown_stitch import MarkdownScan, close_markdown, merge_markdown, start_markdown
from core.merge import Merge
from core.seam import REPEATED

TAIL = 65536


def stitch(*fragments: str) -> tuple[str, MarkdownScan, list[Merge]]:
    """Feed fragments as the engine does: the tail is the last 64 KiB of what was kept."""
    scan, merge = start_markdown(fragments[0])
    text, merges = merge.append, [merge]
    for fragment in fragments[1:]:
        scan, merge = merge_markdown(scan, text[-TAIL:], fragment)
        assert merge.ok, merge.error
        text += merge.append
        merges.append(merge)
    assert scan.length == len(text)
    return text, scan, merges


def warned(merges: list[Merge], words: str) -> bool:
    return any(words in warning for merge in merges for warning in merge.warnings)


TABLE = "| id | name |\n|---|---|\n| 1 | a |\n"


# --- Never glue a block onto the previous line ---------------------------------------------


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        pytest.param(["Content", "## Section"], "Content\n## Section", id="heading"),
        pytest.param(["- one", "- two"], "- one\n- two", id="bullet-item"),
        pytest.param(["* one", "* two"], "* one\n* two", id="star-item"),
        pytest.param(["1. one", "2. two"], "1. one\n2. two", id="ordered-item"),
        pytest.param(["Text", "> quoted"], "Text\n> quoted", id="blockquote"),
        pytest.param(["Text", "```python\nx\n```"], "Text\n```python\nx\n```", id="fence"),
        pytest.param(["Text", "---\n"], "Text\n---\n", id="thematic-break"),
        pytest.param(["Text", "| a | b |\n"], "Text\n| a | b |\n", id="table-after-paragraph"),
        pytest.param([TABLE + "| 2 | b |", "| 3 | c |"], TABLE + "| 2 | b |\n| 3 | c |", id="row"),
        pytest.param(
            ["```\ncode\n```", "## Next"], "```\ncode\n```\n## Next", id="after-cut-closing-fence"
        ),
    ],
)
def test_a_block_never_glues_onto_the_cut_line(fragments: list[str], expected: str) -> None:
    text, _, merges = stitch(*fragments)
    assert text == expected
    assert warned(merges, "line break")


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        pytest.param(["Cont", "ent\n"], "Content\n", id="word-cut"),
        pytest.param(["#", "# Title\n"], "## Title\n", id="cut-inside-the-heading-marker"),
        pytest.param(["-", " item\n"], "- item\n", id="cut-after-the-list-marker"),
        pytest.param(["It is ", "-5 degrees\n"], "It is -5 degrees\n", id="minus-is-not-a-list"),
        pytest.param(["Use ", "#hashtags\n"], "Use #hashtags\n", id="hashtag-is-not-a-heading"),
        pytest.param([TABLE + "| 2 ", "| b |\n"], TABLE + "| 2 | b |\n", id="cut-table-row"),
        pytest.param(["| h1 ", "| h2 |\n"], "| h1 | h2 |\n", id="cut-header-row"),
        pytest.param(["Line\n", "## H\n"], "Line\n## H\n", id="cut-at-a-line-break"),
    ],
)
def test_continuations_of_the_cut_line_get_no_break(fragments: list[str], expected: str) -> None:
    assert stitch(*fragments)[0] == expected


# --- Code fences ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        pytest.param(
            ["```python\nx = 1 ", "# not a heading\n```\n"],
            "```python\nx = 1 # not a heading\n```\n",
            id="hash-inside-code-is-not-a-heading",
        ),
        pytest.param(
            ["```python\nx = 1", "- 2\n```\n"],
            "```python\nx = 1- 2\n```\n",
            id="dash-inside-code-is-not-a-list",
        ),
        pytest.param(
            ["~~~~\nfirst\n", "```\nstill code\n~~~~\n"],
            "~~~~\nfirst\n```\nstill code\n~~~~\n",
            id="shorter-or-other-fence-does-not-close-the-block",
        ),
    ],
)
def test_nothing_is_inserted_inside_a_code_block(fragments: list[str], expected: str) -> None:
    text, _, merges = stitch(*fragments)
    assert text == expected
    assert not warned(merges, "line break")


@pytest.mark.parametrize(
    ("fragments", "fence"),
    [
        pytest.param(["# T\n```python\n# a\n"], "```", id="open-after-opener"),
        pytest.param(["# T\n```python\n# a\n", "```\n"], "", id="closed-in-next-fragment"),
        pytest.param(["# T\n``", "`\ncode\n"], "```", id="opener-cut-in-the-middle"),
        pytest.param(["~~~~ text\n", "~~~\n"], "~~~~", id="closing-must-be-as-long"),
    ],
)
def test_fence_state_is_kept_across_the_cut(fragments: list[str], fence: str) -> None:
    assert stitch(*fragments)[1].fence == fence


@pytest.mark.parametrize(
    ("fragments", "suffix"),
    [
        pytest.param(["# T\n```python\nx = 1"], "\n```\n", id="open-code-block-is-closed"),
        pytest.param(["# T\n```python\nx = 1\n"], "```\n", id="open-at-line-start"),
        pytest.param(["# T\n```python\nx\n```"], "", id="cut-closing-line-already-closes"),
        pytest.param(["# T\n\ntext"], "", id="no-code-block"),
    ],
)
def test_close_adds_a_closing_fence_when_a_block_is_open(fragments: list[str], suffix: str) -> None:
    text, scan, _ = stitch(*fragments)
    assert close_markdown(scan) == (len(text), suffix)


# --- Headings are never deleted ---------------------------------------------------------------


def test_identical_headings_elsewhere_are_kept() -> None:
    """The seed dropped a heading when a similar one existed: sections repeat their titles."""
    doc = "# Report\n\n## Notes\nfirst\n\n## Summary\nmid\n\n## Notes\nsecond\n\n## Notes\nthird\n"
    cuts = [0, 20, 41, 60, len(doc)]
    text, _, _ = stitch(*(doc[a:b] for a, b in itertools.pairwise(cuts)))
    assert text == doc


def test_recurring_line_is_not_a_restart() -> None:
    """A fragment that starts like the document's first line, but briefly, is new text."""
    text, _, merges = stitch("# Report\n\nIntro\n", "# Report\n")
    assert text == "# Report\n\nIntro\n# Report\n"
    assert not warned(merges, REPEATED)


# --- Tables -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        pytest.param(
            [TABLE, "| id | name |\n|---|---|\n| 2 | b |\n"],
            TABLE + "| 2 | b |\n",
            id="re-emitted-header-of-the-open-table",
        ),
        pytest.param(
            [TABLE, "|id|name|\n| ------ | :---: |\n| 2 | b |\n"],
            TABLE + "| 2 | b |\n",
            id="re-emitted-header-with-other-spacing",
        ),
        pytest.param(
            [TABLE + "| 2 | b |", "| id | name |\n|---|---|\n| 3 | c |\n"],
            TABLE + "| 2 | b |\n| 3 | c |\n",
            id="re-emitted-header-after-an-unterminated-row",
        ),
    ],
)
def test_repeated_table_header_is_dropped(fragments: list[str], expected: str) -> None:
    text, _, merges = stitch(*fragments)
    assert text == expected
    assert warned(merges, "table header")


def test_same_header_after_the_table_ended_starts_a_new_table() -> None:
    """Once a blank line closed the table, an identical header belongs to a new one."""
    second = "| id | name |\n|---|---|\n| 2 | b |\n"
    text, _, _ = stitch(TABLE + "\n", second)
    assert text == TABLE + "\n" + second


def test_table_state_is_kept_across_the_cut() -> None:
    _, scan, _ = stitch("| id | na", "me |\n|---|", "---|\n| 1 | a |\n")
    assert scan.table == "| id | name |\n|---|---|"
    assert stitch(TABLE + "\nText\n")[1].table == ""


# --- Overlaps, repeated lines, wrappers, restarts ---------------------------------------------


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        pytest.param(
            ["para one\npara two line\n", "para two line\nthree\n"],
            "para one\npara two line\nthree\n",
            id="repeated-line-at-the-seam-is-removed-once",
        ),
        pytest.param(
            ["para one\npara two line\n", "para two line  \r\nthree\n"],
            "para one\npara two line\nthree\n",
            id="repeated-line-with-trailing-white-space-is-removed-once",
        ),
        pytest.param(
            ["# T\n\nText one\nTe", "```markdown\nText one\nText two\n```"],
            "# T\n\nText one\nText two\n",
            id="markdown-fence-wrapper-around-an-overlap",
        ),
        pytest.param(
            ["# T\n", "```markdown\n## Next\n```"],
            "# T\n## Next\n",
            id="markdown-fence-wrapper-around-an-exact-continuation",
        ),
        pytest.param(
            ["# T\n", "```md\n```python\nx = 1\n```"],
            "# T\n```python\nx = 1\n```",
            id="closing-line-of-the-documents-own-code-block-is-kept",
        ),
        pytest.param(
            ["Intro:\n", "```\ncode\n```\n"],
            "Intro:\n```\ncode\n```\n",
            id="bare-fence-at-the-start-of-an-exact-continuation-is-content",
        ),
        pytest.param(
            ["Some words here, cut", "Here is the continuation:\nhere, cut off.\n"],
            "Some words here, cut off.\n",
            id="prose-preamble-before-the-overlap-is-dropped",
        ),
    ],
)
def test_seam_repeats_and_wrappers_are_removed_once(fragments: list[str], expected: str) -> None:
    assert stitch(*fragments)[0] == expected


def test_list_items_sharing_a_prefix_are_not_read_as_preamble_and_repeat() -> None:
    text, _, _ = stitch("- Item number 1: a\n- Item number ", "2: b\n- Item number 3: c\n")
    assert text == "- Item number 1: a\n- Item number 2: b\n- Item number 3: c\n"


def test_ambiguous_short_overlap_is_exact_continuation_with_a_doubt() -> None:
    text, _, merges = stitch("Hello lo", "lo there!\n")
    assert text == "Hello lolo there!\n"
    assert merges[-1].doubts


def test_restart_repeating_only_received_text_appends_nothing() -> None:
    doc = "# A long enough document title\n\nFirst paragraph.\n\n## Sec"
    text, _, merges = stitch(doc, "# A long enough document title\n\nFirst")
    assert text == doc
    assert warned(merges, REPEATED)


def test_restart_beyond_the_tail_window_appends_only_the_new_part() -> None:
    doc = "# Title of the document\n\n" + "".join(f"- item {i}\n" for i in range(9000))
    assert len(doc) > TAIL
    more = "- item 9000\n\n## End\n"
    text, _, merges = stitch(doc[:-5], "```markdown\n" + doc + more + "```")
    assert text == doc + more
    assert warned(merges, "restarted")


# --- Clean-up, counting, failures -------------------------------------------------------------


def test_bom_nul_and_surrogates_are_removed_with_warnings() -> None:
    text, _, merges = stitch("\ufeff# T\x00itle\n", "Text\udfff\n")
    assert text == "# Title\nText\n"
    assert warned(merges, "byte-order mark")
    assert warned(merges, "NUL")
    assert warned(merges, "surrogate")


def test_records_count_complete_lines() -> None:
    assert stitch("# T\n\n- a\n- b", "\n- c")[1].records == 4


def test_empty_fragment_is_a_merge_failure_and_leaves_the_scan_unchanged() -> None:
    scan, _ = start_markdown("# T\n")
    again, merge = merge_markdown(scan, "# T\n", "")
    assert not merge.ok
    assert again is scan


def test_scan_survives_a_json_round_trip() -> None:
    _, scan, _ = stitch(TABLE + "| 2 ", "| b |\n```python\n# x")
    assert MarkdownScan.model_validate_json(scan.model_dump_json()) == scan
