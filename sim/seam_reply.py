"""One reply to "continue": its parts, what it re-states, and what the document gains."""

from __future__ import annotations

import random
from dataclasses import dataclass

from sim.seam_json import Fix

__all__ = ["Fix", "Reply", "apply_fixes", "repeat_length"]


@dataclass(frozen=True)
class Reply:
    """One reply: ``text == prefix + content + suffix``; the first ``overlap`` characters of
    the content re-state delivered text; ``fixes`` (in content offsets) turn the rest into
    what the document gains; ``doc[cut:end]`` is the true new content it carries."""

    text: str
    end: int
    prefix: str = ""
    suffix: str = ""
    overlap: int = 0
    fixes: tuple[Fix, ...] = ()
    variant: str = ""

    @property
    def content(self) -> str:
        return self.text[len(self.prefix) : len(self.text) - len(self.suffix)]

    @property
    def adds(self) -> str:
        return apply_fixes(self.content, self.overlap, self.fixes)


def apply_fixes(content: str, since: int, fixes: tuple[Fix, ...]) -> str:
    """``content[since:]`` with the fixes that lie wholly inside it applied."""
    out, at = [], since
    for start, stop, new in sorted(fixes):
        if start < since:
            continue
        out += [content[at:start], new]
        at = stop
    return "".join(out) + content[at:]


def repeat_length(doc: str, cut: int, rng: random.Random) -> int:
    """1-300 characters back, often short, starting anywhere or at a line or word start."""
    limit = min(300, cut)
    if limit < 1:
        return 0
    roll = rng.random()
    k = rng.randint(1, min(6, limit)) if roll < 0.25 else rng.randint(1, limit)
    start, snap = cut - k, rng.random()
    if snap < 0.3:
        start = doc.rfind("\n", 0, start) + 1
    elif snap < 0.5:
        while start > 0 and doc[start - 1].isalnum():
            start -= 1
    return cut - start if cut - start <= 300 else k
