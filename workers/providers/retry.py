"""Retrying transient provider errors: the backoff maths (pure) and a blocking loop.

``backoff_delay`` is exponential backoff with full jitter: a uniform draw in ``[0,
min(cap, base * 2**attempt)]``. A server's ``Retry-After`` is a floor: the delay is never
shorter than what the server asked for, even above ``cap``. A delay above ``cap`` therefore
means "the server wants more patience than this profile allows": ``call_with_retries``
then gives up at once, re-raising the ``TransientError`` (with its ``retry_after``), so
the caller can fall back to the next profile or schedule the call later without holding a
worker slot, rather than block past the profile's cap or retry early into another 429.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable

from core.models import ProviderResponse
from workers.providers.base import CallRequest, Provider, TransientError

log = logging.getLogger("continuum.providers")

# Beyond 2**60 the product overflows nothing but means nothing either: the cap rules.
_MAX_EXPONENT = 60


def backoff_delay(
    attempt: int, *, base: float, cap: float, retry_after: float | None, rng: random.Random
) -> float:
    """Seconds to wait before retry number ``attempt`` (0 for the first retry)."""
    ceiling = min(cap, base * 2.0 ** min(max(attempt, 0), _MAX_EXPONENT))
    delay = rng.uniform(0.0, ceiling)
    if retry_after is not None and math.isfinite(retry_after):
        delay = max(delay, retry_after)
    return delay


def call_with_retries(
    provider: Provider,
    request: CallRequest,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> ProviderResponse:
    """``provider.complete(request)``, retrying ``TransientError`` up to the profile's
    ``max_retries`` times; re-raises the last error (or at once when the server asks for a
    wait longer than ``backoff_cap_s``). Other errors pass through untouched.
    """
    profile = provider.profile
    rng = rng or random.Random()
    attempt = 0
    while True:
        try:
            return provider.complete(request)
        except TransientError as exc:
            if attempt >= profile.max_retries:
                raise
            delay = backoff_delay(
                attempt,
                base=profile.backoff_base_s,
                cap=profile.backoff_cap_s,
                retry_after=exc.retry_after,
                rng=rng,
            )
            if delay > profile.backoff_cap_s:
                log.warning(
                    "%s asks to wait %.1f s, more than the cap of %.1f s: giving up on it",
                    profile.name,
                    delay,
                    profile.backoff_cap_s,
                )
                raise
            log.warning("retry %d/%d in %.2f s: %s", attempt + 1, profile.max_retries, delay, exc)
            sleep(delay)
            attempt += 1
