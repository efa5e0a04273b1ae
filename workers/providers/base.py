"""What every provider adapter offers: one model call over httpx, no retries.

Errors (every adapter raises only these; messages never contain an API key)::

    ProviderError
    ├── TransientError      429, 5xx, timeouts, connection resets: retry later
    │                       (``retry_after``: seconds the server asked for, if it did)
    └── FatalError          400, 401, 403, 404, a malformed reply body, a bad profile
        └── PrefillUnsupported   the model refuses an assistant prefill: call again
                                 without one (plain "continue" turn + overlap merging)

A reply the provider cut, filtered or left incomplete is not an error: it is a
``ProviderResponse`` whose ``finish_reason`` says so (SPEC 2.7).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from core.models import Message, ProviderResponse
from workers.providers.profiles import Profile


class ProviderError(Exception):
    """Raised when a model call did not produce a reply."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TransientError(ProviderError):
    """Raised when the call may succeed later (rate limit, server error, timeout)."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class FatalError(ProviderError):
    """Raised when calling again with the same request cannot help."""


class PrefillUnsupported(FatalError):
    """Raised when the model refuses an assistant prefill; call again without one."""


@dataclass(frozen=True)
class CallRequest:
    """One model call.

    ``prefill``: text the reply should continue exactly (an assistant prefill), for
    adapters whose provider supports it; an adapter that used it returns ``prefill +
    generated text`` as the reply's text, so the merge sees an ordinary repeat.
    ``previous_response_id``: the last reply's id, for stateful continuation
    (``openai-responses``): the adapter then sends only the last user message.
    """

    messages: list[Message]
    max_output_tokens: int
    model: str | None = None
    prefill: str | None = None
    previous_response_id: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


class Provider(Protocol):
    """An adapter bound to one profile."""

    profile: Profile

    def complete(self, request: CallRequest) -> ProviderResponse:
        """Make one call; raise ``ProviderError`` when there is no reply."""
        ...

    def close(self) -> None:
        """Release the HTTP client."""
        ...
