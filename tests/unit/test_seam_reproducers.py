"""Reproducers from the seam issue: each merge must be exact or flagged, never silent.

``right`` lists the documents that count as right (usually one). Where a case has a single
right answer, the comment says why that document is the one; where it is ambiguous, flagging
it is the honest outcome and ``right`` is what an exact answer must be.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest

from core import stitch


@dataclass(frozen=True)
class Case:
    name: str
    fmt: str
    fragments: list[str]
    right: tuple[str, ...]
    detected: str | None = None  # for auto: the format that must be detected


_ROWS = (
    "id,name,city,year,comment\n"
    '4,Priya Haddad,Nairobi,19,"Here is the rest, as promised"\n'
    '5,Amara Haddad,Austin,1999,"Here is the rest, as promised"\n'
    '6,Sofia Tanaka,Oslo,2001,"line one\nline two"\n'
    '7,Aiko Silva,Kraków,2001,"Founded in 2020, Soylent now employs 1998 people."\n'
)

CASES = [
    # Single right answer: "Continuing:" and the fences are the wrapper of the reply; the
    # leading space is content (the sentence needs it), the closing fence is not.
    Case(
        "text-prose-fence",
        "text",
        ["The chart in", "Continuing:\n```\n Austin grew.\n```"],
        ("The chart in Austin grew.\n",),
    ),
    # Single right answer: the first fragment's fence is a wrapper (nothing closes it in the
    # document), the reply re-states the cut line after "Continuing:", then a closing fence
    # and a sign-off that are not content.
    Case(
        "markdown-fenced-repeat-signoff",
        "markdown",
        [
            "```markdown\n# Doc\n\nThe first part of the text",
            "Continuing:\nThe first part of the text and the rest.\n```\n\n"
            "Let me know if you need anything else!",
        ],
        ("# Doc\n\nThe first part of the text and the rest.\n",),
    ),
    # Single right answer: the CSV equivalent (a row re-stated after "Continuing:").
    Case(
        "csv-fenced-repeat-signoff",
        "csv",
        [
            "```csv\nname,city\nAda,Paris\nBob,Ber",
            "Continuing:\nBob,Berlin\nCy,Rome\n```\n\nLet me know if you need anything else!",
        ],
        ("name,city\nAda,Paris\nBob,Berlin\nCy,Rome\n",),
    ),
    # Single right answer: prose and a fence before the first reply are a wrapper.
    Case(
        "text-first-wrapper",
        "text",
        ["Here is the text you asked for:\n```text\nHello world, this is", " the text.\n"],
        ("Hello world, this is the text.\n",),
    ),
    # Single right answer, and the format must be detected as JSON despite the prose.
    Case(
        "auto-json-after-prose",
        "auto",
        ['Here is the JSON you asked for:\n{"a": [1, 2,', " 3]}"],
        ('{"a": [1, 2, 3]}',),
        detected="json",
    ),
    # Single right answer: the reply restarts the whole document (title and all).
    Case(
        "markdown-restart",
        "markdown",
        ["# T\n\nSoylent was founded in ", "# T\n\nSoylent was founded in 2019. It grew.\n"],
        ("# T\n\nSoylent was founded in 2019. It grew.\n",),
    ),
    # Single right answer: a delimiter row needs the header's four cells, so "|---:|---:|"
    # re-states nothing: it is the exact continuation.
    Case(
        "markdown-table-delimiter",
        "markdown",
        ["| A | B | C | D |\n|---:|---:", "|---:|---:|\n| 1 | 2 | 3 | 4 |\n"],
        ("| A | B | C | D |\n|---:|---:|---:|---:|\n| 1 | 2 | 3 | 4 |\n",),
    ),
    # The reply re-states "8895, 5489" minified, then continues in that layout.
    Case(
        "json-reminified-repeat",
        "json",
        ["[\n  [\n    8895,\n    5489", "8895, 5489, 969]\n]"],
        ("[\n  [\n    8895,\n    5489, 969]\n]",),
    ),
    # The blank reply is skipped; the next one continues the string. ("50" + "0m" could
    # also be "50" with its "0" re-stated: flagging it is honest.)
    Case("json-blank-reply", "json", ['{"cpu": "50', " ", '0m"}'], ('{"cpu": "500m"}',)),
    # Periodic: any number of the zeros may be a repeat. Exact only as the plain
    # continuation (13 zeros); otherwise it must be flagged.
    Case(
        "json-periodic-zeros",
        "json",
        ["[0,0,0,0,0,0,0,0,", "0,0,0,0,0]"],
        ("[0,0,0,0,0,0,0,0,0,0,0,0,0]",),
    ),
    # The restart came back in CRLF: the document keeps its LF; never a duplicate.
    Case(
        "markdown-crlf-restart",
        "markdown",
        ["# Title\n\nSee the b", "# Title\r\n\r\nSee the bicycle.\r\n"],
        ("# Title\n\nSee the bicycle.\n",),
    ),
    # The repeat starts mid-heading and drops the blank line: a re-statement, not content.
    Case(
        "markdown-repeat-blank-dropped",
        "markdown",
        ["# The package\n\nSee details. Pri", "package\nSee details. Priya Wei.\n"],
        ("# The package\n\nSee details. Priya Wei.\n",),
    ),
    # Single right answer: "Continuing:" is prose; '"w": 1,' is the next member (the
    # indentation was already delivered).
    Case(
        "json-prose-then-member",
        "json",
        ['{\n    "d": {\n        ', 'Continuing:\n"w": 1,\n        "h": 2\n    }\n}'],
        ('{\n    "d": {\n        "w": 1,\n        "h": 2\n    }\n}',),
    ),
    # "no,agree" is a real row, not a preamble (it has the header's two fields).
    Case(
        "csv-row-not-preamble",
        "csv",
        ["q1,q2\nyes,agree\n", "no,agree\nyes,agree\n"],
        ("q1,q2\nyes,agree\nno,agree\nyes,agree\n",),
    ),
    # Single right answer: the line in progress is re-emitted from its start.
    Case(
        "markdown-unit-restart",
        "markdown",
        ["Founded in 19", "Founded in 1998. It grew.\n"],
        ("Founded in 1998. It grew.\n",),
    ),
    # Ambiguous: the event column repeats values from row to row, so a row
    # '2019,"said ""fine"", then left"' (the reply read exactly) is as likely as a repeat of
    # the delivered end; the exact reading is what the model meant here.
    Case(
        "csv-categorical-value-again",
        "csv",
        [
            'year,event\n1998,"Here is the rest, as promised"\n19,""\n19,""\n19,""\n'
            '1999,"said ""fine"", then left"\n2019',
            "",
            ',"said ""fine"", then left"\n2019,"Here is the rest, as promised"\n',
        ],
        (
            'year,event\n1998,"Here is the rest, as promised"\n19,""\n19,""\n19,""\n'
            '1999,"said ""fine"", then left"\n2019,"said ""fine"", then left"\n'
            '2019,"Here is the rest, as promised"\n',
        ),
    ),
    # Ambiguous: in a yes/no/agree survey, '"no","disagree"' after '"agree","disagree"' is
    # an ordinary row; the reply read exactly after its preamble is what the model meant.
    Case(
        "csv-answer-vocabulary-again",
        "csv",
        [
            'q1,q2\n"agree","yes"\n"no","no"\n"no","agree"\n"agree","disagree"\n"no',
            'Here\'s the continuation\n","disagree"\n"no","no"\n"yes","yes"\n',
        ],
        (
            'q1,q2\n"agree","yes"\n"no","no"\n"no","agree"\n"agree","disagree"\n'
            '"no","disagree"\n"no","no"\n"yes","yes"\n',
        ),
    ),
    # Ambiguous: a name said twice ("Amélie Amélie"), written with a combining accent, is
    # one word doubled, not a phrase; the exact reading is the model's here.
    Case(
        "markdown-decomposed-word-twice",
        "markdown",
        ["# T\n\n- The sign in Lyon read Ame\u0301lie", " Ame\u0301lie.\n"],
        ("# T\n\n- The sign in Lyon read Ame\u0301lie Ame\u0301lie.\n",),
    ),
    # Ambiguous: a short sentence may be said twice ("It grew. It grew.").
    Case(
        "markdown-short-sentence-twice",
        "markdown",
        [
            "# T\n\nThe team opened an office in Nairobi. It grew",
            "\t",
            "The rest of the document follows.\n\n```markdown\n. It grew. Here is what the "
            "survey found.\n```\n",
        ],
        (
            "# T\n\nThe team opened an office in Nairobi. It grew. It grew. Here is what the "
            "survey found.\n",
        ),
    ),
    # Ambiguous: a note the document already holds twice may come a third time; its lines
    # across the seam are lines the document has.
    Case(
        "markdown-note-a-third-time",
        "markdown",
        [
            "# Doc\n\nNote: the following table lists every branch.\n\nNote: the following table",
            "Sure! Here is the rest\n lists every branch.\n\nNote: the following table lists "
            "every branch.\n\n* It grew.\n",
        ],
        ("# Doc\n\n" + "Note: the following table lists every branch.\n\n" * 3 + "* It grew.\n",),
    ),
    # Single right answer: " Continuing" reads on from the cut sentence (a space after
    # it, no punctuation): hard-wrapped prose, not a chat preamble to drop.
    Case(
        "text-wrapped-sentence-not-preamble",
        "text",
        [
            "Annual report\n\nAmara Haddad kept the books for the archive from 2001 to 2019.",
            " Continuing\nthe work of Aiko Okafor, the team opened an office in\nNairobi.\n",
        ],
        (
            "Annual report\n\nAmara Haddad kept the books for the archive from 2001 to 2019. "
            "Continuing\nthe work of Aiko Okafor, the team opened an office in\nNairobi.\n",
        ),
    ),
    # Ambiguous: in a matrix of a few values, a row [19, 68] after a row ending 19, 68 is
    # data; the reply read exactly after its fence is the model's here.
    Case(
        "json-matrix-row-ending-again",
        "json",
        [
            '{\n  "series": [\n    [\n      68,\n      19\n    ],\n    [\n      70,\n      19,\n'
            "      68\n    ],\n    [\n  ",
            "```\n    19,\n      68\n    ],\n    [\n      19,\n      70\n    ]\n  ]\n}\n```",
        ],
        (
            '{\n  "series": [\n    [\n      68,\n      19\n    ],\n    [\n      70,\n      19,\n'
            "      68\n    ],\n    [\n      19,\n      68\n    ],\n    [\n      19,\n      70\n"
            "    ]\n  ]\n}",
        ),
    ),
    # Ambiguous: rows of a yes/no/agree survey recombine; the exact reading is the model's.
    Case(
        "csv-answer-rows-again",
        "csv",
        [
            "q1,q2\nagree,agree\nyes,no\nyes,disagree\nyes,yes\ndisagree,",
            "disagree\nyes,yes\ndisagree,no\nagree,agree\n",
        ],
        (
            "q1,q2\nagree,agree\nyes,no\nyes,disagree\nyes,yes\ndisagree,disagree\nyes,yes\n"
            "disagree,no\nagree,agree\n",
        ),
    ),
    # Single right answer: the bare fence after the prose is the reply's wrapper; read as
    # a repeat of the document's own closing fence (a blank line dropped), it kept the
    # wrapper's closer as an empty code block.
    Case(
        "markdown-prose-then-wrapper-fence",
        "markdown",
        [
            "# Doc\n\nIn 1990 the lantern arrived.\n\n```sh\n$ continuum submit --format csv\n"
            "```\n\nIn 2001 the river wa",
            "The rest of the document follows.\n\n```\nIn 2001 the river was moved to Oslo.\n"
            "```\n\nThat completes the document.",
        ],
        (
            "# Doc\n\nIn 1990 the lantern arrived.\n\n```sh\n$ continuum submit --format csv\n"
            "```\n\nIn 2001 the river was moved to Oslo.\n",
        ),
    ),
    # Single right answer: the reply's bare fence is its wrapper (it closes before the
    # sign-off); read as a repeat of the document's own closing fence (white space bent:
    # a blank line dropped), it kept the wrapper's closer as an empty code block.
    Case(
        "markdown-wrapper-fence-not-repeat",
        "markdown",
        [
            '# T\n\n```json\n{"a": 1}\n```\n\nNote: the table lists every branch.\n\n'
            "1. The river cost $91.28, roughly 12% more.\n2. See the warehouse report for det",
            "Here is the continuation of the document:\n```\nNote: the table lists every "
            "branch.\n\n1. The river cost $91.28, roughly 12% more.\n2. See the warehouse "
            "report for details.\n\nMost were sold by March.\n```\n\n"
            "Let me know if you need anything else!",
        ],
        (
            '# T\n\n```json\n{"a": 1}\n```\n\nNote: the table lists every branch.\n\n'
            "1. The river cost $91.28, roughly 12% more.\n2. See the warehouse report for "
            "details.\n\nMost were sold by March.\n",
        ),
    ),
    # The table holds row 8 twice. After the preamble, the reply's blank line may end the
    # cut row before a duplicate row, or belong to the preamble before a repeat of the cut
    # row: either reading is valid CSV, so the seam may not be decided silently.
    Case(
        "csv-preamble-blank-line-then-a-duplicate-row",
        "csv",
        [
            _ROWS + '8,Jonas Kaur,São Paulo,1998,"said ""fine"", then left"',
            "The rest of the document follows.\n\n"
            '8,Jonas Kaur,São Paulo,1998,"said ""fine"", then left"\n10,Noor Novak,Austin,19,\n',
        ],
        (
            _ROWS + '8,Jonas Kaur,São Paulo,1998,"said ""fine"", then left"\n'
            '8,Jonas Kaur,São Paulo,1998,"said ""fine"", then left"\n10,Noor Novak,Austin,19,\n',
        ),
    ),
    # "agree" ends the tail (inside "disagree") and starts the reply: read again as text
    # it would glue "disagreeagree", but the reply may start a new row after a complete
    # cut row (the line break lost after the preamble): that reading never glues a word.
    Case(
        "csv-word-at-the-cut-then-a-new-row",
        "csv",
        [
            "q1,q2\nno,agree\nyes,yes\nyes,disagree\nno,yes\nagree,disagree\nno,disagree",
            "Sure! Here is the rest\n\nagree,disagree\nno,agree\n",
        ],
        (
            "q1,q2\nno,agree\nyes,yes\nyes,disagree\nno,yes\nagree,disagree\nno,disagree\n"
            "agree,disagree\nno,agree\n",
        ),
    ),
    # "to" + "o small": one letter doubled makes "too", a word; the document may say it.
    Case(
        "markdown-one-letter-doubled-into-a-word",
        "markdown",
        ['# T\n\n* It was to\n* Aiko said the archive was "to', 'o small".\n'],
        ('# T\n\n* It was to\n* Aiko said the archive was "too small".\n',),
    ),
    # The cut row is complete and the reply re-sends it whole after a wrapper: the
    # document may hold that row twice (rows do repeat), so the seam stays doubted even
    # though the value ending the cut row is new to its column.
    Case(
        "csv-wrapper-then-the-complete-cut-row-again",
        "csv",
        [
            "date,item,qty,note\n2019-06-25,committee,1,See the ledger.\n2019-10-25,river,19,\n"
            "2019-10-25,river,19,\n2019-11-04,bridge,5489,Note: the following rows are estimates",
            "The rest of the document follows.\n\n\n"
            "2019-11-04,bridge,5489,Note: the following rows are estimates\n"
            "2019-01-12,kettle,19,none\n",
        ],
        (
            "date,item,qty,note\n2019-06-25,committee,1,See the ledger.\n2019-10-25,river,19,\n"
            "2019-10-25,river,19,\n2019-11-04,bridge,5489,Note: the following rows are estimates\n"
            "2019-01-12,kettle,19,none\n",
        ),
    ),
    # A single-quoted string holding a double quote is no simple slip to rewrite: the
    # merge fails (and is retried) rather than guess at the escapes.
    Case(
        "json-single-quoted-string-with-a-double-quote",
        "json",
        ['{"a": 1, ', "'b': 'say \"hi\"'}"],
        ('{"a": 1, "b": "say \\"hi\\""}',),
    ),
    # Inside the cut string, "'b'" is text; only the last value is single-quoted. The
    # rewrite may not reach into the string: failing is honest, a changed string is not.
    Case(
        "json-single-quotes-inside-the-cut-string",
        "json",
        ['["x", "a,', " 'b', c\", 'd']"],
        ('["x", "a, \'b\', c", "d"]',),
    ),
    # After a mid-line cut, a bare fence after the preamble may open the document's own
    # code block (its line break lost) when the words around it are whole: flagged.
    *(
        Case(
            f"markdown-preamble-then-a-bare-fence-after-a-whole-word-{name}",
            "markdown",
            ["# Doc\n\nRun it in Zürich", f"Sure! Here is the rest\n{blank}```\nmake build\n```\n"],
            ("# Doc\n\nRun it in Zürich\n```\nmake build\n```\n",),
        )
        for name, blank in (("tight", ""), ("spaced", "\n"))
    ),
    # The document's list item holds "Note: ..." and the next paragraph may say it again:
    # the reply's first line is the item's text, a record, so reading it as a repeat of
    # the item's end is one reading of two (a silent trial of the seam corpus, seed
    # 47037179). Flagged, never decided silently.
    *(
        Case(
            f"{fmt}-list-item-text-then-that-text-again",
            fmt,
            [first, second],
            (first + "Note: the following figures are preliminary.\n\nIt grew.\n",),
        )
        for fmt, first, second in (
            (
                "text",
                "Minutes\n\n1. Here is what the survey found:\n"
                "2. Note: the following figures are preliminary.\n\n",
                "Certainly! Continuing from the cut:\n```\n"
                "Note: the following figures are preliminary.\n\nIt grew.\n```",
            ),
            (
                "markdown",
                "# T\n\n- Note: the following figures are preliminary.\n",
                "Note: the following figures are preliminary.\n\nIt grew.\n",
            ),
        )
    ),
    # After a number, the line break before a dropped closing fence may split it ("1" +
    # "9" is 19, or two values): still doubted.
    Case(
        "json-closing-fence-after-a-number",
        "json",
        [
            '{"values": [68, 19, 7',
            "```json\n0, 11, 1\n\n```\n\nLet me know if you need anything else!",
            "9, 72]}",
        ],
        ('{"values": [68, 19, 70, 11, 19, 72]}',),
    ),
    # Each of these was silent (a wrong document, no doubt) at the start of this work, in
    # sweeps of the seam corpus beyond the benchmark's seeds; each has another valid reading
    # a careful reader would take, so the honest answer is a doubt.
    #
    # After the cut's space, "Continuing" and a line going on in lower case may be the
    # sentence's own words, wrapped: the lead is unsure.
    Case(
        "text-cut-space-then-a-wrapped-continuing",
        "text",
        [
            'Minutes\n\nJonas Okafor said the ledger was "overpriced". ',
            "\n\n",
            "Continuing\nthe work of Sofia Silva, the team opened an office\nin Austin.\n",
        ],
        (
            'Minutes\n\nJonas Okafor said the ledger was "overpriced". Continuing\nthe work of '
            "Sofia Silva, the team opened an office\nin Austin.\n",
        ),
    ),
    # Read exactly, the quoted value ("line one / line two") repeats the row before's in a
    # column that repeats values: a quoted line break does not make the square a proof.
    Case(
        "csv-quoted-line-break-value-again",
        "csv",
        [
            'year,event\n2001,\n19,"Here is the rest, as promised"\n2001,"line one\nline two"\n19',
            ',"line one\r\nline two"\r\n1999,It grew.\r\n19,none\r\n',
        ],
        (
            'year,event\n2001,\n19,"Here is the rest, as promised"\n2001,"line one\nline two"\n'
            '19,"line one\nline two"\n1999,It grew.\n19,none\n',
        ),
    ),
    # The first line ends with a colon (an unsure lead) but, kept, it completes the cut row
    # and a long repeat follows it too: the row may be there twice.
    Case(
        "csv-colon-row-kept-with-a-repeat",
        "csv",
        [
            'id,name,city,year,comment\n13,Wei Tanaka,Zürich,1999,"Here is the rest, as promised"'
            "\n14,Noor Tanaka,Zürich,1999,none\n15,Priya Lindqvist,Zürich,1998,Here is what th",
            "Lindqvist,Zürich,1998,Here is what the archive survey found:\n"
            "15,Priya Lindqvist,Zürich,1998,Here is what the archive survey found:\n",
        ],
        (
            'id,name,city,year,comment\n13,Wei Tanaka,Zürich,1999,"Here is the rest, as promised"'
            "\n14,Noor Tanaka,Zürich,1999,none\n"
            + "15,Priya Lindqvist,Zürich,1998,Here is what the archive survey found:\n"
            * 2,
        ),
    ),
    # "rew. It g" again goes on periodic as far as the reply goes ("It grew." thrice).
    Case(
        "markdown-reply-ends-inside-the-period",
        "markdown",
        ["# Notes\n\nThe team opened an office in Nairobi. It grew. It g", "rew. It grew.\n"],
        ("# Notes\n\nThe team opened an office in Nairobi. It grew. It grew. It grew.\n",),
    ),
    # Read exactly, a short paragraph comes again right after itself: a record.
    Case(
        "text-short-paragraph-again",
        "text",
        [
            "The package\n\nHere is the summary for Zürich:\n\nHere is ",
            "Sure, here's the rest of the document:\n\nthe summary for Zürich:\n\n"
            "Here is what the survey found.\n",
        ],
        (
            "The package\n\nHere is the summary for Zürich:\n\nHere is the summary for Zürich:"
            "\n\nHere is what the survey found.\n",
        ),
    ),
    # A first reply that opens with a bare fence and is cut in the next line: the
    # wrapper's fence before a heading, or a code block before a comment.
    Case(
        "markdown-first-reply-bare-fence-then-a-cut-line",
        "markdown",
        ["```\n# ", "Title\n\nIt grew.\n"],
        ("# Title\n\nIt grew.\n",),
    ),
    # The paragraph's last sentence, as a paragraph of its own: a record.
    Case(
        "markdown-last-sentence-as-a-paragraph",
        "markdown",
        [
            "# Quarterly notes\n\n## History\n\nWei Wei moved to Oslo in 2019. Note: the "
            "following figures are preliminary.\n\n",
            "Here's the continuation\nNote: the following figures are preliminary.\n\nIt grew.\n",
        ],
        (
            "# Quarterly notes\n\n## History\n\nWei Wei moved to Oslo in 2019. Note: the "
            "following figures are preliminary.\n\nNote: the following figures are "
            "preliminary.\n\nIt grew.\n",
        ),
    ),
    # The reply goes on exactly ("São Paulo:" ends the cut line) and the document says
    # "Here is the summary for" again. Read after the colon line as a preamble, the blank
    # line and the cut line's start look like a repeat, bent (CRLF) or not; but a line's
    # start again after an unsure preamble proves nothing: flagged, never decided silently.
    *(
        Case(
            f"text-colon-line-then-the-cut-lines-start-again-{name}",
            "text",
            [
                "Intro.\n\nHere is the summary for ",
                f"São Paulo:{nl}{nl}Here is the summary for Reykjavík:{nl}{nl}It grew.{nl}",
            ],
            (
                "Intro.\n\nHere is the summary for São Paulo:\n\n"
                "Here is the summary for Reykjavík:\n\nIt grew.\n",
            ),
        )
        for name, nl in (("lf", "\n"), ("crlf", "\r\n"))
    ),
    # A table header again after the preamble, with other alignments: a new table of the
    # same columns, or the old one's header re-sent? Never dropped as a repeat silently.
    Case(
        "markdown-table-header-with-other-alignments",
        "markdown",
        [
            "# The package\n\n| A | B | C | D |\n|---|---:|---|---|\n"
            "| Nairobi | 19 | 1998 | 1998 |\n",
            "Okay, continuing the document.\n\n| A | B | C | D |\n|:---|---:|:---:|:---:|\n"
            "| Kraków | 40 | 19 | 40 |\n",
        ],
        (
            "# The package\n\n| A | B | C | D |\n|---|---:|---|---|\n"
            "| Nairobi | 19 | 1998 | 1998 |\n"
            "\n| A | B | C | D |\n|:---|---:|:---:|:---:|\n| Kraków | 40 | 19 | 40 |\n",
        ),
    ),
    # A CRLF document, a preamble, a blank line, then a row: "yes" again is a new row, not a
    # repeat of the cut row's last value that leaves ",disagree" as a row of its own.
    Case(
        "csv-crlf-row-after-a-blank-line",
        "csv",
        [
            "```\nq1,q2\r\ndisagree,yes",
            "Sure, here's the rest of the document:\n\r\nyes,disagree\r\nno,agree\r\n",
        ],
        ("q1,q2\r\ndisagree,yes\r\nyes,disagree\r\nno,agree\r\n",),
    ),
]


CASES += [
    # The cut line is the start of a code fence ("`") and the reply re-sends that fence
    # line: the fence is the document's, never dropped as a wrapper's.
    Case(
        "markdown-cut-fence-line-re-sent",
        "markdown",
        ['# T\n\nSome text.\n\n```json\n{"a": 1}\n`', "```\n\nMore text.\n"],
        ('# T\n\nSome text.\n\n```json\n{"a": 1}\n```\n\nMore text.\n',),
    ),
    # The reply starts right with the cut line again: the cut line re-sent from its start
    # (behaviour 5), or a reply whose line break at the cut was stripped and a next item
    # that starts with all of the cut line (lists of like items do). Both happen: doubted,
    # never decided (an engine rule that took the first was silent on the second, found
    # by tests/unit/test_text_formats_properties.py).
    Case(
        "markdown-cut-list-item-re-sent-whole-or-a-like-item",
        "markdown",
        ["# T\n\n* It grew.\n* the cooperative was", "* the cooperative was founded in 2001.\n"],
        ("# T\n\n* It grew.\n* the cooperative was founded in 2001.\n",),
    ),
    Case(
        "markdown-identical-list-item-after-a-stripped-line-break",
        "markdown",
        ["# Report 2026 on the generated document\n\n# A\n\n- A A", "- A A\n"],
        ("# Report 2026 on the generated document\n\n# A\n\n- A A\n- A A\n",),
    ),
]


# A short word at the cut that the next word starts with: "to" + " town" is "to town", or
# " to" re-sent and "town"; only the document's own words can tell, and a short one has
# too few (found by a random-seed hunt: the engine read each as a repeat, silently).
CASES += [
    Case(
        "text-short-word-then-a-word-that-starts-with-it",
        "text",
        ["We walked to", " town after lunch.\n"],
        ("We walked to town after lunch.\n",),
    ),
    Case(
        "text-click-on-one",
        "text",
        ["Click on", " one of the buttons.\n"],
        ("Click on one of the buttons.\n",),
    ),
    Case(
        "text-word-then-a-longer-word-that-starts-with-it",
        "text",
        ["I saw a man", " many times.\n"],
        ("I saw a man many times.\n",),
    ),
    Case(
        "markdown-list-word-then-a-longer-word-that-starts-with-it",
        "markdown",
        ["# T\n\n- A AA AAA AAA AAAA", " AAAAA\n"],
        ("# T\n\n- A AA AAA AAA AAAA AAAAA\n",),
    ),
    # Once a clear case: "eno" is no English word, but the engine knows no language, and
    # the text before it is too short to show which words it uses: "Sure eno" + " enough"
    # reads like "a man" + " many". Doubted now (a retry), never silent.
    Case(
        "text-cut-word-re-sent",
        "text",
        ["Minutes\n\n1. Sure eno", " enough, the bridge arrived fine.\n"],
        ("Minutes\n\n1. Sure enough, the bridge arrived fine.\n",),
    ),
]


# A repeat that starts inside a JSON string's escape ("\\u000b\\u000" + "b\\u0007"): its
# "letters" are hex digits, so nothing says the text was not said twice (found by
# test_json_properties, silent: a character lost). A line break the format inserts (a CSV
# row ended, a Markdown block set off) is the document's own: CRLF in a CRLF document
# (both wrote LF, silently mixing the conventions).
CASES += [
    Case(
        "json-repeat-that-starts-inside-a-unicode-escape",
        "json",
        ['{"a": 1, "\\u000b\\u000', 'b\\u0007": null}'],
        ('{"a": 1, "\\u000b\\u000b\\u0007": null}',),
    ),
    Case(
        "csv-row-ended-with-the-documents-crlf",
        "csv",
        ["a,b,c\r\n1,2,3\r\n4,5,6", "7,8,9\r\n"],
        ("a,b,c\r\n1,2,3\r\n4,5,6\r\n7,8,9\r\n",),
    ),
    Case(
        "markdown-block-set-off-with-the-documents-crlf",
        "markdown",
        ["# T\r\n\r\nSome text", "- item\r\n"],
        ("# T\r\n\r\nSome text\r\n- item\r\n",),
    ),
    Case(
        "csv-prose-line-then-the-line-break-at-the-cut",
        "csv",
        ["q1,q2\nyes,yes\nno,disagree", "Continuing:\n\ndisagree,yes\nyes,yes\n"],
        ("q1,q2\nyes,yes\nno,disagree\ndisagree,yes\nyes,yes\n",),
    ),
]


# As above with 200 characters before that never use "in" as a word: most words of a text
# come once, so that proves nothing (an engine rule took it for proof, silently).
_PLAIN = (
    "The committee met on Monday to review the budget for the new library and the plans for "
    "the park; the members agreed that the work should start soon, and the chair thanked "
    "everyone for their time and care. "
)
CASES += [
    Case(
        "text-two-letter-word-after-a-word-ending-in-it-in-a-longer-text",
        "text",
        [_PLAIN + "We moved to Austin ", "in 2019.\n"],
        (_PLAIN + "We moved to Austin in 2019.\n",),
    ),
    Case(
        "text-word-then-a-longer-word-in-a-longer-text",
        "text",
        [_PLAIN + "I saw a man", " many times.\n"],
        (_PLAIN + "I saw a man many times.\n",),
    ),
]


#: A reply that begins the document again with a change (a row or a word rewritten) is no
#: restart the engine can splice, and read as new text it says the document twice: each is
#: doubted (found by a test of the retry mark: a CSV restart with one row bent came back
#: 468 characters for 318, silently). The right document is the one the model wrote last,
#: or the first with the second's new end: no reading decides it.
_PERIODIC = "id,state\n" + "7,ok\n" * 30
CASES += [
    # Cut inside a string, the reply starts with a space: the string's text. Read as a
    # repeat bent in white space (the space dropped before '", "hello'), it lost the space
    # and the second "hello" (found by a random-seed hunt; fixed in the sixth session).
    Case(
        "json-space-inside-a-string-then-a-value-equal-to-the-tail",
        "json",
        ['["a", "hello', ' ", "hello"]'],
        ('["a", "hello ", "hello"]',),
    ),
    # Cut between CR and LF, the reply sends the cut row's end, a CRLF and a blank line:
    # the CRLF's CR made a line of its own ("\r\r\n" read as a blank line); the whole CRLF
    # sent again now ends the cut break (fixed in the sixth session).
    Case(
        "csv-crlf-cut-then-a-blank-line-added",
        "csv",
        ["year,event\r\n2001,Note: the following rows are estimates\r", "es\r\n\r\n1998,x\r\n"],
        ("year,event\r\n2001,Note: the following rows are estimates\r\n1998,x\r\n",),
    ),
    # A table of few cells: the cut row, then an exact reply whose row ends like the row
    # before ("| Rome " + "| 2 |"). Read as a repeat, the "Rome 2" row was lost; a row of
    # cells the table uses is a row it may write (fixed in the sixth session: doubted).
    Case(
        "markdown-table-short-row-end-read-as-a-repeat",
        "markdown",
        [
            "# T\n\n| City | N |\n|---|---|\n| Oslo | 19 |\n| Lima | 2 |\n| Rome ",
            "| 2 |\n| Rome | 19 |\n",
        ],
        (
            "# T\n\n| City | N |\n|---|---|\n| Oslo | 19 |\n| Lima | 2 |\n| Rome | 2 |\n"
            "| Rome | 19 |\n",
        ),
    ),
    # A document may say a block again with a change: a second table, one cell changed,
    # then the same source line (found by an attacker's review of the restart rule, which
    # read it as a restart and dropped the table: now doubted).
    Case(
        "markdown-a-second-table-with-one-cell-changed",
        "markdown",
        [
            "| name | score |\n|---|---|\n"
            + "".join(f"| u{i} | {i} |\n" for i in range(20))
            + "\nSource: survey wave one, cleaned.\n\n",
            "| name | score |\n|---|---|\n"
            + "".join(f"| u{i} | {4 if i == 3 else i} |\n" for i in range(20))
            + "\nSource: survey wave one, cleaned.\n\nDone.\n",
        ],
        (
            "| name | score |\n|---|---|\n"
            + "".join(f"| u{i} | {i} |\n" for i in range(20))
            + "\nSource: survey wave one, cleaned.\n\n"
            + "| name | score |\n|---|---|\n"
            + "".join(f"| u{i} | {4 if i == 3 else i} |\n" for i in range(20))
            + "\nSource: survey wave one, cleaned.\n\nDone.\n",
        ),
    ),
    # Cut inside a string, the reply starts with a space after a comma: white space
    # between tokens that a re-spaced repeat bends, not the string's text.
    Case(
        "json-respaced-repeat-after-a-comma-into-a-cut-string",
        "json",
        ['{"a": 1,"b": "hello wor', ' "b": "hello world", "c": 2}'],
        ('{"a": 1,"b": "hello world", "c": 2}',),
    ),
    Case(
        "csv-restart-with-its-first-row-rewritten",
        "csv",
        [_PERIODIC + "7,", _PERIODIC.replace("7,ok", "7,OK", 1) + "7,ok\n8,failed\n"],
        (_PERIODIC + "7,ok\n8,failed\n",),
    ),
    Case(
        "markdown-restart-with-a-word-rewritten",
        "markdown",
        [
            "# Storage rooms\n\nRoom one holds the maps and the ledgers of the harbour.\n\n- Ro",
            "# Storage rooms\n\nRoom one holds the charts and the ledgers of the harbour.\n\n"
            "- Room two: tools\n",
        ],
        (
            "# Storage rooms\n\nRoom one holds the maps and the ledgers of the harbour.\n\n"
            "- Room two: tools\n",
        ),
    ),
    Case(
        "text-restart-with-a-word-rewritten",
        "text",
        [
            "The museum keeps its maps in the north wing, its ledgers in the south. The",
            "The museum keeps its charts in the north wing, its ledgers in the south. The "
            "east wing is closed.\n",
        ],
        (
            "The museum keeps its maps in the north wing, its ledgers in the south. The "
            "east wing is closed.\n",
        ),
    ),
    Case(
        "json-restart-with-a-value-rewritten-at-an-element-boundary",
        "json",
        [
            "[[1998, 72, 19, 68, 70, 11, 5489, 969, 0, 19, 68, 72, 1998, 70, 11], ",
            "[[1998, 72, 19, 68, 70, 11, 5489, 969, 0, 19, 68, 72, 1998, 71, 11], [3]]",
        ],
        ("[[1998, 72, 19, 68, 70, 11, 5489, 969, 0, 19, 68, 72, 1998, 70, 11], [3]]",),
    ),
    # Found silent by a seed hunt (session 6), fixed in session 7: a long verbatim repeat
    # beside a short one, a slipped comma after a comma delivered, a cut word said again.
    Case(
        "json-slipped-comma-then-a-repeat-from-inside-a-number",
        "json",
        ["[[1998, 19,", "98, 19,], [5, 0]]"],
        ("[[1998, 19], [5, 0]]",),
    ),
    Case(
        "markdown-cjk-cell-re-sent-after-prose-and-fence",
        "markdown",
        [
            "# T\n\n| City | A | B |\n|---|---|---|\n| 東京 | 2 | 2 |\n| Kraków | 2 | 1 |\n| 東京",
            "Sure! Here is the rest:\n\n```\n東京 | 2 | 40 |\n",
        ],
        (
            "# T\n\n| City | A | B |\n|---|---|---|\n| 東京 | 2 | 2 |\n| Kraków | 2 | 1 |\n"
            "| 東京 | 2 | 40 |\n",
        ),
    ),
    Case(
        "text-cut-line-restarted-whole-that-starts-with-its-last-word",
        "text",
        [
            "The package\n\nthe museum was founded in 1998. It grew, the",
            "the museum was founded in 1998. It grew, the\ncooperative now employs 120 people.\n",
        ],
        (
            "The package\n\nthe museum was founded in 1998. It grew, the\ncooperative now "
            "employs 120 people.\n",
        ),
    ),
    Case(
        "csv-long-repeat-of-recurring-rows-loses-to-two-characters",
        "csv",
        [
            'year,event\n2019,"said ""fine"", then left"\n1999,"said ""fine"", then left"\n'
            '2019,"Here is t',
            ' then left"\n2019,"Here is the rest, as promised"\n1999,\n',
        ],
        (
            'year,event\n2019,"said ""fine"", then left"\n1999,"said ""fine"", then left"\n'
            '2019,"Here is the rest, as promised"\n1999,\n',
        ),
    ),
    Case(
        "csv-two-records-re-sent-read-as-a-three-character-repeat",
        "csv",
        [
            'year,event\n1999,"none"\n2001,"Note: the following rows are estimates"\n'
            '2019,"Here is the rest, as promised"\n1998,"Most of the bicycles were sold by June."\n'
            '1999,"Note: the following rows are estimates"\n2019,""\n199',
            '1999,"Note: the following rows are estimates"\n2019,""\n1998,"line one"\n',
        ],
        (
            'year,event\n1999,"none"\n2001,"Note: the following rows are estimates"\n'
            '2019,"Here is the rest, as promised"\n1998,"Most of the bicycles were sold by June."\n'
            '1999,"Note: the following rows are estimates"\n2019,""\n1998,"line one"\n',
        ),
    ),
    Case(
        "text-restarted-word-on-a-line-that-looks-like-a-preamble",
        "text",
        [
            "Notes\n\nContinuing the work of Lars Moreau, the team opened an office in "
            "São Paulo. He",
            "Here is\nwhat the bookkeeper survey found:\n",
        ],
        (
            "Notes\n\nContinuing the work of Lars Moreau, the team opened an office in São Paulo. "
            "Here is\nwhat the bookkeeper survey found:\n",
        ),
    ),
    Case(
        "json-slipped-comma-at-the-cut-then-a-compact-repeat-that-closes-there",
        "json",
        [
            '{"series": [[5489, 11, 969], [8895, 0, 72, 5489, 68], [19, 70], [0, 72, 70], '
            "[72, 68, 1998,",
            ",72,70],[72,68,1998],[5489,0,8895]]}",
        ],
        (
            '{"series": [[5489, 11, 969], [8895, 0, 72, 5489, 68], [19, 70], [0, 72, 70], '
            "[72, 68, 1998],[5489,0,8895]]}",
        ),
    ),
    # An independent corpus (session 7): a reply that starts with a line break, then goes
    # on with the cut line.
    Case(
        "text-line-break-then-the-rest-of-the-sentence",
        "text",
        [
            "Try like example what said. Long few done are much animals when point "
            "important until best answer we thought saw in",
            "\n.\n",
        ],
        (
            "Try like example what said. Long few done are much animals when point "
            "important until best answer we thought saw in.\n",
        ),
    ),
    Case(
        "markdown-line-break-then-the-rest-of-a-number",
        "markdown",
        ["# Sales\n\nSales rose to 1", "\n987 units, up from 920.\n"],
        ("# Sales\n\nSales rose to 1987 units, up from 920.\n",),
    ),
    Case(  # rows end in CRLF, a quoted field's line break is a bare LF (spreadsheets)
        "csv-crlf-rows-keep-a-bare-line-break-inside-a-quoted-field",
        "csv",
        ['id,note\r\n1,"He sa', 'id ok"\r\n2,"multi\nline"\r\n3,"two"\r\n'],
        ('id,note\r\n1,"He said ok"\r\n2,"multi\nline"\r\n3,"two"\r\n',),
    ),
    Case(
        "json-a-reply-of-an-empty-fenced-block-adds-nothing",
        "json",
        ['{"email": "user13@ex', "```\n```", 'ample.com"}'],
        ('{"email": "user13@example.com"}',),
    ),
    Case(
        "json-the-rest-of-a-list-of-objects-begun-as-a-new-array",
        "json",
        ['[{"active": false, "tags": []}, ', '[{"id": 7}]'],
        ('[{"active": false, "tags": []}, {"id": 7}]',),
    ),
    # An independent corpus (session 7): repeats with a change, read as new text.
    Case(
        "text-repeat-with-a-typo",
        "text",
        ["Our, answer at air one", "at air ome\ndifferent three.\n"],
        (
            "Our, answer at air one\ndifferent three.\n",
            "Our, answer at air ome\ndifferent three.\n",
        ),
    ),
    Case(
        "markdown-cut-line-restarted-with-words-changed",
        "markdown",
        [
            '* Without "all".\n* Took young old, like always days famil',
            "* Took youthful old, like consistently days family.\n* Say another.\n",
        ],
        (
            '* Without "all".\n* Took youthful old, like consistently days family.\n'
            "* Say another.\n",
        ),
    ),
    Case(
        "markdown-repeat-with-curly-quotes",
        "markdown",
        [
            'Use how kind than "high" together world.\n\nMorning int',
            "kind than \u201chigh\u201d together world.\n\nMorning into himself the heard.\n",
        ],
        ('Use how kind than "high" together world.\n\nMorning into himself the heard.\n',),
    ),
    Case(
        "text-repeat-of-a-paragraph-wrapped-otherwise",
        "text",
        [
            "Good whole always big all toward two always\nlooked five some work might leave.\n"
            "Enough by many using of all time",
            "looked five some work might leave. Enough by many using of all times life.\n",
        ],
        (
            "Good whole always big all toward two always\nlooked five some work might leave.\n"
            "Enough by many using of all times life.\n",
        ),
    ),
    # An independent corpus (session 7): a reply that starts with an elision mark.
    Case(
        "json-elision-mark-inside-a-cut-key",
        "json",
        ['{"series":[-3.62,2.0],"uni', '[...] t":"%"}'],
        ('{"series":[-3.62,2.0],"unit":"%"}',),
    ),
    Case(
        "csv-elision-mark-inside-a-cut-number",
        "csv",
        ["id,status,amount\n37,low,643.55\n38,low,3", "... 398.56\n"],
        ("id,status,amount\n37,low,643.55\n38,low,3398.56\n",),
    ),
    Case(
        "text-elision-mark-inside-a-cut-word",
        "text",
        ["Did three story. Time always thing\nchan", "[...] ge, enough work might.\n"],
        ("Did three story. Time always thing\nchange, enough work might.\n",),
    ),
    # An independent corpus (session 7): the document begun again, its middle left out.
    Case(
        "markdown-restart-with-an-elision-line-then-the-end-again",
        "markdown",
        [
            "# Title\n\n## One\n\n- Far soon.\n- Be can.\n- Than began usually",
            "# Title\n\n...\n- Than began usually just.\n",
        ],
        ("# Title\n\n## One\n\n- Far soon.\n- Be can.\n- Than began usually just.\n",),
    ),
    Case(
        "csv-restart-with-rows-omitted-then-the-end-again",
        "csv",
        [
            'id,city,name\n1,Zürich,"Dubois, Peggy"\n2,Sydney,Carol Tanaka\n'
            '6,Tokyo,"민수, Walter"\n7,東京,Grace',
            'id,city,name\n1,Zürich,"Dubois, Peggy"\n(rows omitted for brevity)\n'
            'yo,"민수, Walter"\n7,東京,Grace Rossi\n',
        ],
        (
            'id,city,name\n1,Zürich,"Dubois, Peggy"\n2,Sydney,Carol Tanaka\n'
            '6,Tokyo,"민수, Walter"\n7,東京,Grace Rossi\n',
        ),
    ),
    Case(  # a text whose wrapped lines run to 60-70 characters, cut 15 characters in
        "text-line-break-in-a-word-far-short-of-the-wrapping-width",
        "text",
        [
            "The harbour opened in 1998 and the museum followed it two years\n"
            "later, after the council had argued about the site for a decade\n"
            "and the first director had resigned twice over the budget, then\n"
            "come back.\n\nThese night thi",
            "\ns me kind of study they did.\n",
        ],
        (
            "The harbour opened in 1998 and the museum followed it two years\n"
            "later, after the council had argued about the site for a decade\n"
            "and the first director had resigned twice over the budget, then\n"
            "come back.\n\nThese night this me kind of study they did.\n",
        ),
    ),
    Case(  # the cut row complete by its fields, then begun again with quotes
        "csv-cut-row-begun-again-quoted",
        "csv",
        ["id,category,status\r\n16,N/A,ok\r\n17,N/A,ok\r\n18,N/A,", '"18","N/A",ok\r\n'],
        ("id,category,status\r\n16,N/A,ok\r\n17,N/A,ok\r\n18,N/A,ok\r\n",),
    ),
    Case(  # ... or with its first digit changed
        "csv-cut-row-begun-again-with-a-typo",
        "csv",
        [
            "id,qty,city,date\n15,797,Berlin,2024-01-23\n16,542,Reykjavík,20",
            "46,542,Reykjavík,2024-03-04\n17,433,Mumbai,2024-06-05\n",
        ],
        (
            "id,qty,city,date\n15,797,Berlin,2024-01-23\n46,542,Reykjavík,2024-03-04\n"
            "17,433,Mumbai,2024-06-05\n",
            "id,qty,city,date\n15,797,Berlin,2024-01-23\n16,542,Reykjavík,2024-03-04\n"
            "17,433,Mumbai,2024-06-05\n",
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_reproducer_is_exact_or_flagged(case: Case) -> None:
    result = stitch(case.fragments, case.fmt)
    flagged = not result.ok or bool(result.doubts)
    right = result.text in case.right and (case.detected in (None, result.format))
    assert flagged or right, (
        f"silent: {case.fmt} {case.fragments!r}\n"
        f"expected one of {case.right!r} (format {case.detected or case.fmt})\n"
        f"got {result.text!r} (format {result.format})\nwarnings {result.warnings}"
    )


_ANSWERS = (
    "yes,no\nagree,yes\nagree,no\nno,yes\nyes,agree\nyes,no\nno,yes\nyes,no\nyes,yes\n"
    "disagree,disagree\nno,no\nno,yes\nno,yes\nyes,no\n"
)

#: Seams with one right reading that the engine once doubted (a retry paid for nothing):
#: each must come back exact and without a doubt.
CLEAR = [
    # Read again, "e: t" would glue "te:"; as a repeat it makes "the", a word the text uses.
    Case(
        "text-letters-re-sent-make-a-known-word",
        "text",
        [
            "Annual report\n\nJonas Wei said the committee was fine. Note: t",
            "e: the\nfollowing figures are preliminary.\n",
        ],
        (
            "Annual report\n\nJonas Wei said the committee was fine. Note: the\nfollowing "
            "figures are preliminary.\n",
        ),
    ),
    # A row ending "Note:" is no row of this data: the cut row is re-emitted.
    Case(
        "csv-cut-row-ending-in-no-known-value",
        "csv",
        [
            'id,name,note\n5,Sofia,"said ""fine"""\n6,Olu,Note:',
            "6,Olu,Note: the following rows are estimates\n7,Lars,x\n",
        ],
        (
            'id,name,note\n5,Sofia,"said ""fine"""\n'
            "6,Olu,Note: the following rows are estimates\n7,Lars,x\n",
        ),
    ),
    # Read exactly, the row would hold "Jonas Kaur moved to Züric cooperative was ...".
    Case(
        "csv-repeat-from-inside-a-long-value",
        "csv",
        [
            'year,event\n19,"the cooperative was founded in 2019."\n'
            '2019,"Jonas Kaur moved to Züric',
            ' cooperative was founded in 2019."\n2019,"Jonas Kaur moved to Zürich in 2020."\n',
        ],
        (
            'year,event\n19,"the cooperative was founded in 2019."\n'
            '2019,"Jonas Kaur moved to Zürich in 2020."\n',
        ),
    ),
    # Nine rows re-sent: the rows at the seam are equal, but the block again is no data.
    Case(
        "csv-long-block-re-sent",
        "csv",
        ["q1,q2\n" + _ANSWERS, _ANSWERS[-74:] + "disagree,agree\nyes,yes\n"],
        ("q1,q2\n" + _ANSWERS + "disagree,agree\nyes,yes\n",),
    ),
    # "T" is no word of the document: "# T" ended there would be no heading of its own.
    Case(
        "markdown-cut-heading-re-emitted",
        "markdown",
        [
            "# T",
            "```md\n# Title\n\n> In 1990 the warehouse was moved.\n```\n\nFeel free to ask "
            "if you want me to expand any section.",
        ],
        ("# Title\n\n> In 1990 the warehouse was moved.\n",),
    ),
    # "disagree,y" is no row of this data: the cut row is re-emitted.
    Case(
        "csv-cut-row-re-emitted",
        "csv",
        ["q1,q2\nyes,yes\nyes,agree\nagree,agree\ndisagree,y", "disagree,yes\nyes,no\n"],
        ("q1,q2\nyes,yes\nyes,agree\nagree,agree\ndisagree,yes\nyes,no\n",),
    ),
    # The cut fell between CR and LF: the reply's first LF completes the document's CRLF.
    Case(
        "csv-cut-between-cr-and-lf",
        "csv",
        ["id,note\r\n9,preliminary.\r", "\n10,fine\r\n11,none\r\n"],
        ("id,note\r\n9,preliminary.\r\n10,fine\r\n11,none\r\n",),
    ),
    Case(
        "text-cut-between-cr-and-lf",
        "text",
        ["Annual report\r\n\r", "\nIt grew.\r\n\r\nSales rose.\r\n"],
        ("Annual report\r\n\r\nIt grew.\r\n\r\nSales rose.\r\n",),
    ),
    # Read exactly, the date would be "2019-082019-12-19": the cut row was re-sent.
    Case(
        "csv-re-sent-row-would-glue-a-date",
        "csv",
        [
            "date,item,qty\n2019-12-19,warehouse,70\n2019-08",
            "2019-12-19,warehouse,70\n2019-08-01,archive,1\n",
        ],
        ("date,item,qty\n2019-12-19,warehouse,70\n2019-08-01,archive,1\n",),
    ),
    # After a preamble's blank line the reply goes on with a space, as the cut line would:
    # kept as text, the blank line would break that line in the middle.
    Case(
        "text-blank-line-then-the-cut-line-going-on",
        "text",
        [
            "The report is out. Sales rose in the north and the",
            "Continuing the document:\n\n south grew too.\n",
        ],
        ("The report is out. Sales rose in the north and the south grew too.\n",),
    ),
    # "pe" + "ople" is "people", a word the document uses: the same, without the space.
    Case(
        "text-blank-line-then-the-cut-word-going-on",
        "text",
        ["Many people came. The pe", "Continuing:\n\nople were glad.\n"],
        ("Many people came. The people were glad.\n",),
    ),
    # Single quotes (a Python or JavaScript slip) around plain keys and values: written
    # with double quotes, the tokens are exactly the document's.
    Case(
        "json-single-quoted-keys-and-values",
        "json",
        [
            '{"items": [{"id": 1, "name": "Aiko Wei", ',
            "'city': 'Reykjavík', 'tags': ['a', 'x'], 'note': null}]}",
        ],
        (
            '{"items": [{"id": 1, "name": "Aiko Wei", "city": "Reykjavík", '
            '"tags": ["a", "x"], "note": null}]}',
        ),
    ),
    # The bare fence sits inside a word: "arr" is no word of the document and the text
    # after the fence makes it one it uses ("arrived"), so the fence is the wrapper's.
    Case(
        "markdown-wrapper-fence-inside-the-cut-word",
        "markdown",
        [
            "# Doc\n\nThe parcel arrived late. Sure enough, the bookkeeper arr",
            "Here's the continuation\n```\nived early.\n```\n\nThat completes the document.",
        ],
        ("# Doc\n\nThe parcel arrived late. Sure enough, the bookkeeper arrived early.\n",),
    ),
    # A restart proved over the whole document: re-read as a re-sent header and then the
    # cut value's start again ("199" + "8,..."), it would be a shorter reading of that
    # same repeat, which the restart proves wrong.
    Case(
        "csv-restart-not-a-header-then-the-cut-value",
        "csv",
        [
            'year,event\n1998,"the cooperative was founded in 1987."\n2019,none\n'
            '2001,"said ""fine"", then left"\n199',
            'year,event\n1998,"the cooperative was founded in 1987."\n2019,none\n'
            '2001,"said ""fine"", then left"\n1999,"line one\nline two"\n2001,none\n',
        ],
        (
            'year,event\n1998,"the cooperative was founded in 1987."\n2019,none\n'
            '2001,"said ""fine"", then left"\n1999,"line one\nline two"\n2001,none\n',
        ),
    ),
    # A wrapper's closing fence after a comma: the line break left before it is white
    # space between JSON tokens, the same document whoever wrote it.
    Case(
        "json-closing-fence-after-a-comma",
        "json",
        [
            '{"items": [{"id": 1, "tags": ["x"]},',
            'Sure, here\'s the rest of the document:\n```\n {"id": 2, "tags": []},\n\n```\n\n'
            "Let me know if you need anything else!",
            ' {"id": 3, "tags": ["a"]}]}',
        ],
        (
            '{"items": [{"id": 1, "tags": ["x"]}, {"id": 2, "tags": []},\n'
            ' {"id": 3, "tags": ["a"]}]}',
        ),
    ),
    # Only the title line was received and the reply restarts: all that was received,
    # again, is a restart, not a line the document holds twice.
    Case(
        "markdown-title-then-a-restart",
        "markdown",
        ["# Quarterly notes\n", "# Quarterly notes\n\n> It grew.\n"],
        ("# Quarterly notes\n\n> It grew.\n",),
    ),
    Case(
        "text-title-then-a-restart",
        "text",
        ["Annual report\n", "Annual report\n\nIt grew.\n"],
        ("Annual report\n\nIt grew.\n",),
    ),
    # Only the header was received and the reply restarts: the header is no record the
    # data repeats, so a data row equal to it is the header re-sent.
    Case(
        "csv-header-then-a-restart",
        "csv",
        ["date,item,qty\n", "date,item,qty\n2019-04-13,package,5489\n2019-12-08,kettle,19\n"],
        ("date,item,qty\n2019-04-13,package,5489\n2019-12-08,kettle,19\n",),
    ),
    # Ending the cut row at "agr" (a lost line break) would leave a value its column never
    # held that the reply's "ee" completes into one it does ("agree"): no new row starts.
    Case(
        "csv-cut-value-completed-not-a-new-row",
        "csv",
        [
            "q1,q2\nagree,disagree\ndisagree,disagree\nyes,yes\nno,agree\nagree,agr",
            "agree,agree\nagree,yes\n",
        ],
        ("q1,q2\nagree,disagree\ndisagree,disagree\nyes,yes\nno,agree\nagree,agree\nagree,yes\n",),
    ),
    # Ending the cut row after "2019," (a lost line break) would make a row whose next row
    # repeats its id, name, city and year: a coincidence this data does not make.
    Case(
        "csv-cut-after-a-delimiter-row-re-emitted",
        "csv",
        [
            "id,name,city,year,comment\n19,Noor Wei,Oslo,1999,none\n20,Amara Novak,Kraków,1999,"
            "\n21,Wei Tanaka,Lyon,2001,It grew.\n22,Lars Okafor,Lyon,2019,",
            '22,Lars Okafor,Lyon,2019,"said ""fine"", then left"\n23,Priya Novak,Oslo,1999,none\n',
        ],
        (
            "id,name,city,year,comment\n19,Noor Wei,Oslo,1999,none\n20,Amara Novak,Kraków,1999,"
            '\n21,Wei Tanaka,Lyon,2001,It grew.\n22,Lars Okafor,Lyon,2019,"said ""fine"", then '
            'left"\n23,Priya Novak,Oslo,1999,none\n',
        ),
    ),
    # "lin" + "line was not": read again as text the cut word runs on into its own start
    # ("linline"), though the document uses "lin" often (line, line, line): the cut word
    # re-emitted.
    Case(
        "text-cut-word-re-emitted-in-recurring-text",
        "text",
        ["The line ran on. The line was long. Every line was read. One lin", "line was not.\n"],
        ("The line ran on. The line was long. Every line was read. One line was not.\n",),
    ),
    Case(
        "csv-cut-word-re-emitted-in-a-quoted-field",
        "csv",
        [
            'year,event\n2001,"line one\nline two"\n2019,"line one\nline two"\n2001,"line one\nlin',
            'line two"\n1999,none\n',
        ],
        (
            'year,event\n2001,"line one\nline two"\n2019,"line one\nline two"\n'
            '2001,"line one\nline two"\n1999,none\n',
        ),
    ),
    # Read on inside the cut quoted field, the re-emitted row would close the quote and go
    # on with text after it ('"disagr"disagree"', '9,"9,"Mateo'): no CSV has that, so the
    # cut row's start was re-emitted, however often a small vocabulary uses it.
    Case(
        "csv-quoted-cut-value-re-emitted",
        "csv",
        [
            'q1,q2\n"disagree","yes"\n"no","no"\n"yes","yes"\n"yes","no"\n"no","yes"\n'
            '"agree","yes"\n"yes","disagree"\n"disagr',
            '"disagree","yes"\n"agree","agree"\n',
        ],
        (
            'q1,q2\n"disagree","yes"\n"no","no"\n"yes","yes"\n"yes","no"\n"no","yes"\n'
            '"agree","yes"\n"yes","disagree"\n"disagree","yes"\n"agree","agree"\n',
        ),
    ),
    Case(
        "csv-quoted-cut-row-start-re-emitted",
        "csv",
        [
            'id,name,city\n8,"Priya Okafor","Zürich"\n9,"',
            '9,"Mateo Lindqvist","Lyon"\n10,"Noor Moreau","Oslo"\n',
        ],
        (
            'id,name,city\n8,"Priya Okafor","Zürich"\n9,"Mateo Lindqvist","Lyon"\n'
            '10,"Noor Moreau","Oslo"\n',
        ),
    ),
    # The reply proves a repeat of the cut line after its preamble's blank line: kept as
    # text, the blank line would say that line twice.
    Case(
        "markdown-blank-line-then-a-repeat",
        "markdown",
        [
            "# Notes\n\nThe bridge arrived fine",
            "Okay, continuing the document.\n\nThe bridge arrived fine and on time.\n",
        ],
        ("# Notes\n\nThe bridge arrived fine and on time.\n",),
    ),
    # "70" + "8,11" would glue a number the array never holds ("708"); the reply re-sends
    # "8,11,72,70,70" from the middle of a number, and read so, every value is known.
    Case(
        "json-repeat-from-mid-number-in-a-small-vocabulary",
        "json",
        ['{"values":[19,19,68,19,72,68,11,72,70,70', "8,11,72,70,70,70,1998,68,72,11]}"],
        ('{"values":[19,19,68,19,72,68,11,72,70,70,70,1998,68,72,11]}',),
    ),
    # "ough, " again after "Sure enough, ": read as new text, the document would hold
    # "enough, ough, ", a word it never used; the reply re-sends the cut's last letters.
    Case(
        "text-repeat-from-inside-a-word",
        "text",
        [
            "The package\r\n\r\nNote: the following figures are preliminary.\r\n\r\n"
            "In 2001 the bridge was moved to Oslo; nobody complained. Priya Silva moved to "
            "Kraków in 2020. Sure enough, the warehouse arrived overpriced.\r\n\r\n"
            "Here is what the archive survey found: Sure enough, the bookkeeper arrived a "
            "relief.\r\n\r\nAiko Novak kept the books for the harbor from 1990 to 2003. "
            "Sure enough, ",
            "ough, the bookkeeper arrived fine.\r\n",
        ],
        (
            "The package\r\n\r\nNote: the following figures are preliminary.\r\n\r\n"
            "In 2001 the bridge was moved to Oslo; nobody complained. Priya Silva moved to "
            "Kraków in 2020. Sure enough, the warehouse arrived overpriced.\r\n\r\n"
            "Here is what the archive survey found: Sure enough, the bookkeeper arrived a "
            "relief.\r\n\r\nAiko Novak kept the books for the harbor from 1990 to 2003. "
            "Sure enough, the bookkeeper arrived fine.\r\n",
        ),
    ),
    # The repair would end the cut row in "n", a value its column never held; read as a
    # repeat of "agree,yes\nno,n", the reply completes it into "no".
    Case(
        "csv-repeat-completes-the-cut-value",
        "csv",
        [
            "q1,q2\nyes,agree\nno,agree\nno,agree\nyes,no\nyes,yes\nagree,disagree\n"
            "disagree,agree\nyes,yes\nno,disagree\nyes,no\nyes,agree\nagree,yes\n"
            "disagree,yes\nno,agree\nyes,yes\nno,no\nagree,yes\nno,n",
            "agree,yes\nno,no\nyes,yes\nno,yes\n",
        ],
        (
            "q1,q2\nyes,agree\nno,agree\nno,agree\nyes,no\nyes,yes\nagree,disagree\n"
            "disagree,agree\nyes,yes\nno,disagree\nyes,no\nyes,agree\nagree,yes\n"
            "disagree,yes\nno,agree\nyes,yes\nno,no\nagree,yes\nno,no\nyes,yes\nno,yes\n",
        ),
    ),
]


