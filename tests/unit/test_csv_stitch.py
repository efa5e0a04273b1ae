"""CSV stitching (docs/engine.md, "CSV, Markdown, text"): rows never glue, the header is
never lost, repeats go once.

One table per behaviour; each row's id says what it pins down. The seed's merger glued
``"1,Alice" + "2,Bob"`` into one row and lost the header; those cases come first.
"""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

import core
from core.csv_stitch import (
    CsvMode,
    CsvScan,
    _field_end_reader,
    close_csv,
    merge_csv,
    scan_rows,
    start_csv,
)
from core.merge import Merge
from core.seam import AMBIGUOUS_END, REPEATED

TAIL = 65536


def stitch(*fragments: str) -> tuple[str, CsvScan, list[Merge]]:
    """Feed fragments as the engine does: the tail is the last 64 KiB of what was kept."""
    scan, merge = start_csv(fragments[0])
    text, merges = merge.append, [merge]
    for fragment in fragments[1:]:
        scan, merge = merge_csv(scan, text[-TAIL:], fragment)
        assert merge.ok, merge.error
        text += merge.append
        merges.append(merge)
    assert scan.length == len(text)
    return text, scan, merges


def warned(merges: list[Merge], words: str) -> bool:
    return any(words in warning for merge in merges for warning in merge.warnings)


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


# --- The seed's bugs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        pytest.param(
            ["id,name\n1,Alice", "2,Bob\n"],
            "id,name\n1,Alice\n2,Bob\n",
            id="complete-cut-row-gets-its-line-break-instead-of-gluing",
        ),
        pytest.param(
            ['id,name\n1,"Alice"', "2,Bob\n"],
            'id,name\n1,"Alice"\n2,Bob\n',
            id="complete-quoted-cut-row-gets-its-line-break",
        ),
        pytest.param(
            ["id,name\n1,Ali", "ce\n2,Bob\n"],
            "id,name\n1,Alice\n2,Bob\n",
            id="cut-field-is-continued-when-the-row-lacks-fields",
        ),
        pytest.param(
            ["id,na", "me\n1,Alice\n"],
            "id,name\n1,Alice\n",
            id="cut-inside-the-header-keeps-the-header",
        ),
        pytest.param(
            ["id,name\n1,Alice\n", "id,name\n2,Bob\n"],
            "id,name\n1,Alice\n2,Bob\n",
            id="repeated-header-is-dropped-once",
        ),
        pytest.param(
            ["id,name\n1,Alice", "id,name\n2,Bob\n"],
            "id,name\n1,Alice\n2,Bob\n",
            id="repeated-header-after-an-unterminated-row-is-dropped-and-the-row-ends",
        ),
    ],
)
def test_rows_never_glue_and_the_header_survives(fragments: list[str], expected: str) -> None:
    assert stitch(*fragments)[0] == expected


def test_header_is_kept_in_the_scan_once_its_row_completes() -> None:
    """The header's text and width are known from the first complete row on."""
    _, scan, _ = stitch("id,na", "me,age\n1,Al")
    assert (scan.header, scan.fields, scan.records) == ("id,name,age", 3, 0)


# --- Quoted fields --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fragments", "expected_rows"),
    [
        pytest.param(
            ['id,note\n1,"He said ""hi', '"" and\nleft"\n2,x\n'],
            [["id", "note"], ["1", 'He said "hi" and\nleft'], ["2", "x"]],
            id="cut-inside-a-quoted-field-with-escapes-and-a-newline",
        ),
        pytest.param(
            ['id,note\n1,"a "', '"b"" c"\n2,x\n'],
            [["id", "note"], ["1", 'a "b" c'], ["2", "x"]],
            id="cut-between-the-two-quotes-of-an-escape",
        ),
        pytest.param(
            ['id,note\n1,"first line\n', 'second, line"\n2,x\n'],
            [["id", "note"], ["1", "first line\nsecond, line"], ["2", "x"]],
            id="cut-right-after-a-newline-inside-quotes-is-not-a-row-boundary",
        ),
        pytest.param(
            ['id,note\n1,"abc', '"abc, def"\n2,x\n'],
            [["id", "note"], ["1", "abc, def"], ["2", "x"]],
            id="short-overlap-re-emitting-the-quoted-field-is-proven-by-the-field-count",
        ),
    ],
)
def test_quoted_fields_continue_across_the_cut(
    fragments: list[str], expected_rows: list[list[str]]
) -> None:
    assert rows(stitch(*fragments)[0]) == expected_rows


