"""Reproducers from the seam issue: each merge must be exact or flagged, never silent.

``right`` lists the documents that count as right (usually one). Where a case has a single
right answer, the comment says why that document is the one; where it is ambiguous, flagging
it is the honest outcome and ``right`` is what an exact answer must be.
"""

from __future__ import annotations

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
    # "eno" is no word: the reply re-sends " eno" and goes on ("enough").
    Case(
        "text-cut-word-re-sent",
        "text",
        ["Minutes\n\n1. Sure eno", " enough, the bridge arrived fine.\n"],
        ("Minutes\n\n1. Sure enough, the bridge arrived fine.\n",),
    ),
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
]


@pytest.mark.parametrize("case", CLEAR, ids=[c.name for c in CLEAR])
def test_clear_seam_is_exact_without_doubt(case: Case) -> None:
    result = stitch(case.fragments, case.fmt)
    seam_doubts = [d for d in result.doubts if "ambiguous end" not in d]
    assert result.ok and not seam_doubts, seam_doubts
    assert result.text == case.right[0]
