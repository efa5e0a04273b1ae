"""The job spec a producer sends, and the provider-neutral record of one model reply.

These are the public, versioned contract: a producer in any language sends a ``JobSpec``
as JSON. Every model forbids unknown fields, so a typo is an error that names the field
rather than a setting silently ignored.
"""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from core.ids import ID_PATTERN
from core.schema_safety import check_schema, check_schema_size

SPEC_VERSION: Final = 1


class OutputFormat(StrEnum):
    """The output's format; ``auto`` detects it from the first reply."""

    JSON = "json"
    CSV = "csv"
    MARKDOWN = "markdown"
    TEXT = "text"
    AUTO = "auto"


class OnFailure(StrEnum):
    """What a job that cannot finish does: end partial with its output, or fail."""

    RETURN_PARTIAL = "return_partial"
    RAISE_ERROR = "raise_error"


class FinishReason(StrEnum):
    """Why a model stopped, normalised across providers
    (``docs/providers.md``, "Finish reasons")."""

    STOP = "stop"  # done
    LENGTH = "length"  # cut by the output limit: continue
    TOOL_CALLS = "tool_calls"  # done, no continuation
    CONTENT_FILTER = "content_filter"  # stop, partial result with a warning
    INCOMPLETE = "incomplete"  # network/timeout: continue or retry
    ERROR = "error"  # retry with backoff, then fail


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def describe_errors(exc: ValidationError) -> str:
    """A validation error as one readable line: ``field.path: problem`` per problem,
    joined by ``; `` (a model-level problem has no path)."""
    lines = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)
    return "; ".join(lines)


def _positive(name: str, value: int) -> int:
    if value <= 0:
        raise ValueError(f"{name} must be positive")
    return value


class ContinuationConfig(_Strict):
    """How hard to try, and what to do when trying fails (``docs/engine.md``, "One iteration")."""

    max_attempts: StrictInt = Field(
        default=10,
        description="Most model calls after the first reply (continuations and retries).",
    )
    on_failure: OnFailure = Field(
        default=OnFailure.RETURN_PARTIAL,
        description="When the job stops early (attempts used, stalled, merges failing): "
        "`return_partial` ends it partial with the output so far, `raise_error` fails it.",
    )
    max_merge_failures: StrictInt = Field(
        default=3, description="Consecutive failed merges before falling back."
    )
    context_budget_chars: StrictInt = Field(
        default=2000, description="Characters of structure shown in the prompt."
    )
    stall_limit: StrictInt = Field(
        default=3, description="Iterations without progress before the job stalls."
    )
    overlap_chars: StrictInt = Field(
        default=200, description="Characters of the cut the model is asked to repeat."
    )
    ambiguity_retries: StrictInt = Field(
        default=1,
        ge=0,
        le=5,
        description="Times a reply that joins the document in two ways is asked again "
        "(saying so) before the likelier reading is taken with a warning.",
    )
    format: OutputFormat | None = Field(
        default=None, description="The output's format, as the spec's `format` (give either)."
    )

    @field_validator(
        "max_attempts", "max_merge_failures", "stall_limit", "overlap_chars", "context_budget_chars"
    )
    @classmethod
    def _must_be_positive(cls, value: int, info: Any) -> int:
        return _positive(info.field_name, value)


