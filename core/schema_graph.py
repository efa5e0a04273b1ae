"""A JSON Schema as a validator walks it, and a bound on what that walk costs
(``docs/operations.md``, "Security").

``SchemaGraph(schema)`` knows, for each subschema (named by its JSON pointer), the
subschemas that apply to the same value (``allOf``, ``not``, ``$ref``, ...) and those that
apply to its members and elements (``properties``, ``items``, ...). ``references()`` are
resolved inside the document only; ``bound()`` proves, before anything is validated, that
no value is ever checked against more than ``limit`` subschemas:

- a ``$ref`` that leads back to itself without descending into the value is refused (the
  evaluation would never end);
- references that multiply (``allOf`` of ten ``$ref``s to ``allOf`` of ten ...) are
  counted with their multiplicity;
- recursion (a tree whose nodes hold nodes) is followed level by level until the set of
  subschemas applied to a value repeats, which it does unless it grows at each level;
  growth reaches the limit and is refused.
The count over-approximates (every ``patternProperties`` applies to every member), so a
schema that passes is cheap for any value; the analysis itself is bounded by ``MAX_WORK``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from core.errors import SchemaCostError

Pointer = tuple[str | int, ...]

#: What a subschema may be: an object, or true / false.
_SCHEMAS = (dict, bool)
#: Keywords whose subschemas apply to the value itself.
_SAME_ONE = ("not", "if", "then", "else", "contentSchema")
_SAME_LIST = ("allOf", "anyOf", "oneOf")
_SAME_MAP = ("dependentSchemas", "dependencies")
#: Keywords whose subschemas apply to any element, or any member, of the value.
_ELEMENTS = ("additionalItems", "unevaluatedItems", "contains")
_MEMBERS = ("additionalProperties", "unevaluatedProperties", "propertyNames")
#: Keywords that name another subschema.
REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
#: Pointers the bound looks at, summed over every set of subschemas it follows.
MAX_WORK = 200_000


def pointer_text(pointer: Pointer) -> str:
    """``("properties", "a/b")`` -> ``#/properties/a~1b`` (jsonschema-rs's map keys)."""
    tokens = (str(t).replace("~", "~0").replace("/", "~1") for t in pointer)
    return "#" + "".join("/" + t for t in tokens)


