"""Auth is per route, and the API does not serve without a token unless told it is
local-only (issue 11, items 1 and 2).

Item 1 attacks a real ``uvicorn --factory api.app:create_app`` process, with and without
``--root-path /prefix`` (how the API runs behind a proxy, and how the old path-matching
middleware was bypassed): every route of the app but the public ones (``/healthz``, the
docs) refuses a request with no token or a wrong one and answers the right one, asked as
``/v1/...`` and as ``/prefix/v1/...``. The routes come from the app itself, so a route
added without the dependency fails here. Item 2 runs the real ``continuum api`` and
``uvicorn --factory`` processes without a token. Nothing here binds a non-loopback address
that exists: refused binds name TEST-NET addresses (192.0.2.0/24, 2001:db8::/32).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from pydantic import SecretStr
from redis import Redis

from api.app import create_app
from api.auth import AuthFirstRoute, BearerAuth, NoToken, is_loopback
from tests.api.api_support import make_settings, queued
from tests.conftest import free_port

pytestmark = [pytest.mark.security]

ROOT = Path(__file__).parents[2]
TOKEN = "s3cret-route-token"
ROOT_PATH = "/prefix"
#: Deliberately open: the health check and the API's documentation (the page, the assets
#: it loads from this server, the OpenAPI document).
PUBLIC = {
    "/healthz",
    "/docs",
    "/docs/swagger-ui-bundle.js",
    "/docs/swagger-ui.css",
    "/docs/favicon.png",
    "/openapi.json",
}
JOB: dict[str, Any] = {"prompt": "Write the catalogue", "format": "text", "providers": ["sim"]}
#: A valid body for each route that takes one (another route gets ``{}``).
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/jobs"): JOB,
    ("POST", "/v1/batches"): {"specs": [JOB]},
}
#: What a request to each route carries besides (or instead of) the right token.
WRONG = {
    "no header": None,
    "wrong token": f"Bearer {TOKEN}-not",
    "token prefix": f"Bearer {TOKEN[:-1]}",
    "bearer, no token": "Bearer",
    "basic": "Basic dXNlcjpwYXNz",
    "token alone": TOKEN,
}
START_TIMEOUT = 60.0


# -- processes --------------------------------------------------------------------------------


def api_env(redis_url: str, prefix: str, **extra: str) -> dict[str, str]:
    """This environment without any API setting, on the test's Redis and key prefix."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUUM_API_")}
    env.update(
        REDIS_URL=redis_url,
        CONTINUUM_KEY_PREFIX=prefix,
        CONTINUUM_BROKER_PREFIX=prefix,
        CONTINUUM_QUEUE="q",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    base: str
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def running(argv: list[str], env: dict[str, str], port: int, log: Path) -> Iterator[Server]:
    """Run ``argv`` until its ``/healthz`` answers on ``port``; stop it afterwards."""
    with log.open("wb") as fh:
        proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert proc.poll() is None, f"exited ({proc.returncode}):\n{server.text()}"
            try:
                httpx.get(f"{server.base}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, f"not serving:\n{server.text()}"
                time.sleep(0.1)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def uvicorn_argv(port: int, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "uvicorn", "--factory", "api.app:create_app",
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", *extra,
    ]  # fmt: skip


def continuum(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli.main", *args]


@pytest.fixture(params=["", ROOT_PATH], ids=["no-root-path", "root-path"])
def served(
    request: pytest.FixtureRequest, redis_url: str, redis_prefix: str, tmp_path: Path
) -> Iterator[Server]:
    """The API with a token, in a real uvicorn process (with and without a root path)."""
    port = free_port()
    extra = ["--root-path", request.param] if request.param else []
    env = api_env(redis_url, redis_prefix, CONTINUUM_API_TOKEN=TOKEN)
    with running(uvicorn_argv(port, *extra), env, port, tmp_path / "api.log") as server:
        yield server


# -- the app's routes -------------------------------------------------------------------------


def app_routes(redis_url: str, prefix: str) -> list[tuple[str, str]]:
    """(method, path) of every route of the app as built with a token, public ones too."""
    app = create_app(make_settings(redis_url, prefix, api_token=TOKEN, api_insecure_local=False))
    try:
        # ``iter_route_contexts`` sees through included routers (``app.routes`` holds the
        # /v1 router as one entry).
        found = {
            (method, route.path)
            for route in iter_route_contexts(app.routes)
            for method in (route.methods or ())
            if route.path is not None
        }
        documented = {
            (method.upper(), path)
            for path, operations in app.openapi()["paths"].items()
            for method in operations
        }
    finally:
        app.state.service.close()
    assert documented <= found, f"routes the enumeration missed: {documented - found}"
    assert {path for _, path in found} >= PUBLIC, "a public route is gone: update PUBLIC"
    return sorted(found)


def test_every_route_but_the_public_ones_depends_on_the_bearer_token(
    redis_url: str, redis_prefix: str
) -> None:
    """Structurally: each protected route carries ``BearerAuth`` and checks it before its
    body is read (``AuthFirstRoute``)."""
    app = create_app(
        make_settings(redis_url, redis_prefix, api_token=TOKEN, api_insecure_local=False)
    )
    try:
        protected = [r for r in iter_route_contexts(app.routes) if r.path not in PUBLIC]
        assert len(protected) >= 7
        for route in protected:
            guards = [d for d in route.dependencies if isinstance(d.dependency, BearerAuth)]
            assert guards, f"{route.methods} {route.path} does not depend on BearerAuth"
            assert isinstance(route.original_route, AuthFirstRoute), route.path
    finally:
        app.state.service.close()


# -- item 1: on a real uvicorn, with and without a root path ---------------------------------


def _not_routed(r: httpx.Response) -> bool:
    """No route answered (the ids the test uses exist, so a route never says 404 here)."""
    if r.request.method == "HEAD":
        return r.status_code == 404
    return r.status_code == 404 and r.json() == {"error": "not_found", "detail": "no such path"}


@pytest.mark.slow
def test_every_route_refuses_without_the_right_token_with_or_without_a_root_path(
    served: Server, redis_url: str, redis_prefix: str, redis_client: Redis
) -> None:
    """Each route of the app answers the right token and refuses every wrong one (401, in
    the API's error shape), asked with and without the root path; public routes stay open."""
    routes = app_routes(redis_url, redis_prefix)
    created = 2  # the jobs made below for the path parameters
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.base, timeout=15) as http:
        # Something to point the path parameters at, so the right token gets a 200.
        made = http.post("/v1/jobs", json={**JOB, "job_id": "sec-job"}, headers=auth)
        assert made.status_code == 202, made.text
        made = http.post("/v1/batches", json={"specs": [JOB], "batch_id": "sec-b"}, headers=auth)
        assert made.status_code == 202, made.text
        assert http.get("/v1/jobs/sec-job", headers=auth).json()["job_id"] == "sec-job"

        for method, template in routes:
            path = template.format(job_id="sec-job", batch_id="sec-b")
            body = None
            if method in {"POST", "PUT", "PATCH"}:
                body = BODIES.get((method, template), {})
            if template in PUBLIC:
                if method == "GET":
                    assert http.get(path).status_code == 200, path
                continue
            for url in (path, ROOT_PATH + path):
                right = http.request(method, url, json=body, headers=auth)
                if method == "POST" and right.status_code == 202:
                    created += 1  # one spec each
                assert right.status_code not in {401, 403, 405}, (method, url, right.text)
                if url == path:  # the plain path always reaches the route
                    assert not _not_routed(right), (method, url)
                for what, header in WRONG.items():
                    headers = {} if header is None else {"Authorization": header}
                    r = http.request(method, url, json=body, headers=headers)
                    if _not_routed(right):  # no route there, with or without a token
                        assert _not_routed(r), (what, method, url, r.status_code)
                        continue
                    assert r.status_code == 401, (what, method, url, r.status_code, r.text)
                    assert r.headers["www-authenticate"].startswith('Bearer realm="continuum"')
                    if method != "HEAD":
                        assert r.json()["error"] == "unauthorized", r.text
    # A refused request created and queued nothing: only the right token's jobs are queued.
    assert len(queued(redis_client, redis_prefix)) == created


def _raw(base: str, request: bytes, timeout: float) -> bytes:
    """Send ``request`` as is (headers only: no body follows); the answer's first bytes,
    or b"" when none comes within ``timeout``."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(request)
        try:
            return sock.recv(4096)
        except TimeoutError:
            return b""


@pytest.mark.slow
def test_an_unauthenticated_body_is_refused_unread(served: Server) -> None:
    """A POST without the token is answered 401 before its body arrives (the body is never
    read); with the token the server waits for the body, as it reads it. A broken body
    without a token is a 401 too, not a 400 that would say the body was parsed."""
    head = (
        "POST /v1/jobs HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\n"
        "Content-Length: 900000\r\n{auth}\r\n"
    )
    refused = _raw(served.base, head.format(auth="").encode(), timeout=10)
    assert refused.startswith(b"HTTP/1.1 401 "), refused
    waits = _raw(served.base, head.format(auth=f"Authorization: Bearer {TOKEN}\r\n").encode(), 1.5)
    assert waits == b"", f"answered before the body was sent: {waits!r}"
    with httpx.Client(base_url=served.base, timeout=15) as http:
        for path in ("/v1/jobs", "/v1/batches"):
            broken = http.post(
                path, content=b'{"prompt": ', headers={"Content-Type": "application/json"}
            )
            assert broken.status_code == 401, broken.text
            big = http.post(path, content=b"x" * (2 << 20))  # over the 1 MiB body limit
            assert big.status_code == 401, big.text


def test_nothing_about_the_request_is_judged_before_the_token(
    make_api: Callable[..., httpx.Client],
) -> None:
    """Without the token, a bad id, query or body gets the 401, never the 422, 400 or 413
    that would say it was read."""
    api = make_api(api_token=TOKEN, api_insecure_local=False, api_max_body_bytes=1000)
    asks = [
        ("GET", "/v1/jobs/bad:id", None),
        ("GET", "/v1/jobs/" + "a" * 300, None),
        ("GET", "/v1/jobs/x/output?raw=maybe", None),
        ("DELETE", "/v1/batches/-", None),
        ("POST", "/v1/jobs", b'{"prompt": '),
        ("POST", "/v1/jobs", b'{"prompt": "x", "format": "nope"}'),
        ("POST", "/v1/batches", b"x" * 5000),
    ]
    for method, path, body in asks:
        headers = {"Content-Type": "application/json"} if body else {}
        r = api.request(method, path, content=body, headers=headers)
        assert r.status_code == 401, (method, path, r.status_code, r.text)


# -- item 2: no token, no API, unless it is local-only ---------------------------------------


def test_create_app_refuses_no_token_unless_local_only(redis_url: str, redis_prefix: str) -> None:
    """An empty or blank token is no token; a token read with a stray newline is stripped."""
    for blank in (None, "", "  \n"):
        with pytest.raises(NoToken, match="CONTINUUM_API_TOKEN is not set"):
            create_app(
                make_settings(redis_url, redis_prefix, api_token=blank, api_insecure_local=False)
            )
    assert make_settings(redis_url, redis_prefix, api_token=" t0ken\n").api_token == SecretStr(
        "t0ken"
    )


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("192.168.1.5", False),
        ("10.0.0.1", False),
        ("128.0.0.1", False),
        ("localhost.example.com", False),
        ("api", False),
    ],
)
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.slow
@pytest.mark.parametrize("host", ["192.0.2.10", "2001:db8::10"])
def test_continuum_api_refuses_a_non_loopback_bind_without_a_token(
    host: str, redis_url: str, redis_prefix: str
) -> None:
    done = subprocess.run(
        continuum("api", f"--host={host}", f"--port={free_port()}"),
        env=api_env(redis_url, redis_prefix),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"continuum api: refusing to serve /v1 on {host} without a token")
    assert "CONTINUUM_API_TOKEN" in lines[0] and "--insecure-local" in lines[0], lines[0]
    assert done.stdout == "", "it started something"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--insecure-local"], {}),
        ([], {"CONTINUUM_API_INSECURE_LOCAL": "1"}),
        ([], {"CONTINUUM_API_TOKEN": TOKEN}),
    ],
    ids=["--insecure-local", "CONTINUUM_API_INSECURE_LOCAL", "a token"],
)
def test_continuum_api_binds_a_non_loopback_address_when_told_or_with_a_token(
    args: list[str], env: dict[str, str], redis_url: str, redis_prefix: str
) -> None:
    """Past the refusal, uvicorn tries the bind (TEST-NET: it fails, exposing nothing)."""
    done = subprocess.run(
        continuum("api", "--host=192.0.2.10", f"--port={free_port()}", *args),
        env=api_env(redis_url, redis_prefix, **env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    output = done.stdout + done.stderr
    assert "refusing" not in output, output
    assert "continuum api: http://192.0.2.10:" in done.stdout, output
    assert "error while attempting to bind" in output, output
    if "CONTINUUM_API_TOKEN" not in env:
        assert "continuum api: warning: /v1 has no token on 192.0.2.10" in done.stderr, output


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [["--host=127.0.0.1"], ["--host=localhost"], []],
    ids=["127.0.0.1", "localhost", "default"],
)
def test_continuum_api_serves_on_loopback_without_a_token(
    args: list[str], redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    """Bound to loopback (the default, and how ``continuum up`` starts it), no token is
    needed and none is asked for."""
    port = free_port()
    argv = continuum("api", f"--port={port}", "--log-level=warning", *args)
    with running(argv, api_env(redis_url, redis_prefix), port, tmp_path / "api.log") as server:
        r = httpx.get(f"{server.base}/v1/jobs/nobody", timeout=10)
        assert r.status_code == 404 and r.json()["detail"] == "no such job: nobody", r.text
        assert "warning" not in server.text(), server.text()


@pytest.mark.slow
def test_the_app_factory_refuses_to_start_without_a_token(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    """``uvicorn --factory api.app:create_app`` cannot know its bind address: without a
    token it needs ``CONTINUUM_API_INSECURE_LOCAL=1``."""
    done = subprocess.run(
        uvicorn_argv(free_port()),
        env=api_env(redis_url, redis_prefix),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0, done
    assert "CONTINUUM_API_TOKEN is not set: refusing to serve /v1" in done.stderr, done.stderr
    assert "CONTINUUM_API_INSECURE_LOCAL=1" in done.stderr

    port = free_port()
    env = api_env(redis_url, redis_prefix, CONTINUUM_API_INSECURE_LOCAL="1")
    with running(uvicorn_argv(port), env, port, tmp_path / "api.log") as server:
        assert httpx.get(f"{server.base}/v1/jobs/nobody", timeout=10).status_code == 404