#: A paragraph on one line, longer than any width a document is wrapped at.
_UNWRAPPED = (
    "The bridge cost $60.89, roughly 19% more than in 1999. Noor Lindqvist kept the books "
    "for the kettle from 1998 to 2024. See the ledger report for details.\n\n"
)

_WORDS_BEFORE = (
    "# Notes\n\nThe committee in Oslo grew by 12% between 1987 and 2024. Most of the kettles "
    "were sold by May. Aiko Haddad said the archive was a relief. Founded in 1999, Northwind "
    "now employs 19 people. Sure enough, the bookkeeper arri"
)

#: Seams the engine doubted until it checked what the other reading would write (issue 10's
#: seam corpus, seed 0): each other reading is no document, so the seam is clear.
CLEAR += [
    # Read again, " N" would leave a name "N" before "Novak": a letter cut off a word is no
    # word said twice (``squares._cuts_letters``).
    Case(
        "csv-letter-cut-off-a-name-re-sent",
        "csv",
        ['id,name\n4,"Lars Lindqvist"\n5,"Sofia N', ' Novak"\n6,"Lars Silva"\n'],
        ('id,name\n4,"Lars Lindqvist"\n5,"Sofia Novak"\n6,"Lars Silva"\n',),
    ),
    # Read again, "c\n" would be a line "c": its first copy starts inside "Doc".
    Case(
        "markdown-end-of-a-word-re-sent-with-its-line-break",
        "markdown",
        ["# Doc\n", "c\n\nThe rest.\n"],
        ("# Doc\n\nThe rest.\n",),
    ),
    # A reply that closes its wrapper mid-document: the line break before the closer is
    # the wrapper's in JSON (``seam._closed_text``): kept, it would end the cut number or
    # break the cut string.
    Case(
        "json-line-break-before-a-closing-fence-inside-a-number",
        "json",
        ['{"v": [68, ', "Continuing:\n```json\n0, 7\n\n```", "0, 11]}"],
        ('{"v": [68, 0, 70, 11]}',),
    ),
    Case(
        "json-line-break-before-a-closing-fence-inside-a-string",
        "json",
        ['{"city": "Sa', "```json\no Pa\n```", 'ulo"}'],
        ('{"city": "Sao Paulo"}',),
    ),
    # An accent, half a flag, a joiner and what follows: text repeats whole characters
    # (``squares._inside_cluster``).
    Case(
        "text-accent-re-sent",
        "text",
        ["The team celebrated with cafe\u0301", "\u0301 after the river shipped.\n"],
        ("The team celebrated with cafe\u0301 after the river shipped.\n",),
    ),
    Case(
        "text-half-a-flag-re-sent",
        "text",
        ["Mateo Novak wrote \U0001f1eb\U0001f1f7", "\U0001f1f7 on the harbor.\n"],
        ("Mateo Novak wrote \U0001f1eb\U0001f1f7 on the harbor.\n",),
    ),
    Case(
        "json-end-of-a-joined-emoji-re-sent",
        "json",
        ['{"note": "\U0001f468\u200d\U0001f469', '\u200d\U0001f469\u200d\U0001f467"}'],
        ('{"note": "\U0001f468\u200d\U0001f469\u200d\U0001f467"}',),
    ),
    # Read exactly, a line " |" or "|| A | B |" would stand before the delimiter row: no
    # table (``markdown_stitch._delimiter_fits``).
    Case(
        "markdown-end-of-a-table-header-re-sent",
        "markdown",
        ["# Title\n\n| A | B | C |\n", " C |\n|---|---:|:---|\n| Lyon | 1998 | 40 |\n"],
        ("# Title\n\n| A | B | C |\n|---|---:|:---|\n| Lyon | 1998 | 40 |\n",),
    ),
    Case(
        "markdown-table-pipe-re-sent",
        "markdown",
        ["# Notes\n\n|", "| A | B |\n|---|---|\n| 1 | 2 |\n"],
        ("# Notes\n\n| A | B |\n|---|---|\n| 1 | 2 |\n",),
    ),
    # Kept, the wrapper's blank line would be a blank line between rows: no CSV record
    # (``csv_stitch._blank_between``).
    Case(
        "csv-blank-line-after-the-wrapper",
        "csv",
        ["year,event\n2001,none\n2019,x\n", "Continuing from where I left off:\n\n1998,none\n"],
        ("year,event\n2001,none\n2019,x\n1998,none\n",),
    ),
    # After the wrapper's blank line, a long repeat of the last line: kept, the blank line
    # would open a paragraph that says the line again.
    Case(
        "text-blank-line-after-the-wrapper-before-a-proved-repeat",
        "text",
        [
            "Intro.\n\nThe archive cost $40.78, roughly 8% more than in 2020, and nobody "
            "complained.\n",
            "Continuing:\n\nroughly 8% more than in 2020, and nobody complained.\nThe end.\n",
        ],
        (
            "Intro.\n\nThe archive cost $40.78, roughly 8% more than in 2020, and nobody "
            "complained.\nThe end.\n",
        ),
    ),
    # No line starts with a comma, and no number breaks over two lines: the blank line
    # after the wrapper is the wrapper's (``seam._glued_on``).
    Case(
        "text-blank-line-after-the-wrapper-before-a-comma",
        "text",
        ["Continuing the work of Priya Moreau", "Continuing\n\n, the team opened an office.\n"],
        ("Continuing the work of Priya Moreau, the team opened an office.\n",),
    ),
    Case(
        "text-blank-line-after-the-wrapper-inside-a-number",
        "text",
        ["Lars moved to Krakow in 1", "Here's the continuation\n\n987.\n"],
        ("Lars moved to Krakow in 1987.\n",),
    ),
    # A bare fence after the wrapper's prose before a comma or the rest of a number: the
    # wrapper's, not a code block.
    Case(
        "markdown-bare-fence-before-a-comma",
        "markdown",
        [
            "# T\n\nContinuing the work of Priya Moreau",
            "Sure! Here is the rest\n```\n, the team.\n```\n",
        ],
        ("# T\n\nContinuing the work of Priya Moreau, the team.\n",),
    ),
    # A bare fence right after chat prose, the cut line unfinished: the document's own
    # fence would start a line of its own, after a blank line (``seam._unbroken_fence``).
    Case(
        "markdown-bare-fence-after-prose-mid-line",
        "markdown",
        [
            "# The package\n\nSure enough, the river arr",
            "Apologies, the previous response was cut off. Here is the remainder:\n```\n"
            "arrived too small.\n```\n",
        ],
        ("# The package\n\nSure enough, the river arrived too small.\n",),
    ),
    Case(
        "markdown-bare-fence-inside-a-number",
        "markdown",
        ["# T\n\nLars moved to Krakow in 1", "```\n987. It grew.\n```\n"],
        ("# T\n\nLars moved to Krakow in 1987. It grew.\n",),
    ),
]


