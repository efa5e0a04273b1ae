"""User-supplied JSON Schemas are bounded, local, linear and cheap (docs/operations.md,
"Security"; issue 11, items 4 and 7): refused at submission with a message naming the
problem, applied by a validator that retrieves nothing, and never able to crash or freeze
the review of a paid reply."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from pydantic import ValidationError

from core import Fallback, Finish, JobSpec, JobState, Retry, advance, review
from core import schema_safety as safety
from core.models import (
    FinishReason,
    OutputFormat,
    ProviderResponse,
    ValidationOptions,
    describe_errors,
)
from core.schema_graph import REF_KEYWORDS, SchemaGraph
from core.schema_safety import (
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_NODES,
    MAX_SCHEMA_PATTERNS,
    MAX_SUBSCHEMAS_PER_VALUE,
    SafeSchema,
    check_schema,
    check_schema_size,
    refuse_retrieval,
)

#: Patterns that backtrack exponentially in ``re`` on the subject next to them, and
#: whether the pattern is found in the subject (``pattern`` searches, unanchored).
EVIL_PATTERNS = [
    ("(a+)+$", "a" * 40 + "!", False),
    ("(a|aa)+$", "a" * 60 + "!", False),
    ("(a|a?)+$", "a" * 40 + "!", True),
    ("^(([a-z])+.)+[A-Z]([a-z])+$", "a" * 40 + "!", False),
    ("(\\w+\\s?)+$", "word " * 20 + "!", False),
]


def refused(field: str = "json_schema", **schema: Any) -> str:
    """The message a job with this schema is refused with."""
    with pytest.raises(ValidationError) as info:
        JobSpec.model_validate({"prompt": "p", "format": "json", "validation": {field: schema}})
    return describe_errors(info.value)


def accepted(schema: dict[str, Any]) -> JobSpec:
    return JobSpec(
        prompt="p", format=OutputFormat.JSON, validation=ValidationOptions(json_schema=schema)
    )


def nested(depth: int, keyword: str = "not") -> dict[str, Any]:
    """A schema ``depth`` objects deep: ``{"not": {"not": ...}}``."""
    schema: dict[str, Any] = {}
    for _ in range(depth - 1):
        schema = {keyword: schema}
    return schema


def chain(levels: int) -> dict[str, Any]:
    """``levels`` nested object schemas (two JSON levels each: ``properties`` and the name)."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


# -- item 4: references stay inside the document -----------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "file:///etc/passwd"},
        {"$ref": "file:/dev/zero"},
        {"$ref": "http://127.0.0.1:9/schema.json"},
        {"$ref": "https://example.com/schema.json#/definitions/a"},
        {"$ref": "//example.com/schema.json"},
        {"$ref": "other.json"},
        {"$ref": "other.json#/$defs/a"},
        {"$ref": "urn:uuid:deadbeef-1234-0000-0000-4321fedcba98"},
        {"properties": {"a": {"$ref": "http://169.254.169.254/latest/meta-data"}}},
        {"$defs": {"a": {"items": {"$ref": "file:///proc/self/environ"}}}},
        {"$dynamicRef": "http://127.0.0.1:9/meta#meta"},
        {"$recursiveRef": "http://127.0.0.1:9/x"},
    ],
)
@pytest.mark.parametrize("field", ["json_schema", "item_schema"])
def test_a_reference_outside_the_document_is_refused_naming_it(
    schema: dict[str, Any], field: str
) -> None:
    """A $ref to a file, a URL or another document: refused at submission, the ref named."""
    ref = next(v for k, v in _all_pairs(schema) if k in REF_KEYWORDS)
    message = refused(field, **schema)
    assert f"validation.{field}" in message
    assert repr(ref) in message and "never a URL or a file" in message


