"""OpenAI Chat Completions (``POST {base}/chat/completions``) and every compatible server.

The output limit goes in ``max_completion_tokens`` on OpenAI's own endpoint (its reasoning
and newer models refuse ``max_tokens``) and in ``max_tokens`` elsewhere (what vLLM, Ollama,
llama.cpp and LM Studio all accept); a 400 naming the field we sent switches to the other
for that model, once, and remembers it. A server that says ``stop`` although the output
used the whole limit (reported of Ollama) is taken at its usage: ``length``.

With ``continue_final_message`` in the profile (vLLM, llama.cpp's server), a continuation
call's prefill ends the messages as an open assistant message, sent with
``continue_final_message: true, add_generation_prompt: false``: the server continues that
text exactly, and the reply's text is the prefill followed by what the model generated. A
400 or 422 about those fields (a server that does not know them, OpenAI's "Unrecognized
request argument supplied: continue_final_message"; a chat template that cannot continue
the message, vLLM's "continue_final_message is set but the final message does not appear
in the chat…") raises ``PrefillUnsupported``; the adapter remembers the model.
"""

from __future__ import annotations

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

PUBLIC_BASE_URL: Final = "https://api.openai.com/v1"
TOKEN_FIELDS: Final = ("max_tokens", "max_completion_tokens")

FINISH_REASONS: Final = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,  # the deprecated name
    "error": FinishReason.ERROR,  # some routers (OpenRouter) report failures this way
}


# How servers say "I do not take this field": OpenAI, its older wording, pydantic (vLLM).
_REFUSALS: Final = ("unsupported", "not supported", "unrecognized", "not permitted")
# The request fields of an exact continuation (vLLM's extra parameters).
CONTINUATION_FIELDS: Final = ("continue_final_message", "add_generation_prompt")


class _TokenFieldRefused(FatalError):
    """Raised when the server refuses the output-limit field we sent."""


class OpenAIChatProvider(HttpProvider):
    public_base_url = PUBLIC_BASE_URL

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._token_field: dict[str, str] = {}  # model -> the field its server accepts

    def token_field(self, model: str) -> str:
        if model in self._token_field:
            return self._token_field[model]
        if self.profile.max_tokens_field:
            return self.profile.max_tokens_field
        on_openai = self.base_url == PUBLIC_BASE_URL and self.profile.kind == "openai"
        return "max_completion_tokens" if on_openai else "max_tokens"

    def complete(self, request: CallRequest) -> ProviderResponse:
        model = self.model_for(request)
        messages: list[dict[str, str]] = [
            {"role": m.role, "content": m.content} for m in request.messages
        ]
        body: dict[str, Any] = {"model": model, "messages": messages}
        prefill = self.prefill_for(request, model)
        if prefill:
            messages.append({"role": "assistant", "content": prefill})
            body |= {"continue_final_message": True, "add_generation_prompt": False}
        headers = {}
        if key := self.api_key():
            headers["authorization"] = f"Bearer {key}"
        try:
            answer = self.send(body, headers, model, request.max_output_tokens)
        except PrefillUnsupported:
            self.refused_prefill(model)
            raise
        return self.parse(answer, model, request.max_output_tokens, prefill)

    def send(self, body: dict[str, Any], headers: dict[str, str], model: str, limit: int) -> Answer:
        """POST with the output limit in the field the model takes (switching once)."""
        field = self.token_field(model)
        try:
            return self.post("chat/completions", {**body, field: limit}, headers)
        except _TokenFieldRefused:
            if model in self._token_field:
                raise
            other = TOKEN_FIELDS[1 - TOKEN_FIELDS.index(field)]
            self._token_field[model] = other
            return self.post("chat/completions", {**body, other: limit}, headers)

    def client_error(self, status: int, error: ErrorBody, message: str) -> FatalError:
        refused = error.param in TOKEN_FIELDS or any(
            f"'{name}'" in error.message for name in TOKEN_FIELDS
        )
        said = f"{error.code} {error.message}".lower()
        if status == 400 and refused and any(word in said for word in _REFUSALS):
            return _TokenFieldRefused(message, status=status)
        # Only a continuation call sends these fields, so only its refusal names them.
        about_continuation = error.param in CONTINUATION_FIELDS or any(
            name in error.message for name in CONTINUATION_FIELDS
        )
        if status in (400, 422) and about_continuation:
            return PrefillUnsupported(message, status=status)
        return FatalError(message, status=status)

    def parse(self, answer: Answer, model: str, max_tokens: int, prefill: str) -> ProviderResponse:
        data = answer.data
        choices = data.get("choices")
        if not isinstance(choices, list):
            raise self.malformed("no 'choices' list")
        usage = data.get("usage")
        counted = Usage(
            input_tokens=tokens(usage, "prompt_tokens"),
            output_tokens=tokens(usage, "completion_tokens"),
        )
        common: dict[str, Any] = {
            "usage": counted,
            "model": str(data.get("model") or model),
            "response_id": data.get("id") if isinstance(data.get("id"), str) else None,
            "request_id": answer.request_id,
        }
        if not choices:
            return self.reply(
                text="", finish_reason=None, error="the reply has no choices", **common
            )
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise self.malformed("choices[0] has no 'message' object")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise self.malformed("choices[0].message.content is not a string")
        raw = choice.get("finish_reason")
        finish = FINISH_REASONS.get(raw) if isinstance(raw, str) else None
        details: dict[str, Any] | None = None
        error = None
        if raw is not None and finish is None:
            error = f"unknown finish_reason {raw!r}"
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            finish = FinishReason.CONTENT_FILTER
            details = {"reason": "refusal", "refusal": refusal}
        elif (
            finish is FinishReason.STOP
            and counted.output_tokens >= max_tokens
            and not message.get("tool_calls")
        ):
            finish = FinishReason.LENGTH
            details = {"reason": "max_output_tokens", "inferred": "stop at the token limit"}
        return self.reply(
            text=prefill + (content or ""),
            finish_reason=finish,
            incomplete_details=details,
            error=error,
            prefilled=len(prefill),
            **common,
        )
