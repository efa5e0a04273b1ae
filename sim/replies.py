"""What goes over the wire: Chat Completions bodies, OpenAI-style errors, and the
misbehaviours a reply can carry (fences, prose, garbage, re-indentation)."""

from __future__ import annotations

import math
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

PROSE_FIRST = (
    "Sure! Here is the document you asked for:",
    "Here it is.",
    "Certainly. Below is the complete document.",
)
PROSE_NEXT = (
    "Sure! Here is the continuation of the document:",
    "Continuing exactly where the previous answer stopped:",
    "Here's the rest of it.",
    "Of course. Picking up from the cut:",
)
_FENCE_LANG = {"json": "json", "csv": "csv", "markdown": "markdown", "text": "text"}
_INDENT = re.compile(r"\n( +)")


@dataclass(frozen=True)
class SimResult:
    """One answer: HTTP status, headers, the JSON body, and how long to wait first.

    ``hang``: the timeout knob fired; ``delay`` includes the hang (an in-process transport
    raises a read timeout at once instead of waiting).
    """

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hang: bool = False


def tokens(chars: int, chars_per_token: float) -> int:
    return math.ceil(chars / chars_per_token)


def completion(
    *,
    call_id: str,
    model: str,
    content: str,
    finish: str,
    prompt_tokens: int,
    completion_tokens: int,
) -> dict[str, Any]:
    """A Chat Completions response body."""
    return {
        "id": f"chatcmpl-sim-{call_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "continuum-sim",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error(
    status: int,
    message: str,
    kind: str,
    code: str | None,
    *,
    headers: dict[str, str] | None = None,
    delay: float = 0.0,
) -> SimResult:
    """An answer in OpenAI's error shape."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return SimResult(status=status, body=body, headers=headers or {}, delay=delay)


def rate_limited(retry_after: float, delay: float) -> SimResult:
    seconds = f"{retry_after:g}"
    return error(
        429,
        f"Rate limit reached for requests (simulated). Please try again in {seconds}s.",
        "requests",
        "rate_limit_exceeded",
        headers={"Retry-After": seconds},
        delay=delay,
    )


def server_failed(delay: float) -> SimResult:
    return error(
        500,
        "The server had an error while processing your request (simulated).",
        "server_error",
        "server_error",
        delay=delay,
    )


def marker_line(percent: int) -> str:
    return f"[[progress: {percent}%]]\n"


def decorate(payload: str, fmt: str, *, fence: bool, closed: bool, prose: str | None) -> str:
    """The payload as a chatty model wraps it: a line of prose, a code fence (closed only
    when the reply ended: a reply cut by the output limit loses its closing fence)."""
    text = payload
    if fence:
        text = f"```{_FENCE_LANG.get(fmt, '')}\n{text}"
        if closed:
            text += "\n```" if not text.endswith("\n") else "```"
    if prose is not None:
        text = f"{prose}\n\n{text}"
    return text


def reindent(text: str, upto: int) -> str:
    """Double the indentation of the lines that start in ``text[:upto]`` (JSON written
    with indent=2 comes back with 4: white space outside strings only, since the
    documents' strings never hold a raw newline)."""
    cut = text.rfind("\n", 0, upto)
    if cut < 0 or text[cut + 1 : upto].strip(" "):
        cut = upto  # else the cut falls in an indentation, which belongs to the next line
    return _INDENT.sub(lambda m: "\n" + m.group(1) * 2, text[:cut]) + text[cut:]


def garbage(rng: random.Random) -> str:
    """A fragment no merger can splice: unbalanced quotes and closers, a stray token."""
    noise = " ".join(
        rng.choice(("<|endoftext|>", "@@@", "NaN", "undefined", "\\q", "}{", "%%")) + str(i)
        for i in range(rng.randint(4, 9))
    )
    return f'"]]]]}}}}}} {noise} "]]]]}}}}}}'
