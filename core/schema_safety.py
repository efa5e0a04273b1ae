"""User-supplied JSON Schemas, made safe to apply (``docs/operations.md``, "Security").

A job's ``validation.json_schema`` and ``item_schema`` come from whoever may submit a job,
and a worker applies them to a reply it has paid for. So, at submission
(``check_schema_size`` on the raw input, then ``check_schema``), a schema is refused when:

- it is large: deeper than ``MAX_SCHEMA_DEPTH`` nested objects and arrays, more than
  ``MAX_SCHEMA_NODES`` values, ``MAX_SCHEMA_BYTES`` bytes of JSON or
  ``MAX_SCHEMA_PATTERNS`` regular expressions;
- it refers outside itself: ``$ref`` may only name a part of the same document (``#``,
  ``#/pointer``, ``#anchor``); never a URL or a file. ``$schema`` must name a draft the
  validator has built in, and only the root may carry an ``$id``;
- it costs too much: ``SchemaGraph.bound`` (``MAX_SUBSCHEMAS_PER_VALUE``);
- it is not a valid schema, or a ``pattern`` is not a regular expression Rust's linear-time
  ``regex`` engine accepts (no look-around, no back-references).

``SafeSchema`` validates with jsonschema-rs, whose retriever refuses every URI (defence in
depth), whose regular expressions run in linear time, and whose ``format`` stays an
annotation. ``first_error`` reports one error, never the list: ``anyOf`` and ``oneOf`` are
evaluated branch by branch (``is_valid``), so a failure never builds a tree of every
branch's errors; the error is then looked for in the branch that explains it best.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from typing import Any, Final, NoReturn

import jsonschema_rs

from core.schema_graph import REF_KEYWORDS, Pointer, SchemaGraph, pointer_text, walk

MAX_SCHEMA_DEPTH: Final = 64
MAX_SCHEMA_NODES: Final = 10_000
MAX_SCHEMA_BYTES: Final = 100_000
MAX_SCHEMA_PATTERNS: Final = 200
MAX_SUBSCHEMAS_PER_VALUE: Final = 1_000
#: Compiled size and lazy-DFA cache of one regular expression, in bytes.
REGEX_SIZE_LIMIT: Final = 256 * 1024
REGEX_DFA_LIMIT: Final = 1024 * 1024
#: An error message fed back to the model is cut here (it quotes the failing value).
MAX_ERROR_CHARS: Final = 500
#: ``anyOf``/``oneOf`` failures followed into a branch to find the error's cause.
MAX_DESCENT: Final = 16

#: The ``$schema`` values accepted: drafts jsonschema-rs has built in (nothing retrieved)
#: that name resources with ``$id`` (draft-04's ``id`` would move the base of a ``#`` ref).
KNOWN_DRAFTS: Final = frozenset(
    uri + tail
    for uri in (
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema",
        "http://json-schema.org/draft-06/schema",
    )
    for tail in ("", "#")
)
_MARK: Final = "x-continuum-at"
_APPLICATORS: Final = ("anyOf", "oneOf")


def check_schema_size(value: Any) -> None:
    """Refuse a schema past the size limits; anything but an object is left to pydantic."""
    if not isinstance(value, dict):
        return
    nodes = patterns = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise ValueError(f"the schema has more than {MAX_SCHEMA_NODES} values")
        if isinstance(item, dict):
            children = list(item.values())
            patterns += isinstance(item.get("pattern"), str)
            if isinstance(item.get("patternProperties"), dict):
                patterns += len(item["patternProperties"])
        elif isinstance(item, list):
            children = item
        else:
            continue
        if children and depth >= MAX_SCHEMA_DEPTH:
            raise ValueError(f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)
    if patterns > MAX_SCHEMA_PATTERNS:
        raise ValueError(f"the schema has more than {MAX_SCHEMA_PATTERNS} regular expressions")
    try:
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    except (TypeError, ValueError):  # not JSON: pydantic says what is wrong
        return
    if size > MAX_SCHEMA_BYTES:
        raise ValueError(f"the schema is larger than {MAX_SCHEMA_BYTES} bytes of JSON")


def check_schema(schema: dict[str, Any]) -> None:
    """Refuse a schema that refers outside itself, costs too much or is not valid."""
    _check(json.dumps(schema, sort_keys=True))


@functools.lru_cache(maxsize=64)
def _check(text: str) -> None:  # a stored job's spec is validated at every load
    schema = json.loads(text)
    for pointer, obj in walk(schema):
        for key in REF_KEYWORDS:
            ref = obj.get(key)
            if isinstance(ref, str) and not ref.startswith("#"):
                raise ValueError(
                    f"{key} {ref!r} is refused: only references inside the schema "
                    "('#', '#/...', '#anchor') are resolved, never a URL or a file"
                )
        draft = obj.get("$schema")
        if isinstance(draft, str) and draft not in KNOWN_DRAFTS:
            raise ValueError(
                f"$schema {draft!r} is not a draft this server knows; "
                "use https://json-schema.org/draft/2020-12/schema"
            )
        if pointer and isinstance(obj.get("$id"), str):
            raise ValueError(
                f"$id {obj['$id']!r} at {pointer_text(pointer)} is refused: only the root "
                "may have an $id (references resolve inside the one document)"
            )
    try:
        SafeSchema(schema)
    except jsonschema_rs.ValidationError as exc:
        where = pointer_text(tuple(exc.instance_path))
        hint = (
            " (patterns run on a linear-time engine: no look-around, no back-references,"
            f" at most {REGEX_SIZE_LIMIT // 1024} KiB compiled)"
        )
        hint = hint if '"regex"' in exc.message else ""
        message = f"not a valid JSON Schema: at {where}: {_clip(exc.message)}{hint}"
        raise ValueError(message) from None
    except ValueError:
        raise
    except Exception as exc:  # whatever else the compiler says, it is the schema's fault
        raise ValueError(f"not a valid JSON Schema: {exc}") from None


def refuse_retrieval(uri: str) -> NoReturn:
    """The validator's retriever: a schema never makes the worker read or fetch anything."""
    raise ValueError(f"retrieving {uri!r} is not allowed")


