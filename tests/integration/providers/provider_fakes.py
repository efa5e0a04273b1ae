"""Local stand-ins for OpenAI Chat Completions, the OpenAI Responses API and Anthropic
Messages: FastAPI apps that answer as the real APIs do (the reply and error bodies, the
status codes, the headers they check), served by uvicorn through the ``serve`` fixture.

Each fake "model" writes one fixed document, one whitespace-led word per token, cut at the
request's output limit, and follows a continuation as an obedient model would: it takes
the document up exactly after a prefill the API accepts, else at the text a continuation
turn asks it to repeat (or right after the text a retry quotes). Every answer, errors
included, carries the provider's request id header (``x-request-id``, ``request-id``).
It records every request (JSON body, headers, the request id it answered with and, for the
Responses API, the input tokens it billed). A test scripts misbehaviour by queueing
``Action``s: each answers one request instead of the model.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from core.models import Message
from core.prompts import REPEAT_CLOSE, REPEAT_OPEN
from workers.providers.base import (
    CallRequest,
)
from workers.providers.http import (
    HttpProvider,
)
from workers.providers.profiles import Profile
from workers.providers.registry import make_provider

DOCUMENT = " ".join(f"word{i}" for i in range(60)) + "."
Action = Callable[["Fake", dict[str, Any]], Awaitable[Response]]


def tokens(text: str) -> list[str]:
    """The fake tokenizer: each non-space run with the whitespace before it."""
    return re.findall(r"\s*\S+", text)


def count(text: str) -> int:
    return len(tokens(text))


@dataclass
class Recorded:
    body: Any
    headers: dict[str, str]
    request_id: str | None = None  # the id the answer carried
    input_tokens: int | None = None  # billed for it (None: not answered by the model)

    @property
    def user_agent(self) -> str | None:
        return self.headers.get("user-agent")


@dataclass
class Fake:
    """What every fake shares: the script, the record, the document, the expected key."""

    kind: str
    key_env: str
    key: str | None = None  # when set, requests must carry it
    document: str = DOCUMENT
    script: list[Action] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    echo_key: bool = False  # a careless server: repeats the key it got in its messages
    last_key: str | None = None
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    request_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    request_id: str = ""  # the id of the request being answered
    sends_request_id: bool = True  # False: a compatible server (vLLM, Ollama) sends none
    reached: int = 0  # where in the document the model's last reply ended

    path = ""
    request_id_header: ClassVar[str] = ""

    # -- what a subclass provides --
    def error_body(self, status: int, message: str, kind: str) -> dict[str, Any]:
        raise NotImplementedError

    def sent_key(self, headers: dict[str, str]) -> str | None:
        raise NotImplementedError

    def auth_error(self, sent: str | None) -> JSONResponse:
        raise NotImplementedError

    async def answer(self, body: dict[str, Any], headers: dict[str, str]) -> Response:
        raise NotImplementedError

    def new_request_id(self, n: int) -> str:
        raise NotImplementedError

    # -- shared --
    def error(
        self, status: int, message: str, kind: str, headers: dict[str, str] | None = None
    ) -> JSONResponse:
        return JSONResponse(
            self.error_body(status, message, kind), status_code=status, headers=headers
        )

    def continue_from(self, position: int, max_tokens: int) -> tuple[str, int, bool]:
        """The next ``max_tokens`` tokens from ``position``: (text, end, whole rest)."""
        rest = tokens(self.document[position:])
        text = "".join(rest[:max_tokens])
        self.reached = position + len(text)
        return text, position + len(text), len(rest) <= max_tokens

    def end_of(self, text: str) -> int | None:
        """Where ``text`` ends in the document. Of several occurrences (a document that
        repeats itself), the last one ending by where the model's last reply ended: the
        conversation tells a real model which one it is at."""
        ends = [m.start() + len(text) for m in re.finditer(f"(?={re.escape(text)})", self.document)]
        by_now = [end for end in ends if end <= self.reached]
        return by_now[-1] if by_now else ends[0] if ends else None

    def resume(self, messages: list[dict[str, Any]], default: int = 0) -> int:
        """Where a reply to a conversation ending with a user turn starts: right after the
        text a retry quotes (``<<<END``), at the text a continuation turn asks to repeat
        (``<<<REPEAT``), else at ``default`` (the start of the document, or where the
        conversation continued left off)."""
        last = messages[-1]["content"] if messages and messages[-1]["role"] == "user" else ""
        if (quoted := _between(last, "<<<END\n", "\nEND>>>")) is not None:
            end = self.end_of(quoted)
            if end is not None:
                return end
        if (repeat := _between(last, REPEAT_OPEN, REPEAT_CLOSE)) is not None:
            end = self.end_of(repeat)
            if end is not None:
                return end - len(repeat)
        return default

    async def handle(self, request: Request) -> Response:
        raw = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        self.request_id = self.new_request_id(next(self.request_ids))
        self.requests.append(Recorded(body, headers, self.request_id))
        response = await self.respond(body, headers)
        if self.sends_request_id:
            response.headers[self.request_id_header] = self.request_id
        return response

    async def respond(self, body: Any, headers: dict[str, str]) -> Response:
        sent = self.last_key = self.sent_key(headers)
        if self.key is not None and sent != self.key:
            return self.auth_error(sent)
        if self.script:
            return await self.script.pop(0)(self, body)
        return await self.answer(body, headers)

    # -- scripted misbehaviour, the same for every provider --
    def rate_limited(
        self, retry_after: str | None = "2", retry_after_ms: str | None = None
    ) -> None:
        """A 429 with ``Retry-After`` and, when given, ``retry-after-ms`` (OpenAI sends
        both: the seconds rounded up, the exact wait in milliseconds)."""
        headers = {"retry-after": retry_after} if retry_after is not None else {}
        if retry_after_ms is not None:
            headers["retry-after-ms"] = retry_after_ms
        self.script.append(lambda f, b: _now(f.rate_limit(headers or None)))

    def server_error(self, status: int = 500) -> None:
        self.script.append(lambda f, b: _now(f.server_fault(status)))

    def fail(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        """Answer the next request with this provider's error body."""
        self.script.append(lambda f, b: _now(f.error(status, message, kind)))

    def bad_request(self) -> None:
        self.script.append(lambda f, b: _now(f.invalid(b)))

    def raw(self, content: bytes | str, media_type: str = "application/json") -> None:
        self.script.append(lambda f, b: _now(Response(content, 200, media_type=media_type)))

    def json(self, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        """Answer the next request with this JSON body, as given."""
        self.script.append(lambda f, b: _now(JSONResponse(body, status, headers=headers)))

    def slow(self, seconds: float) -> None:
        async def act(fake: Fake, body: dict[str, Any]) -> Response:
            await asyncio.sleep(seconds)
            return await fake.answer(body, {})

        self.script.append(act)

    def leak(self, text: str) -> str:
        return f"{text} (you sent {self.last_key})" if self.echo_key else text

    def rate_limit(self, headers: dict[str, str] | None) -> JSONResponse:
        raise NotImplementedError

    def server_fault(self, status: int) -> JSONResponse:
        raise NotImplementedError

    def invalid(self, body: dict[str, Any]) -> JSONResponse:
        raise NotImplementedError


async def _now(response: Response) -> Response:
    return response


def _between(text: str, opening: str, closing: str) -> str | None:
    """The text of the last ``opening … closing`` block, if there is one."""
    start = text.rfind(opening)
    if start < 0:
        return None
    end = text.find(closing, start + len(opening))
    return None if end < 0 else text[start + len(opening) : end]


class Switchboard:
    """One server for every fake: each test installs a fresh fake, which answers on its
    provider's path (starting a server per test would cost more than the tests)."""

    def __init__(self) -> None:
        self.fake: Fake | None = None

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/{endpoint:path}")
        async def endpoint(request: Request) -> Response:
            fake = self.fake
            if fake is None or request.url.path != fake.path:
                return JSONResponse({"detail": "Not Found"}, status_code=404)
            return await fake.handle(request)

        return app


# -- OpenAI -------------------------------------------------------------------------------


class OpenAIFake(Fake):
    """What OpenAI's endpoints share: bearer auth, the ``{"error": {...}}`` body and the
    ``x-request-id`` header."""

    request_id_header = "x-request-id"

    def new_request_id(self, n: int) -> str:
        return f"req_{n:032x}"

    def error_body(self, status: int, message: str, kind: str) -> dict[str, Any]:
        code = {"invalid_api_key": "invalid_api_key", "rate_limit": "rate_limit_exceeded"}
        type_ = {"rate_limit": "requests", "server": "server_error"}.get(kind, kind)
        return {
            "error": {
                "message": self.leak(message),
                "type": type_,
                "param": None,
                "code": code.get(kind),
            }
        }

    def sent_key(self, headers: dict[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None

    def auth_error(self, sent: str | None) -> JSONResponse:
        if sent is None:
            message = (
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY),"
                " or as the password field (with blank username) if you're accessing the API "
                "from your browser and are prompted for a username and password. You can "
                "obtain an API key from https://platform.openai.com/account/api-keys."
            )
            body = self.error_body(401, message, "invalid_request_error")
            body["error"]["code"] = None
            return JSONResponse(body, status_code=401)
        masked = f"{sent[:3]}***{sent[-4:]}" if len(sent) > 8 else "***"
        message = (
            f"Incorrect API key provided: {masked}. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
        return self.error(401, message, "invalid_api_key")

    def rate_limit(self, headers: dict[str, str] | None) -> JSONResponse:
        message = (
            "Rate limit reached for gpt-4.1-mini in organization org-fake on requests per min"
            " (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit "
            "https://platform.openai.com/account/rate-limits to learn more."
        )
        return self.error(429, message, "rate_limit", headers)

    def server_fault(self, status: int) -> JSONResponse:
        message = "The server had an error while processing your request. Sorry about that!"
        return self.error(status, message, "server")

    def invalid(self, body: dict[str, Any]) -> JSONResponse:
        return self.missing({}, "model") or self.error(400, "?", "invalid_request_error")

    def missing(self, body: dict[str, Any], *names: str) -> JSONResponse | None:
        for name in names:
            if name not in body:
                return JSONResponse(
                    {
                        "error": {
                            "message": self.leak(f"Missing required parameter: '{name}'."),
                            "type": "invalid_request_error",
                            "param": name,
                            "code": "missing_required_parameter",
                        }
                    },
                    status_code=400,
                )
        return None


class ChatFake(OpenAIFake):
    """``POST /v1/chat/completions``. ``reasoning``: a model that refuses ``max_tokens``;
    ``says_stop_when_cut``: a server that reports ``stop`` for a cut reply (Ollama);
    ``vllm``: accepts ``continue_final_message`` (with ``add_generation_prompt: false``) and
    continues the final assistant message exactly, returning only what follows it;
    ``template_drops_final``: a vLLM whose chat template cannot continue that message (it
    rewrites assistant content), refused as vLLM refuses it."""

    path = "/v1/chat/completions"
    reasoning: bool = False
    says_stop_when_cut: bool = False
    vllm: bool = False
    template_drops_final: bool = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(kind="openai", key_env="OPENAI_API_KEY", **kwargs)

    async def answer(self, body: dict[str, Any], headers: dict[str, str]) -> Response:
        if (missing := self.missing(body, "model", "messages")) is not None:
            return missing
        if self.reasoning and "max_tokens" in body:
            return JSONResponse(
                {
                    "error": {
                        "message": "Unsupported parameter: 'max_tokens' is not supported with "
                        "this model. Use 'max_completion_tokens' instead.",
                        "type": "invalid_request_error",
                        "param": "max_tokens",
                        "code": "unsupported_parameter",
                    }
                },
                status_code=400,
            )
        if not self.vllm and "continue_final_message" in body:
            return self.error(
                400,
                "Unrecognized request argument supplied: continue_final_message",
                "invalid_request_error",
            )
        messages = body["messages"]
        position = self.resume(messages)
        if body.get("continue_final_message"):
            if body.get("add_generation_prompt", True):
                return vllm_error(
                    "Cannot set both `continue_final_message` and `add_generation_prompt` to True."
                )
            if self.template_drops_final:
                return vllm_error(
                    "continue_final_message is set but the final message does not appear in "
                    "the chat after applying the chat template! This can happen if the chat "
                    "template deletes portions of the final message. Please verify the chat "
                    "template and final message in your chat to ensure they are compatible."
                )
            final = messages[-1]["content"]
            end = self.end_of(final.strip())  # the chat template's cut: after the text
            position = 0 if end is None else end
        limit = body.get("max_completion_tokens", body.get("max_tokens", 10_000))
        text, _, whole = self.continue_from(position, limit)
        reason = "stop" if whole or self.says_stop_when_cut else "length"
        n = next(self.ids)
        prompt = self.requests[-1].input_tokens = sum(count(m["content"]) for m in messages)
        return JSONResponse(
            chat_completion(
                f"chatcmpl-{n}", body["model"], text, reason, prompt=prompt, out=count(text)
            )
        )


def vllm_error(message: str) -> JSONResponse:
    """A 400 in vLLM's error shape (what its request validation answers)."""
    return JSONResponse(
        {
            "object": "error",
            "message": message,
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        status_code=400,
    )


def chat_completion(
    id_: str,
    model: str,
    content: str | None,
    finish_reason: str | None,
    *,
    prompt: int = 3,
    out: int = 0,
) -> dict[str, Any]:
    return {
        "id": id_,
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": f"{model}-2025-04-14" if model.startswith("gpt-") else model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "refusal": None,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": out,
            "total_tokens": prompt + out,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": None,
    }


class ResponsesFake(OpenAIFake):
    """``POST /v1/responses``, stateful: a reply starts where the input's last turn asks
    (as ``resume``), else where the ``previous_response_id`` left the document. Billed as
    OpenAI bills it: a call's input tokens are its instructions and input plus the whole
    conversation it continues (every earlier input and output of the chain; earlier
    instructions and reasoning are not carried over). ``reasoning_tokens``: tokens a
    reasoning model spends thinking before it writes (it may spend the whole limit and
    write nothing)."""

    path = "/v1/responses"
    reasoning_tokens: int = 0

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(kind="openai-responses", key_env="OPENAI_API_KEY", **kwargs)
        # response id -> (position in the document, tokens of its conversation)
        self.stored: dict[str, tuple[int, int]] = {}

    async def answer(self, body: dict[str, Any], headers: dict[str, str]) -> Response:
        if (missing := self.missing(body, "model")) is not None:
            return missing
        limit = body.get("max_output_tokens")
        if isinstance(limit, int) and limit < 16:
            return JSONResponse(
                {
                    "error": {
                        "message": "Invalid 'max_output_tokens': integer below minimum value. "
                        f"Expected a value >= 16, but got {limit} instead.",
                        "type": "invalid_request_error",
                        "param": "max_output_tokens",
                        "code": "integer_below_min_value",
                    }
                },
                status_code=400,
            )
        previous = body.get("previous_response_id")
        if previous is not None and previous not in self.stored:
            return JSONResponse(
                {
                    "error": {
                        "message": f"Previous response with id '{previous}' not found.",
                        "type": "invalid_request_error",
                        "param": "previous_response_id",
                        "code": "previous_response_not_found",
                    }
                },
                status_code=400,
            )
        inputs = body.get("input")
        turns = [{"role": "user", "content": inputs}] if isinstance(inputs, str) else inputs or []
        left_off, chain = self.stored[previous] if previous else (0, 0)
        position = self.resume(turns, left_off)
        budget = (limit or 10_000) - self.reasoning_tokens
        text, end, whole = self.continue_from(position, max(budget, 0))
        if budget <= 0:
            text, end, whole = "", position, False
        n = next(self.ids)
        rid = f"resp_{n:048x}"
        sent = sum(count(turn.get("content", "")) for turn in turns)
        self.stored[rid] = (end, chain + sent + count(text))
        output: list[dict[str, Any]] = []
        if self.reasoning_tokens:
            output.append({"id": f"rs_{n:048x}", "type": "reasoning", "summary": []})
        if text:
            output.append(
                {
                    "id": f"msg_{n:048x}",
                    "type": "message",
                    "status": "completed" if whole else "incomplete",
                    "role": "assistant",
                    "content": [{"type": "output_text", "annotations": [], "text": text}],
                }
            )
        prompt = chain + sent + count(body.get("instructions") or "")
        self.requests[-1].input_tokens = prompt
        out = count(text) + self.reasoning_tokens
        reply = responses_body(
            rid, body["model"], output, prompt=prompt, out=out, reasoning=self.reasoning_tokens
        )
        reply |= {
            "status": "completed" if whole else "incomplete",
            "incomplete_details": None if whole else {"reason": "max_output_tokens"},
            "instructions": body.get("instructions"),
            "max_output_tokens": limit,
            "previous_response_id": previous,
        }
        return JSONResponse(reply)


def responses_body(
    rid: str,
    model: str,
    output: list[dict[str, Any]],
    *,
    prompt: int = 3,
    out: int = 0,
    reasoning: int = 0,
) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": 1_760_000_000,
        "status": "completed",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": f"{model}-2025-04-14" if model.startswith("gpt-") else model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": prompt + out,
        },
        "user": None,
        "metadata": {},
    }


# -- Anthropic ----------------------------------------------------------------------------


class AnthropicFake(Fake):
    """``POST /v1/messages``. A final assistant message is a prefill: the model continues the
    document from the end of it. ``refuses_prefill``: a newer model that rejects it."""

    path = "/v1/messages"
    request_id_header = "request-id"
    refuses_prefill: bool = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(kind="anthropic", key_env="ANTHROPIC_API_KEY", **kwargs)

    def new_request_id(self, n: int) -> str:
        return f"req_011C{n:020d}"

    def error_body(self, status: int, message: str, kind: str) -> dict[str, Any]:
        return {
            "type": "error",
            "error": {"type": kind, "message": self.leak(message)},
            "request_id": self.request_id,  # the header's, as Anthropic sends it
        }

    def sent_key(self, headers: dict[str, str]) -> str | None:
        return headers.get("x-api-key")

    def auth_error(self, sent: str | None) -> JSONResponse:
        message = "x-api-key header is required" if sent is None else "invalid x-api-key"
        return self.error(401, message, "authentication_error")

    def rate_limit(self, headers: dict[str, str] | None) -> JSONResponse:
        message = (
            "This request would exceed the rate limit for your organization (fake) of 50 "
            "requests per minute. For details, refer to: https://docs.claude.com/en/api/"
            "rate-limits. You can see the response headers for current usage. Please reduce "
            "the prompt length or the maximum tokens requested, or try again later."
        )
        return self.error(429, message, "rate_limit_error", headers)

    def server_fault(self, status: int) -> JSONResponse:
        if status == 529:
            return self.error(529, "Overloaded", "overloaded_error")
        return self.error(status, "Internal server error", "api_error")

    def invalid(self, body: dict[str, Any]) -> JSONResponse:
        return self.error(400, "max_tokens: Field required", "invalid_request_error")

    async def answer(self, body: dict[str, Any], headers: dict[str, str]) -> Response:
        if "anthropic-version" not in headers:
            return self.error(400, "anthropic-version: header is required", "invalid_request_error")
        for name in ("model", "max_tokens", "messages"):
            if name not in body:
                return self.error(400, f"{name}: Field required", "invalid_request_error")
        messages = body["messages"]
        for i, message in enumerate(messages):
            if message["role"] not in ("user", "assistant"):
                return self.error(
                    400,
                    f"messages.{i}.role: Input should be 'user' or 'assistant'",
                    "invalid_request_error",
                )
        position = self.resume(messages)
        if messages and messages[-1]["role"] == "assistant":
            prefill = messages[-1]["content"]
            if self.refuses_prefill:
                return self.error(
                    400,
                    "This model does not support assistant message prefill. The conversation "
                    "must end with a user message.",
                    "invalid_request_error",
                )
            if prefill != prefill.rstrip():
                return self.error(
                    400,
                    "messages: final assistant content cannot end with trailing whitespace",
                    "invalid_request_error",
                )
            end = self.end_of(prefill)
            position = 0 if end is None else end
        text, _, whole = self.continue_from(position, body["max_tokens"])
        prompt = sum(count(m["content"]) for m in messages) + count(body.get("system", ""))
        self.requests[-1].input_tokens = prompt
        return JSONResponse(
            anthropic_message(
                f"msg_01{next(self.ids):022d}",
                body["model"],
                [{"type": "text", "text": text}],
                "end_turn" if whole else "max_tokens",
                prompt=prompt,
                out=count(text),
            )
        )


def anthropic_message(
    id_: str,
    model: str,
    content: list[dict[str, Any]],
    stop: str | None,
    *,
    prompt: int = 3,
    out: int = 0,
) -> dict[str, Any]:
    return {
        "id": id_,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": out,
            "service_tier": "standard",
        },
    }


# -- adapters pointed at a fake ------------------------------------------------------------

MODELS = {"openai": "gpt-4.1-mini", "openai-responses": "gpt-4.1-mini", "anthropic": "claude-x"}


F = TypeVar("F", bound=Fake)


@dataclass
class Served(Generic[F]):
    """A fake provider on a real server, and the adapters a test made for it."""

    fake: F
    url: str
    made: list[HttpProvider] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        # OpenAI's base URL ends in /v1; Anthropic's adapter adds /v1/messages itself.
        return self.url if self.fake.kind == "anthropic" else f"{self.url}/v1"

    def profile(self, **changes: Any) -> Profile:
        fields: dict[str, Any] = {
            "name": f"test-{self.fake.kind}",
            "kind": self.fake.kind,
            "base_url": self.base_url,
            "api_key_env": self.fake.key_env,
            "model": MODELS[self.fake.kind],
            "price_input_per_mtok": 2.0,
            "price_output_per_mtok": 8.0,
            "timeout_s": 2.0,
            "max_retries": 2,
            "backoff_base_s": 0.01,
            "backoff_cap_s": 5.0,
        }
        return Profile(**(fields | changes))

    def provider(self, env: Mapping[str, str] | None = None, **changes: Any) -> HttpProvider:
        """An adapter for this fake; ``env`` holds its key (default: none, not os.environ)."""
        made = make_provider(self.profile(**changes), env=env if env is not None else {})
        assert isinstance(made, HttpProvider)
        self.made.append(made)
        return made

    def close(self) -> None:
        for provider in self.made:
            provider.close()


def ask(text: str = "Write the list.", **kwargs: Any) -> CallRequest:
    """A one-message request (1000 tokens unless told)."""
    fields: dict[str, Any] = {"max_output_tokens": 1000} | kwargs
    return CallRequest(messages=[Message(role="user", content=text)], **fields)
