"""Every error the API returns has one shape: ``{"error": code, "detail": text}``.

``error`` is a stable machine-readable code, ``detail`` one readable line that names the
problem. A request that fails validation adds ``errors``: one entry per problem with its
location (``["body", "continuation", "max_attempts"]``, ``["path", "job_id"]``), message
and pydantic error type. A job in the wrong state for the request (a result asked of a
running job, a cancel of an ended one) adds the job's ``status``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Route
from starlette.types import Send

from core.errors import ContinuumError, describe
from workers.errors import NotReplicated

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    500: "internal_error",
    503: "unavailable",
}

#: Seconds a client should wait before retrying when Redis is unreachable.
RETRY_AFTER_S = 5


class ApiError(ContinuumError):
    """Raised when a route answers with an error: ``status``, a code, a readable
    ``detail`` and extra fields (the tree: ``workers.errors``)."""

    def __init__(
        self,
        http_status: int,
        detail: str,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        job_status: str | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.errors = errors
        self.http_status = http_status
        self.code = code or CODES.get(http_status, "error")
        self.detail = detail
        self.headers = headers
        self.job_status = job_status

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.code, "detail": self.detail}
        if self.job_status is not None:
            out["status"] = self.job_status
        if self.errors is not None:
            out["errors"] = self.errors
        return out


def error_body(status: int, detail: str, code: str | None = None) -> dict[str, Any]:
    return {"error": code or CODES.get(status, "error"), "detail": detail}


def _where(loc: Sequence[int | str]) -> str:
    """A readable location: ``prompt``, ``continuation.max_attempts``, ``path job_id``."""
    if not loc:
        return "request"
    head, rest = str(loc[0]), ".".join(str(p) for p in loc[1:])
    if head == "body":
        return rest or "body"
    if head in {"path", "query", "header", "cookie"}:
        return f"{head} parameter {rest}" if rest else head
    return ".".join(str(p) for p in loc)


def _message(error: dict[str, Any]) -> str:
    return str(error.get("msg", "invalid")).removeprefix("Value error, ")


def describe_errors(errors: Sequence[Any]) -> str:
    """One line per problem, each naming its field (as ``core.models.describe_errors``, with
    request locations)."""
    return "; ".join(f"{_where(e.get('loc', ()))}: {_message(e)}" for e in errors)


def _entries(errors: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        {"loc": [p if isinstance(p, int) else str(p) for p in e.get("loc", ())],
         "msg": _message(e), "type": str(e.get("type", "value_error"))}
        for e in errors
    ]  # fmt: skip


def _is_json(content_type: str | None) -> bool:
    kind = (content_type or "").split(";")[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


#: A body that was not read as JSON (its Content-Type says otherwise) fails as one of these.
_NOT_AN_OBJECT = {"model_attributes_type", "dict_type", "model_type"}


async def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    content_type = request.headers.get("content-type")
    if not _is_json(content_type) and any(
        tuple(e.get("loc", ())) == ("body",) and e.get("type") in _NOT_AN_OBJECT for e in errors
    ):
        detail = (
            f"the request body must be JSON sent as Content-Type: application/json "
            f"(got {content_type or 'no Content-Type'})"
        )
        return JSONResponse(error_body(415, detail), status_code=415)
    broken = [e for e in errors if e.get("type") == "json_invalid"]
    if broken:
        ctx = broken[0].get("ctx") or {}
        at = broken[0].get("loc", ())
        where = f" at character {at[-1]}" if len(at) > 1 and isinstance(at[-1], int) else ""
        why = ctx.get("error", "")
        detail = f"the request body is not valid JSON{where}" + (f": {why}" if why else "")
        return JSONResponse(error_body(400, detail, "invalid_json"), status_code=400)
    body = error_body(422, describe_errors(errors))
    body["errors"] = _entries(errors)
    return JSONResponse(body, status_code=422)


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return JSONResponse(exc.body(), status_code=exc.http_status, headers=exc.headers)


def _path_regex(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}/]+\})", template)
    return re.compile("".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts))


def _allowed(request: Request) -> list[str]:
    """Every method the request's path serves, from the OpenAPI document (Starlette's 405
    names the methods of one route only)."""
    app = request.app
    table: list[tuple[re.Pattern[str], set[str]]] | None = getattr(app.state, "allow", None)
    if table is None:
        table = []
        for template, operations in app.openapi().get("paths", {}).items():
            methods = {m.upper() for m in operations}
            table.append(
                (_path_regex(template), methods | ({"HEAD"} if "GET" in methods else set()))
            )
        app.state.allow = table
    found: set[str] = set()
    for regex, methods in table:
        if regex.fullmatch(request.url.path):
            found |= methods
    for route in app.router.routes:  # the docs' own routes (not in the document)
        if isinstance(route, Route) and route.methods:
            match, _ = route.matches(request.scope)  # PARTIAL: the path, not the method
            if match is not Match.NONE:
                found |= route.methods
    return sorted(found)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    headers = dict(exc.headers or {})
    if exc.status_code == 404 and detail == "Not Found":
        detail = "no such path"
    if exc.status_code == 400 and detail == "There was an error parsing the body":
        detail = "the request body could not be read as JSON (not UTF-8, or nested too deeply)"
    if exc.status_code == 405:
        allowed = _allowed(request) or [headers.get("Allow", "")]
        headers["Allow"] = ", ".join(allowed)
        detail = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
    return JSONResponse(
        error_body(exc.status_code, detail), status_code=exc.status_code, headers=headers
    )


async def _unavailable(_: Request, exc: Exception) -> JSONResponse:
    detail = f"Redis is unreachable: {describe(exc)}"
    if isinstance(exc, NotReplicated):
        detail = f"Redis took the submission but no replica confirmed it: {describe(exc)}"
    return JSONResponse(
        error_body(503, detail),
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


async def _internal(_: Request, exc: Exception) -> JSONResponse:
    return JSONResponse(
        error_body(500, f"internal error ({type(exc).__name__}); see the API's log"),
        status_code=500,
    )


def install(app: FastAPI) -> None:
    """Register the handlers that give every error the one shape."""
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RedisError, _unavailable)
    app.add_exception_handler(OperationalError, _unavailable)
    app.add_exception_handler(Exception, _internal)


async def send_error(send: Send, status: int, detail: str, headers: dict[str, str]) -> None:
    """Answer from a pure ASGI middleware (before any route runs), in the same shape."""
    payload = json.dumps(error_body(status, detail)).encode()
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})