#: Seams that two rules once read without a doubt, taking a blank line (or a bare fence)
#: after the wrapper for the wrapper's: where the document held a paragraph line longer
#: than the cut line and the next word (``seam._wraps_wider``: "a document wrapped at a
#: width breaks only where the next word does not fit"), and where the words on both sides
#: were ones the document never used ("pe" + "ople.": a word cut in two). Documents with a
#: line break of their own at the cut ("bookkeeper|\nsurvey", "the team \n|opened",
#: found by a random-seed hunt of the seam corpus) came back glued, silently; both rules
#: are gone, and each of these is doubted (exact or flagged, never silent).
WRAPPED = [
    # "pe" and "ople." are no words of the document, which read as a word cut in two; but
    # two whole words the document never used ("team" + "opened") read the same.
    Case(
        "markdown-blank-line-inside-a-cut-word",
        "markdown",
        [
            "# Doc\n\nHere is what the chart survey found: See the package report for details. "
            "Priya Wei kept the books for the river from 2001 to 2003. Note: the following "
            "figures are preliminary.\n\n* Sure enough, the bookkeeper arrived late.\n"
            "* Amara Wei moved to Nairobi in 2001.\n* Most of the kettles were sold by May.\n"
            "* Founded in 19, the cooperative now employs 5489 pe",
            "Sure! Here is the rest\n\nople.\n\n## Overview\n\nIt grew.\n",
        ],
        (
            "# Doc\n\nHere is what the chart survey found: See the package report for details. "
            "Priya Wei kept the books for the river from 2001 to 2003. Note: the following "
            "figures are preliminary.\n\n* Sure enough, the bookkeeper arrived late.\n"
            "* Amara Wei moved to Nairobi in 2001.\n* Most of the kettles were sold by May.\n"
            "* Founded in 19, the cooperative now employs 5489 people.\n\n## Overview\n\n"
            "It grew.\n",
        ),
    ),
    Case(
        "markdown-bare-fence-between-two-parts-of-a-word",
        "markdown",
        [_WORDS_BEFORE, "Sure! Here is the rest\n\n```\nved late.\n```\n"],
        (_WORDS_BEFORE + "ved late.\n",),
    ),
    Case(
        "text-blank-line-after-the-wrapper-where-the-document-does-not-wrap",
        "text",
        [
            _UNWRAPPED + "Founded in 1998, Soylent now ",
            "Sure! Here is the rest:\n\nemploys 19 people.\n",
        ],
        (_UNWRAPPED + "Founded in 1998, Soylent now employs 19 people.\n",),
    ),
    Case(
        "markdown-blank-line-after-the-wrapper-inside-a-word-where-the-document-does-not-wrap",
        "markdown",
        [
            "# Notes\n\n" + _UNWRAPPED + "Sure enough, the bookkeeper arr",
            "Continuing:\n\nived late.\n",
        ],
        ("# Notes\n\n" + _UNWRAPPED + "Sure enough, the bookkeeper arrived late.\n",),
    ),
    Case(
        "text-line-break-at-the-cut-after-a-prose-line-is-not-the-wrappers",
        "text",
        [
            _UNWRAPPED + "Here is what the bookkeeper",
            "Continuing:\n\nsurvey found: the warehouse grew.\n",
        ],
        (_UNWRAPPED + "Here is what the bookkeeper\nsurvey found: the warehouse grew.\n",),
    ),
]


