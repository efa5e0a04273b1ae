"""What travels between iterations, and what the engine decides (``docs/engine.md``, "The state").

``JobState`` is versioned and JSON-serialisable, and its size does not grow with the
output: the accumulated text lives elsewhere (appended per iteration) and the state keeps
only its length, its first characters and a bounded tail. The decisions are values; the
layer that runs the job applies them (append, call the model again, finish).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationInfo, field_validator

from core.formats import SCAN_MODELS, ScanState
from core.models import JobSpec, Message, OutputFormat

STATE_VERSION: Final = 1
#: Characters of the accumulated text kept in the state: enough to find any overlap a
#: reply can repeat (a reply is at most a few tens of thousands of characters).
TAIL_CHARS = 65536
#: Characters of the document's start kept in the state (``JobState.head``): what a
#: stitcher compares a fragment with to recognise a restart.
HEAD_CHARS = 256
MAX_WARNINGS = 200
#: Entries kept in each per-iteration list of the metadata (the most recent ones), so a
#: job of 60,000 iterations does not chain megabytes of state from task to task.
MAX_ITERATION_RECORDS = 200


class OutputRef(BaseModel):
    """A presentable output, by reference: ``accumulated[:prefix] + suffix``."""

    model_config = ConfigDict(frozen=True)
    prefix: int
    suffix: str = ""


class Served(BaseModel):
    """Who answered one call."""

    iteration: int = Field(description="The iteration of the call.")
    provider: str = Field(description="The provider profile.")
    model: str = Field(description="The model.")
    request_id: str | None = Field(
        default=None,
        description="The provider's id of the call (its x-request-id or request-id header), "
        "what its support asks for; null when it sent none.",
    )


class ProviderSwitch(BaseModel):
    """A fallback from one provider profile to the next
    (``docs/providers.md``, "Errors, retries, fallbacks")."""

    iteration: int = Field(description="The iteration it happened at.")
    from_profile: str = Field(description="The profile left.")
    to_profile: str = Field(description="The profile taken.")
    reason: str = Field(description="Why: the error of the profile left.")


class ContinuationMetadata(BaseModel):
    """Carried on every result (``docs/engine.md``, "The state").

    Totals count every iteration. The per-iteration lists (``chunk_sizes``,
    ``finish_reasons``, ``served_by``...) keep the last ``MAX_ITERATION_RECORDS`` entries;
    ``records_dropped`` says how many iterations were dropped from their front (so
    ``finish_reasons[i]`` is iteration ``records_dropped + i + 1``).
    """

    was_continued: bool = Field(
        default=False, description="True when the output took more than one model call."
    )
    continuation_count: int = Field(
        default=0, description="Continuations asked for (model calls after the first reply)."
    )
    total_input_tokens: int = Field(default=0, description="Input tokens of every call.")
    total_output_tokens: int = Field(default=0, description="Output tokens of every call.")
    merge_strategy_used: str | None = Field(
        default=None, description="How replies were joined: the output's format."
    )
    merge_success: bool = Field(
        default=True,
        description="False when a reply could not be joined to the output (see merge_failures).",
    )
    merge_failures: int = Field(
        default=0, description="Replies that could not be joined to the output."
    )
    ambiguous_seams: int = Field(
        default=0,
        description="Seams taken with a doubt: a reply that joined the output in two "
        "ways (see warnings).",
    )
    seam_retries: int = Field(
        default=0, description="Calls made again because a reply joined the output in two ways."
    )
    chunk_sizes: list[int] = Field(default_factory=list, description="Output tokens of each call.")
    chunk_chars: list[int] = Field(
        default_factory=list, description="Characters each call added to the output."
    )
    final_record_count: int = Field(
        default=0,
        description="Complete records of the output: items of the JSON document's main "
        "array, CSV rows.",
    )
    truncation_points: list[str] = Field(
        default_factory=list,
        description="Where each reply was cut: a JSON path, `row:N` (CSV) or `char:N`.",
    )
    total_cost_estimate: float = Field(
        default=0.0, description="Estimated cost of every call, USD (from the profiles' prices)."
    )
    finish_reasons: list[str | None] = Field(
        default_factory=list,
        description="Why each reply stopped: stop, length, content_filter, ...",
    )
    incomplete_details: list[dict[str, JsonValue] | None] = Field(
        default_factory=list,
        description="The provider's details of each incomplete reply (null: none).",
    )
    progress_reported: list[int | None] = Field(
        default_factory=list, description="The percent each reply reported (null: none)."
    )
    fallback_used: bool = Field(
        default=False, description="True when the job stopped early (see fallback_reason)."
    )
    fallback_reason: str | None = Field(default=None, description="Why the job stopped early.")
    validation_errors: list[str] = Field(
        default_factory=list, description="Schema validation errors of the JSON output, in order."
    )
    warnings: list[str] = Field(
        default_factory=list, description=f"Warnings, in order (the first {MAX_WARNINGS})."
    )
    warnings_dropped: int = Field(
        default=0, description=f"Warnings past the first {MAX_WARNINGS}, not kept."
    )
    served_by: list[Served] = Field(
        default_factory=list, description="The provider and model of each call."
    )
    provider_fallbacks: list[ProviderSwitch] = Field(
        default_factory=list,
        description="Fallbacks from one provider profile to the next, in order.",
    )
    records_dropped: int = Field(
        default=0,
        description="Iterations dropped from the front of the per-call lists (they keep the "
        f"last {MAX_ITERATION_RECORDS}).",
    )

    def make_room(self) -> None:
        """Before an iteration's records are added: keep the lists within their bound."""
        keep = MAX_ITERATION_RECORDS - 1
        self.records_dropped += max(0, len(self.finish_reasons) - keep)
        lists: tuple[list[Any], ...] = (
            self.chunk_sizes,
            self.chunk_chars,
            self.truncation_points,
            self.finish_reasons,
            self.incomplete_details,
            self.progress_reported,
            self.served_by,
        )
        for records in lists:
            if len(records) > keep:
                del records[: len(records) - keep]

    def warn(self, *messages: str) -> None:
        for message in messages:
            if len(self.warnings) < MAX_WARNINGS:
                self.warnings.append(message)
            else:
                self.warnings_dropped += 1