def _all_pairs(value: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((k, v))
            out.extend(_all_pairs(v))
    return out


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        ({"$ref": "#/$defs/missing"}, "'#/$defs/missing' does not resolve"),
        ({"$ref": "#/properties/a/items"}, "'#/properties/a/items' does not resolve"),
        ({"$ref": "#nowhere"}, "no $anchor 'nowhere'"),
        ({"$schema": "http://127.0.0.1:9/meta"}, "$schema 'http://127.0.0.1:9/meta'"),
        ({"$schema": "http://json-schema.org/draft-04/schema#"}, "is not a draft"),
        ({"$defs": {"a": {"$id": "https://example.com/a.json"}}}, "only the root may have"),
    ],
)
def test_a_reference_that_does_not_resolve_locally_is_refused(
    schema: dict[str, Any], needle: str
) -> None:
    assert needle in refused(**schema)


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        ({"$ref": "#/$defs/n", "$defs": {"n": {"type": "integer"}}}, 1, "x"),
        ({"$defs": {"n": {"type": "integer"}}, "items": {"$ref": "#/$defs/n"}}, [1], ["x"]),
        ({"definitions": {"n": {"type": "null"}}, "not": {"$ref": "#/definitions/n"}}, 1, None),
        ({"$defs": {"a/b c": {"type": "string"}}, "$ref": "#/$defs/a~1b%20c"}, "s", 1),
        ({"$defs": {"n": {"$anchor": "num", "type": "number"}}, "$ref": "#num"}, 1.5, "x"),
        (
            {
                "$id": "https://example.com/r.json",
                "$ref": "#/$defs/s",
                "$defs": {"s": {"type": "integer"}},
            },
            1,
            "x",
        ),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array"}, [], {}),
        ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "array"}, [], {}),
        (
            {
                "$ref": "#/$defs/node",
                "$defs": {
                    "node": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                        },
                    }
                },
            },
            {"name": "a", "children": [{"name": "b", "children": []}]},
            {"name": "a", "children": [{"children": []}]},
        ),
        ({"type": "array", "items": {"$ref": "#"}}, [[[]]], [[1]]),
    ],
)
def test_local_references_resolve(schema: dict[str, Any], good: Any, bad: Any) -> None:
    """``#``, ``#/pointer`` (escaped or percent-encoded), ``#anchor`` and recursion work."""
    accepted(schema)
    compiled = SafeSchema(schema)
    assert compiled.first_error(good) is None
    assert compiled.first_error(bad) is not None


def test_the_validator_refuses_every_retrieval(tmp_path: Path) -> None:
    """Defence in depth: even a schema that reached the validator unchecked retrieves
    nothing. The file is a valid schema, so only the refusal keeps it from being read."""
    target = tmp_path / "schema.json"
    target.write_text(json.dumps({"type": "integer"}))
    schema = {"$ref": target.as_uri()}
    assert jsonschema_rs.validator_for(schema).is_valid(1)  # the library's default reads it
    with pytest.raises(jsonschema_rs.ValidationError, match="is not allowed"):
        jsonschema_rs.validator_for(schema, retriever=refuse_retrieval)
    with pytest.raises(ValueError, match="does not name a part of this schema"):
        SafeSchema(schema)


# -- item 7: size, depth and cost are bounded --------------------------------------------


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        (nested(MAX_SCHEMA_DEPTH + 1), f"nests deeper than {MAX_SCHEMA_DEPTH} levels"),
        (nested(150), "nests deeper than"),
        (nested(250), "nests deeper than"),
        (nested(1000), "nests deeper than"),
        (nested(100_000), "nests deeper than"),
        (chain(150), "nests deeper than"),
        (chain(1000), "nests deeper than"),
        (
            {"enum": list(range(MAX_SCHEMA_NODES))},
            f"more than {MAX_SCHEMA_NODES} values",
        ),
        ({"description": "x" * MAX_SCHEMA_BYTES}, f"larger than {MAX_SCHEMA_BYTES} bytes"),
        (
            {"properties": {f"p{i}": {"pattern": "^a"} for i in range(MAX_SCHEMA_PATTERNS + 1)}},
            f"more than {MAX_SCHEMA_PATTERNS} regular expressions",
        ),
    ],
    ids=[
        "depth+1",
        "depth150",
        "depth250",
        "depth1000",
        "depth100k",
        "chain150",
        "chain1000",
        "nodes",
        "bytes",
        "patterns",
    ],
)
def test_a_schema_past_a_size_limit_is_refused_with_a_clear_message(
    schema: dict[str, Any], needle: str
) -> None:
    """Never a RecursionError: the bound is checked on the raw value, without recursion."""
    assert needle in refused(**schema)


