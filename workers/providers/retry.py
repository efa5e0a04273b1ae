"""Retrying transient provider errors: a blocking loop over the pure rules of ``core.policy``.

``backoff_delay`` (``core.policy``) is exponential backoff with full jitter: a uniform draw
in ``[0, min(cap, base * 2**attempt)]``. A server's ``Retry-After`` is a floor: the delay is
never shorter than what the server asked for, even above ``cap``. A delay above ``cap``
therefore means "the server wants more patience than this profile allows":
``call_with_retries`` then gives up at once, re-raising the ``TransientError`` (with its
``retry_after``), so the caller can fall back to the next profile or schedule the call
later without holding a worker slot, rather than block past the profile's cap or retry
early into another 429. A worker also says how many deferrals its iteration has used: a
wait too long to sleep in its slot is then returned as a ``Defer`` (``provider_wait``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from core.models import ProviderResponse
from core.policy import Defer, GiveUp, backoff_delay, provider_wait
from workers.errors import TransientError
from workers.providers.base import CallRequest, Provider

__all__ = ["backoff_delay", "call_with_retries"]

log = logging.getLogger("continuum.providers")


def call_with_retries(
    provider: Provider,
    request: CallRequest,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    deferrals: int | None = None,
) -> ProviderResponse | Defer:
    """``provider.complete(request)``, retrying ``TransientError`` up to the profile's
    ``max_retries`` times; re-raises the last error (or at once when the server asks for a
    wait longer than ``backoff_cap_s``). Other errors pass through untouched. With
    ``deferrals`` (a worker's count for its iteration), a long wait is returned as a
    ``Defer`` instead of slept, or raises ``TransientError`` once they are used up.
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
            wait = provider_wait(delay, deferrals)
            if isinstance(wait, Defer):
                return wait
            if isinstance(wait, GiveUp):
                raise TransientError(wait.reason) from exc
            log.warning("retry %d/%d in %.2f s: %s", attempt + 1, profile.max_retries, delay, exc)
            sleep(wait.seconds)
            attempt += 1
