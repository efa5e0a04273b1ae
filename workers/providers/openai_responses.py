"""OpenAI Responses API (``POST {base}/responses``), with stateful continuation.

System messages go in ``instructions`` on every call (the API does not carry them over a
``previous_response_id``); the other messages are the ``input``. With
``previous_response_id`` the server already holds the conversation, so only the last user
message is sent. ``status: incomplete`` with ``incomplete_details.reason`` says why a reply
was cut; a reasoning model may spend the whole limit thinking and return no text at all
(an empty ``length`` reply, which the engine treats as such).

A chained call is billed for the whole conversation it continues, so a chain costs more
with every link. ``truncation: "auto"`` does not bound that: it only drops turns once the
model's context window is full. The profile's ``chain_max_tokens`` does: a reply whose
input plus output tokens reach it is returned without its id, so the next call sends the
job's bounded continuation prompt and starts a new chain.
"""

from __future__ import annotations

from typing import Any, Final

from core.models import FinishReason, ProviderResponse, Usage
from workers.errors import FatalError, PreviousResponseNotFound
from workers.providers.base import CallRequest
from workers.providers.http import (
    Answer,
    ErrorBody,
    HttpProvider,
    tokens,
)

PUBLIC_BASE_URL: Final = "https://api.openai.com/v1"
# The API refuses a smaller max_output_tokens (integer_below_min_value).
MIN_OUTPUT_TOKENS: Final = 16

# Calls the client must run (server-side tools such as web search are done by then).
CLIENT_TOOL_CALLS: Final = frozenset({"function_call", "custom_tool_call", "computer_call"})

INCOMPLETE_REASONS: Final = {
    "max_output_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}


class OpenAIResponsesProvider(HttpProvider):
    public_base_url = PUBLIC_BASE_URL

    def complete(self, request: CallRequest) -> ProviderResponse:
        model = self.model_for(request)
        system = [m.content for m in request.messages if m.role == "system"]
        turns = [m for m in request.messages if m.role != "system"]
        body: dict[str, Any] = {"model": model}
        if request.previous_response_id:
            last_user = [m for m in turns if m.role == "user"][-1:]
            if not last_user:
                raise FatalError(f"{self.profile.name}: a continuation needs a user message")
            turns = last_user
            body["previous_response_id"] = request.previous_response_id
        if system:
            body["instructions"] = "\n\n".join(system)
        body["input"] = [{"role": m.role, "content": m.content} for m in turns]
        body["max_output_tokens"] = max(MIN_OUTPUT_TOKENS, request.max_output_tokens)
        headers = {}
        if key := self.api_key():
            headers["authorization"] = f"Bearer {key}"
        return self.parse(self.post("responses", body, headers), model)

    def chains(self, usage: Usage) -> bool:
        """Whether a next call may continue this reply's conversation, given its size."""
        return usage.input_tokens + usage.output_tokens < self.profile.chain_max_tokens

    def client_error(self, status: int, error: ErrorBody, message: str) -> FatalError:
        if error.code == "previous_response_not_found" or (
            error.param == "previous_response_id" and status in (400, 404)
        ):
            return PreviousResponseNotFound(message, status=status)
        return FatalError(message, status=status)

    def parse(self, answer: Answer, model: str) -> ProviderResponse:
        data = answer.data
        status = data.get("status")
        output = data.get("output")
        if not isinstance(status, str) or not isinstance(output, list):
            raise self.malformed("no 'status' string or no 'output' list")
        texts: list[str] = []
        refusals: list[str] = []
        tool_call = False
        for item in output:
            if not isinstance(item, dict):
                raise self.malformed("an 'output' item is not an object")
            tool_call = tool_call or item.get("type") in CLIENT_TOOL_CALLS
            if item.get("type") != "message":
                continue  # reasoning summaries and the like carry no reply text
            content = item.get("content")
            if not isinstance(content, list):
                raise self.malformed("a message item has no 'content' list")
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "output_text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif kind == "refusal" and isinstance(part.get("refusal"), str):
                    refusals.append(part["refusal"])
        raw_details = data.get("incomplete_details")
        details: dict[str, Any] | None = raw_details if isinstance(raw_details, dict) else None
        error_field = data.get("error")
        error = None
        if isinstance(error_field, dict) and error_field.get("message"):
            error = str(error_field["message"])
        finish = self.finish_reason(status, details, tool_call=tool_call)
        if refusals:
            finish = FinishReason.CONTENT_FILTER
            details = {**(details or {}), "reason": "refusal", "refusal": " ".join(refusals)}
        if finish is None:
            error = error or f"unknown status {status!r}"
        raw_usage = data.get("usage")
        usage = Usage(
            input_tokens=tokens(raw_usage, "input_tokens"),
            output_tokens=tokens(raw_usage, "output_tokens"),
        )
        rid = data.get("id")
        return self.reply(
            text="".join(texts),
            finish_reason=finish,
            usage=usage,
            model=str(data.get("model") or model),
            response_id=rid if isinstance(rid, str) and self.chains(usage) else None,
            incomplete_details=details,
            error=error,
            request_id=answer.request_id,
        )

    @staticmethod
    def finish_reason(
        status: str, details: dict[str, Any] | None, *, tool_call: bool
    ) -> FinishReason | None:
        if status == "completed":
            return FinishReason.TOOL_CALLS if tool_call else FinishReason.STOP
        if status == "incomplete":
            reason = (details or {}).get("reason")
            return INCOMPLETE_REASONS.get(str(reason), FinishReason.INCOMPLETE)
        if status in ("failed", "cancelled"):
            return FinishReason.ERROR
        if status in ("queued", "in_progress"):
            return FinishReason.INCOMPLETE
        return None