def walk(value: Any) -> Iterator[tuple[Pointer, dict[str, Any]]]:
    """Every object in ``value`` with its pointer, without recursion."""
    stack: list[tuple[Pointer, Any]] = [((), value)]
    while stack:
        pointer, item = stack.pop()
        if isinstance(item, dict):
            yield pointer, item
            stack.extend(((*pointer, k), v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend(((*pointer, i), v) for i, v in enumerate(item))


@dataclass
class _Node:
    same: list[Pointer] = field(default_factory=list)  # apply to the value itself
    elements: list[tuple[int | None, Pointer]] = field(default_factory=list)  # index or any
    members: list[tuple[str | None, Pointer]] = field(default_factory=list)  # name or any


class SchemaGraph:
    """The subschemas of one schema document and the edges a validator follows."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._anchors: dict[str, list[Pointer]] = {}
        for pointer, obj in walk(schema):
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(obj.get(key), str):
                    self._anchors.setdefault(obj[key], []).append(pointer)
        self._nodes: dict[Pointer, _Node] = {}
        self._sizes: dict[Pointer, int] = {}
        self._expanded: dict[Pointer, Counter[Pointer]] = {}
        self._reached: set[Pointer] = set()

    @property
    def reached(self) -> set[Pointer]:
        """The subschemas ``bound`` found a value may be checked against."""
        return set(self._reached)

    def value_at(self, pointer: Pointer) -> Any:
        value: Any = self.schema
        for token in pointer:
            value = value[token]
        return value

    def resolve(self, ref: str) -> list[Pointer]:
        """The subschemas a local reference names (``#``, ``#/pointer``, ``#anchor``)."""
        fragment = unquote(ref[1:]) if ref.startswith("#") else None
        if fragment is None:
            raise SchemaCostError(f"$ref {ref!r} does not name a part of this schema")
        if not fragment:
            return [()]
        if not fragment.startswith("/"):
            if fragment not in self._anchors:
                raise SchemaCostError(f"$ref {ref!r}: no $anchor {fragment!r} in the schema")
            return self._anchors[fragment]
        pointer: list[str | int] = []
        value: Any = self.schema
        for raw in fragment[1:].split("/"):
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and token in value:
                pointer.append(token)
                value = value[token]
            elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
                pointer.append(int(token))
                value = value[int(token)]
            else:
                raise SchemaCostError(f"$ref {ref!r} does not resolve inside the schema")
        return [tuple(pointer)]

    def node(self, pointer: Pointer) -> _Node:
        if pointer not in self._nodes:
            self._nodes[pointer] = self._edges(pointer, self.value_at(pointer))
        return self._nodes[pointer]

    def _edges(self, at: Pointer, value: Any) -> _Node:
        """What a validator follows from the subschema ``value`` (at ``at``)."""
        if not isinstance(value, dict):
            return _Node()
        same = [*_applied(at, value), *self._referred(value)]
        return _Node(same, _elements(at, value), _members(at, value))

    def _referred(self, value: dict[str, Any]) -> Iterator[Pointer]:
        """The subschemas the value's references name (``$recursiveRef`` names the root)."""
        for key in REF_KEYWORDS:
            ref = value.get(key)
            if isinstance(ref, str):
                yield from self.resolve("#" if key == "$recursiveRef" else ref)

    def size(self, start: Pointer, limit: int) -> int:
        """How many subschemas apply (with multiplicity) to a value ``start`` applies to;
        refuses a loop that never descends into the value, and more than ``limit``."""
        stack = [(start, iter(self.node(start).same))]
        on_path = {start}
        while stack:
            pointer, children = stack[-1]
            for child in children:
                if child in on_path:
                    raise SchemaCostError(
                        f"the schema at {pointer_text(pointer)} refers back to "
                        f"{pointer_text(child)} without descending into the value: "
                        "its evaluation would never end"
                    )
                if child not in self._sizes:
                    on_path.add(child)
                    stack.append((child, iter(self.node(child).same)))
                    break
            else:
                stack.pop()
                on_path.discard(pointer)
                size = 1 + sum(self._sizes[child] for child in self.node(pointer).same)
                if size > limit:
                    raise _too_many(limit, pointer)
                self._sizes[pointer] = size
        return self._sizes[start]

    def expand(self, start: Pointer, limit: int) -> Counter[Pointer]:
        """The subschemas that apply to a value ``start`` applies to, with multiplicity."""
        if start not in self._expanded:
            self.size(start, limit)  # no loop, at most ``limit``: so is what follows
            order: list[Pointer] = []
            seen = {start}
            stack = [(start, iter(self.node(start).same))]
            while stack:
                pointer, children = stack[-1]
                child = next((c for c in children if c not in seen), None)
                if child is None:
                    stack.pop()
                    order.append(pointer)
                else:
                    seen.add(child)
                    stack.append((child, iter(self.node(child).same)))
            counts: Counter[Pointer] = Counter({start: 1})
            for pointer in reversed(order):  # each before what it refers to
                for child in self.node(pointer).same:
                    counts[child] += counts[pointer]
            self._expanded[start] = counts
            self._reached.update(counts)
        return self._expanded[start]

    def bound(self, limit: int) -> int:
        """The most subschemas any one value is checked against (refused past ``limit``)."""
        start: Counter[Pointer] = Counter({(): 1})
        seen = {frozenset(start.items())}
        pending, most, work = [start], 0, 0
        while pending:
            applied: Counter[Pointer] = Counter()
            for entry, times in pending.pop().items():
                for pointer, count in self.expand(entry, limit).items():
                    applied[pointer] += times * count
            size = applied.total()
            if size > limit:
                raise _too_many(limit, applied.most_common(1)[0][0])
            most, work = max(most, size), work + size
            if work > MAX_WORK:
                raise SchemaCostError(
                    "the schema's references are too intricate to bound the cost of "
                    "validating with it"
                )
            for child in self._children(applied):
                key = frozenset(child.items())
                if child and key not in seen:
                    seen.add(key)
                    pending.append(child)
        return most

    def _children(self, applied: Counter[Pointer]) -> list[Counter[Pointer]]:
        """What applies to each kind of member or element, given what applies to a value."""
        any_element: Counter[Pointer] = Counter()
        any_member: Counter[Pointer] = Counter()
        indexed: dict[int, Counter[Pointer]] = {}
        named: dict[str, Counter[Pointer]] = {}
        for pointer, times in applied.items():
            node = self.node(pointer)
            for index, target in node.elements:
                bucket = any_element if index is None else indexed.setdefault(index, Counter())
                bucket[target] += times
            for name, target in node.members:
                bucket = any_member if name is None else named.setdefault(name, Counter())
                bucket[target] += times
        out = [any_element, any_member]
        out.extend(c + any_element for c in indexed.values())
        out.extend(c + any_member for c in named.values())
        return out


def _applied(at: Pointer, value: dict[str, Any]) -> Iterator[Pointer]:
    """The subschemas written in ``value`` that apply to the value itself."""
    for key in _SAME_ONE:
        if isinstance(value.get(key), _SCHEMAS):
            yield (*at, key)
    for key in _SAME_LIST:
        if isinstance(value.get(key), list):
            yield from ((*at, key, i) for i in range(len(value[key])))
    for key in _SAME_MAP:
        if isinstance(value.get(key), dict):
            subs = value[key].items()
            yield from ((*at, key, k) for k, v in subs if isinstance(v, _SCHEMAS))


def _elements(at: Pointer, value: dict[str, Any]) -> list[tuple[int | None, Pointer]]:
    """The subschemas for the value's elements: by index, or for any (None)."""
    out: list[tuple[int | None, Pointer]] = []
    if isinstance(value.get("items"), _SCHEMAS):
        out.append((None, (*at, "items")))
    for key in ("items", "prefixItems"):
        if isinstance(value.get(key), list):
            out.extend((i, (*at, key, i)) for i in range(len(value[key])))
    out.extend((None, (*at, k)) for k in _ELEMENTS if isinstance(value.get(k), _SCHEMAS))
    return out


def _members(at: Pointer, value: dict[str, Any]) -> list[tuple[str | None, Pointer]]:
    """The subschemas for the value's members: by name, or for any (None)."""
    out: list[tuple[str | None, Pointer]] = [
        (None, (*at, k)) for k in _MEMBERS if isinstance(value.get(k), _SCHEMAS)
    ]
    for key, named in (("properties", True), ("patternProperties", False)):
        if isinstance(value.get(key), dict):
            out.extend(
                (name if named else None, (*at, key, name))
                for name, sub in value[key].items()
                if isinstance(sub, _SCHEMAS)
            )
    return out


def _too_many(limit: int, pointer: Pointer) -> SchemaCostError:
    return SchemaCostError(
        f"a value would be checked against more than {limit} subschemas "
        f"(references multiply at {pointer_text(pointer)})"
    )