WRAPPED += [
    Case(
        "markdown-trailing-blank-and-line-break-at-the-cut-after-a-prose-line",
        "markdown",
        [
            "# Doc\nSoylent was founded in 1987. Sales rose to 70 units, up from 157. Most\n"
            "It grew. Amara Novak moved to São Paulo in 2020. Amara Silva said the\n"
            'ledger was "excellent". Continuing the work of Amara Wei, the team',
            "Here's the continuation\n \nopened an office in São Paulo.\n",
        ],
        (
            "# Doc\nSoylent was founded in 1987. Sales rose to 70 units, up from 157. Most\n"
            "It grew. Amara Novak moved to São Paulo in 2020. Amara Silva said the\n"
            'ledger was "excellent". Continuing the work of Amara Wei, the team \n'
            "opened an office in São Paulo.\n",
        ),
    ),
]


#: A repeat whose first copy starts inside the cut word ("Aust|in " + "in 1990"): read
#: as text, the letters are a word of their own, which a model re-sending from inside a
#: word would not write... unless they are one ("Austin in 1990"). Without the document's
#: words to show they are no word (one letter, or a text long enough to know its words),
#: both readings stand: doubted (a rule took every such square for a repeat, silently
#: wrong on "Austin " + "in 1990", found by a random-seed hunt of the seam corpus).
UNPROVED = [
    Case(
        "markdown-two-letter-word-after-a-word-ending-in-it",
        "markdown",
        ["from 297.\n* Aiko Okafor moved to Austin ", "in 1990.\n* Amara Silva kept the books.\n"],
        ("from 297.\n* Aiko Okafor moved to Austin in 1990.\n* Amara Silva kept the books.\n",),
    ),
    # Once a clear case: read again, "ackage\n" would be a line of its own, but only a
    # word list says "ackage" is no word, and this text has five letters before it.
    Case(
        "text-end-of-a-title-re-sent-with-its-line-break",
        "text",
        ["The package\n", "ackage\n\nThe sign in Austin read cafe.\n"],
        ("The package\n\nThe sign in Austin read cafe.\n",),
    ),
    Case(
        "markdown-prose-fence-then-letters-from-inside-the-cut-word",
        "markdown",
        [
            "# T\n\n| City | N |\n|---|---|\n| Austin | 2 |\n| Lyon ",
            "Here's the continuation:\n\n```\non | 1 |\n",
        ],
        ("# T\n\n| City | N |\n|---|---|\n| Austin | 2 |\n| Lyon | 1 |\n",),
    ),
    Case(
        "csv-prose-then-letters-from-inside-the-cut-word",
        "csv",
        [
            "id,name,city,year,comment\n3,Aiko Okafor,Zürich,2019,Most ",
            "Continuing\nst of the warehouses were sold.\n",
        ],
        (
            "id,name,city,year,comment\n"
            "3,Aiko Okafor,Zürich,2019,Most of the warehouses were sold.\n",
        ),
    ),
]


