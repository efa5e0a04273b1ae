"""The model's own progress estimate, and stall detection (``docs/engine.md``, "One iteration").

Each continuation prompt asks the model to put a marker line ``[[progress: NN%]]`` (the
share of the whole document delivered before this reply) outside the payload. The prompt
asks for it on the first line: a reply cut by the output limit loses its last line, so a
marker requested at the end would only ever arrive with the final reply. A marker on the
first or the last line is stripped before merging.

A job stalls when, for ``stall_limit`` consecutive iterations, the reported progress goes
down or moves by less than one point; without markers, when no new text is merged.

"Moves by less than one point" is judged against what one point is worth: the model's
estimate implies the document's size (``delivered * 100 / percent``), and an iteration
that did not move the estimate counts only once a point's worth of text has been merged
since the estimate last moved. Otherwise an honest model writing a long document (more
than ~100 replies, each under one percent of the whole) would be declared stalled while
it makes steady progress; a model that loops, writing on without getting any closer to
the end, is still stopped after ``stall_limit`` points' worth of text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER_TEMPLATE = "[[progress: NN%]]"
# Every quantifier is possessive (``*+``): no run of blanks or digits is ever given back, so
# a line that only starts like a marker ("[[progress: 5" and 100 000 blanks) fails in linear
# time. Backtracking would not find a match anyway: what follows each run can never be part
# of it (``\s*+%?\s*+`` was ``\s*%?\s*``, which tried every split of a run of blanks).
_MARKER = re.compile(
    r"[ \t]*+\[\[\s*+progress\s*+:\s*+(\d{1,3}+)(?:\.\d++)?+\s*+%?+\s*+\]\][ \t]*+"
)


def split_marker(text: str) -> tuple[str, int | None]:
    """Remove a progress marker from the first or last line; return text and percent."""
    first_end = text.find("\n")
    first = text if first_end < 0 else text[:first_end]
    m = _MARKER.fullmatch(first.removesuffix("\r"))
    if m is not None:
        rest = "" if first_end < 0 else text[first_end + 1 :]
        return rest, min(int(m.group(1)), 100)
    last_start = text.rfind("\n")
    if last_start >= 0:
        m = _MARKER.fullmatch(text[last_start + 1 :].rstrip("\r"))
        if m is not None:
            return text[:last_start], min(int(m.group(1)), 100)
    return text, None


@dataclass(frozen=True, slots=True)
class Stall:
    """Progress bookkeeping carried between iterations.

    A marker reports the share delivered *before* its reply, so a reply's own text shows
    in the next reply's marker. An iteration counts towards a stall when its reply merged
    nothing, when the estimate went down, or when the estimate stayed flat although at
    least a point's worth of text had been merged before the reply (``quiet_chars``: text
    merged while the estimate did not move; ``pending_chars``: the previous reply's text,
    not yet reflected in any marker). An iteration whose estimate moved, or that brought
    text after a reply that brought none, resets the count; a flat estimate with less than
    a point's worth of text leaves it as it is.
    """

    last_percent: int | None = None
    count: int = 0
    quiet_chars: int = 0
    pending_chars: int = 0

    def update(self, percent: int | None, appended: int, delivered: int) -> Stall:
        """Account for one iteration that appended ``appended`` characters to the
        ``delivered`` characters received before it, and reported ``percent``."""
        last, quiet = self.last_percent, self.quiet_chars
        if appended <= 0 or (percent is not None and last is not None and percent < last):
            count, quiet = self.count + 1, 0
        elif percent is None:
            count = 0  # new text, and no estimate to doubt it
        elif last is None or percent - last >= 1 or not self.pending_chars:
            # New text, and an estimate that moved (or could not have: the previous reply
            # merged nothing, so the marker had nothing new to count): progress.
            count, quiet = 0, 0
        else:
            quiet += self.pending_chars
            # "NN%" means at least NN and less than NN+1 percent: at 0%, a point is worth
            # at least everything delivered so far.
            if quiet >= delivered / max(percent, 1):
                count, quiet = self.count + 1, 0
            else:
                count = self.count
        return Stall(last if percent is None else percent, count, quiet, appended)

    def stalled(self, limit: int) -> bool:
        return self.count >= limit

    def as_tuple(self) -> tuple[int | None, int, int, int]:
        return self.last_percent, self.count, self.quiet_chars, self.pending_chars