def test_a_schema_at_the_depth_limit_is_accepted() -> None:
    accepted(nested(MAX_SCHEMA_DEPTH))
    accepted(chain((MAX_SCHEMA_DEPTH - 2) // 2))
    check_schema_size("not a schema")  # pydantic says what is wrong with a non-object


def _fan_out(levels: int, width: int) -> dict[str, Any]:
    defs: dict[str, Any] = {"a0": {"type": "integer"}}
    for i in range(1, levels + 1):
        defs[f"a{i}"] = {"allOf": [{"$ref": f"#/$defs/a{i - 1}"}] * width}
    return {"$ref": f"#/$defs/a{levels}", "$defs": defs}


def _recursive(times: int) -> dict[str, Any]:
    branch = {"$ref": "#/$defs/a"}
    items = {"allOf": [branch] * times}
    return {"$ref": "#/$defs/a", "$defs": {"a": {"type": "array", "items": items}}}


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        (
            {"$ref": "#/$defs/a", "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}},
            "would never end",
        ),
        ({"anyOf": [{"$ref": "#"}]}, "would never end"),
        (
            {
                "$defs": {"a": {"not": {"$ref": "#/$defs/b"}}, "b": {"$ref": "#/$defs/a"}},
                "$ref": "#/$defs/a",
            },
            "would never end",
        ),
        (_fan_out(levels=9, width=10), f"more than {MAX_SUBSCHEMAS_PER_VALUE} subschemas"),
        (_fan_out(levels=4, width=10), f"more than {MAX_SUBSCHEMAS_PER_VALUE} subschemas"),
        (_recursive(times=2), f"more than {MAX_SUBSCHEMAS_PER_VALUE} subschemas"),
    ],
    ids=["self-loop", "root-loop", "mutual-loop", "fan-out-1e9", "fan-out-1e4", "doubling"],
)
def test_a_schema_whose_evaluation_would_not_end_or_explode_is_refused(
    schema: dict[str, Any], needle: str
) -> None:
    """A 300-byte schema must not check one value a billion times (jsonschema-rs would)."""
    started = time.perf_counter()
    assert needle in refused(**schema)
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize(
    "schema",
    [
        _fan_out(levels=2, width=10),
        _recursive(times=1),
        {
            "$ref": "#/$defs/v",
            "$defs": {
                "v": {
                    "anyOf": [
                        {"type": "object", "additionalProperties": {"$ref": "#/$defs/v"}},
                        {"type": "array", "items": {"$ref": "#/$defs/v"}},
                        {"type": ["string", "number", "boolean", "null"]},
                    ]
                }
            },
        },
        {
            "$ref": "#/$defs/t",
            "$defs": {
                "t": {"properties": {"left": {"$ref": "#/$defs/t"}, "right": {"$ref": "#/$defs/t"}}}
            },
        },
        {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(3000)}},
    ],
    ids=["fan-out-100", "recursive", "any-json-value", "binary-tree", "3000-properties"],
)
def test_ordinary_schemas_pass_the_cost_bound_quickly(schema: dict[str, Any]) -> None:
    started = time.perf_counter()
    accepted(schema)
    assert SchemaGraph(schema).bound(MAX_SUBSCHEMAS_PER_VALUE) < MAX_SUBSCHEMAS_PER_VALUE
    assert time.perf_counter() - started < 2


