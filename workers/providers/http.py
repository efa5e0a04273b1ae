"""The HTTP plumbing every adapter shares: one client per profile, keys read at call
time, provider error bodies read and turned into the typed errors of ``base``, the
provider's id of each request kept (its support asks for it), and a ``User-Agent`` that
names Continuum and its version (what the provider's logs show of us)."""

from __future__ import annotations

import json
import logging
import os
import time
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, ClassVar, Final

import httpx

from core.errors import describe
from core.models import FinishReason, ProviderResponse, Usage
from workers.errors import FatalError, PrefillUnsupported, ProviderError, TransientError
from workers.providers.base import CallRequest, retry_after_from, uses_prefill
from workers.providers.profiles import Profile
from workers.providers.redact import MASK, redact

log = logging.getLogger("continuum.providers")

CONNECT_TIMEOUT_S: Final = 10.0
# What the official SDKs retry, besides 5xx (Anthropic's 529 "overloaded" included).
_RETRY_STATUSES: Final = frozenset({408, 409, 425, 429})
# A 429 with one of these is an empty wallet, not a rate: waiting cannot help.
_OUT_OF_QUOTA: Final = frozenset(
    {"insufficient_quota", "billing_hard_limit_reached", "enforced_spend_limit_reached"}
)
_ERROR_TEXT_LIMIT: Final = 500
# Where each provider puts its id of a request: OpenAI, Anthropic.
_REQUEST_ID_HEADERS: Final = ("x-request-id", "request-id")
_REQUEST_ID_LIMIT: Final = 200


def user_agent() -> str:
    """``continuum/0.1.0 python-httpx/0.28.1``: our name and version, then httpx's own."""
    try:
        version = metadata.version("continuum")
    except metadata.PackageNotFoundError:  # run from a source tree that was not installed
        version = "unknown"
    return f"continuum/{version} python-httpx/{httpx.__version__}"


USER_AGENT: Final = user_agent()


@dataclass(frozen=True)
class Answer:
    """A provider's JSON reply, with its id of the request (None when it sent none)."""

    data: dict[str, Any]
    request_id: str | None


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
        self._no_prefill: set[str] = set()  # models that refused an assistant prefill
        self.base_url = (base_url or profile.base_url or self.public_base_url).rstrip("/")
        timeout = httpx.Timeout(
            profile.timeout_s, connect=min(CONNECT_TIMEOUT_S, profile.timeout_s)
        )
        try:
            self._client = httpx.Client(
                base_url=self.base_url,
                transport=transport,
                timeout=timeout,
                headers={"user-agent": USER_AGENT},
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

    def prefill_for(self, request: CallRequest, model: str) -> str:
        """The assistant prefill this call sends, "" for none: ``request.prefill`` with its
        trailing white space stripped (Anthropic refuses it; many chat templates trim it
        before ``continue_final_message`` cuts the prompt), when ``uses_prefill``.

        A model that refused a prefill before raises ``PrefillUnsupported`` at once, without
        a round trip; ``complete`` calls ``refused_prefill`` when the server refuses one.
        """
        if not uses_prefill(self.profile, request):
            return ""
        if model in self._no_prefill:
            raise PrefillUnsupported(
                f"{self.profile.name}: {model} does not support assistant message prefill"
                " (refused earlier)",
                status=400,
            )
        return (request.prefill or "").rstrip()

    def refused_prefill(self, model: str) -> None:
        self._no_prefill.add(model)

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

    def post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Answer:
        """POST ``body`` as JSON; the reply's JSON object and request id, or a
        ``ProviderError`` (whose message names the request id)."""
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
            message = f"{name}: connection failed: {describe(exc)}"
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
        return Answer(self.decode(response), self.request_id(response))

    def request_id(self, response: httpx.Response) -> str | None:
        """The provider's id of the request, from its header; None when it sent none."""
        for name in _REQUEST_ID_HEADERS:
            value = response.headers.get(name, "").strip()
            if value:
                return self.redact(value[:_REQUEST_ID_LIMIT])
        return None

    def status_error(self, response: httpx.Response) -> ProviderError:
        status = response.status_code
        error = read_error(response)
        named = error.code if error.code and not error.code.isdigit() else error.type
        kind = f" {named}" if named else ""
        # Redacted before it is shortened: a key cut in half would no longer be found.
        said = self.redact(error.message)[:_ERROR_TEXT_LIMIT]
        message = self.redact(f"{self.profile.name}: HTTP {status}{kind}: {said}")
        if rid := self.request_id(response):
            message = f"{message} (request {rid})"
        if status in _RETRY_STATUSES or status >= 500:
            if {error.type, error.code} & _OUT_OF_QUOTA:
                return FatalError(f"{message} (out of quota: waiting cannot help)", status=status)
            retry_after = retry_after_from(response.headers)
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
        prefilled: int = 0,
        request_id: str | None = None,
    ) -> ProviderResponse:
        """The ``ProviderResponse``, priced from the profile, with secrets redacted.

        ``prefilled``: leading characters of ``text`` that are the prefill sent (the engine
        joins the reply there instead of looking for a repeat)."""
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
            prefilled=min(prefilled, len(text)),
            error=None if error is None else self.redact(error),
            request_id=request_id,
        )


def tokens(usage: object, key: str) -> int:
    """A token count from a usage object; 0 when absent or not a count."""
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
