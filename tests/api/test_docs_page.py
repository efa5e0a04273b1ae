"""``/docs`` works without internet (issue 14, item 6).

Swagger UI's script, stylesheet and icon are served by the API itself (``api/docs_assets.py``,
from the ``fastapi-offline`` wheel), the OpenAPI document declares the bearer auth (the
page's Authorize button, a 401 on every ``/v1`` operation), describes every field and
parameter, and offers request examples the API accepts as they are.

The page is rendered by a real headless Chromium (the OS package: ``.ci/run`` installs it)
against a real ``uvicorn --factory api.app:create_app`` process on a free port. The
endpoints must appear in the rendered page, and Chromium's own network log must show
that the page asked no host but the API for anything. Every other host is unresolvable
for that Chromium too, so nothing leaves the machine whatever the page does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.docs_assets import ASSETS
from tests.api.test_security_auth import running, uvicorn_argv
from tests.conftest import free_port

ROOT = Path(__file__).parents[2]
TOKEN = "docs-page-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BROWSER_TIMEOUT = 120.0
#: Milliseconds of page time Chromium runs the page's scripts for before it dumps the DOM
#: (virtual time: it ends as soon as the page is idle).
VIRTUAL_TIME_MS = 20_000
#: Any absolute http(s) URL in a page.
URL = re.compile(r"""https?://[^\s"'<>)]+""")


def _schemas(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(doc["components"]["schemas"])


def _undescribed(doc: dict[str, Any]) -> list[str]:
    """Every property of every schema (nested ones too) without a description, as
    ``Schema.path.to.field``. A bare ``$ref`` counts as described when its target is:
    pydantic leaves out a field's description when it repeats the model's docstring."""
    schemas = _schemas(doc)
    missing: list[str] = []

    def described(prop: dict[str, Any]) -> bool:
        if prop.get("description"):
            return True
        ref = prop.get("$ref", "")
        return bool(ref) and bool(schemas[ref.rsplit("/", 1)[1]].get("description"))

    def walk(where: str, node: Any) -> None:
        if isinstance(node, dict):
            for name, prop in node.get("properties", {}).items():
                if not described(prop):
                    missing.append(f"{where}.{name}")
                walk(f"{where}.{name}", prop)
            for key, value in node.items():
                if key != "properties":
                    walk(where, value)
        elif isinstance(node, list):
            for value in node:
                walk(where, value)

    for name, schema in schemas.items():
        walk(name, schema)
    return missing


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            yield method.upper(), path, operation


# -- the OpenAPI document -----------------------------------------------------------------


def test_the_document_declares_the_bearer_auth_on_every_v1_operation(
    make_api: Callable[..., httpx.Client],
) -> None:
    """With a token: the HTTPBearer scheme (Swagger UI's Authorize button), required by
    every ``/v1`` operation, each of which documents its 401 and its 422. The document
    itself is public."""
    api = make_api(api_token=TOKEN, api_insecure_local=False)
    doc = api.get("/openapi.json").json()
    assert doc["components"]["securitySchemes"] == {
        "HTTPBearer": {
            "type": "http",
            "scheme": "bearer",
            "description": doc["components"]["securitySchemes"]["HTTPBearer"]["description"],
        }
    }
    assert (
        "CONTINUUM_API_TOKEN" in doc["components"]["securitySchemes"]["HTTPBearer"]["description"]
    )
    v1 = [(m, p, op) for m, p, op in _operations(doc) if p.startswith("/v1/")]
    assert len(v1) >= 8
    for method, path, op in v1:
        assert op.get("security") == [{"HTTPBearer": []}], (method, path)
        responses = op["responses"]
        assert responses["401"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorBody"
        }, (method, path)
        assert responses["422"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ValidationErrorBody"
        }, (method, path)
    assert "security" not in doc["paths"]["/healthz"]["get"]
    assert not [p for p in doc["paths"] if p.startswith("/docs")], "the page is not an operation"
    assert "Authorize" in doc["info"]["description"]

    local = make_api().get("/openapi.json").json()  # no token: nothing to authorize
    assert "securitySchemes" not in local.get("components", {})


def test_every_field_parameter_and_operation_is_described(
    make_api: Callable[..., httpx.Client],
) -> None:
    doc = make_api(api_token=TOKEN, api_insecure_local=False).get("/openapi.json").json()
    assert _undescribed(doc) == []
    for method, path, op in _operations(doc):
        assert op.get("summary") and op.get("description"), (method, path)
        for parameter in op.get("parameters", []):
            assert parameter.get("description"), (method, path, parameter["name"])
    # The walk sees nested models (a job's metadata) and the request's models.
    assert {"JobSpec", "ContinuationMetadata", "ValidationOptions"} <= set(_schemas(doc))


def test_the_request_examples_are_accepted_as_they_are(
    make_api: Callable[..., httpx.Client],
) -> None:
    """Each example the page offers (Try it out) is a valid request: 202, queued."""
    api = make_api(api_token=TOKEN, api_insecure_local=False)
    doc = api.get("/openapi.json").json()
    tried = 0
    for path in ("/v1/jobs", "/v1/batches"):
        content = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        assert content["examples"], path
        for name, example in content["examples"].items():
            assert example["summary"], (path, name)
            r = api.post(path, json=example["value"], headers=AUTH)
            assert r.status_code == 202, (path, name, r.text)
            if path == "/v1/batches":
                assert r.json()["invalid"] == {}, (name, r.text)
                jobs = r.json()["jobs"]
            else:
                jobs = [r.json()["job_id"]]
            for job_id in jobs:
                view = api.get(f"/v1/jobs/{job_id}", headers=AUTH).json()
                assert view["status"] == "queued", (path, name, view)
            tried += 1
    assert tried >= 4


# -- the page and its assets, over HTTP ---------------------------------------------------


def test_the_page_and_its_assets_are_public_and_local(
    make_api: Callable[..., httpx.Client],
) -> None:
    """``/docs`` needs no token and names no other host; each asset it loads is served
    here, with its media type."""
    api = make_api(api_token=TOKEN, api_insecure_local=False)
    page = api.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert URL.findall(page.text) == [], "the page names another host"
    loaded = re.findall(r"""(?:src|href)="([^"]+)\"""", page.text)
    assert sorted(loaded) == sorted(f"/docs/{name}" for name in ASSETS)
    for name, media_type in ASSETS.items():
        r = api.get(f"/docs/{name}")
        assert r.status_code == 200, name
        assert r.headers["content-type"] == media_type, name
        assert len(r.content) > 1000, name
    assert "SwaggerUIBundle" in api.get("/docs/swagger-ui-bundle.js").text
    assert '"validatorUrl": null' in page.text, "the online validator badge is on"
    assert api.get("/v1/jobs/nobody").status_code == 401, "the API itself is still guarded"
    assert api.get("/docs/oauth2-redirect").status_code == 404, "no OAuth2 flow to serve"


# -- a real uvicorn process and a real browser ---------------------------------------------


@contextmanager
def api_process(redis_url: str, prefix: str, log: Path, *extra: str) -> Iterator[str]:
    """``uvicorn --factory api.app:create_app`` with a token on a free port; its base URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUUM_API_")}
    env.update(
        REDIS_URL=redis_url,
        CONTINUUM_KEY_PREFIX=prefix,
        CONTINUUM_BROKER_PREFIX=prefix,
        CONTINUUM_QUEUE="q",
        CONTINUUM_API_TOKEN=TOKEN,
    )
    with running(uvicorn_argv(port, *extra), env, port, log) as server:
        yield server.base


@pytest.mark.slow
def test_behind_a_proxy_the_page_loads_its_assets_under_the_prefix(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    """With ``--root-path /prefix`` (a proxy strips the prefix), the page's URLs carry it:
    through the proxy they reach the document and the assets."""
    with api_process(redis_url, redis_prefix, tmp_path / "api.log", "--root-path", "/prefix") as b:
        page = httpx.get(f"{b}/docs", timeout=10).text
        loaded = re.findall(r"""(?:src|href)="([^"]+)\"""", page)
        assert sorted(loaded) == sorted(f"/prefix/docs/{name}" for name in ASSETS)
        assert "url: '/prefix/openapi.json'" in page or '"url": "/prefix/openapi.json"' in page
        for url in loaded:
            stripped = url.removeprefix("/prefix")  # what the proxy sends on
            assert httpx.get(f"{b}{stripped}", timeout=10).status_code == 200, url


def _chromium() -> str:
    """The OS's Chromium. Missing: a skip on a developer's machine, a failure on CI (where
    ``.ci/run`` installs it)."""
    found = shutil.which("chromium")
    if found is None:
        reason = "chromium is not installed (apt-get install chromium; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def _requests_of_the_page(netlog: Path, origin: str) -> list[str]:
    """The URLs the page asked for, from Chromium's network log: the page itself and every
    request it initiated (scripts, styles, fetches), whichever host they were for.
    Chromium's own background requests (no initiator) are left out."""
    log = json.loads(netlog.read_text())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log["events"]:
        params = event.get("params", {})
        if event["type"] != start_job:
            continue
        if params.get("request_type") == "main frame" or params.get("initiator") == origin:
            urls.append(params["url"])
    return urls