@pytest.mark.parametrize(
    ("text", "mode", "delims", "ends"),
    [
        pytest.param("a,b\n", CsvMode.ROW_START, 0, [(4, 2)], id="plain-row"),
        pytest.param('a,"b\n', CsvMode.QUOTED, 1, [], id="newline-inside-quotes"),
        pytest.param('a,"b"', CsvMode.QUOTE_SEEN, 1, [], id="closing-or-escape-quote"),
        pytest.param('a,b"c\n', CsvMode.ROW_START, 0, [(6, 2)], id="quote-in-unquoted-field"),
        pytest.param("\n\r\na\n", CsvMode.ROW_START, 0, [(1, 0), (3, 0), (5, 1)], id="blanks"),
        pytest.param("a,", CsvMode.FIELD_START, 1, [], id="cut-after-delimiter"),
    ],
)
def test_scanner_follows_the_csv_module(
    text: str, mode: CsvMode, delims: int, ends: list[tuple[int, int]]
) -> None:
    """The scanner's field counts agree with how ``csv.reader`` splits the same text."""
    assert scan_rows(CsvMode.ROW_START, 0, text) == (mode, delims, ends)


# --- Overlaps -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fragments", "expected", "doubt"),
    [
        pytest.param(
            ["id,name\n1,Alice\n", "2,Bob\n"],
            "id,name\n1,Alice\n2,Bob\n",
            False,
            id="exact-continuation-at-a-row-boundary",
        ),
        pytest.param(
            ["id,name\n1,Alice\n2,Bo", "1,Alice\n2,Bob\n3,Carol\n"],
            "id,name\n1,Alice\n2,Bob\n3,Carol\n",
            False,
            id="long-overlap-spanning-rows-is-removed-once",
        ),
        pytest.param(
            ["id,name\n1,Alice\n2,Bo", "2,Bob\n3,Carol\n"],
            "id,name\n1,Alice\n2,Bob\n3,Carol\n",
            False,
            id="cut-row-re-emitted-not-a-row-ending-in-a-word-the-data-never-used",
        ),
        pytest.param(
            ["id,name\n1,Bo\n2,Bo", "2,Bob\n3,Carol\n"],
            "id,name\n1,Bo\n2,Bob\n3,Carol\n",
            True,
            id="cut-row-re-emitted-or-a-complete-row-then-a-lost-line-break",
        ),
        pytest.param(
            ["id,name\n1,Alice Smith\n2,Bob Jones\n", "id,name\n2,Bob Jones\n3,Carol\n"],
            "id,name\n1,Alice Smith\n2,Bob Jones\n3,Carol\n",
            True,
            id="repeated-header-then-repeated-row",
        ),
        pytest.param(
            ["id,name\n1,Alice\n2,Bob Jones\n", "2,Bob Jones\r\n3,Carol\r\n"],
            "id,name\n1,Alice\n2,Bob Jones\n3,Carol\n",
            True,
            id="row-level-overlap-with-other-line-endings-is-removed-once",
        ),
        pytest.param(
            ["id,name\n1,Alice Smith\n2,Bob Jo", "Here is the continuation:\n2,Bob Jones\n"],
            "id,name\n1,Alice Smith\n2,Bob Jones\n",
            False,
            id="prose-preamble-before-the-overlap-is-dropped",
        ),
        pytest.param(
            ["id,name\n1,Alice Smith\n2,Bob Jo", "```csv\n2,Bob Jones\n3,Carol\n```"],
            "id,name\n1,Alice Smith\n2,Bob Jones\n3,Carol\n",
            False,
            id="code-fence-wrapper-around-an-overlap-is-dropped-with-its-closing-line",
        ),
        pytest.param(
            ["id,name\n1,Alice\n", "```csv\n2,Bob\n```"],
            "id,name\n1,Alice\n2,Bob\n",
            False,
            id="code-fence-wrapper-around-an-exact-continuation-is-dropped",
        ),
        pytest.param(
            ["id,name\n1,Alice\n", "Sure, here it is:\n```\n2,Bob\n```\n"],
            "id,name\n1,Alice\n2,Bob\n",
            False,
            id="prose-and-bare-fence-before-an-exact-continuation-are-dropped",
        ),
    ],
)
def test_overlaps_are_removed_once(fragments: list[str], expected: str, doubt: bool) -> None:
    """Repeats go once. A repeat that could also be the document's own rows (a whole row, or
    a cut row re-emitted while it already had every field) is taken and doubted. (A closed
    wrapper's end doubt, moot for a last reply, is not what this pins down.)"""
    text, _, merges = stitch(*fragments)
    assert text == expected
    seam_doubts = [d for d in merges[-1].doubts if not d.startswith(AMBIGUOUS_END)]
    assert bool(seam_doubts) is doubt


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        pytest.param(
            ["id,v\n2024-01-04,a\n2024-01-0", "5,b\n2024-01-06,c\n"],
            "id,v\n2024-01-04,a\n2024-01-05,b\n2024-01-06,c\n",
            id="rest-of-the-cut-row-is-kept-although-the-next-row-starts-like-the-cut-one",
        ),
        pytest.param(
            ["id,v\n2024-01-04,a\n2024-01-0", "Continuing\n2024-01-05,b\n"],
            "id,v\n2024-01-04,a\n2024-01-05,b\n",
            id="prose-line-is-dropped-when-keeping-it-would-break-the-row-width",
        ),
    ],
)
def test_rows_sharing_a_prefix(fragments: list[str], expected: str) -> None:
    """Dates or ids sharing a prefix make an exact continuation look like prose + repeat."""
    assert stitch(*fragments)[0] == expected


