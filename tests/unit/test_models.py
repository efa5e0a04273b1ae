"""The job spec contract: invalid submissions are refused with a message naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from core import ContinuationConfig, JobSpec, Message, OutputFormat, ProviderResponse


def errors_of(**fields: Any) -> str:
    """Every error message of an invalid JobSpec, with the location of each."""
    with pytest.raises(ValidationError) as info:
        JobSpec.model_validate(fields)
    return "\n".join(
        ".".join(str(p) for p in e["loc"]) + ": " + e["msg"] for e in info.value.errors()
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"continuation": {"max_attempts": 0}}, "max_attempts must be positive"),
        ({"continuation": {"max_attempts": -3}}, "max_attempts must be positive"),
        ({"continuation": {"stall_limit": 0}}, "stall_limit must be positive"),
        ({"continuation": {"max_merge_failures": 0}}, "max_merge_failures must be positive"),
        ({"continuation": {"overlap_chars": 0}}, "overlap_chars must be positive"),
        ({"continuation": {"context_budget_chars": -1}}, "context_budget_chars must be positive"),
        ({"max_output_tokens": 0}, "max_output_tokens must be positive"),
        ({"validation": {"max_repair_attempts": -1}}, "max_repair_attempts must not be negative"),
        ({"continuation": {"on_failure": "explode"}}, "continuation.on_failure"),
        ({"continuation": {"max_attempts": "many"}}, "continuation.max_attempts"),
        ({"format": "yaml"}, "format"),
        ({"continuation": {"format": "xml"}}, "continuation.format"),
        ({"version": 2}, "version"),
        ({"callback_url": "ftp://example.com/x"}, "callback_url must be an http"),
        ({"callback_url": "http:// spaces"}, "callback_url must be an http"),
        ({"callback_url": "/relative"}, "callback_url must be an http"),
        ({"callback_url": "https://h.example\\p\\secret"}, "host must be a DNS name or an IP"),
        ({"callback_url": "http://h%2e.example/"}, "host must be a DNS name or an IP"),
        ({"callback_url": "http://h.example/\x00"}, "callback_url holds a control character"),
    ],
)
def test_invalid_values_are_refused_naming_the_field(fields: dict[str, Any], expected: str) -> None:
    message = errors_of(prompt="p", **fields)
    assert expected in message


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"promt": "typo"}, "promt"),
        ({"continuation": {"max_attemps": 3}}, "continuation.max_attemps"),
        ({"validation": {"schema": {}}}, "validation.schema"),
        ({"messages": [{"role": "user", "content": "x", "name": "bob"}]}, "messages.0.name"),
    ],
)
def test_unknown_fields_are_refused_not_ignored(fields: dict[str, Any], field: str) -> None:
    """A typo is an error that names the field, never a setting silently ignored."""
    base: dict[str, Any] = {} if "messages" in fields else {"prompt": "p"}
    message = errors_of(**base, **fields)
    assert f"{field}: Extra inputs are not permitted" in message


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, "give exactly one of prompt or messages"),
        (
            {"prompt": "p", "messages": [{"role": "user", "content": "x"}]},
            "give exactly one of prompt or messages",
        ),
        ({"prompt": ""}, "prompt must not be empty"),
        ({"prompt": " \n\t"}, "prompt must not be empty"),
        ({"messages": []}, "messages must include a user message"),
        (
            {"messages": [{"role": "system", "content": "be brief"}]},
            "messages must include a user message",
        ),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages.0.role"),
    ],
)
def test_what_to_ask_must_be_given_once(fields: dict[str, Any], expected: str) -> None:
    assert expected in errors_of(**fields)


def test_format_and_continuation_format_must_agree() -> None:
    message = errors_of(prompt="p", format="json", continuation={"format": "csv"})
    assert "format and continuation.format disagree" in message


def test_an_invalid_json_schema_is_refused() -> None:
    message = errors_of(prompt="p", format="json", validation={"json_schema": {"type": "nope"}})
    assert "validation.json_schema" in message and "not a valid JSON Schema" in message
    message = errors_of(prompt="p", format="json", validation={"item_schema": {"minItems": -1}})
    assert "validation.item_schema" in message and "not a valid JSON Schema" in message


@pytest.mark.parametrize("fmt", ["csv", "markdown", "text"])
def test_schemas_apply_to_json_output_only(fmt: str) -> None:
    message = errors_of(prompt="p", format=fmt, validation={"json_schema": {"type": "object"}})
    assert "validation schemas apply to JSON output only" in message


@pytest.mark.parametrize("fmt", ["json", "auto", None])
def test_schemas_are_accepted_for_json_and_auto(fmt: str | None) -> None:
    spec = JobSpec.model_validate(
        {"prompt": "p", "format": fmt, "validation": {"json_schema": {"type": "object"}}}
    )
    assert spec.validation.json_schema == {"type": "object"}


@pytest.mark.parametrize(
    "job_id", ["", "has space", "-leading-dash", "x" * 129, "a/b", "é", "x:commits", "v:lease"]
)
def test_bad_job_ids_are_refused(job_id: str) -> None:
    assert "job_id" in errors_of(prompt="p", job_id=job_id)


@pytest.mark.parametrize("job_id", ["a", "job-1", "2026.11.22_batch-7.3", "A" * 128])
def test_good_job_ids_are_accepted(job_id: str) -> None:
    assert JobSpec(prompt="p", job_id=job_id).job_id == job_id


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("openai", ["openai"]),
        (["openai", "anthropic"], ["openai", "anthropic"]),
        ([], []),
    ],
)
def test_providers_accepts_a_string_or_a_list(given: Any, expected: list[str]) -> None:
    assert JobSpec.model_validate({"prompt": "p", "providers": given}).providers == expected


def test_providers_default_to_the_workers_choice() -> None:
    assert JobSpec(prompt="p").providers == []


@pytest.mark.parametrize(
    ("fmt", "continuation_fmt", "expected"),
    [
        (None, None, OutputFormat.AUTO),
        ("csv", None, OutputFormat.CSV),
        (None, "markdown", OutputFormat.MARKDOWN),
        ("json", "json", OutputFormat.JSON),
        ("text", None, OutputFormat.TEXT),
    ],
)
def test_output_format_resolution(
    fmt: str | None, continuation_fmt: str | None, expected: OutputFormat
) -> None:
    """``format`` or else ``continuation.format`` or else auto."""
    spec = JobSpec.model_validate(
        {"prompt": "p", "format": fmt, "continuation": {"format": continuation_fmt}}
    )
    assert spec.output_format is expected


def test_defaults_follow_the_spec() -> None:
    """The defaults (docs/api.md, "POST /v1/jobs"): 10 attempts, return partial, 3 merge
    failures, stall after 3."""
    cfg = ContinuationConfig()
    assert cfg.max_attempts == 10
    assert cfg.on_failure.value == "return_partial"
    assert cfg.max_merge_failures == 3
    assert cfg.stall_limit == 3
    assert JobSpec(prompt="p").validation.max_repair_attempts >= 1


def test_conversation_from_a_prompt_or_messages() -> None:
    assert JobSpec(prompt="hi").conversation() == [Message(role="user", content="hi")]
    turns = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": "["},
        {"role": "user", "content": "go on"},
    ]
    spec = JobSpec.model_validate({"messages": turns})
    assert [m.model_dump() for m in spec.conversation()] == turns


def test_the_spec_round_trips_through_json() -> None:
    """The spec is a versioned JSON contract: what is sent is what is read."""
    spec = JobSpec.model_validate(
        {
            "job_id": "j1",
            "prompt": "p",
            "format": "json",
            "providers": "openai",
            "continuation": {"max_attempts": 4, "on_failure": "raise_error"},
            "validation": {"json_schema": {"type": "array"}, "max_repair_attempts": 2},
            "metadata": {"team": "search", "n": 3},
        }
    )
    assert JobSpec.model_validate_json(spec.model_dump_json()) == spec
    assert spec.version == 1


def test_models_are_frozen() -> None:
    spec = JobSpec(prompt="p")
    with pytest.raises(ValidationError):
        spec.prompt = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("reason", "expected"),
    [("stop", "stop"), ("length", "length"), ("content_filter", "content_filter"), (None, None)],
)
def test_provider_response_finish_reasons(reason: str | None, expected: str | None) -> None:
    got = ProviderResponse.model_validate({"text": "x", "finish_reason": reason}).finish_reason
    assert (None if got is None else got.value) == expected


def test_provider_response_refuses_unknown_finish_reasons() -> None:
    with pytest.raises(ValidationError, match="finish_reason"):
        ProviderResponse.model_validate({"text": "x", "finish_reason": "max_tokens"})
