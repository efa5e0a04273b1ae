"""Validation of the final JSON, lenient items, and the repair loop
(``docs/engine.md``, "Validation and repair").

``review(state, text)`` runs once the JSON is complete, on the whole output:

- ``item_schema``: items of the main array that do not match are dropped, one warning
  each; zero valid items is a failure;
- ``json_schema``: on failure, a repair request feeds the exact error back, while
  ``max_repair_attempts`` allows (0: no validation; 1: validate, no retry; N: up to N-1
  repair calls). When none is left, the job ends failed (``on_invalid: raise_error``, the
  default) or partial (``return_partial``) with the error as its reason; the output is
  kept either way. Validation never passes an invalid output off as a success.
A repair reply must be complete JSON; it then replaces the output and is reviewed again.

Schemas are applied by ``core.schema_safety.SafeSchema`` (nothing retrieved, regular
expressions in linear time, one error reported). Whatever goes wrong while validating ends
the job with a reason (a ``Fallback``, failed, the output kept): the reply was paid for, so
the iteration must not raise.
"""

from __future__ import annotations

import json
from typing import Any

from core.errors import describe
from core.json_stitch import start_json
from core.models import FinishReason, OnFailure, ProviderResponse
from core.prompts import repair_messages
from core.schema_safety import SafeSchema
from core.state import Decision, Fallback, Finish, JobState, OutputRef, Retry

#: Outputs longer than this are not sent back for repair: the reply could not hold them.
MAX_REPAIR_CHARS = 200_000
#: A validation failure's reason is cut here.
MAX_REASON_CHARS = 1000


def review(state: JobState, text: str) -> tuple[JobState, Decision]:
    """Validate the complete output ``text``; finish, or ask for a repair."""
    s = state.clone()
    if s.spec.validation.max_repair_attempts == 0:
        return s, Finish(output=OutputRef(prefix=len(text)))
    try:
        return _review(s, text)
    except Exception as exc:  # a bug or a schema the worker cannot apply: end, never raise
        return _unusable(state.clone(), text, exc)


def _review(s: JobState, text: str) -> tuple[JobState, Decision]:
    opts = s.spec.validation
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return _invalid(s, text, f"the output is not valid JSON: {exc}")
    replaced = None
    if opts.item_schema is not None:
        items, where = _items(value, opts.items_key)
        if items is None:
            return _invalid(s, text, f"no array of items at {where}")
        item_schema = SafeSchema(opts.item_schema)
        kept = []
        for index, item in enumerate(items):
            error = item_schema.first_error(item)
            if error is None:
                kept.append(item)
            else:
                s.metadata.warn(f"item {index} dropped: {error[1]}")
        if not kept:
            s.metadata.validation_errors.append("no valid items")
            return s, Fallback(output=None, reason="no item matches the item schema", failed=True)
        if len(kept) < len(items):
            items[:] = kept
            replaced = json.dumps(value, ensure_ascii=False, indent=2)
    if opts.json_schema is not None:
        error = SafeSchema(opts.json_schema).first_error(value)
        if error is not None:
            path, message = error
            if replaced is None:
                return _invalid(s, text, f"at {path}: {message}")
            # The output, its bad items dropped, still fails: no repair is asked of a
            # text that was never the model's; the model's own output is kept.
            s.metadata.validation_errors.append(f"at {path}: {message}")
            return s, _rejected(s, OutputRef(prefix=len(text)), f"at {path}: {message}")
    if replaced is not None:
        s.length = len(replaced)
        return s, Finish(output=OutputRef(prefix=len(replaced)), append=replaced, replace=True)
    return s, Finish(output=OutputRef(prefix=len(text)))


def advance_repair(s: JobState, response: ProviderResponse) -> tuple[JobState, Decision]:
    """Take a repair reply: a complete JSON replaces the output and is reviewed again."""
    keep = s.fallback or OutputRef(prefix=s.length)
    s.phase = "generate"
    error = s.metadata.validation_errors[-1] if s.metadata.validation_errors else "invalid"
    if response.finish_reason in (None, FinishReason.ERROR, FinishReason.CONTENT_FILTER):
        s.metadata.warn("the repair request failed; keeping the output as it was")
        return s, _rejected(s, keep, error)
    scan, merge = start_json(response.text)
    if not merge.ok or not scan.complete:
        s.metadata.warn("the repair reply was not complete JSON; keeping the output as it was")
        return s, _rejected(s, keep, error)
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
    return s, _rejected(s, OutputRef(prefix=len(text)), error)


def _rejected(s: JobState, output: OutputRef, error: str) -> Fallback:
    """The end of a job whose output is still invalid: failed, or partial as the spec
    asks, with the output kept and the schema's error as the reason."""
    repairs = f" after {s.repairs} repair(s)" if s.repairs else ""
    reason = f"the output does not match the schema{repairs}: {error}"[:MAX_REASON_CHARS]
    s.metadata.fallback_used = True
    s.metadata.fallback_reason = reason
    failed = s.spec.validation.on_invalid is OnFailure.RAISE_ERROR
    return Fallback(output=output, reason=reason, failed=failed)


def _unusable(s: JobState, text: str, exc: Exception) -> tuple[JobState, Decision]:
    """Validation itself failed: the job fails with the reason, its output kept."""
    reason = f"the output could not be validated: {describe(exc)}"[:MAX_REASON_CHARS]
    s.metadata.validation_errors.append(reason)
    s.metadata.warn(reason)
    s.metadata.fallback_used = True
    s.metadata.fallback_reason = reason
    return s, Fallback(output=OutputRef(prefix=len(text)), reason=reason, failed=True)


def _items(value: Any, key: str | None) -> tuple[list[Any] | None, str]:
    if key is None:
        return (value if isinstance(value, list) else None), "the top level"
    if isinstance(value, dict) and isinstance(value.get(key), list):
        return value[key], f"key {key!r}"
    return None, f"key {key!r}"
