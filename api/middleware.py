"""Pure ASGI middleware: bearer-token auth and the request body limit.

Both answer before any route runs (and before an unauthenticated body is read), in the
API's error shape (``api.errors``).
"""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import send_error

#: Paths under this prefix need the token (when one is configured); ``/healthz``,
#: ``/docs`` and ``/openapi.json`` stay open.
PROTECTED = "/v1"


class BearerAuth:
    """Refuse ``/v1`` requests without ``Authorization: Bearer <token>`` (401)."""

    def __init__(self, app: ASGIApp, token: str, protected: str = PROTECTED) -> None:
        self.app = app
        self.token = token.encode("utf-8")
        self.protected = protected.rstrip("/")

    def _needs_token(self, path: str) -> bool:
        return path == self.protected or path.startswith(self.protected + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._needs_token(scope["path"]):
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization")
        if header is None:
            await _unauthorized(send, "missing bearer token (Authorization: Bearer <token>)", "")
            return
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            await _unauthorized(
                send, "the Authorization header must be 'Bearer <token>'", "invalid_request"
            )
            return
        # Constant time whatever the token given: compare_digest on bytes of any length.
        if not hmac.compare_digest(given.strip().encode("utf-8"), self.token):
            await _unauthorized(send, "invalid bearer token", "invalid_token")
            return
        await self.app(scope, receive, send)


async def _unauthorized(send: Send, detail: str, code: str) -> None:
    challenge = 'Bearer realm="continuum"' + (f', error="{code}"' if code else "")
    await send_error(send, 401, detail, {"WWW-Authenticate": challenge})


class BodyLimit:
    """Refuse a request body over ``max_bytes`` (413): at once when its Content-Length
    says so, else as soon as the bytes read exceed it (a chunked body has no length).

    The body is read here (it is small: at most ``max_bytes``) and replayed to the app.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None:
            if not length.strip().isdigit():
                await send_error(send, 400, f"invalid Content-Length: {length!r}", {})
                return
            if int(length) > self.max_bytes:
                await self._too_large(send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left mid-body: no answer
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._too_large(send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        pending: list[Message] = [
            {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        ]

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send) -> None:
        detail = f"the request body is larger than {self.max_bytes} bytes"
        await send_error(send, 413, detail, {"Connection": "close"})
