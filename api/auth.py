"""Bearer-token auth, declared on the routes that need it (never by matching the path).

``BearerAuth`` is a dependency of the ``/v1`` router: it refuses a request without
``Authorization: Bearer <token>`` (401, in the API's error shape), whatever prefix a proxy
or ``--root-path`` puts in front of the path. ``AuthFirstRoute`` runs it before FastAPI
reads the body (FastAPI reads and parses a body before it solves any dependency), so an
unauthenticated request is refused unread, with 401 whatever its body.

Without a token the API serves ``/v1`` to anyone who reaches it, so it refuses to be
built (:class:`NoToken`) unless told it is local-only: ``CONTINUUM_API_INSECURE_LOCAL``,
which ``continuum api`` sets when it binds to loopback or is given ``--insecure-local``.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from starlette.requests import HTTPConnection

from api.errors import ApiError
from core.errors import ContinuumError

TOKEN_SETTING = "CONTINUUM_API_TOKEN"
LOCAL_SETTING = "CONTINUUM_API_INSECURE_LOCAL"


class NoToken(ContinuumError, RuntimeError):
    """Raised when the API would serve ``/v1`` without a token and was not told that only
    this machine can reach it."""

    def __init__(self) -> None:
        super().__init__(
            f"{TOKEN_SETTING} is not set: refusing to serve /v1 without a bearer token; "
            f"set it, or set {LOCAL_SETTING}=1 if only this machine can reach the API"
        )


class BearerAuth(HTTPBearer):
    """The ``/v1`` dependency: 401 unless ``Authorization: Bearer <token>`` (the scheme in
    any case) carries the token, compared in constant time. Declared in the OpenAPI
    document as the ``HTTPBearer`` scheme."""

    def __init__(self, token: str) -> None:
        super().__init__(scheme_name="HTTPBearer", description=TOKEN_SETTING, auto_error=False)
        self.token = token.encode("utf-8")

    async def __call__(self, request: HTTPConnection) -> None:
        header = request.headers.get("authorization")
        if header is None:
            raise _unauthorized("missing bearer token (Authorization: Bearer <token>)", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            detail = "the Authorization header must be 'Bearer <token>'"
            raise _unauthorized(detail, "invalid_request")
        # Constant time whatever the token given: compare_digest on bytes of any length.
        if not hmac.compare_digest(given.strip().encode("utf-8"), self.token):
            raise _unauthorized("invalid bearer token", "invalid_token")


def _unauthorized(detail: str, code: str) -> ApiError:
    challenge = 'Bearer realm="continuum"' + (f', error="{code}"' if code else "")
    return ApiError(401, detail, headers={"WWW-Authenticate": challenge})


Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class AuthFirstRoute(APIRoute):
    """A route that runs its :class:`BearerAuth` dependencies before its body is read. The
    dependency runs again where FastAPI solves it: the check is cheap, and stays the one
    rule whatever route class a route has."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        guards = [d.dependency for d in self.dependencies if isinstance(d.dependency, BearerAuth)]
        if not guards or self.body_field is None:
            return handler

        async def guarded(request: Request) -> Response:
            for guard in guards:
                await guard(request)
            return await handler(request)

        return guarded


def is_loopback(host: str) -> bool:
    """``localhost`` or an address in 127.0.0.0/8 or ``::1`` (also IPv4-mapped)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))
