"""Pure ASGI middleware: the request body limit.

It reads nothing itself: it counts the bytes as the app reads them, so a request the app
answers without reading its body (no such route, no token: ``api.auth``) is refused
unread. Auth is not here: it is declared per route (``api.auth``).
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import send_error
from core.errors import ContinuumError


class BodyTooLarge(ContinuumError, HTTPException):
    """Raised when the body being read is over the limit; rendered as 413 by the API's
    handler of HTTP errors (``api.errors``), or here when it escapes them."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(
            413,
            f"the request body is larger than {max_bytes} bytes",
            headers={"Connection": "close"},
        )


class BodyLimit:
    """Refuse a request body over ``max_bytes`` (413): at its first read when its
    Content-Length says so, else as soon as the bytes read exceed it (a chunked body has
    no length). An invalid Content-Length is a 400 at once."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None and not length.strip().isdigit():
            await send_error(send, 400, f"invalid Content-Length: {length!r}", {})
            return
        declared = int(length) if length is not None else 0
        read = 0
        started = False

        async def limited() -> Message:
            nonlocal read
            if declared > self.max_bytes:
                raise BodyTooLarge(self.max_bytes)
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except BodyTooLarge as exc:
            if started:
                raise
            await send_error(send, 413, str(exc.detail), dict(exc.headers or {}))