# -- item 7: regular expressions run in linear time --------------------------------------


@pytest.mark.parametrize(("pattern", "subject", "found"), EVIL_PATTERNS)
def test_catastrophic_patterns_are_checked_at_once(pattern: str, subject: str, found: bool) -> None:
    """``pattern`` and ``patternProperties`` run on a linear-time engine: microseconds
    where ``re`` takes hours (``(a+)+$`` on 40 a's and a ``!``: 2^40 steps)."""
    value = {"type": "object", "properties": {"name": {"type": "string", "pattern": pattern}}}
    keys = {"type": "object", "patternProperties": {pattern: {"type": "integer"}}}
    accepted(value)
    accepted(keys)
    started = time.perf_counter()
    by_value = SafeSchema(value).first_error({"name": subject})
    by_key = SafeSchema(keys).first_error({subject: "an integer if the key matches"})
    assert time.perf_counter() - started < 0.5
    if found:
        assert by_value is None
        assert by_key is not None and by_key[0] == f"$[{subject!r}]"
    else:
        assert by_value is not None and by_value[0] == "$['name']"
        assert f'does not match "{pattern}"' in by_value[1]
        assert by_key is None


@pytest.mark.parametrize("pattern", ["(?=a)b", "(?!a)", "(?<=a)b", "(a)\\1"])
def test_a_pattern_the_linear_engine_cannot_run_is_refused(pattern: str) -> None:
    message = refused(properties={"a": {"pattern": pattern}})
    assert "not a valid JSON Schema" in message and "linear-time engine" in message


def test_formats_stay_annotations() -> None:
    """``format`` is not asserted (as before), so no format regex runs on the output."""
    assert SafeSchema({"format": "email"}).first_error("not an email") is None


# -- the error the repair prompt quotes --------------------------------------------------

PERSON = {
    "type": "object",
    "required": ["name", "age"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "contact": {
            "anyOf": [
                {"type": "string", "format": "email"},
                {
                    "type": "object",
                    "required": ["phone"],
                    "properties": {"phone": {"type": "string"}},
                },
            ]
        },
        "id": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
    },
}


@pytest.mark.parametrize(
    ("instance", "path", "message"),
    [
        ({"name": "x", "age": "9"}, "$['age']", '"9" is not of type "integer"'),
        ({"name": "x"}, "$", '"age" is a required property'),
        ({"name": "x", "age": -1}, "$['age']", "-1 is less than the minimum of 0"),
        ({"name": "x", "age": 1, "tags": ["a", "z"]}, "$['tags'][1]", '"z" is not one of'),
        ({"name": "x", "age": 1, "extra": 1}, "$", "Additional properties are not allowed"),
        (  # anyOf: the error comes from the branch whose type matched
            {"name": "x", "age": 1, "contact": {"phone": 5}},
            "$['contact']['phone']",
            '5 is not of type "string"',
        ),
        (  # every branch fails the same way: the anyOf itself is the error
            {"name": "x", "age": 1, "contact": 5},
            "$['contact']",
            "5 is not valid under any of the schemas listed in the 'anyOf' keyword",
        ),
        (
            {"name": "x", "age": 1, "id": 3},
            "$['id']",
            "3 is valid under more than one of the schemas listed in the 'oneOf' keyword",
        ),
        ({"name": "x", "age": 1, "id": -0.5}, "$['id']", "-0.5 is less than the minimum of 0"),
        ({"name": "x", "age": 1, "id": 1.5, "tags": []}, None, None),
    ],
)
def test_the_error_names_the_path_and_the_problem(
    instance: Any, path: str | None, message: str | None
) -> None:
    error = SafeSchema(PERSON).first_error(instance)
    if path is None:
        assert error is None
        return
    assert error is not None
    assert error[0] == path
    assert message is not None and message in error[1]