def _render(
    chromium: str, url: str, profile: Path, *flags: str
) -> subprocess.CompletedProcess[str]:
    argv = [
        chromium, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={profile}",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-default-apps",
        # Only this machine resolves: nothing the page asked for could leave it.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        f"--virtual-time-budget={VIRTUAL_TIME_MS}", *flags, url,
    ]  # fmt: skip
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=BROWSER_TIMEOUT, check=False
    )


@pytest.mark.slow
def test_the_page_renders_the_endpoints_in_a_browser_from_this_machine_alone(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    chromium = _chromium()
    with api_process(redis_url, redis_prefix, tmp_path / "api.log") as base:
        doc = httpx.get(f"{base}/openapi.json", timeout=10).json()
        netlog = tmp_path / "net.json"
        done = _render(
            chromium, f"{base}/docs", tmp_path / "profile", f"--log-net-log={netlog}", "--dump-dom"
        )
    assert done.returncode == 0, done.stderr[-3000:]
    dom = done.stdout
    # Swagger UI ran: every operation is listed with its method, path and summary, the
    # bearer scheme gives an Authorize button, and it did not fail to read the document.
    assert 'class="swagger-ui' in dom, dom[:2000]
    for method, path, op in _operations(doc):
        row = (
            f'opblock-summary-method">{method}</span>.{{0,300}}?'
            f'data-path="{re.escape(path)}".{{0,300}}?'
            f'opblock-summary-description">{re.escape(op["summary"])}<'
        )
        assert re.search(row, dom), (method, path, op["summary"])
    assert "btn authorize" in dom
    assert "Failed to load API definition" not in dom
    # It asked for its assets and the document, here, and for nothing elsewhere.
    asked = _requests_of_the_page(netlog, base)
    wanted = ("/docs", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css", "/openapi.json")
    assert {base + path for path in wanted} <= set(asked), asked
    assert [url for url in asked if not url.startswith(f"{base}/")] == [], asked