class ValidationOptions(_Strict):
    """Checks on the final JSON output (``docs/engine.md``, "Validation and repair")."""

    json_schema: dict[str, JsonValue] | None = Field(
        default=None,
        description="JSON Schema the whole output must match. `$ref` only inside the schema; "
        "size, nesting and cost are bounded (docs/api.md).",
    )
    item_schema: dict[str, JsonValue] | None = Field(
        default=None,
        description="Schema of each item of the top-level array (or `items_key` array).",
    )
    items_key: str | None = Field(
        default=None, description="Key of the array the item schema applies to."
    )
    max_repair_attempts: StrictInt = Field(
        default=2,
        description="0: skip validation; 1: validate, no retry; N: up to N-1 repair calls.",
    )
    on_invalid: OnFailure = Field(
        default=OnFailure.RAISE_ERROR,
        description="An output still invalid after the repairs: `raise_error` fails the job, "
        "`return_partial` ends it partial; either way the output is kept and the error is "
        "the job's `error`.",
    )

    @field_validator("max_repair_attempts")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError("max_repair_attempts must not be negative")
        return value

    @field_validator("json_schema", "item_schema", mode="before")
    @classmethod
    def _bounded_schema(cls, value: Any) -> Any:
        # Before pydantic walks a deep value (``docs/operations.md``, "Security").
        check_schema_size(value)
        return value

    @field_validator("json_schema", "item_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        if value is not None:
            check_schema(value)  # local $refs only, bounded cost, linear regexes
        return value


class Message(_Strict):
    role: Literal["system", "user", "assistant"] = Field(description="Who says it.")
    content: str = Field(description="What is said.")


class JobSpec(_Strict):
    """One generation job: what to ask, of whom, in which format, and how hard to try."""

    version: Literal[1] = Field(default=SPEC_VERSION, description="The spec's version: 1.")
    job_id: str | None = Field(
        default=None,
        pattern=ID_PATTERN,
        description="Client-chosen id; submitting the same id twice creates one job.",
    )
    prompt: str | None = Field(
        default=None,
        description="What to ask. Give exactly one of `prompt` and `messages`.",
        examples=["Write a 30-chapter guide to the museum's exhibits."],
    )
    messages: list[Message] | None = Field(
        default=None,
        description="A conversation to answer, instead of `prompt`; it has a user message.",
    )
    format: OutputFormat | None = Field(
        default=None,
        description="json, csv, markdown or text; null or `auto`: detected from the first "
        "reply. It decides how replies are joined and how the output is shown.",
    )
    providers: list[str] = Field(
        default_factory=list,
        description="Provider profiles in order of preference; empty: the worker's default.",
    )
    model: str | None = Field(
        default=None, description="The model to ask; null: the provider profile's model."
    )
    max_output_tokens: StrictInt = Field(
        default=4096,
        description="Output tokens per model call; the job continues past this limit.",
    )
    continuation: ContinuationConfig = Field(
        default_factory=ContinuationConfig,
        description="How hard to try, and what to do when trying fails.",
    )
    validation: ValidationOptions = Field(
        default_factory=ValidationOptions,
        description="Checks on JSON output: a schema, and repair calls when it fails.",
    )
    metadata: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Your own JSON, kept with the job's spec; Continuum does not read it.",
        examples=[{"team": "catalogue"}],
    )
    callback_url: str | None = Field(
        default=None,
        max_length=2048,
        description="When the job ends, its result is POSTed here as JSON (retried).",
    )

    @field_validator("callback_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        # The shape only: which hosts a worker may call is decided where it calls them,
        # after DNS (``workers.callback_addresses``). Messages never echo the URL (its
        # path, query or user info may hold a token).
        #
        # The host must be an IP literal or a DNS name: labels of letters, digits,
        # hyphens (not at either end) and underscores (allowed: real receivers use them
        # in names), 63 characters at most, 253 in all, one trailing dot allowed; a
        # non-ASCII name is judged in its IDNA (``xn--``) form. Anything else (``\``,
        # ``%``, a space, a control character) is where URL parsers disagree on where
        # the host ends: httpx reads ``https://h.example\p\token`` as one host, so the
        # worker's logs would name the token as the host.
        if value is None:
            return value
        if not re.fullmatch(r"https?://[^\s/?#]+[^\s]*", value, re.IGNORECASE):
            raise ValueError("callback_url must be an http:// or https:// URL")
        if re.search(r"[\x00-\x1f\x7f-\x9f]", value):
            raise ValueError("callback_url holds a control character")
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018  (raises on a port out of range)
        except ValueError:
            raise ValueError("callback_url has an invalid host or port") from None
        if not parts.hostname:
            raise ValueError("callback_url has no host")
        bad_host = ValueError("callback_url's host must be a DNS name or an IP address")
        if "\\" in parts.netloc:  # in the user info too: a browser reads it as a "/"
            raise bad_host
        # After the last "@" (as urllib and httpx read it): ``[IPv6]`` or a name, and a
        # port; urllib alone would let ``x[::1]`` or ``[::1]x`` pass as ``::1``.
        shape = re.fullmatch(
            r"\[([0-9a-f:.]+)\](?::[0-9]*)?|([^:\[\]]+)(?::[0-9]*)?",
            parts.netloc.rpartition("@")[2].lower(),
        )
        if shape is None:
            raise bad_host
        ipv6, host = shape.groups()
        if ipv6 is not None:
            try:
                ipaddress.IPv6Address(ipv6)
            except ValueError:
                raise bad_host from None
            return value
        try:
            name = host if host.isascii() else host.encode("idna").decode("ascii")
        except UnicodeError:
            raise bad_host from None
        name = name.removesuffix(".")
        label = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
        if len(name) > 253 or not re.fullmatch(rf"{label}(?:\.{label})*", name):
            raise bad_host
        return value

    @field_validator("providers", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("max_output_tokens")
    @classmethod
    def _tokens_positive(cls, value: int) -> int:
        return _positive("max_output_tokens", value)

    @model_validator(mode="after")
    def _check(self) -> JobSpec:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of prompt or messages")
        if self.prompt is not None and not self.prompt.strip():
            raise ValueError("prompt must not be empty")
        if self.messages is not None and not any(m.role == "user" for m in self.messages):
            raise ValueError("messages must include a user message")
        cfg = self.continuation.format
        if self.format is not None and cfg is not None and cfg != self.format:
            raise ValueError("format and continuation.format disagree")
        wants_json = self.output_format in (OutputFormat.JSON, OutputFormat.AUTO)
        has_schema = self.validation.json_schema or self.validation.item_schema
        if has_schema and not wants_json:
            raise ValueError("validation schemas apply to JSON output only")
        return self

    @property
    def output_format(self) -> OutputFormat:
        return self.format or self.continuation.format or OutputFormat.AUTO

    def conversation(self) -> list[Message]:
        """The first request's messages."""
        if self.messages is not None:
            return list(self.messages)
        return [Message(role="user", content=self.prompt or "")]


class Usage(_Strict):
    input_tokens: int = 0
    output_tokens: int = 0


class ProviderResponse(_Strict):
    """One model reply, whatever the provider (``docs/providers.md``, "Finish reasons").

    ``finish_reason`` None means the provider gave none: the reply is malformed.
    ``response_id``: the id a stateful continuation chains from (Responses API); None when
    there is none, or when the adapter wants the next call to start a new chain.
    """

    text: str = ""
    finish_reason: FinishReason | None = None
    usage: Usage = Field(default_factory=Usage)
    provider: str = ""
    model: str = ""
    response_id: str | None = None
    incomplete_details: dict[str, JsonValue] | None = None
    cost: float = 0.0
    error: str | None = None
    #: With ``error``: the same request can never succeed (a 400, a bad key, no quota):
    #: the job stops at once instead of asking again.
    permanent: bool = False
    prefilled: int = Field(
        default=0,
        ge=0,
        description="Leading characters of ``text`` that are the prefill the request sent "
        "(an assistant turn the model continued exactly): the reply joins the document there.",
    )
    request_id: str | None = Field(
        default=None,
        description="The provider's id of the HTTP request (its x-request-id or request-id "
        "header): what its support asks for about a call.",
    )