def test_a_failing_any_of_over_a_large_value_reports_one_error_quickly() -> None:
    """jsonschema-rs's own anyOf gathers every branch's errors (seconds, gigabytes for a
    big output); evaluated branch by branch, the first error is all it costs."""
    schema = {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}
    started = time.perf_counter()
    error = SafeSchema(schema).first_error(list(range(200_000)))
    assert time.perf_counter() - started < 1
    assert error == ("$[0]", '0 is not of type "string"')


def test_an_error_quoting_a_huge_value_is_cut() -> None:
    error = SafeSchema({"type": "integer"}).first_error(["x" * 10_000])
    assert error is not None and len(error[1]) <= safety.MAX_ERROR_CHARS


# -- review never raises after the paid call ---------------------------------------------


def finished(schema: dict[str, Any], text: str, **validation: Any) -> JobState:
    job = JobSpec(
        prompt="p",
        format=OutputFormat.JSON,
        validation=ValidationOptions(json_schema=schema, **validation),
    )
    state, decision = advance(
        JobState(spec=job, format=job.output_format, messages=job.conversation()),
        ProviderResponse(text=text, finish_reason=FinishReason.STOP),
    )
    assert isinstance(decision, Finish) and decision.review
    return state


def test_a_catastrophic_pattern_in_review_asks_for_a_repair_at_once() -> None:
    text = json.dumps({"title": "a" * 40 + "!"})
    state = finished({"properties": {"title": {"pattern": "(a+)+$"}}}, text)
    started = time.perf_counter()
    after, decision = review(state, text)
    assert time.perf_counter() - started < 0.5
    assert isinstance(decision, Retry)
    assert "at $['title']:" in decision.messages[-1].content
    assert '"(a+)+$"' in after.metadata.validation_errors[0]


@pytest.mark.parametrize(
    "schema",
    [{"$ref": "file:///etc/passwd"}, {"$ref": "http://127.0.0.1:9/x"}, nested(5000)],
    ids=["file-ref", "http-ref", "depth5000"],
)
def test_a_schema_stored_before_the_checks_fails_the_job_instead_of_raising(
    schema: dict[str, Any],
) -> None:
    """A job stored by an older version (its schema never checked): the review ends the
    job with the reason and keeps the output; nothing is retrieved, nothing raises."""
    text = json.dumps({"a": 1})
    state = finished({"type": "object"}, text)
    options = state.spec.validation.model_copy(update={"json_schema": schema})
    state = state.model_copy(update={"spec": state.spec.model_copy(update={"validation": options})})
    after, decision = review(state, text)
    assert isinstance(decision, Fallback) and decision.failed
    assert decision.output is not None and decision.output.prefix == len(text)
    assert "could not be validated" in decision.reason
    assert after.metadata.validation_errors == [decision.reason]


def test_an_unexpected_error_in_validation_becomes_a_job_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = json.dumps({"a": 1})
    state = finished({"type": "object"}, text)

    def broken(self: SafeSchema, instance: Any) -> None:
        raise RuntimeError("validator exploded")

    monkeypatch.setattr(SafeSchema, "first_error", broken)
    after, decision = review(state, text)
    assert isinstance(decision, Fallback) and decision.failed
    assert "RuntimeError: validator exploded" in decision.reason
    assert after.metadata.fallback_reason == decision.reason


def test_an_output_too_deep_to_parse_is_a_validation_error_not_a_crash() -> None:
    state = finished({"type": "object"}, "{}")
    text = "[" * 100_000 + "]" * 100_000
    after, decision = review(state, text)
    assert isinstance(decision, Retry | Finish)
    assert "not valid JSON" in after.metadata.validation_errors[0]


def test_checks_are_remembered_for_a_stored_spec() -> None:
    """A stored job's spec is validated at every load: the schema check is cached."""
    schema = _fan_out(levels=2, width=10)
    check_schema(schema)
    started = time.perf_counter()
    for _ in range(200):
        check_schema(schema)
    assert time.perf_counter() - started < 0.5