UNPROVED += [
    # A 4-character coincidence starting inside a number ("548|9, 1" + "9, 11]") read as a
    # repeat because the other reading glues "19", a number the document never wrote: a
    # number is no word, any value may come (found by a random-seed hunt).
    Case(
        "json-repeat-from-inside-a-number-after-prose",
        "json",
        [
            '{"series": [[8895, 11], [0, 1998, 5489, 1',
            "Certainly! Continuing from the cut:\n\n```\n9, 11], [8895, 5489, 0, 68]]}",
        ],
        ('{"series": [[8895, 11], [0, 1998, 5489, 19, 11], [8895, 5489, 0, 68]]}',),
    ),
]


@pytest.mark.parametrize("case", UNPROVED, ids=[c.name for c in UNPROVED])
def test_letters_from_inside_the_cut_word_are_never_silent(case: Case) -> None:
    test_reproducer_is_exact_or_flagged(case)


@pytest.mark.parametrize("case", WRAPPED, ids=[c.name for c in WRAPPED])
def test_a_line_break_after_the_wrapper_is_never_silent(case: Case) -> None:
    test_reproducer_is_exact_or_flagged(case)


CLEAR += [
    # The prefill path: the adapter sends the cut as an assistant prefill with its trailing
    # white space stripped (Anthropic refuses it) and returns it before the generated text,
    # which puts the white space back: a repeat without the tail's last blank.
    Case(
        "prefill-repeat-without-the-trailing-space",
        "text",
        ["It grew by 5%. Aiko Moreau ", "It grew by 5%. Aiko Moreau kept the books.\n"],
        ("It grew by 5%. Aiko Moreau kept the books.\n",),
    ),
    Case(
        "prefill-repeat-without-the-trailing-line-break",
        "markdown",
        ["# T\n\n- a\n- b\n", "# T\n\n- a\n- b\n- c\n"],
        ("# T\n\n- a\n- b\n- c\n",),
    ),
]