def test_ambiguous_short_repeat_of_a_whole_row_is_doubted() -> None:
    """A 5-character repeat of a whole row does not change any width: nothing proves it.

    The repeat is taken (the model was asked to repeat) and doubted (rows do repeat)."""
    text, _, merges = stitch("id,name\n1,Al\n2,Bo\n", "2,Bo\n3,Cy\n")
    assert text == "id,name\n1,Al\n2,Bo\n3,Cy\n"
    assert merges[-1].doubts


def test_single_column_cut_continues_the_field_and_says_it_guessed() -> None:
    """With one column the width cannot tell a new row from the rest of the cut value."""
    text, _, merges = stitch("n\n1\n2", "3\n4\n")
    assert text == "n\n1\n23\n4\n"
    assert warned(merges, "ambiguous cut")


def test_fragment_repeating_only_the_tail_appends_nothing() -> None:
    text, _, merges = stitch("id,name\n1,Alice\n2,Bob Jones\n", "2,Bob Jones\n")
    assert text == "id,name\n1,Alice\n2,Bob Jones\n"
    assert merges[-1].append == ""
    assert warned(merges, REPEATED)


# --- Restarts -------------------------------------------------------------------------------

SMALL = "id,name\n1,Alice\n2,Bob\n3,Ca"


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        pytest.param("id,name\n1,Alice\n2,Bob\n", SMALL, id="restart-repeating-only-old-rows"),
        pytest.param(
            "id,name\n1,Alice\n2,Bob\n3,Carol\n4,Dan\n",
            "id,name\n1,Alice\n2,Bob\n3,Carol\n4,Dan\n",
            id="restart-extending-beyond-the-received-text-appends-only-the-new-part",
        ),
        pytest.param(
            "```csv\nid,name\n1,Alice\n2,Bob\n```",
            SMALL,
            id="fenced-restart-repeating-only-old-rows",
        ),
    ],
)
def test_restart_from_the_beginning_never_duplicates(fragment: str, expected: str) -> None:
    text, _, merges = stitch(SMALL, fragment)
    assert text == expected
    assert not warned(merges, "ambiguous")


