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
        ["Here is the JSON you asked for:\n{\"a\": [1, 2,", " 3]}"],
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