@pytest.mark.parametrize("case", CLEAR, ids=[c.name for c in CLEAR])
def test_clear_seam_is_exact_without_doubt(case: Case) -> None:
    result = stitch(case.fragments, case.fmt)
    seam_doubts = [d for d in result.doubts if "ambiguous end" not in d]
    assert result.ok and not seam_doubts, seam_doubts
    assert result.text == case.right[0]


@pytest.mark.parametrize(
    ("fragments", "right"),
    [
        (['{"cpu": "25', " ", '0m"}'], '{"cpu": "250m"}'),  # inside a string value
        (['{"na', "\t", 'me": 1}'], '{"name": 1}'),  # inside a key
        (["[1, 2,", " ", " 3]"], "[1, 2, 3]"),  # between values
        (["[12", " ", "3]"], "[123]"),  # inside a number
    ],
)
def test_a_blank_reply_carries_nothing_even_inside_a_json_string(
    fragments: list[str], right: str
) -> None:
    result = stitch(fragments, "json")
    assert result.ok and not result.doubts, result.doubts
    assert result.text == right
    assert any("skipped a blank reply" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("fragments", "doubted"),
    [
        # An array of objects may hold the same small object twice in a row: a short
        # repeat of whole objects (or of the braces between them) proves nothing.
        (["[{}, ", '{}, {"a": null}]'], True),
        (["[{}, {", '}, {"a": null}]'], True),
        (['[{"a": {"b": 1}}, {', '}, {"c": 2}]'], True),
        # Long enough to prove a repeat; a key can never follow itself.
        (['[{"a": 1}, ', '{"a": 1}, {"b": 2}]'], '[{"a": 1}, {"b": 2}]'),
        (['{"id": 1, ', '"id": 1, "b": 2}'], '{"id": 1, "b": 2}'),
    ],
)
def test_short_repeats_of_whole_objects_are_doubted(
    fragments: list[str], doubted: bool | str
) -> None:
    """``doubted``: True, or the one right text, read without a doubt."""
    result = stitch(fragments, "json")
    assert result.ok
    if doubted is True:
        assert result.doubts
    else:
        assert not result.doubts and result.text == doubted, (result.doubts, result.text)


def test_a_continuation_that_shares_its_records_layout_is_not_an_echo() -> None:
    """Records share keys and layout for a line or two ('ctive": true, "tags": [ ...'): an
    exact continuation cut inside one is no copy of an earlier record, and is not doubted."""
    records = [
        {"id": i, "name": f"Person {i}", "active": True, "tags": ["new", "beta"], "note": None}
        for i in range(4)
    ]
    doc = json.dumps({"items": records}, indent=2)
    cut = doc.index('"active"', doc.index('"id": 2')) + 2
    result = stitch([doc[:cut], doc[cut:]], "json")
    assert result.ok and not result.doubts, result.doubts
    assert result.text == doc


