"""Anthropic Messages API (``POST {base}/v1/messages``), with assistant prefill.

System messages go in the top-level ``system`` field (joined); the rest keep their order.
With a prefill (``uses_prefill``) the request ends with an assistant message holding the
prefill, trailing whitespace stripped (the API rejects it), and the reply's text is that
prefill followed by what the model generated. Newer models refuse prefill with a 400
("does not support assistant message prefill"): that raises ``PrefillUnsupported``, and the
adapter remembers the model so later prefills to it fail at once, without a round trip.
"""

from __future__ import annotations

import re
from typing import Any, Final

from core.models import FinishReason, ProviderResponse, Usage
from workers.errors import FatalError, PrefillUnsupported
from workers.providers.base import CallRequest
from workers.providers.http import (
    Answer,
    ErrorBody,
    HttpProvider,
    tokens,
)

PUBLIC_BASE_URL: Final = "https://api.anthropic.com"
API_VERSION: Final = "2023-06-01"

STOP_REASONS: Final = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    # The context window filled up: continuing (with a shorter prompt) is the way on.
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.CONTENT_FILTER,
    "pause_turn": FinishReason.INCOMPLETE,  # a long server-side tool turn, paused
}

# "does not support assistant message prefill", and the older "…would pre-fill the
# `assistant` response. When using tools, pre-filling … is not supported."
_PREFILL_REFUSED = re.compile(r"pre-?fill", re.IGNORECASE)


class AnthropicProvider(HttpProvider):
    public_base_url = PUBLIC_BASE_URL

    def complete(self, request: CallRequest) -> ProviderResponse:
        model = self.model_for(request)
        system = [m.content for m in request.messages if m.role == "system"]
        messages: list[dict[str, str]] = [
            {"role": m.role, "content": m.content} for m in request.messages if m.role != "system"
        ]
        prefill = self.prefill_for(request, model)
        if prefill:
            messages.append({"role": "assistant", "content": prefill})
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": request.max_output_tokens,
            "messages": messages,
        }
        if system:
            body["system"] = "\n\n".join(system)
        headers = {"anthropic-version": API_VERSION}
        if key := self.api_key():
            headers["x-api-key"] = key
        try:
            answer = self.post("v1/messages", body, headers)
        except PrefillUnsupported:
            self.refused_prefill(model)
            raise
        return self.parse(answer, model, prefill)

    def client_error(self, status: int, error: ErrorBody, message: str) -> FatalError:
        if status == 400 and _PREFILL_REFUSED.search(error.message):
            return PrefillUnsupported(message, status=status)
        return FatalError(message, status=status)

    def parse(self, answer: Answer, model: str, prefill: str) -> ProviderResponse:
        data = answer.data
        content = data.get("content")
        if data.get("type") != "message" or not isinstance(content, list):
            raise self.malformed("not a 'message' with a 'content' list")
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
        raw = data.get("stop_reason")
        finish = STOP_REASONS.get(raw) if isinstance(raw, str) else None
        usage = data.get("usage")
        return self.reply(
            text=prefill + "".join(texts),
            prefilled=len(prefill),
            finish_reason=finish,
            usage=Usage(
                # Cached prompt tokens are input too (and priced as such: an estimate).
                input_tokens=tokens(usage, "input_tokens")
                + tokens(usage, "cache_creation_input_tokens")
                + tokens(usage, "cache_read_input_tokens"),
                output_tokens=tokens(usage, "output_tokens"),
            ),
            model=str(data.get("model") or model),
            response_id=data.get("id") if isinstance(data.get("id"), str) else None,
            error=None if finish or raw is None else f"unknown stop_reason {raw!r}",
            request_id=answer.request_id,
        )
