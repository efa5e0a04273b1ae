"""The seam corpus against ``stitch``: no trial may be silent.

Each trial (``sim.seam_trials``) is a true document cut into fragments the way real models
send them (``sim.seams`` lists the behaviours, the right document for each, and the rule that
labels a trial ambiguous). A merge result is exact (ok, no doubt, right text), flagged (not
ok, or doubts: honest whatever the text) or silent (ok, no doubt, wrong text): the last is the
bug. Seeds come from hypothesis (derandomized, no shrinking: a seed has no smaller form worth
finding; ``CONTINUUM_HUNT=N`` draws fresh ones, N times as many: ``tests/hunting.py``); a
failure names the seed, and ``make_trial(fmt, [behaviour], random.Random(seed))``
gives the trial back. The generator's own invariants are tested first.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core import stitch
from sim.seam_trials import (
    FORMATS,
    Trial,
    classify,
    explain,
    make_multi_trial,
    make_trial,
    usable,
)
from sim.seam_truth import label_seam, overlaps, valid
from sim.seams import BEHAVIOURS, Behaviour, continue_reply
from tests import hunting

CASES = [(fmt, b) for fmt in FORMATS for b in usable(fmt)]
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def profile(examples: int) -> settings:
    return hunting.profile(
        examples,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow],
    )


def assert_not_silent(trial: Trial, replay: str) -> None:
    result = stitch(list(trial.fragments), trial.fmt)
    outcome = classify(trial, result.text, result.ok, result.doubts, result.format)
    message = explain(trial, result.text, result.warnings, result.format)
    assert outcome.kind != "silent", f"silent trial; replay: {replay}\n{message}"


# the generator ---------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "behaviour"), CASES)
def test_trials_are_deterministic_and_valid(fmt: str, behaviour: Behaviour) -> None:
    for seed in range(15):
        trial = make_trial(fmt, [behaviour], random.Random(seed))
        assert trial == make_trial(fmt, [behaviour], random.Random(seed))
        assert valid(trial.expected, fmt)
        assert trial.unambiguous == (not trial.reasons)
        assert trial.expected in trial.accepted
        replies = zip(trial.fragments[1:], trial.behaviours, strict=True)
        assert all(f.strip() for f, b in replies if b != "blank")


@pytest.mark.parametrize(("fmt", "behaviour"), CASES)
def test_the_true_reading_is_one_a_reader_would_weigh(fmt: str, behaviour: Behaviour) -> None:
    """The labeller only weighs readings against the true one: the truth must be among them,
    and the reply's parts must add up to what was sent."""
    for seed in range(15):
        rng = random.Random(seed)
        doc = make_trial(fmt, ["exact"], rng).expected
        cut = rng.randint(1, len(doc) - 1)
        reply = continue_reply(doc, cut, len(doc), behaviour, fmt=fmt, rng=rng)
        assert reply.text == reply.prefix + reply.content + reply.suffix
        if behaviour == "blank":
            assert reply.adds == "" and not reply.text.strip()
            continue
        if "rewritten" not in reply.variant:  # a rewritten restart repeats nothing verbatim
            assert reply.overlap in overlaps(doc[:cut], reply.content, fmt)
        truth = doc[:cut] + reply.adds
        assert valid(truth, fmt) or behaviour == "syntax_slip"
        label_seam(fmt, doc[:cut], reply, "", 0)


def test_behaviours_cover_the_brief() -> None:
    assert len(BEHAVIOURS) == 12
    assert all(usable(fmt) for fmt in FORMATS)


def test_a_short_coincidence_is_ambiguous() -> None:
    """ "bookke" + "eper": "bookkeeper" (exact) or "bookkeper" (one character re-stated)."""
    doc = "The bookkeeper left.\n"
    cut = doc.index("eper")
    reply = continue_reply(doc, cut, len(doc), "exact", fmt="text", rng=random.Random(0))
    assert label_seam("text", doc[:cut], reply, "", 0).reasons


