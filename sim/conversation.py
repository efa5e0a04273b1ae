"""Reading a Chat Completions request the way the simulated model needs it.

The simulated model reads what a real one would: the job's prompt (the first user
message), the format a system message asks for (``stated_format``: the engine opens every
request of a job with one, ``core.prompts.FORMAT_INSTRUCTIONS``), and in a continuation
request the text it is asked to repeat (between
``<<<REPEAT`` and ``REPEAT>>>``) and how much was delivered (``Delivered so far: N
characters``). It then finds where in its document that text ends (``locate``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from core.errors import ContinuumError
from core.prompts import REPEAT_CLOSE, REPEAT_OPEN
from sim.documents import format_from_prompt, named_format
from sim.options import SimOptions, model_options

DEFAULT_MAX_TOKENS = 4096
#: How far from the expected position a repeat is looked for before the last occurrence.
NEAR = 4096
_DELIVERED = re.compile(r"Delivered so far: ([\d,]+) characters")


class RequestError(ContinuumError, ValueError):
    """Raised when a request body is not a valid Chat Completions request."""


@dataclass(frozen=True)
class ChatRequest:
    model: str
    options: SimOptions
    prompt: str
    stated_format: str | None  # the format the first system message naming one asks for
    last_user: str
    prefill: str | None  # a trailing assistant message, continued exactly
    max_tokens: int
    seed: int | None
    prompt_chars: int

    @property
    def format(self) -> str:
        """The format of the document this request is answered from."""
        return document_format(self.options, self.stated_format, self.prompt)


def document_format(options: SimOptions, stated: str | None, prompt: str) -> str:
    """The ``format`` option (a sim knob: the server's or the model name's), else the format
    the request states (the job's), else the one the prompt's words name, else text."""
    return options.format or stated or format_from_prompt(prompt)


def message_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    if content is None:
        return ""
    raise RequestError("message content must be a string or a list of content parts")


def _int_field(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"'{key}' must be an integer")
    return value


def parse_chat(body: Any, base: SimOptions) -> ChatRequest:
    """Validate a request body; raises ``RequestError`` saying what is wrong."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    model = body.get("model", "sim")
    if not isinstance(model, str) or not model:
        raise RequestError("'model' must be a non-empty string")
    if body.get("stream"):
        raise RequestError("'stream' is not supported by the simulator")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty list")
    turns: list[tuple[str, str]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise RequestError(f"messages[{i}] must be an object with a 'role'")
        turns.append((message["role"], message_text(message.get("content"))))
    users = [text for role, text in turns if role == "user"]
    if not users:
        raise RequestError("'messages' must include a user message")
    limit = _int_field(body, "max_completion_tokens")
    if limit is None:
        limit = _int_field(body, "max_tokens")
    if limit is not None and limit <= 0:
        raise RequestError("'max_tokens' must be positive")
    try:
        options = model_options(model, base)
    except ValueError as exc:
        raise RequestError(f"model {model!r}: {exc}") from None
    return ChatRequest(
        model=model,
        options=options,
        prompt=users[0],
        stated_format=stated_format(turns),
        last_user=users[-1],
        prefill=turns[-1][1] if turns[-1][0] == "assistant" else None,
        max_tokens=DEFAULT_MAX_TOKENS if limit is None else limit,
        seed=_int_field(body, "seed"),
        prompt_chars=sum(len(text) for _, text in turns),
    )


def stated_format(turns: list[tuple[str, str]]) -> str | None:
    """The format the first system message that names one asks for, as a model reads its
    instructions (json, csv, markdown, plain text); None when no system message does."""
    for role, text in turns:
        if role == "system" and (fmt := named_format(text)) is not None:
            return fmt
    return None


def find_repeat(message: str) -> tuple[str, int | None] | None:
    """The text to repeat and the delivered count, or None for a first request."""
    close = message.rfind(REPEAT_CLOSE)
    if close < 0:
        return None
    open_ = message.rfind(REPEAT_OPEN, 0, close + 1)
    if open_ < 0:
        return None
    return message[open_ + len(REPEAT_OPEN) : close], delivered(message)


def delivered(message: str) -> int | None:
    """``N`` of the last ``Delivered so far: N characters`` line, if any."""
    found = _DELIVERED.findall(message)
    return int(found[-1].replace(",", "")) if found else None


def locate(target: str, repeat: str, expected: int | None) -> int | None:
    """Where ``repeat`` ends in ``target``: at ``expected`` if it fits, else the
    occurrence nearest to it, else the last one; None when it does not occur."""
    if expected is not None and 0 <= expected <= len(target):
        if target[expected - len(repeat) : expected] == repeat and len(repeat) <= expected:
            return expected
        lo = max(0, expected - NEAR - len(repeat))
        best: int | None = None
        at = target.find(repeat, lo, expected + NEAR)
        while at >= 0:
            end = at + len(repeat)
            if best is None or abs(end - expected) < abs(best - expected):
                best = end
            at = target.find(repeat, at + 1, expected + NEAR)
        if best is not None:
            return best
    if expected is None and not repeat:
        return None
    at = target.rfind(repeat)
    return None if at < 0 else at + len(repeat)
