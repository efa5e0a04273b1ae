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
``ProviderResponse`` whose ``finish_reason`` says so (SPEC 2.7).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar, Final, Protocol

import httpx

from core.models import FinishReason, Message, ProviderResponse, Usage
from workers.providers.profiles import Profile
from workers.providers.redact import MASK, redact


class ProviderError(Exception):
    """Raised when a model call did not produce a reply."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        # Whoever raises it, the message is scrubbed of the process's secrets.
        super().__init__(redact(message))
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


class PreviousResponseNotFound(FatalError):
    """Raised when the provider no longer holds ``previous_response_id``; call again
    without it, with the whole conversation."""


@dataclass(frozen=True)
class CallRequest:
    """One model call.

    ``prefill``: text the reply should continue exactly (an assistant prefill), for
    adapters whose provider supports it; an adapter that used it returns ``prefill +
    generated text`` as the reply's text, so the merge sees an ordinary repeat.
    ``previous_response_id``: the last reply's id, for stateful continuation
    (``openai-responses``): the adapter then sends only the last user message; the
    other adapters ignore it. ``extra`` is not sent by the HTTP adapters (yet).
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


# --- What the HTTP adapters share ---------------------------------------------------------

log = logging.getLogger("continuum.providers")

CONNECT_TIMEOUT_S: Final = 10.0
# What the official SDKs retry, besides 5xx (Anthropic's 529 "overloaded" included).
_RETRY_STATUSES: Final = frozenset({408, 409, 425, 429})
# A 429 with one of these is an empty wallet, not a rate: waiting cannot help.
_OUT_OF_QUOTA: Final = frozenset(
    {"insufficient_quota", "billing_hard_limit_reached", "enforced_spend_limit_reached"}
)
_ERROR_TEXT_LIMIT: Final = 500


