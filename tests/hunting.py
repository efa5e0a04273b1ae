"""Hypothesis settings for the property tests: repeatable by default, a hunt on demand.

By default ``profile`` gives derandomized settings, so CI draws the same examples on every
run. With ``CONTINUUM_HUNT=N`` in the environment it gives random seeds, ``N`` times the
examples and no example database: each run then draws examples no earlier run has tried
(``CONTINUUM_HUNT=20 uv run pytest tests/unit/test_seam_corpus.py``). A failure prints its
minimal input and the ``@reproduce_failure`` line to replay it.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings

HUNT = "CONTINUUM_HUNT"


def hunt_factor() -> int:
    """``N`` from ``CONTINUUM_HUNT`` (0 when unset or empty: no hunt)."""
    raw = os.environ.get(HUNT, "").strip()
    if not raw:
        return 0
    factor = int(raw)
    if factor < 1:
        raise ValueError(f"{HUNT} must be a positive number of rounds, not {raw!r}")
    return factor


def profile(examples: int, **kw: Any) -> settings:
    """``examples`` derandomized examples with the other settings ``kw``; a hunt when asked."""
    factor = hunt_factor()
    if not factor:
        return settings(max_examples=examples, derandomize=True, **kw)
    kw["database"] = None
    return settings(max_examples=examples * factor, derandomize=False, **kw)
