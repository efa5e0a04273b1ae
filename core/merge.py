"""The result every format's merger returns for one fragment.

Mergers never rewrite what was accumulated: a merge is the text to *append* (after the
overlap and any preamble were dropped), so the accumulated output can live anywhere
(a Redis string, a file) and grow by appends only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.overlap import Splice


@dataclass(frozen=True, slots=True)
class Merge:
    """Outcome of merging one fragment.

    ``ok`` False is a merge failure (no safe splice exists); ``append`` is then empty and
    ``error`` says why. Warnings describe what was dropped or repaired; ``doubts`` (also
    among the warnings) name a seam that had more than one plausible reading: the merge
    took one, and the result may not be what the model meant.
    """

    ok: bool
    append: str = ""
    splice: Splice | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None
    doubts: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def failed(cls, error: str, *warnings: str) -> Merge:
        return cls(ok=False, error=error, warnings=tuple(warnings))


def describe_splice(splice: Splice, fragment: str) -> list[str]:
    """Warnings for what a splice dropped from the fragment."""
    out: list[str] = []
    if splice.prose:
        out.append(f"dropped a {splice.prose}-character preamble: {fragment[: splice.prose]!r:.80}")
    return out