class JobState(BaseModel):
    """Everything the next iteration needs, except the accumulated text itself."""

    version: Literal[1] = STATE_VERSION
    spec: JobSpec
    format: OutputFormat
    iteration: int = 0
    phase: Literal["generate", "repair"] = "generate"
    length: int = 0
    head: str = ""
    tail: str = ""
    scan: ScanState | None = None  # the format's scanner at the cut (core.formats)
    fallback: OutputRef | None = None
    merge_failures: int = 0
    doubt_retries: int = 0  # asks at the current seam because a reply read two ways
    #: Replies in a row that said they stopped short ("Would you like me to continue?") and
    #: brought nothing; left out of the stored form while 0.
    stop_notes: int = Field(default=0, exclude_if=lambda value: not value)
    #: The last reply ended in a character the server cut in two (removed; left out of the
    #: stored form while False).
    cut_character: bool = Field(default=False, exclude_if=lambda value: not value)
    stall_percent: int | None = None
    stall_count: int = 0
    stall_chars: int = 0
    stall_pending: int = 0
    repairs: int = 0
    overlap: str = ""
    messages: list[Message]
    # Which provider profile serves (an index into spec.providers, or the default list),
    # the last accepted reply's id (stateful continuation), and whether assistant prefill
    # may still be tried. The runner sets them; the engine only keeps the reply id.
    provider_index: int = 0
    response_id: str | None = None
    prefill: bool = True
    metadata: ContinuationMetadata = Field(default_factory=ContinuationMetadata)

    @field_validator("scan", mode="before")
    @classmethod
    def _scan_of_format(cls, value: object, info: ValidationInfo) -> object:
        """A stored scan is a JSON object with no type tag: the job's format names its model."""
        if not isinstance(value, dict):
            return value
        model = SCAN_MODELS.get(info.data.get("format"))  # type: ignore[arg-type]
        if model is None:
            raise ValueError("a scan state needs the job's format (json, csv, markdown, text)")
        return model.model_validate(value)

    def clone(self) -> JobState:
        """A copy the engine may change freely: the same as ``model_copy(deep=True)``, at a
        fraction of its cost. The spec and messages are frozen models and shared; the
        metadata's lists are copied (their items are never changed in place); the scan state
        is frozen, so shared."""
        meta = self.metadata
        lists = {
            name: list(value) for name, value in meta.__dict__.items() if isinstance(value, list)
        }
        return self.model_copy(
            update={
                "metadata": meta.model_copy(update=lists),
                "messages": list(self.messages),
                "fallback": None if self.fallback is None else self.fallback.model_copy(),
            }
        )

    def appended(self, text: str) -> dict[str, Any]:
        """Field updates for appending ``text`` to the accumulated output."""
        head = self.head if len(self.head) >= HEAD_CHARS else (self.head + text)[:HEAD_CHARS]
        tail = (self.tail + text)[-TAIL_CHARS:] if text else self.tail
        return {"length": self.length + len(text), "head": head, "tail": tail}


@dataclass(frozen=True, slots=True)
class Continue:
    """Append ``append``, then call the model with ``messages``."""

    messages: list[Message]
    append: str = ""


@dataclass(frozen=True, slots=True)
class Retry:
    """Nothing to append; call the model again with ``messages`` (after a backoff)."""

    messages: list[Message]
    reason: str
    backoff: bool = False
    append: str = ""


@dataclass(frozen=True, slots=True)
class Finish:
    """Append ``append`` (or, with ``replace``, replace everything by it); the job is done.

    With ``review``, the runner passes the whole output to ``core.review`` first, which
    validates it and may ask for a repair.
    """

    output: OutputRef
    append: str = ""
    replace: bool = False
    review: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Fallback:
    """Stop: keep ``output`` (the last valid part, None when there is none) as a partial
    result, or fail the job when ``failed``."""

    output: OutputRef | None
    reason: str
    append: str = ""
    failed: bool = False


Decision = Continue | Retry | Finish | Fallback