def test_a_long_repeat_of_prose_is_not_ambiguous() -> None:
    doc = "# T\n\nSoylent was founded in 2019. It grew.\n"
    cut = doc.index("2019")
    reply = continue_reply(doc, cut, len(doc), "restart", fmt="markdown", rng=random.Random(0))
    assert reply.variant == "restart"  # as said (Random(1) now draws a rewritten one)
    assert not label_seam("markdown", doc[:cut], reply, "", 0).reasons


def test_a_wrong_table_is_not_a_reading() -> None:
    """A delimiter row needs its header's cell count, so "|---:|---:|" re-states nothing."""
    doc = "| A | B | C | D |\n|---:|---:|---:|---:|\n| 1 | 2 | 3 | 4 |\n"
    cut = len("| A | B | C | D |\n|---:|---:")
    reply = continue_reply(doc, cut, len(doc), "exact", fmt="markdown", rng=random.Random(2))
    assert not label_seam("markdown", doc[:cut], reply, "", 0).reasons


def test_json_white_space_readings_are_accepted_not_ambiguous() -> None:
    doc = '{\n    "d": {\n        "w": 1,\n        "h": 2\n    }\n}'
    cut = doc.index('"w"') - 4  # mid-indentation
    reply = continue_reply(doc, cut, len(doc), "prose_exact", fmt="json", rng=random.Random(3))
    label = label_seam("json", doc[:cut], reply, "", 0)
    assert not label.reasons
    assert all(valid(a, "json") and a != doc for a in label.accepted)


# the merger ------------------------------------------------------------------------------


def two_fragments(fmt: str, behaviour: Behaviour, seed: int, auto: bool = False) -> None:
    trial = make_trial(fmt, [behaviour], random.Random(seed), auto=auto)
    replay = f"make_trial({fmt!r}, [{behaviour!r}], random.Random({seed}), auto={auto})"
    assert_not_silent(trial, replay)


def many_fragments(fmt: str, seed: int, fragments: int) -> None:
    rng = random.Random(seed)
    true_fmt = rng.choice(FORMATS) if fmt == "auto" else fmt
    trial = make_multi_trial(true_fmt, rng, fragments, auto=fmt == "auto")
    replay = f"rng = random.Random({seed}); make_multi_trial({true_fmt!r}, rng, {fragments}"
    replay += ", auto=True) after rng.choice(FORMATS)" if fmt == "auto" else ")"
    assert_not_silent(trial, replay)


@pytest.mark.parametrize(("fmt", "behaviour"), CASES)
@profile(100)
@given(seed=SEEDS)
def test_two_fragments_are_never_silent(fmt: str, behaviour: Behaviour, seed: int) -> None:
    two_fragments(fmt, behaviour, seed)


@pytest.mark.parametrize("fmt", FORMATS)
@profile(150)
@given(seed=SEEDS, pick=st.integers(0, 100))
def test_detected_format_is_never_silent(fmt: str, seed: int, pick: int) -> None:
    """``auto``: the first reply starts with prose (and often a fence)."""
    two_fragments(fmt, usable(fmt)[pick % len(usable(fmt))], seed, auto=True)


@pytest.mark.parametrize("fmt", [*FORMATS, "auto"])
@profile(150)
@given(seed=SEEDS, fragments=st.integers(3, 8))
def test_many_fragments_are_never_silent(fmt: str, seed: int, fragments: int) -> None:
    many_fragments(fmt, seed, fragments)


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "behaviour"), CASES)
@profile(400)
@given(seed=SEEDS)
def test_two_fragments_are_never_silent_at_length(
    fmt: str, behaviour: Behaviour, seed: int
) -> None:
    two_fragments(fmt, behaviour, seed)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", [*FORMATS, "auto"])
@profile(600)
@given(seed=SEEDS, fragments=st.integers(3, 8))
def test_many_fragments_are_never_silent_at_length(fmt: str, seed: int, fragments: int) -> None:
    many_fragments(fmt, seed, fragments)
