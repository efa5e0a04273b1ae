"""The simulated model over HTTP: a FastAPI app, and the same logic as an httpx transport.

Routes (OpenAI-compatible where OpenAI has them; errors always in OpenAI's shape
``{"error": {"message", "type", "param", "code"}}``; an ``Authorization`` header is
accepted and ignored):

- ``POST /v1/chat/completions``: a Chat Completions call.
- ``GET /v1/models``: the one model, ``sim`` (``sim:key=value,...`` selects options).
- ``POST /sim/target``: ``{"prompt", "model"?, "seed"?, "format"?}`` or ``{"messages", ...}`` ->
  ``{"target": ...}``, the whole document a job's replies are cut from.
- ``GET /healthz``.

``make_transport`` serves the same routes in-process for fast tests: latency sleeps, and
the timeout knob raises ``httpx.ReadTimeout`` at once instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from sim.conversation import RequestError
from sim.model import SimModel
from sim.options import SimOptions
from sim.replies import SimResult, error

_ERROR_KINDS = {404: "not_found_error", 405: "invalid_request_error"}


def models_result() -> SimResult:
    model = {"id": "sim", "object": "model", "created": 0, "owned_by": "continuum"}
    return SimResult(status=200, body={"object": "list", "data": [model]})


def target_result(model: SimModel, body: Any) -> SimResult:
    if not isinstance(body, dict):
        return error(400, "the request body must be a JSON object", "invalid_request_error", None)
    try:
        return SimResult(status=200, body={"target": model.target_for(body)})
    except RequestError as exc:
        return error(400, str(exc), "invalid_request_error", "invalid_request")


def _decode(raw: bytes) -> tuple[Any, SimResult | None]:
    try:
        return json.loads(raw), None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        message = f"the request body is not valid JSON: {exc}"
        return None, error(400, message, "invalid_request_error", "invalid_json")


def dispatch(model: SimModel, method: str, path: str, raw: bytes) -> SimResult:
    """Answer one HTTP request (the transport's router; the app routes the same way)."""
    routes = {
        "/v1/chat/completions": "POST",
        "/chat/completions": "POST",
        "/v1/models": "GET",
        "/sim/target": "POST",
        "/healthz": "GET",
    }
    path = path.rstrip("/") or "/"
    if path not in routes:
        return error(404, f"unknown path {path}", "not_found_error", "not_found")
    if method != routes[path]:
        return error(405, f"{method} not allowed on {path}", "invalid_request_error", None)
    if path == "/v1/models":
        return models_result()
    if path == "/healthz":
        return SimResult(status=200, body={"status": "ok"})
    body, failed = _decode(raw)
    if failed is not None:
        return failed
    if path == "/sim/target":
        return target_result(model, body)
    return model.respond(body)


def _response(result: SimResult) -> JSONResponse:
    return JSONResponse(result.body, status_code=result.status, headers=result.headers)


def create_app(options: SimOptions | None = None) -> FastAPI:
    """The simulator as an ASGI app (run it with uvicorn, or ``continuum sim``)."""
    model = SimModel(options)
    app = FastAPI(
        title="Continuum simulated LLM",
        description="An OpenAI-compatible model that writes long deterministic documents.",
    )
    app.state.model = model

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = _ERROR_KINDS.get(exc.status_code, "invalid_request_error")
        return _response(error(exc.status_code, str(exc.detail), kind, None))

    async def answer(request: Request) -> JSONResponse:
        raw = await request.body()
        result = await run_in_threadpool(dispatch, model, request.method, request.url.path, raw)
        if result.delay > 0:
            await asyncio.sleep(result.delay)
        return _response(result)

    app.add_api_route("/v1/chat/completions", answer, methods=["POST"])
    app.add_api_route("/chat/completions", answer, methods=["POST"], include_in_schema=False)
    app.add_api_route("/sim/target", answer, methods=["POST"])

    @app.get("/v1/models")
    async def models() -> JSONResponse:
        return _response(models_result())

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def make_transport(
    options: SimOptions | None = None, *, model: SimModel | None = None
) -> httpx.MockTransport:
    """The simulator in-process, for ``httpx.Client(transport=...)``.

    ``model``: share one ``SimModel`` (its chaos RNG and document cache) between
    transports, or with a test that asks it for targets.
    """
    sim = model or SimModel(options)

    def handle(request: httpx.Request) -> httpx.Response:
        result = dispatch(sim, request.method, request.url.path, request.read())
        if result.hang:
            raise httpx.ReadTimeout("simulated timeout: the model hangs", request=request)
        if result.delay > 0:
            time.sleep(result.delay)
        return httpx.Response(result.status, json=result.body, headers=result.headers)

    return httpx.MockTransport(handle)
