"""The interactive documentation (Swagger UI at ``/docs``), served from this machine.

FastAPI's own ``/docs`` page loads Swagger UI's script and stylesheet from a CDN: without
internet it is blank. Here they come from the ``fastapi-offline`` wheel (Swagger UI 5,
which reads the OpenAPI 3.1 document FastAPI writes), one fixed route per file beside the
page, so no other file of the package is reachable. The page asks no other host for
anything: the favicon is local and the online validator badge is off.

``/docs``, its assets and ``/openapi.json`` are public (they hold no job data); the
``/v1`` routes still need the bearer token, which the page's **Authorize** button sends.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

DOCS_URL: Final = "/docs"
STATIC: Final = Path(str(files("fastapi_offline") / "static"))
#: The files the page loads, by name, with their media types.
ASSETS: Final = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
#: Swagger UI's settings. ``validatorUrl: null``: its badge would send the document to
#: validator.swagger.io. The token typed in Authorize is kept only until the page closes.
SWAGGER_UI: Final[dict[str, Any]] = {
    "validatorUrl": None,
    "persistAuthorization": False,
    "displayRequestDuration": True,
    "defaultModelsExpandDepth": 0,
}

DESCRIPTION: Final = """\
Jobs run as long as they need, continued past a model's output limit; read their output
while they run.

**Auth.** When the server has a token (`CONTINUUM_API_TOKEN`), every `/v1` route needs
`Authorization: Bearer <token>` and answers 401 without it: press **Authorize** and paste
the token. Without a token the API serves only on loopback. This page, its assets,
`/openapi.json` and `/healthz` are open.

**Errors** are JSON, `{"error": "<code>", "detail": "<one line>"}`; a 422 adds `errors`,
one entry per problem with its location. See `docs/api.md`.
"""


def install_docs(app: FastAPI) -> None:
    """Serve the docs page and its assets on ``app`` (built with ``docs_url=None``)."""
    for name, media_type in ASSETS.items():
        path = f"{DOCS_URL}/{name}"
        app.add_api_route(path, _asset(STATIC / name, media_type), include_in_schema=False)

    @app.get(DOCS_URL, include_in_schema=False)
    def docs(request: Request) -> HTMLResponse:
        # Behind a proxy (``--root-path``) the page's URLs carry the prefix, as FastAPI's
        # own page does.
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title}: documentation",
            swagger_js_url=f"{root}{DOCS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_URL}/favicon.png",
            oauth2_redirect_url=None,
            swagger_ui_parameters=SWAGGER_UI,
        )


def _asset(path: Path, media_type: str) -> Callable[[], FileResponse]:
    def asset() -> FileResponse:
        return FileResponse(path, media_type=media_type)

    return asset
