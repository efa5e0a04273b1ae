"""Candidate splices: every repeat found, longest first, in bounded time."""

from __future__ import annotations

import pytest

from core.overlap import MIN_OVERLAP, Splice, exact_overlaps, preamble_starts, splice_candidates


@pytest.mark.parametrize(
    ("tail", "fragment", "expected"),
    [
        ("hello world", "world peace", [5]),
        ("abcabc", "abcabcX", [6, 3]),
        ("aaaa", "aaX", [2, 1]),
        ("xyz", "abc", []),
        ("", "abc", []),
    ],
)
def test_exact_overlaps_longest_first(tail: str, fragment: str, expected: list[int]) -> None:
    """Every k with fragment[:k] == tail[-k:], from the longest down."""
    assert list(exact_overlaps(tail, fragment)) == expected


def test_periodic_tail_finds_both_the_far_and_the_near_repeat() -> None:
    """Thousands of anchor hits: the search still reaches the repeat at the near end."""
    tail = "row\n" * 5000
    fragment = "row\n" * 50 + "new"
    found = list(exact_overlaps(tail, fragment))
    assert found[0] == 200 and found == sorted(found, reverse=True)
    far = list(exact_overlaps("head\n" + "ab" * 3000, "head\n" + "ab" * 3000 + "more"))
    assert far[0] == 5 + 6000


def test_preamble_starts_are_the_first_line_starts() -> None:
    assert preamble_starts("Here you go:\n```json\n{...") == [13, 21]
    assert preamble_starts("no newline") == []


def test_candidates_order_long_then_short_then_exact() -> None:
    """Long repeats (>= MIN_OVERLAP) first, then short ones, the exact continuation last."""
    tail = "The quick brown fox jumps"
    fragment = "Sure:\nbrown fox jumps over"
    candidates = splice_candidates(tail, fragment)
    assert candidates[0] == Splice(overlap=len("brown fox jumps"), prose=6)
    assert candidates[-1] == Splice(overlap=0)
    assert all(c.overlap >= MIN_OVERLAP for c in candidates[:-1] if c.prose)
