"""Continuum's continuation engine: pure, deterministic, no I/O.

``advance(state, response)`` takes one model reply into a job and decides what comes next;
``stitch(fragments, fmt)`` merges fragments offline with the same mergers.
"""

from core.contexts import JsonContexts, json_contexts
from core.engine import advance, start
from core.formats import detect_format
from core.models import (
    ContinuationConfig,
    FinishReason,
    JobSpec,
    Message,
    OnFailure,
    OutputFormat,
    ProviderResponse,
    Usage,
    ValidationOptions,
)
from core.repair import review
from core.state import (
    ContinuationMetadata,
    Continue,
    Decision,
    Fallback,
    Finish,
    JobState,
    OutputRef,
    ProviderSwitch,
    Retry,
)
from core.stitch import StitchResult, stitch

__all__ = [
    "ContinuationConfig",
    "ContinuationMetadata",
    "Continue",
    "Decision",
    "Fallback",
    "Finish",
    "FinishReason",
    "JobSpec",
    "JobState",
    "JsonContexts",
    "Message",
    "OnFailure",
    "OutputFormat",
    "OutputRef",
    "ProviderResponse",
    "ProviderSwitch",
    "Retry",
    "StitchResult",
    "Usage",
    "ValidationOptions",
    "advance",
    "detect_format",
    "json_contexts",
    "review",
    "start",
    "stitch",
]
