"""A per-provider rate limit shared by every worker: a token bucket in Redis.

One bucket per profile (``{prefix}bucket:{profile}``), a hash updated by one Lua script
(``workers/lua/bucket.lua``, run by the job store: ``JobStore.take_tokens``), so every
worker of every host draws from the same tokens and a take is atomic. The clock is
Redis's own (``TIME`` inside the script), never a worker's, so skewed hosts cannot
over-grant. The bucket holds up to ``burst`` tokens and refills at
``rate_per_s``; a bucket never used, or idle long enough to expire, is full.

``take`` never sleeps: it returns how long to wait when no token is free, and takes
nothing then. The caller decides what to do with the wait - typically re-enqueue the
iteration with that countdown - so a rate-limited call does not hold a worker slot.
"""

from __future__ import annotations

import math

from workers.store import JobStore


class TokenBucket:
    """Shared token buckets, one per profile name, in ``store``."""

    def __init__(self, store: JobStore) -> None:
        self.store = store

    def take(self, profile: str, rate_per_s: float, burst: int = 1, cost: int = 1) -> float:
        """Take ``cost`` tokens from ``profile``'s bucket (``burst`` tokens at most, refilled
        at ``rate_per_s``). 0.0 when they were taken, else the seconds until they will be
        available; nothing is taken then."""
        if not profile:
            raise ValueError("profile must be a non-empty name")
        if isinstance(rate_per_s, bool) or not isinstance(rate_per_s, int | float):
            raise ValueError(f"rate_per_s must be a number, got {rate_per_s!r}")
        if not (math.isfinite(rate_per_s) and rate_per_s > 0):
            raise ValueError(f"rate_per_s must be a finite number > 0, got {rate_per_s!r}")
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ValueError(f"burst must be an integer >= 1, got {burst!r}")
        if isinstance(cost, bool) or not isinstance(cost, int) or not 1 <= cost <= burst:
            raise ValueError(f"cost must be an integer from 1 to burst ({burst}), got {cost!r}")
        return self.store.take_tokens(profile, rate_per_s, burst, cost) / 1000.0
