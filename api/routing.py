"""What the ``/v1`` routers share: their auth and the OpenAPI entries of their responses."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Security

from api.auth import AuthFirstRoute, BearerAuth
from api.models import ErrorBody, ValidationErrorBody

LOCATION = {"Location": {"description": "The new resource.", "schema": {"type": "string"}}}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The error body of each status code (422: the validation error's)."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        model = ValidationErrorBody if code == 422 else ErrorBody
        out[code] = {"model": model}
    return out


def v1_router(auth: BearerAuth | None) -> APIRouter:
    """A router of ``/v1`` routes, each depending on ``auth`` (none: local-only, no token).

    The auth is the router's own, not inherited from a router it is included in: only a
    route's own dependencies are checked before its body is read (``AuthFirstRoute``).
    """
    return APIRouter(
        prefix="/v1",
        dependencies=[Security(auth)] if auth is not None else [],
        responses=error_responses(401) if auth is not None else {},
        route_class=AuthFirstRoute,
    )