def test_a_reply_that_goes_back_and_copies_a_whole_record_is_doubted() -> None:
    """A reply that re-sends a long stretch from before the cut (the model went back) and
    then goes its own way is still taken in doubt."""
    records = [{"id": i, "name": f"Person {i}", "note": "x" * 40} for i in range(6)]
    doc = json.dumps({"items": records}, indent=2)
    cut = doc.index('"id": 4')
    went_back = doc[doc.index('"id": 1') : doc.index('"id": 3')] + doc[cut:]
    result = stitch([doc[:cut], went_back], "json")
    assert not result.ok or result.doubts


@pytest.mark.parametrize(
    "before",
    [
        # Wrapped at 32: "employs" does not fit after "now", so the line may break there.
        "The bridge cost $60.89, roughly\n19% more than in 1999. Noor\n"
        "Lindqvist kept the books for\nthe kettle from 1998 to 2024.\n\n",
        # The first paragraph: no line of the document says how it wraps.
        "",
    ],
)
def test_a_blank_line_after_the_wrapper_is_doubted_where_the_document_may_wrap(
    before: str,
) -> None:
    """Where the document may wrap its paragraph before the next word, the blank line
    after the preamble may be the document's line break: that stays a doubt."""
    result = stitch(
        [before + "Founded in 1998, Soylent now ", "Sure! Here is the rest:\n\nemploys 19.\n"],
        "text",
    )
    assert result.ok and result.doubts, result.text


#: Seams the engine is still silent on (ok, no doubt, wrong text), found by a random-seed
#: hunt (``CONTINUUM_HUNT``: ``tests/hunting.py``) of the property tests and of the seam
#: corpus beyond the seeds CI runs: open under issue 10. Each is an expected failure that
#: must fail (``strict``): the fix that makes one exact or flagged turns it into a pass,
#: which fails this test until the case moves to ``CASES``.
KNOWN_SILENT = [
    Case(
        "markdown-periodic-list-line-break-lost",
        "markdown",
        [
            "# T\n\n- Item number 0: A\n- Item number 1: A\n- Item number 2: A A\n\n"
            "- Item number 0: A",
            "- Item number 1: A\n- Item number 2: A A\n\n- Item number 0: A\n\n# A\n",
        ],
        (
            "# T\n\n- Item number 0: A\n- Item number 1: A\n- Item number 2: A A\n\n"
            "- Item number 0: A\n- Item number 1: A\n- Item number 2: A A\n\n- Item number 0: A\n\n"
            "# A\n",
        ),
    ),
    Case(
        "markdown-short-sentence-said-twice",
        "markdown",
        ["# T\n\nNobody complained. It grew.", " It grew.\n\n1. See the report.\n"],
        ("# T\n\nNobody complained. It grew. It grew.\n\n1. See the report.\n",),
    ),
    Case(
        "markdown-code-block-said-twice",
        "markdown",
        [
            "# Notes\n\n```python\ndef total(xs):\n    return sum(xs)\n```",
            "\n\n```python\ndef total(xs):\n    return sum(xs)\n```\n\nSee the report.\n",
        ],
        (
            "# Notes\n\n```python\ndef total(xs):\n    return sum(xs)\n```\n\n"
            "```python\ndef total(xs):\n    return sum(xs)\n```\n\nSee the report.\n",
        ),
    ),
    Case(
        "csv-small-vocabulary-records-again-read-as-a-repeat",
        "csv",
        ["q1,q2\nyes,yes\nagree,yes\ndisagree,", "yes\nagree,yes\ndisagree,yes\nagree,no\n"],
        ("q1,q2\nyes,yes\nagree,yes\ndisagree,yes\nagree,yes\ndisagree,yes\nagree,no\n",),
    ),
    Case(
        "markdown-list-item-again-after-a-lost-line-break",
        "markdown",
        ["# T\n\n- Buy milk and eggs\n- Call", "- Buy milk and eggs\n- Call mum\n"],
        ("# T\n\n- Buy milk and eggs\n- Call\n- Buy milk and eggs\n- Call mum\n",),
    ),
]


@pytest.mark.xfail(strict=True, reason="silent on this engine: open under issue 10")
@pytest.mark.parametrize("case", KNOWN_SILENT, ids=[c.name for c in KNOWN_SILENT])
def test_known_silent_seam(case: Case) -> None:
    test_reproducer_is_exact_or_flagged(case)


@pytest.mark.parametrize(
    ("fragments", "fmt", "expected"),
    [
        (
            [
                "# Title\n\n## One\n\n- Far soon.\n- Be can.\n- Than began usually",
                "# Title\n\n...\n- Than began usually just.\n",
            ],
            "markdown",
            "# Title\n\n## One\n\n- Far soon.\n- Be can.\n- Than began usually just.\n",
        ),
        (
            [
                "Notes\n\nThe harbour opened in 1998 and the museum followed it two years lat",
                "Notes\n[... earlier content unchanged ...]\n"
                "the museum followed it two years later.\n",
            ],
            "text",
            "Notes\n\nThe harbour opened in 1998 and the museum followed it two years later.\n",
        ),
    ],
)
def test_a_restart_with_the_middle_left_out_keeps_what_follows_the_copy(
    fragments: list[str], fmt: str, expected: str
) -> None:
    result = stitch(fragments, fmt)
    assert (result.text, result.doubts) == (expected, [])


def test_a_restart_with_the_middle_left_out_and_no_copy_of_the_end_is_doubted() -> None:
    result = stitch(
        ["Notes\n\nThe harbour opened in 1998 and the mus", "Notes\n...\neum.\n"], "text"
    )
    assert result.ok and result.doubts


# Found by an attacker review of the seventh session's rules (each was silent, or slow).
def test_a_document_line_like_an_elision_is_no_elision() -> None:
    line = "PASS tests/integration/test_alpha_module_loads_configuration_from_env (0.42s)"
    doc = (
        "=== Test run ===\n3 tests skipped\nPASS tests/unit/test_gamma (0.01s)\n"
        f"{line}\n=== Test run ===\n3 tests skipped\n{line}\nFAIL tests/unit/test_beta\n"
    )
    cut = doc.index("=== Test run ===", 5)
    result = stitch([doc[:cut], doc[cut:]], "text")
    assert result.text == doc or result.doubts, result.text


@pytest.mark.parametrize(
    ("fragments", "fmt"),
    [
        (
            ["She asked me twice, and twice I said never again", "... never again, she said.\n"],
            "text",
        ),
        (['{"lyric": "la la land, we are going home', '... we are going home", "n": 2}'], "json"),
    ],
)
def test_an_elision_mark_then_an_echo_of_the_end_is_doubted(fragments: list[str], fmt: str) -> None:
    result = stitch(fragments, fmt)
    assert result.ok and result.doubts, result.text


def test_a_chat_line_with_an_interjection_and_a_comma_is_still_chat() -> None:
    result = stitch(
        ["# Guide\n\nStep one is to open the lid carefully.\n", "Sure, no problem.\nStep two.\n"],
        "markdown",
    )
    assert "Sure" not in result.text