@dataclass(frozen=True)
class ErrorBody:
    """What a provider said in an error reply, whatever its shape."""

    message: str
    type: str | None = None
    code: str | None = None
    param: str | None = None


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def read_error(response: httpx.Response) -> ErrorBody:
    """The error of OpenAI (``{"error": {message, type, param, code}}``), Anthropic
    (``{"type": "error", "error": {type, message, details}}``), vLLM (``{"object": "error",
    message, type, code}``), ``{"error": "text"}``, ``{"detail": …}`` or plain text."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        text = " ".join(response.text.split())
        return ErrorBody(text or response.reason_phrase or "no message")
    error = data.get("error")
    if isinstance(error, str):
        return ErrorBody(error)
    source: dict[str, Any] = error if isinstance(error, dict) else data
    message = source.get("message", data.get("detail"))
    details = source.get("details")
    code = source.get("code")
    if code is None and isinstance(details, dict):
        code = details.get("error_code")
    return ErrorBody(
        str(message if message is not None else data),
        type=_text(source.get("type")),
        code=_text(code),
        param=_text(source.get("param")),
    )


class HttpProvider:
    """An adapter's plumbing: one ``httpx.Client`` for its profile, the key read from the
    environment at each call (never stored), HTTP errors mapped onto the tree above, every
    message redacted."""

    public_base_url: ClassVar[str] = ""

    def __init__(
        self,
        profile: Profile,
        *,
        env: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        base_url: str | None = None,
    ) -> None:
        self.profile = profile
        self._env = env
        self.base_url = (base_url or profile.base_url or self.public_base_url).rstrip("/")
        timeout = httpx.Timeout(
            profile.timeout_s, connect=min(CONNECT_TIMEOUT_S, profile.timeout_s)
        )
        try:
            self._client = httpx.Client(
                base_url=self.base_url,
                transport=transport,
                timeout=timeout,
                follow_redirects=False,  # a redirect must not carry the key to another host
            )
        except (httpx.InvalidURL, ValueError) as exc:
            raise FatalError(self.redact(f"{profile.name}: bad base_url: {exc}")) from None

    def complete(self, request: CallRequest) -> ProviderResponse:
        raise NotImplementedError

    def close(self) -> None:
        self._client.close()

    def model_for(self, request: CallRequest) -> str:
        model = request.model or self.profile.model
        if not model:
            raise FatalError(f"{self.profile.name}: no model: the job names none, nor the profile")
        return model

    def api_key(self) -> str | None:
        """The key, read now; a missing key is fatal only on the provider's own endpoint
        (local OpenAI-compatible servers need none)."""
        key = self._lookup_key()
        if key is None and self.profile.api_key_env and self.base_url == self.public_base_url:
            raise FatalError(f"{self.profile.name}: {self.profile.api_key_env} is not set")
        return key

    def _lookup_key(self) -> str | None:
        name = self.profile.api_key_env
        if not name:
            return None
        return (os.environ if self._env is None else self._env).get(name) or None

    def redact(self, text: str, *, key_shapes: bool = True) -> str:
        env: Mapping[str, str] = (
            os.environ if self._env is None else ChainMap(dict(self._env), dict(os.environ))
        )
        return redact(text, env, names=(self.profile.api_key_env,), key_shapes=key_shapes)

    def post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        """POST ``body`` as JSON; the reply's JSON object, or a ``ProviderError``."""
        name = self.profile.name
        started = time.monotonic()
        try:
            response = self._client.post(path, json=body, headers=headers)
        except httpx.TimeoutException as exc:
            message = f"{name}: no reply within {self.profile.timeout_s:g} s ({type(exc).__name__})"
            raise TransientError(self.redact(message)) from None
        except httpx.UnsupportedProtocol as exc:
            raise FatalError(self.redact(f"{name}: cannot call {self.base_url}: {exc}")) from None
        except (httpx.TransportError, httpx.DecodingError) as exc:
            message = f"{name}: connection failed: {type(exc).__name__}: {exc}"
            raise TransientError(self.redact(message)) from None
        log.debug(
            "%s: POST %s -> HTTP %d in %.2f s",
            name,
            path,
            response.status_code,
            time.monotonic() - started,
        )
        if not response.is_success:
            raise self.status_error(response)
        return self.decode(response)

    def status_error(self, response: httpx.Response) -> ProviderError:
        status = response.status_code
        error = read_error(response)
        named = error.code if error.code and not error.code.isdigit() else error.type
        kind = f" {named}" if named else ""
        # Redacted before it is shortened: a key cut in half would no longer be found.
        said = self.redact(error.message)[:_ERROR_TEXT_LIMIT]
        message = self.redact(f"{self.profile.name}: HTTP {status}{kind}: {said}")
        if status in _RETRY_STATUSES or status >= 500:
            if {error.type, error.code} & _OUT_OF_QUOTA:
                return FatalError(f"{message} (out of quota: waiting cannot help)", status=status)
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            return TransientError(message, status=status, retry_after=retry_after)
        if status < 400:
            location = response.headers.get("location", "?")
            message = self.redact(f"{message} (redirected to {location}: fix base_url)")
        return self.client_error(status, error, message)

    def client_error(self, status: int, error: ErrorBody, message: str) -> FatalError:
        """The error for a 3xx/4xx; adapters override it to recognise special refusals."""
        return FatalError(message, status=status)

    def decode(self, response: httpx.Response) -> dict[str, Any]:
        name = self.profile.name
        try:
            data = response.json()
        except ValueError:
            if response.text.lstrip()[:1] in ("", "{", "["):
                message = f"{name}: reply cut short ({len(response.content)} bytes, not valid JSON)"
                raise TransientError(message, status=response.status_code) from None
            kind = response.headers.get("content-type", "no content-type")
            message = f"{name}: the reply is not JSON ({kind}): is base_url {self.base_url} right?"
            raise FatalError(self.redact(message), status=response.status_code) from None
        if not isinstance(data, dict):
            raise self.malformed(f"a JSON {type(data).__name__}, not an object")
        return data

    def malformed(self, what: str) -> FatalError:
        return FatalError(self.redact(f"{self.profile.name}: malformed reply: {what}"))

    def reply(
        self,
        *,
        text: str,
        finish_reason: FinishReason | None,
        usage: Usage,
        model: str,
        response_id: str | None,
        incomplete_details: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> ProviderResponse:
        """The ``ProviderResponse``, priced from the profile, with secrets redacted."""
        p = self.profile
        cost = (
            usage.input_tokens * p.price_input_per_mtok
            + usage.output_tokens * p.price_output_per_mtok
        ) / 1_000_000
        if incomplete_details is not None:
            incomplete_details = json.loads(self.redact(json.dumps(incomplete_details)))
        key = self._lookup_key()
        if key and key in text:  # a server echoing the key it got; other text is left alone
            text = text.replace(key, MASK)
        return ProviderResponse(
            text=text,
            finish_reason=finish_reason,
            usage=usage,
            provider=p.name,
            model=self.redact(model),
            response_id=response_id,
            incomplete_details=incomplete_details,
            cost=cost,
            error=None if error is None else self.redact(error),
        )


def tokens(usage: object, key: str) -> int:
    """A token count from a usage object; 0 when absent or not a count."""
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