def big_csv(rows_count: int) -> str:
    return "id,name,note\n" + "".join(f'{i},name {i},"note, {i}"\n' for i in range(rows_count))


def test_restart_beyond_the_tail_window_appends_only_the_new_rows() -> None:
    """The tail (64 KiB) does not reach the header: the fragment is matched to the tail."""
    doc = big_csv(4000)
    assert len(doc) > TAIL
    more = "4000,name 4000,x\n4001,name 4001,y\n"
    text, scan, merges = stitch(doc[:-7], doc + more)
    assert text == doc + more
    assert scan.records == 4002
    assert warned(merges, "restarted")


def test_restart_beyond_the_tail_window_repeating_old_rows_appends_nothing() -> None:
    doc = big_csv(4000)
    text, _, merges = stitch(doc, doc[:300])
    assert text == doc
    assert warned(merges, REPEATED)


def test_new_rows_after_a_repeated_header_are_not_a_restart() -> None:
    text, _, _ = stitch(SMALL + "rol\n", "id,name\n4,Dan\n")
    assert text == SMALL + "rol\n4,Dan\n"


# --- Clean-up, counting, closing, failures --------------------------------------------------


def test_bom_nul_and_lone_surrogates_are_removed_with_warnings() -> None:
    text, _, merges = stitch("\ufeffid,name\n1,Al\x00ice\n", "2,Bob\ud800\n")
    assert text == "id,name\n1,Alice\n2,Bob\n"
    assert warned(merges, "byte-order mark")
    assert warned(merges, "NUL")
    assert warned(merges, "surrogate")


def test_first_fragment_wrapped_in_a_fence_after_prose_is_unwrapped() -> None:
    text, _, merges = stitch("Here is the CSV:\n```csv\nid,name\n1,Alice\n```")
    assert text == "id,name\n1,Alice\n"
    assert warned(merges, "wrapper")


@pytest.mark.parametrize(
    ("fragments", "records"),
    [
        pytest.param(["id,name\n"], 0, id="header-only"),
        pytest.param(["id,name\n1,a\n\n2,b\n"], 2, id="blank-lines-are-not-records"),
        pytest.param(["id,name\n1,a\n2,", "b\n3,c"], 2, id="cut-row-is-not-a-record-yet"),
        pytest.param(['id,note\n1,"x\ny\nz"\n'], 1, id="newlines-inside-quotes-are-one-record"),
    ],
)
def test_records_count_complete_data_rows(fragments: list[str], records: int) -> None:
    assert stitch(*fragments)[1].records == records


def test_ragged_rows_are_reported() -> None:
    """A row of the wrong width past the seam is kept, counted and reported."""
    _, scan, merges = stitch("id,name\n1,a\n", "2,b\n3,c\n4,d\n5,e,f\n")
    assert scan.ragged == 1
    assert warned(merges, "header's 2 fields")


def test_seam_no_reading_passes_is_a_merge_failure() -> None:
    """Garbage at the seam (wrong width, unbalanced quote) is refused, not spliced in."""
    scan, merge = start_csv("id,name\n1,a\n")
    again, bad = merge_csv(scan, merge.append, '2,b,c\n"]]]]\n3,d\n')
    assert not bad.ok and bad.append == "" and again == scan