_REGEX: Final = jsonschema_rs.RegexOptions(
    size_limit=REGEX_SIZE_LIMIT, dfa_size_limit=REGEX_DFA_LIMIT
)


@dataclass(frozen=True)
class _Found:
    path: tuple[str | int, ...]
    message: str
    keyword: str
    #: A failed ``anyOf``/``oneOf`` of ours: (where, keyword, branches); None otherwise.
    failed: tuple[str, str, int] | None


class SafeSchema:
    """A user's schema compiled to validate without retrieving anything or backtracking.

    Raises ``jsonschema_rs.ValidationError`` when the schema is not valid,
    ``SchemaCostError`` when its references do not resolve, loop or cost too much, and
    ``ValueError`` when it is too large.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        check_schema_size(schema)  # a stored spec may predate the checks
        graph = SchemaGraph(schema)
        graph.bound(MAX_SUBSCHEMAS_PER_VALUE)
        self._schema = _marked(schema, graph.reached)
        self._keywords = {name: self._applicator(name) for name in _APPLICATORS}
        self._validator = jsonschema_rs.validator_for(self._schema, **self._options())
        self._branches: jsonschema_rs.ValidatorMap | None = None
        self._failed: tuple[str, str, int] | None = None

    def _options(self) -> dict[str, Any]:
        return {
            "retriever": refuse_retrieval,
            "pattern_options": _REGEX,
            "validate_formats": False,
            "keywords": self._keywords,
        }

    def is_valid(self, instance: Any) -> bool:
        return self._validator.is_valid(instance)

    def first_error(self, instance: Any) -> tuple[str, str] | None:
        """One error of ``instance`` as (``$['path'][0]``, problem), or None if it is valid."""
        found = self._explain(self._validator, instance, 0)
        if found is None:
            return None
        path, message = found
        return "$" + "".join(f"[{p!r}]" for p in path), message

    def _explain(
        self, validator: jsonschema_rs.Validator, instance: Any, depth: int
    ) -> tuple[tuple[str | int, ...], str] | None:
        found = self._first(validator, instance)
        if found is None:
            return None
        value = _at(instance, found.path)
        message = found.message
        if found.failed is not None or found.keyword in _APPLICATORS:
            message = _clip(f"{_render(value)} {message}")
        if found.failed is None or depth >= MAX_DESCENT:
            return found.path, message
        at, keyword, count = found.failed
        errors = [(i, self._first(self._branch(at, keyword, i), value)) for i in range(count)]
        ranked = sorted((_rank(e), i) for i, e in errors if e is not None)
        if not ranked or (len(ranked) > 1 and ranked[0][0] == ranked[1][0]):
            return found.path, message
        inner = self._explain(self._branch(at, keyword, ranked[0][1]), value, depth + 1)
        if inner is None:
            return found.path, message
        return found.path + inner[0], inner[1]

    def _first(self, validator: jsonschema_rs.Validator, instance: Any) -> _Found | None:
        self._failed = None
        try:
            validator.validate(instance)
        except jsonschema_rs.ValidationError as error:
            custom = isinstance(error.kind, jsonschema_rs.ValidationErrorKind.Custom)
            return _Found(
                path=tuple(error.instance_path),
                message=error.message if custom else _clip(error.message),
                keyword=error.kind.name,
                failed=self._failed if custom else None,
            )
        return None

    def _branch(self, at: str, keyword: str, index: int) -> jsonschema_rs.Validator:
        if self._branches is None:
            self._branches = jsonschema_rs.validator_map_for(self._schema, **self._options())
        return self._branches[f"{at}/{keyword}/{index}"]

    def _applicator(self, keyword: str) -> type:
        """``anyOf``/``oneOf`` evaluated by branch validity, without collecting errors."""
        safe = self

        class Applicator:
            def __init__(self, parent: dict[str, Any], value: Any, _path: Any) -> None:
                self.at = parent.get(_MARK)
                self.count = len(value) if isinstance(value, list) else 0

            def validate(self, instance: Any) -> None:
                safe._apply(keyword, self.at, self.count, instance)

        return Applicator

    def _apply(self, keyword: str, at: Any, count: int, instance: Any) -> None:
        if not isinstance(at, str):  # a subschema SchemaGraph did not reach: never applied
            self._failed = None
            raise ValueError(f"could not be checked against {keyword!r}")
        valid = 0
        for index in range(count):
            if self._branch(at, keyword, index).is_valid(instance):
                valid += 1
                if keyword == "anyOf":
                    return
                if valid > 1:
                    self._failed = None
                    raise ValueError(
                        f"is valid under more than one of the schemas listed in the '{keyword}' "
                        "keyword"
                    )
        if valid == 0:
            self._failed = (at, keyword, count)
            raise ValueError(
                f"is not valid under any of the schemas listed in the '{keyword}' keyword"
            )


def _marked(schema: dict[str, Any], reached: set[Pointer]) -> dict[str, Any]:
    """A copy of ``schema`` whose every reached ``anyOf``/``oneOf`` knows where it is."""
    out = copy.deepcopy(schema)
    for pointer in reached:
        value: Any = out
        for token in pointer:
            value = value[token]
        if isinstance(value, dict) and any(isinstance(value.get(k), list) for k in _APPLICATORS):
            value[_MARK] = pointer_text(pointer)
    return out


def _rank(found: _Found) -> tuple[int, int]:
    """Deeper first; then an error from a branch whose type matched the value."""
    return -len(found.path), int(found.keyword == "type" and not found.path)


def _at(instance: Any, path: tuple[str | int, ...]) -> Any:
    for token in path:
        instance = instance[token]
    return instance


def _render(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _clip(message: str) -> str:
    return message if len(message) <= MAX_ERROR_CHARS else message[: MAX_ERROR_CHARS - 3] + "..."
