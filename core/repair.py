"""Validation of the final JSON, lenient items, and the repair loop (SPEC 2.5, seed 001).

``review(state, text)`` runs once the JSON is complete, on the whole output:

- ``item_schema``: items of the main array that do not match are dropped, one warning
  each; zero valid items is a failure;
- ``json_schema``: on failure, a repair request feeds the exact error back, while
  ``max_repair_attempts`` allows (0: no validation; 1: validate, no retry; N: up to N-1
  repair calls). When none is left, the output is returned as it is and the errors are
  recorded in the metadata.
A repair reply must be complete JSON; it then replaces the output and is reviewed again.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from core.json_stitch import start_json
from core.models import FinishReason, ProviderResponse
from core.prompts import repair_messages
from core.state import Decision, Fallback, Finish, JobState, OutputRef, Retry

#: Outputs longer than this are not sent back for repair: the reply could not hold them.
MAX_REPAIR_CHARS = 200_000


def review(state: JobState, text: str) -> tuple[JobState, Decision]:
    """Validate the complete output ``text``; finish, or ask for a repair."""
    s = state.clone()
    opts = s.spec.validation
    done = Finish(output=OutputRef(prefix=len(text)))
    if opts.max_repair_attempts == 0:
        return s, done
    try:
        value = json.loads(text)
    except ValueError as exc:
        return _invalid(s, text, f"the output is not valid JSON: {exc}")
    replaced = None
    if opts.item_schema is not None:
        items, where = _items(value, opts.items_key)
        if items is None:
            return _invalid(s, text, f"no array of items at {where}")
        validator = Draft202012Validator(opts.item_schema)
        kept = []
        for index, item in enumerate(items):
            error = best_match(validator.iter_errors(item))
            if error is None:
                kept.append(item)
            else:
                s.metadata.warn(f"item {index} dropped: {error.message}")
        if not kept:
            s.metadata.validation_errors.append("no valid items")
            return s, Fallback(output=None, reason="no item matches the item schema", failed=True)
        if len(kept) < len(items):
            items[:] = kept
            replaced = json.dumps(value, ensure_ascii=False, indent=2)
    if opts.json_schema is not None:
        error = best_match(Draft202012Validator(opts.json_schema).iter_errors(value))
        if error is not None:
            path = "$" + "".join(f"[{p!r}]" for p in error.absolute_path)
            if replaced is None:
                return _invalid(s, text, f"at {path}: {error.message}")
            s.metadata.validation_errors.append(f"at {path}: {error.message}")
    if replaced is not None:
        s.length = len(replaced)
        return s, Finish(output=OutputRef(prefix=len(replaced)), append=replaced, replace=True)
    return s, done


def advance_repair(s: JobState, response: ProviderResponse) -> tuple[JobState, Decision]:
    """Take a repair reply: a complete JSON replaces the output and is reviewed again."""
    keep = s.fallback or OutputRef(prefix=s.length)
    s.phase = "generate"
    if response.finish_reason in (None, FinishReason.ERROR, FinishReason.CONTENT_FILTER):
        s.metadata.warn("the repair request failed; keeping the output as it was")
        return s, Finish(output=keep)
    scan, merge = start_json(response.text)
    if not merge.ok or not scan.complete:
        s.metadata.warn("the repair reply was not complete JSON; keeping the output as it was")
        return s, Finish(output=keep)
    s.metadata.warn(*merge.warnings)
    text = merge.append[: scan.done_at]
    s.length = len(text)
    s.fallback = OutputRef(prefix=len(text))
    return s, Finish(output=s.fallback, append=text, replace=True, review=True)


def _invalid(s: JobState, text: str, error: str) -> tuple[JobState, Decision]:
    s.metadata.validation_errors.append(error)
    s.metadata.warn(f"validation failed: {error}")
    allowed = s.spec.validation.max_repair_attempts - 1
    if s.repairs < allowed and len(text) <= MAX_REPAIR_CHARS:
        s.repairs += 1
        s.phase = "repair"
        s.fallback = OutputRef(prefix=len(text))
        s.messages = repair_messages(s.spec, text, error)
        return s, Retry(messages=s.messages, reason=f"validation failed: {error}")
    return s, Finish(output=OutputRef(prefix=len(text)))


def _items(value: Any, key: str | None) -> tuple[list[Any] | None, str]:
    if key is None:
        return (value if isinstance(value, list) else None), "the top level"
    if isinstance(value, dict) and isinstance(value.get(key), list):
        return value[key], f"key {key!r}"
    return None, f"key {key!r}"