def test_a_long_cut_line_begun_again_is_weighed_in_bounded_time() -> None:
    started = time.perf_counter()
    stitch(["Intro\n\n" + "x" * 32_000, "# " + "y" * 32_000 + "\n"], "markdown")
    stitch(["id,note\n1," + "a" * 32_000, "2," + "b" * 32_000 + "\n"], "csv")
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    ("unit", "size", "fmt"),
    [
        ("word ", 100, "text"),
        ("word ", 10_000, "markdown"),
        ("0,", 1_000, "text"),
        ("ab\n", 96, "text"),
    ],
)
def test_a_document_periodic_from_its_start_is_never_read_as_restarted(
    unit: str, size: int, fmt: str
) -> None:
    # Each fragment begins as the document does, and goes on its period as well: read as a
    # restart, every fragment was dropped as a repeat (200,000 characters came back as
    # 10,000 with no doubt).
    doc = unit * (4 * size // len(unit))
    fragments = [doc[i : i + size] for i in range(0, len(doc), size)]
    result = stitch(fragments, fmt)
    assert result.text == doc or result.doubts, len(result.text)


def test_a_restart_of_a_document_not_periodic_from_its_start_is_still_a_restart() -> None:
    doc = "# Log\n\n" + "word " * 40
    result = stitch([doc[:120], doc[:60]], "markdown")
    assert (result.text, result.doubts) == (doc[:120], [])


# Found by a third corpus, written by another author from what models send (session 8):
# each was silent. Where the engine cannot know the right reading it must say so.
@pytest.mark.parametrize(
    ("fragments", "fmt", "right"),
    [
        # A fresh document where the cut left an array open: no element of it.
        (['{"m":[[1,2],', '{"m":[[3,4]]}'], "json", '{"m":[[1,2],[3,4]]}'),
        # The cut object again with its keys in another order, inside the array it holds.
        (['[{"a":1,"b":[1,', '{"b":[1,2],"a":1},{"a":2,"b":[]}]'], "json", ""),
        # The open member begun again from its key, a number written 3370.0.
        (
            ['{"s": {"x": 3370, "y": 3118,', '"s": {"x": 3370.0, "y": 3118.0, "z": 1}, "t": 1}'],
            "json",
            '{"s": {"x": 3370, "y": 3118, "z": 1}, "t": 1}',
        ),
        # ... or with an escape written out ("\u00ed" again as "í").
        (
            [
                '{\n\t"s": {\n\t\t"city": "Reykjav\\u00edk",\n\t\t"n": 2,\n\t\t',
                '\t"s": {\n\t\t"city": "Reykjavík",\n\t\t"n": 2,\n\t\t"m": 3\n\t}\n}',
            ],
            "json",
            '{\n\t"s": {\n\t\t"city": "Reykjav\\u00edk",\n\t\t"n": 2,\n\t\t"m": 3\n\t}\n}',
        ),
        # A comma left out after the cut number: "3291" + "1E-7" glued as one number.
        (["[\n  3291", "\n  1E-7,\n  4221\n]"], "json", "[\n  3291,\n  1E-7,\n  4221\n]"),
        # The cut line again, indented with tabs where the document has spaces.
        (
            ["def f(x):\n    if x:\n        retu", "\t\treturn 1\n    return 0\n"],
            "markdown",
            "def f(x):\n    if x:\n        return 1\n    return 0\n",
        ),
        # A bracketed end line or "[Continued]": the reply's most often, a document's at
        # times (dropped with a doubt, or kept).
        (
            ["It went on. Oka", "for questioned the sign.\n\n\n(End of the text.)"],
            "text",
            "It went on. Okafor questioned the sign.\n",
        ),
        (
            ['It was late. "That', '[Continued]\n\n was never the plan," she said.\n'],
            "text",
            'It was late. "That was never the plan," she said.\n',
        ),
        # A line break that opens a reply inside a quoted CSV field, splitting a word the
        # document never used, a number, or opening the field.
        (
            ['id,name,flag\n27,"Tanaka, José",no\n28,"Sm', '\nith, Dave",no\n'],
            "csv",
            'id,name,flag\n27,"Tanaka, José",no\n28,"Smith, Dave",no\n',
        ),
        (['"id","date"\n"10","2', '\n024-08-09"\n'], "csv", '"id","date"\n"10","2024-08-09"\n'),
        (
            ['"id","qty","category"\n"31","736","', '\n1"\n'],
            "csv",
            '"id","qty","category"\n"31","736","1"\n',
        ),
        # Notes that the document was complete, unbracketed: a document may say so too.
        (["a,b\n1,2\n", "That is the end of the document."], "csv", "a,b\n1,2\n"),
        (["Some text here.\n", "The document above is complete."], "markdown", "Some text here.\n"),
        (
            [
                "The auditor followed the sign.",
                "It looks like the previous response was "
                "already complete. Let me know if you need anything else!",
            ],
            "text",
            "The auditor followed the sign.",
        ),
        (
            ["a,b\n1,2\n3,", "4\n\n\nThat's all 25 rows. Want me to add a totals row?"],
            "csv",
            "a,b\n1,2\n3,4\n",
        ),
        # A closing fence, a rule and an end note after a fenced reply (dropped, doubted).
        (
            [
                "====\n\nThe meeting starts at thr",
                "Here's the rest:\n\n```text\nee.\n```\n\n---\n*End of document.*",
            ],
            "text",
            "====\n\nThe meeting starts at three.\n",
        ),
        # A reply that only says the document was complete (dropped, doubted).
        (["The river ran.", "(No further content.)"], "text", "The river ran."),
        (["a,b\n1,2\n", "*That is the end of the document.*"], "csv", "a,b\n1,2\n"),
    ],
)
def test_a_reply_that_begins_a_member_or_line_again_changed_is_never_silent(
    fragments: list[str], fmt: str, right: str
) -> None:
    result = stitch(fragments, fmt)
    assert not result.ok or result.doubts or result.text == right, result.text


@pytest.mark.parametrize(
    ("fragments", "fmt", "expected"),
    [
        # A line break in a quoted field after a word the document uses is the field's.
        (
            ['id,c\n1,"line one\nline two"\n2,"line one', '\nline two"\n'],
            "csv",
            'id,c\n1,"line one\nline two"\n2,"line one\nline two"\n',
        ),
        # A CRLF document with LF inside quoted cells keeps each as the reply writes it.
        (
            ['id,note\r\n1,"line one\nline two"\r\n2,"a\nb\n', 'c"\r\n3,"multi\nline\nnote"\r\n'],
            "csv",
            'id,note\r\n1,"line one\nline two"\r\n2,"a\nb\nc"\r\n3,"multi\nline\nnote"\r\n',
        ),
        # A reply that writes LF only: its record ends become CRLF, and the breaks inside
        # quoted fields follow the document (LF, as spreadsheets export them, or CRLF),
        # found by scanning the reply from the cut's quote state. (All were CRLF before,
        # silently: the third corpus's last silent class.)
        (
            ['id,note\r\n1,"a\nb"\r\n2,c', '\n3,"d\ne"\n4,f\n'],
            "csv",
            'id,note\r\n1,"a\nb"\r\n2,c\r\n3,"d\ne"\r\n4,f\r\n',
        ),
        (
            ['id,note\r\n1,"a\nb"\r\n2,"c', 'd\ne"\n3,f\n'],
            "csv",
            'id,note\r\n1,"a\nb"\r\n2,"cd\ne"\r\n3,f\r\n',
        ),
        (
            ['id,note\r\n1,"a\r\nb"\r\n2,"c', 'd\ne"\n3,f\n'],
            "csv",
            'id,note\r\n1,"a\r\nb"\r\n2,"cd\r\ne"\r\n3,f\r\n',
        ),
    ],
)
def test_line_breaks_in_quoted_fields_are_read_exactly(
    fragments: list[str], fmt: str, expected: str
) -> None:
    result = stitch(fragments, fmt)
    assert (result.ok, result.text.rstrip("\n"), result.doubts) == (True, expected.rstrip("\n"), [])


# Found by an attacker review of the session-8 rules (each came back silent on a first
# draft): real last lines, notes inside strings and fields, "(continued)" lines a
# document holds, data in cycles, LF rows in a CRLF file with quoted LFs, GeoJSON. The
# right document is the fragments' concatenation unless given.
_INSTALL = "Installation\n\n1. Download the installer.\n2. Run setup.exe.\n\n"
_MINUTES = "Minutes of the board meeting.\n\nThe budget was approved by all members present.\n"
_ROTA = '"ana", "bo", "chen", "dee", "eli", "fay", '
_READINGS = "12.5, 13.1, 12.9, 14.0, 15.2, 15.8, 16.1, "
_TABLE = "| Region | Q1 | Q2 |\n|---|---|---|\n"
REVIEW_8: list[tuple[list[str], str, str | None]] = [
    ([_INSTALL, "This completes the installation.\n"], "text", None),
    (
        ['{"page": 3, "items": [], "message": "', 'No more rows to fetch.", "next": null}'],
        "json",
        None,
    ),
    (
        [
            "Station log\n\nThe gauge was read daily from 2015. ",
            "No further data were collected after the flood of 2019",
            ", when the station closed.\nIt reopened in 2022.\n",
        ],
        "text",
        None,
    ),
    (
        [
            "Chat log\n\n[10:02] ana: is the table done?\n[10:03] bo: ",
            "It looks like the previous response was already complete, so I sent it.\n",
        ],
        "text",
        None,
    ),
    (
        [_MINUTES, "Sure, here is the rest:\n\nThis concludes the minutes.\n"],
        "text",
        _MINUTES + "This concludes the minutes.\n",
    ),
    (
        ["Dear Mr. Lee,\n\n", "Your refund was issued.\n\nShould I add a note? Reply YES or NO.\n"],
        "text",
        None,
    ),
    (
        ["Hi all,\n\n", "The move is on Saturday.\n\n(If you need access, call Dana.)\n"],
        "text",
        None,
    ),
    (
        [
            "# FAQ\n\n**Is there a row limit?**\n\n",
            "No more than 10,000 rows.\n\n(That is the complete list of questions.)\n",
        ],
        "markdown",
        None,
    ),
    (
        [
            "# Report\n\n" + _TABLE + "| North | 10 | 12 |\n\n",
            "*(continued)*\n\n" + _TABLE + "| East | 7 | 7 |\n",
        ],
        "markdown",
        None,
    ),
    (
        [
            "LEASE\n\nSection 4. Rent is due monthly.\n\n",
            "[Continued]\n\nSection 5. Keep the premises clean.\n",
        ],
        "text",
        None,
    ),
    (['{"rotation": [' + _ROTA, _ROTA + '"gus"], "weeks": 13}'], "json", None),
    (['{"readings": [' + _READINGS, _READINGS + '17.0], "unit": "C"}'], "json", None),
    (
        [
            'id,name,address\r\n1,Ana,"12 Main St\nApt 4"\r\n2,Bo,"3 Oak Rd"\r\n',
            '3,Chen,"9 Elm St"\n4,Dee,"1 Pine Ave"\n',
        ],
        "csv",
        'id,name,address\r\n1,Ana,"12 Main St\nApt 4"\r\n2,Bo,"3 Oak Rd"\r\n'
        '3,Chen,"9 Elm St"\r\n4,Dee,"1 Pine Ave"\r\n',
    ),
    (
        ['id,note\r\n1,"a"\r\n2,"first\n', 'second"\n3,"x"\n4,"y"\n'],
        "csv",
        'id,note\r\n1,"a"\r\n2,"first\nsecond"\r\n3,"x"\r\n4,"y"\r\n',
    ),
    (
        [
            '{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {',
            '"type": "Point", "coordinates": [1, 2]}}]}',
        ],
        "json",
        None,
    ),
]


# Found by a second attacker review (session 8): closing phrases a document says itself
# (changelogs, READMEs, legal text, CSV notes), a fenced reply's own code block closed
# before a rule and a sign-off, and loops of values a document repeats.
REVIEW_8B: list[tuple[list[str], str, str | None]] = [
    (
        [
            "# Archive\n\nThe scripts are kept for reference and are not mainta",
            "ined.\n\n## Usage\n\nRun the main script.\n\nNo further content is planned.\n",
        ],
        "markdown",
        None,
    ),
    (
        ["# Changelog\n\n## 3.0.0\n\n### Rem", "oved\n\n* No more content-type sniffing.\n"],
        "markdown",
        None,
    ),
    (["# Changelog\n\n### Fix", "ed\n\n* End of output no longer truncated.\n"], "markdown", None),
    (
        ["Hi team,\n\nAll services are ba", "ck.\n\nEnd of the response window is Friday.\n"],
        "text",
        None,
    ),
    (
        ['id,notes\n1,"Call bac', 'k Monday."\n2,"Spoke to her.\n\nNo further content changes."\n'],
        "csv",
        None,
    ),
    (
        [
            "AGREEMENT\n\n1. The parties agree to keep all informa",
            "tion confidential.\n\nEND OF DOCUMENT\n",
        ],
        "text",
        None,
    ),
    (["Roster.\nThe last entry was Bob.", " That's all 3 entries."], "text", None),
    (["## Appendix B\n\n**Appendix B:**", " No further content.\n"], "markdown", None),
    (
        ["```\n# Tool\n\n```bash\nmake in", "stall\nmake test\n```\n\n---\nFeel free to write.\n"],
        "text",
        "# Tool\n\n```bash\nmake install\nmake test\n```\n\n---\nFeel free to write.\n",
    ),
    (
        ['{"tracks": [901, 17, 4411, 2093, 385, 7720, ', "17, 4411, 2093, 385, 7720, 66]}"],
        "json",
        None,
    ),
    (
        [
            '{"type": "FeatureCollection", "features": [{"type": "Feature", "id": 1}, ',
            '{"type": "Feature", "id": 2}]}',
        ],
        "json",
        None,
    ),
]


# Found by a third attacker review (session 8): a document's own code block closed before
# an end line, notes that a document holds (in a quoted field, a code block, quotes, a
# form), and near copies that insert words.
REVIEW_8C: list[tuple[list[str], str, str | None]] = [
    (
        ["```markdown\n# Tool\n\nRun:\n\n```bash\nmake install\n```\n\nEND OF DOCUMENT\n"],
        "text",
        "# Tool\n\nRun:\n\n```bash\nmake install\n```\n\nEND OF DOCUMENT\n",
    ),
    (
        ["```text\nRun:\n\n```\nmake in", "stall\n```\n\nEND OF DOCUMENT\n"],
        "text",
        "Run:\n\n```\nmake install\n```\n\nEND OF DOCUMENT\n",
    ),
    (
        ["```\n# Tool\n\n```bash\nmake in", "stall\n```\n\n*End of document.*\n"],
        "text",
        "# Tool\n\n```bash\nmake install\n```\n\n*End of document.*\n",
    ),
    (['id,notes\n1,"Spoke.', "\n\n(No further content.)", '"\n2,"ok"\n'], "csv", None),
    (['id,notes\n1,"Spoke.\n', "(No further content.)", '"\n2,"ok"\n'], "csv", None),
    (["# Doc\n\n```text\nout.", "\n(No further content.)", "\n```\n\nDone.\n"], "markdown", None),
    (['Story\n\nHe said: "Fine.', " (No further content.)", '"\n\nThe end.\n'], "text", None),
    (["# Form\n\nRemarks: declined to comm", "ent.\n\n(No further content.)\n"], "markdown", None),
    (["## Known issues\n\n", "*No further content.*\n"], "markdown", None),
    (["Minutes\n\nItem 1 closed.\n", "(The document is complete.)\n"], "text", None),
    (
        [
            "Intro.\n\nWe walked to the old mill by the river",
            "We walked very slowly to the old mill by the river and sat.\n",
        ],
        "text",
        "Intro.\n\nWe walked to the old mill by the river and sat.\n",
    ),
    (
        [
            "Intro.\n\nWe walked to the old mill by the river",
            "e walked all the way to the old mill by the river and sat.\n",
        ],
        "text",
        "Intro.\n\nWe walked to the old mill by the river and sat.\n",
    ),
]


# Session 9: three silent cases the eighth session's note left open. A whole reply that
# starts with an interjection and a comma was dropped as chat (the whole reply lost); a
# reply going on with " (continued) …" mid-line was dropped as a preamble; a sign-off
# inside a quoted CSV field (or a code block) was dropped with the row after it.
SESSION_9: list[tuple[list[str], str, str | None]] = [
    (
        [
            "# Story\n\nThe launch was set for Monday. ",
            "Of course, nothing went as planned. The rocket sat on the pad for a week.\n",
        ],
        "markdown",
        None,
    ),
    (["The launch was set for Monday. ", "Of course, nothing went as planned.\n"], "text", None),
    (["The story", " (continued) picks up here.\n"], "text", None),
    (["# Notes\n\nThe list of items", " (continued) is below.\n\n- one\n"], "markdown", None),
    (
        ['id,note\n1,"Thanks for', ' reading.\n\nLet me know if you need anything else!"\n2,ok\n'],
        "csv",
        None,
    ),
    (
        [
            'id,note\n1,"Thanks for',
            " reading.\n\nLet me know if you need anything else!",
            '"\n2,ok\n',
        ],
        "csv",
        None,
    ),
    (
        [
            "# Doc\n\n```text\nThanks for",
            " reading.\n\nLet me know if you need anything else!",
            "\n```\n",
        ],
        "markdown",
        None,
    ),
]
#: Of those, the ones with one reading: exact, no doubt.
SESSION_9_CLEAR = [case for case in SESSION_9 if "Of course" not in case[0][1]]


def test_line_breaks_in_quoted_fields_of_no_known_habit_are_doubted() -> None:
    """A CRLF CSV whose reply writes LF only, where the document shows no line break inside
    a quoted field yet: CRLF or LF there is a guess (see the cases above that it shows)."""
    result = stitch(['id,note\r\n1,ab\r\n2,"c', 'd\ne"\n3,f\n'], "csv")
    assert result.doubts, result.text


def test_a_note_that_the_document_was_complete_glued_mid_line_is_doubted() -> None:
    result = stitch(
        ["# Notes\n\n1. Ignored at the end of the meeting", "The document above is complete."],
        "markdown",
    )
    assert result.doubts, result.text


@pytest.mark.parametrize(
    ("fragments", "fmt", "expected"), [*REVIEW_8, *REVIEW_8B, *REVIEW_8C, *SESSION_9]
)
def test_review_findings_are_exact_or_flagged(
    fragments: list[str], fmt: str, expected: str | None
) -> None:
    right = "".join(fragments) if expected is None else expected
    result = stitch(fragments, fmt)
    if result.ok and not result.doubts:
        if fmt == "json":
            assert result.complete is not None
            assert json.loads(result.complete) == json.loads(right)
        else:
            assert result.text.rstrip("\n") == right.rstrip("\n")


@pytest.mark.parametrize(("fragments", "fmt", "expected"), SESSION_9_CLEAR)
def test_text_that_only_looks_like_a_wrapper_inside_a_line_or_field_is_kept(
    fragments: list[str], fmt: str, expected: str | None
) -> None:
    result = stitch(fragments, fmt)
    assert result.ok and not result.doubts, result.warnings
    assert result.text == "".join(fragments)
