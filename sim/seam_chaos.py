"""The seam knobs in the simulated model: which behaviour a continuation call shows, the
reply ``sim.seams.continue_reply`` builds for it within the output limit, and where a
continuation starts when the delivered text is not the target's own.

A seam reply continues the target from the cut (where the previous answer stopped). It
holds at most ``budget`` characters (the output limit), repeat and wrapper included, and
carries as much new content as fits, at least a quarter of the limit: a reply whose repeat
or wrapper leaves less room is drawn again (a few times; then it is sent over the limit).
A restart that does not reach the cut within the limit is cut there and carries nothing
new, as a model that starts again is. A reply whose right reading is not the target (a
JSON slip that changes a value: ``[1, 2`` then ``3]`` for ``[1, 2, 3]``) is drawn again:
the target stays the document the job must rebuild.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from typing import cast

from core.json_scan import JsonScanner
from core.prompts import json_path
from sim import conversation
from sim.options import SEAM_KNOBS, SimOptions
from sim.seam_json import same_tokens
from sim.seams import Behaviour, Reply, applies, continue_reply

#: Draws of a reply that does not read back as the target or does not fit the limit.
REDRAWS = 6
#: Suffixes of the repeat (in visible characters) tried when the whole one is not found.
SUFFIXES = (128, 64, 32, 16)
#: Occurrences of a repeat weighed to place a cut.
MAX_ENDS = 4096
_CUT_PATH = re.compile(r"cut inside (\$[^\n]*?)(?:, your last estimate: \d+%)?\.?$", re.MULTILINE)


def draw(options: SimOptions, fmt: str, rng: random.Random) -> Behaviour | None:
    """The behaviour of this continuation call, or None (a knob fires with its chance; of
    several that fire, one is taken at random)."""
    fired = [
        cast(Behaviour, behaviour)
        for knob, behaviour in SEAM_KNOBS.items()
        if rng.random() < getattr(options, knob)
    ]
    fired = [behaviour for behaviour in fired if applies(behaviour, fmt)]
    return rng.choice(fired) if fired else None


def reply(
    doc: str, cut: int, behaviour: Behaviour, *, fmt: str, budget: int, rng: random.Random
) -> tuple[str, bool]:
    """The reply's text continuing ``doc[:cut]`` (``0 < cut < len(doc)``), and whether it
    ended the document (then its finish reason is ``stop``)."""
    over: tuple[str, bool] | None = None
    for _ in range(REDRAWS):
        made = _fitted(doc, cut, behaviour, fmt=fmt, budget=budget, seed=rng.getrandbits(64))
        if made is not None and len(made[0]) <= budget:
            return made
        over = over or made
    if over is not None:
        return over
    made = _fitted(doc, cut, "exact", fmt=fmt, budget=budget, seed=0)
    assert made is not None
    return made


def _fitted(
    doc: str, cut: int, behaviour: Behaviour, *, fmt: str, budget: int, seed: int
) -> tuple[str, bool] | None:
    """The reply for one seed, its new content cut to fit ``budget`` (but no shorter than
    a quarter of it); None when its right reading is not the target."""
    least = min(len(doc) - cut, max(1, budget // 4))
    new = min(len(doc) - cut, budget)
    made = continue_reply(doc, cut, cut + new, behaviour, fmt=fmt, rng=random.Random(seed))
    for _ in range(4):
        room = budget - (len(made.text) - new)  # what the new content may take
        if len(made.text) <= budget or room < least:
            break
        new = min(new - 1, room)
        made = continue_reply(doc, cut, cut + new, behaviour, fmt=fmt, rng=random.Random(seed))
    if not _faithful(doc, cut, made, fmt):
        return None
    if behaviour == "restart" and len(made.text) > budget:
        return made.text[:budget], False  # started again and cut before the cut: nothing new
    return made.text, made.end == len(doc)


def _faithful(doc: str, cut: int, made: Reply, fmt: str) -> bool:
    """Whether the reply's right reading is the target (JSON: the same tokens)."""
    right = doc[:cut] + made.adds + doc[made.end :]
    return right == doc or (fmt == "json" and same_tokens(right, doc))


@lru_cache(maxsize=8)
def _visible(text: str) -> tuple[str, tuple[int, ...]]:
    """``text`` without white space, and where each of its characters is in ``text``."""
    where = tuple(i for i, c in enumerate(text) if not c.isspace())
    return "".join(text[i] for i in where), where


def _finds(text: str, needle: str) -> list[int]:
    """Where ``needle`` ends in ``text``, each occurrence (at most ``MAX_ENDS``)."""
    ends: list[int] = []
    at = text.find(needle)
    while at >= 0 and len(ends) < MAX_ENDS:
        ends.append(at + len(needle))
        at = text.find(needle, at + 1)
    return ends


def _loose(text: str, repeat: str, size: int) -> list[int]:
    """Where the last ``size`` visible characters of ``repeat`` end in ``text`` when white
    space is ignored, with the white space ``repeat`` ends with (as far as ``text`` has)."""
    squeezed, where = _visible(text)
    want = "".join(repeat.split())[-size:]
    trailing = len(repeat) - len(repeat.rstrip())
    ends = []
    for end in _finds(squeezed, want) if want else []:
        at, left = where[end - 1] + 1, trailing
        while left and at < len(text) and text[at].isspace():
            at, left = at + 1, left - 1
        ends.append(at)
    return ends


def _on_path(text: str, ends: list[int], path: str) -> list[int]:
    """The ends at which the JSON path of ``text`` is ``path`` (as the engine words it)."""
    scanner, fed, out = JsonScanner(), 0, []
    for end in sorted(ends):
        scanner.feed(text[fed:end])
        fed = end
        if scanner.error is None and json_path(scanner) == path:
            out.append(end)
    return out


def cut_path(message: str) -> str | None:
    """The JSON path of the cut a continuation request states (``cut inside $.a[3]``)."""
    found = _CUT_PATH.findall(message)
    return found[-1] if found else None


def locate(text: str, repeat: str, expected: int | None, path: str | None) -> int | None:
    """Where the continuation starts in ``text``: where ``repeat`` ends, at the delivered
    count ``expected`` when it fits there. Else, of its occurrences (exact; else with white
    space ignored, as a re-indented or CRLF text shows it; else its last ``SUFFIXES``
    visible characters, since the delivered text may not be the target's own where a seam
    was read another way), those at the JSON ``path`` the request states (a count is off
    after a reply in another layout, and a periodic run repeats the same text), and of
    those the nearest to ``expected`` (the last without one). None when none occurs."""
    if not repeat.strip():
        return conversation.locate(text, repeat, expected)
    if (
        expected is not None
        and len(repeat) <= expected <= len(text)
        and text[expected - len(repeat) : expected] == repeat
    ):
        return expected
    visible = len("".join(repeat.split()))
    sizes = (visible, *(s for s in SUFFIXES if s < visible))
    ends = _finds(text, repeat) or next(filter(None, (_loose(text, repeat, s) for s in sizes)), [])
    if not ends:
        return None
    if path is not None and len(ends) > 1:
        ends = _on_path(text, ends, path) or ends
    if expected is None:
        return ends[-1]
    return min(ends, key=lambda end: abs(end - expected))