@pytest.mark.parametrize(
    ("fragments", "kept"),
    [
        pytest.param(["id,name\n1,Alice\n2,Bo"], "id,name\n1,Alice\n", id="cut-row-left-out"),
        pytest.param(["id,name\n1,Alice\n"], "id,name\n1,Alice\n", id="complete-text"),
        pytest.param(['id,n\n1,"a\nb'], "id,n\n", id="open-quoted-field-left-out"),
        pytest.param(["id,na"], "", id="cut-header-gives-nothing"),
    ],
)
def test_close_keeps_complete_rows_only(fragments: list[str], kept: str) -> None:
    text, scan, _ = stitch(*fragments)
    end, suffix = close_csv(scan)
    assert text[:end] + suffix == kept


@pytest.mark.parametrize("fragment", ["", "\ufeff\x00"])
def test_empty_fragment_is_a_merge_failure_and_leaves_the_scan_unchanged(fragment: str) -> None:
    scan, _ = start_csv("id,name\n1,a\n")
    again, merge = merge_csv(scan, "id,name\n1,a\n", fragment)
    assert not merge.ok
    assert merge.error
    assert again is scan


def test_empty_first_fragment_is_a_failure() -> None:
    assert not start_csv("```csv\n```")[1].ok


def test_scan_survives_a_json_round_trip() -> None:
    """The scan travels with the job as JSON between workers."""
    _, scan, _ = stitch('id,note\n1,"open')
    assert CsvScan.model_validate_json(scan.model_dump_json()) == scan
    assert CsvScan.model_validate(scan.model_dump(mode="json")) == scan


def test_merge_on_an_empty_scan_is_a_start() -> None:
    """A job whose first fragment failed starts over with the next one."""
    scan, merge = merge_csv(CsvScan(), "", "```csv\nid,name\n1,a\n```")
    assert merge.append == "id,name\n1,a\n"
    assert scan.fields == 2


def test_a_repeat_ending_at_a_row_end_before_any_data_statistics() -> None:
    """A repeat of the first data row's end, cut right after its line break: no row is
    left to glue, and no column statistics exist yet (this raised IndexError once)."""
    text, _, merges = stitch("h1,h2\nfoobarbazquxquux,yy\n", "bazquxquux,yy\n2,x\n")
    assert text == "h1,h2\nfoobarbazquxquux,yy\n2,x\n"
    assert merges[-1].ok


def test_crlf_rows_keep_a_bare_line_break_inside_a_quoted_field() -> None:
    """Spreadsheets write rows with CRLF and a line break inside a cell as a bare LF: a
    fragment that does so keeps its LF (it is data), and is not rewritten to CRLF."""
    fragments = ['id,note\r\n1,"He sa', 'id ok"\r\n2,"multi\nline"\r\n3,"two"\r\n']
    result = core.stitch(fragments, "csv")
    assert (result.text, result.doubts) == (
        'id,note\r\n1,"He said ok"\r\n2,"multi\nline"\r\n3,"two"\r\n',
        [],
    )


def test_a_fragment_written_with_lf_throughout_is_written_as_the_document_does() -> None:
    result = core.stitch(["id,note\r\n1,a\r\n2,b", "\n3,c\n4,d\n"], "csv")
    assert result.text == "id,note\r\n1,a\r\n2,b\r\n3,c\r\n4,d\r\n"


@given(
    text=st.text(alphabet='a,"\n', max_size=120),
    mode=st.sampled_from(list(CsvMode)),
    starts=st.lists(st.integers(0, 120), max_size=8),
    cuts=st.lists(st.integers(0, 120), max_size=3),
)
def test_the_field_end_reader_answers_as_a_whole_scan(
    text: str, mode: CsvMode, starts: list[int], cuts: list[int]
) -> None:
    """The reader shares scans between texts that end alike (``_field_end_reader``); its
    answer is always the whole scan's, in any order of asking, for any ends."""
    reader = _field_end_reader(mode, 0)
    for end in [len(text), *cuts]:
        for start in starts:
            piece = text[min(start, end) : end]
            assert reader(piece) is (scan_rows(mode, 0, piece)[0] is CsvMode.QUOTED)
