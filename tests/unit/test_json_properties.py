"""Property: any JSON document, cut anywhere into fragments with any overlap, stitches back.

Fragments are what a model sends: each repeats 0 or 8-300 characters of what came before
(sometimes re-indented, or after a line of prose, or inside a code fence). Some seams are
ambiguous by construction, whatever the algorithm: when another repeat length of 8 or
more characters also matches (periodic text), a zero repeat whose next characters equal
the tail, or a re-indented repeat too short to anchor on. The generator never produces
those seams: it tries the other repeat choices and otherwise moves on to the next cut.
"""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, assume, given
from hypothesis import strategies as st

from core import stitch
from core.overlap import MIN_OVERLAP
from tests.hunting import profile

STRONG = 3 * MIN_OVERLAP  # non-whitespace characters a re-indented repeat must have
_WS = re.compile(r"\s+")


def compact(text: str) -> str:
    return _WS.sub("", text)


def other_reading(acc: str, content: str, repeat: int) -> bool:
    """Does another repeat length (>= MIN_OVERLAP) match at this seam?"""
    top = min(len(content), len(acc))
    exact = any(content[:k] == acc[-k:] for k in range(MIN_OVERLAP, top + 1) if k != repeat)
    if exact:
        return True
    cacc, ccontent = compact(acc), compact(content)
    crepeat = len(compact(content[:repeat]))
    top = min(len(cacc), len(ccontent))
    return any(ccontent[:k] == cacc[-k:] for k in range(STRONG, top + 1) if k != crepeat) or (
        ccontent.startswith(compact(acc[:64]))
        and len(compact(acc[:64])) >= MIN_OVERLAP
        and repeat < len(acc)
    )


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)
    | st.sampled_from(['quote " and backslash \\', "é ü 漢字 🙂", "tab\tnew\nline", "  spaced  "])
)
documents = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=40,
).filter(lambda v: isinstance(v, (dict, list)) and len(json.dumps(v)) >= 40)


@st.composite
def fragmented(draw: st.DrawFn) -> tuple[object, list[str]]:
    value = draw(documents)
    doc = json.dumps(
        value, indent=draw(st.sampled_from([None, 2])), ensure_ascii=draw(st.booleans())
    )
    cuts = sorted(set(draw(st.lists(st.integers(1, len(doc) - 1), min_size=1, max_size=19))))
    fragments = [doc[: cuts[0]]]
    prev = cuts[0]
    last: tuple[str, str, int] | None = None  # the last seam: (acc, content, repeat)
    for cut in [*cuts[1:], len(doc)]:
        acc = doc[:prev]
        wanted = draw(st.sampled_from([0, 1])) and draw(st.integers(MIN_OVERLAP, 300))
        for repeat in dict.fromkeys([min(wanted, prev), 0, min(300, prev)]):
            if 0 < repeat < MIN_OVERLAP:
                continue
            content = doc[prev - repeat : cut]
            if other_reading(acc, content, repeat):
                continue
            break
        else:
            continue  # every reading of this seam is ambiguous: move on to the next cut
        fragment = content
        if not fragment.strip():
            continue  # a blank reply carries nothing (docs/engine.md): the next one has it
        if repeat and draw(st.integers(0, 9)) < 3:
            reindented = re.sub(
                r"\n( *)", lambda m: "\n" + " " * (2 * len(m.group(1)) + 1), content[:repeat]
            )
            if len(compact(reindented)) >= STRONG and not other_reading(
                acc, reindented + doc[prev:cut], -1
            ):
                fragment = reindented + doc[prev:cut]
        if repeat and draw(st.integers(0, 9)) < 2:
            fragment = "Here is the continuation:\n" + fragment
        if repeat and draw(st.integers(0, 9)) < 1:
            fragment = "```json\n" + fragment + ("\n```" if cut == len(doc) else "")
        fragments.append(fragment)
        last = (acc, content, repeat)
        prev = cut
    if prev < len(doc):
        # The last seams were skipped: the last fragment runs to the end. Longer, it may
        # now repeat the text before it in another way too (two equal records in a row):
        # such a document is ambiguous by construction, not a test of the merger.
        if last is not None:
            acc, content, repeat = last
            assume(not other_reading(acc, content + doc[prev:], repeat))
        fragments[-1] = fragments[-1] + doc[prev:]
    return value, fragments


@profile(300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=fragmented())
def test_json_documents_stitch_back_to_equal_values(case: tuple[object, list[str]]) -> None:
    """Stitching the fragments gives a complete document with the original value, or says
    which seam it doubted (periodic data)."""
    value, fragments = case
    assume(len(fragments) >= 2)
    result = stitch(fragments, "json")
    if result.ok and not result.doubts:
        assert json.loads(result.text) == value
        assert result.complete is not None and json.loads(result.complete) == value
