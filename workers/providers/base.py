"""What every provider adapter offers: one model call over httpx, no retries.

Errors (every adapter raises only these; messages never contain an API key)::

    ProviderError
    ├── TransientError      429, 5xx (529), 408/409/425, timeouts, connection resets,
    │                       a 2xx body cut short: retry later
    │                       (``retry_after``: seconds the server asked for, if it did)
    └── FatalError          400, 401, 403, 404, 422, a 429 that means "out of quota",
        │                   a reply that is not the provider's JSON, a bad profile
        ├── PrefillUnsupported   the model refuses an assistant prefill: call again
        │                        without one (plain "continue" turn + overlap merging)
        └── PreviousResponseNotFound   the provider no longer holds the previous response:
                                       call again with the whole conversation

A 2xx reply whose body starts as JSON but does not parse (cut short: providers do send
truncated bodies under load) is transient; a body that is not JSON at all, or JSON of the
wrong shape, is fatal (a wrong ``base_url`` answers the same way every time). A reply of
the right shape without a finish reason is no error either: ``finish_reason`` None.

A reply the provider cut, filtered or left incomplete is not an error: it is a
``ProviderResponse`` whose ``finish_reason`` says so (``docs/providers.md``, "Finish reasons").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Protocol

from core.models import Message, ProviderResponse
from workers.providers.profiles import Profile


@dataclass(frozen=True)
class CallRequest:
    """One model call.

    ``prefill``: text the reply should continue exactly (an assistant prefill), for
    adapters whose provider supports it; an adapter that used it returns ``prefill +
    generated text`` as the reply's text, so the merge sees an ordinary repeat.
    ``previous_response_id``: the last reply's id, for stateful continuation
    (``openai-responses``): the adapter then sends only the last user message; the
    other adapters ignore it.
    """

    messages: list[Message]
    max_output_tokens: int
    model: str | None = None
    prefill: str | None = None
    previous_response_id: str | None = None


class Provider(Protocol):
    """An adapter bound to one profile."""

    profile: Profile

    def complete(self, request: CallRequest) -> ProviderResponse:
        """Make one call; raise ``ProviderError`` when there is no reply."""
        ...

    def close(self) -> None:
        """Release the HTTP client."""
        ...


def uses_prefill(profile: Profile, request: CallRequest) -> bool:
    """Whether the adapter sends ``request.prefill`` as an assistant prefill, and so
    returns it (trailing whitespace stripped) in front of the generated text."""
    if not (profile.prefill and request.prefill and request.prefill.rstrip()):
        return False
    if profile.kind == "anthropic":
        return True
    return profile.kind in ("openai", "sim") and profile.continue_final_message


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date (RFC 9110).

    None when absent or unreadable; a date in the past gives 0.
    """
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_after_from(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms`` (milliseconds, sent by OpenAI
    and Azure beside ``retry-after``, and finer) when it is readable, else ``Retry-After``.
    """
    try:
        seconds = float(headers.get("retry-after-ms", "")) / 1000
    except ValueError:
        seconds = math.nan
    if math.isfinite(seconds):
        return max(0.0, seconds)
    return parse_retry_after(headers.get("retry-after"))


# --- What the HTTP adapters share ---------------------------------------------------------
