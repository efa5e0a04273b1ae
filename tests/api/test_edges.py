"""The API's edges: bearer auth, the body limit, health, Redis down, the OpenAPI docs."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from redis import Redis

from api.app import create_app
from api.auth import NoToken
from api.settings import ApiSettings, api_settings
from tests.api.api_support import make_settings, queued
from tests.conftest import free_port
from workers.settings import Settings

JOB = {"prompt": "Write the catalogue", "format": "text", "providers": ["sim"]}


def test_bearer_token(make_api: Callable[..., httpx.Client]) -> None:
    api = make_api(api_token="s3cret-token")
    missing = api.get("/v1/jobs/x")
    assert missing.status_code == 401
    assert missing.json()["error"] == "unauthorized"
    assert missing.headers["www-authenticate"] == 'Bearer realm="continuum"'
    wrong = api.get("/v1/jobs/x", headers={"Authorization": "Bearer s3cret-tokeN"})
    assert wrong.status_code == 401
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
    basic = api.get("/v1/jobs/x", headers={"Authorization": "Basic czNjcmV0"})
    assert basic.status_code == 401
    # Refused before the body is read: no 413 for an unauthenticated big body.
    big = api.post("/v1/jobs", content=b"x" * (2 << 20))
    assert big.status_code == 401

    auth = {"Authorization": "Bearer s3cret-token"}
    assert api.get("/v1/jobs/x", headers=auth).status_code == 404
    assert api.post("/v1/jobs", json=JOB, headers=auth).status_code == 202
    lower = {"Authorization": "bearer s3cret-token"}
    assert api.get("/v1/jobs/x", headers=lower).status_code == 404
    for open_path in ("/healthz", "/docs", "/openapi.json"):
        assert api.get(open_path).status_code == 200, open_path
    schema = api.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert schema["paths"]["/v1/jobs"]["post"]["security"] == [{"HTTPBearer": []}]


def test_an_empty_token_means_no_auth_when_local(make_api: Callable[..., httpx.Client]) -> None:
    """An empty token is no token: with ``api_insecure_local`` (as ``make_api`` sets),
    ``/v1`` is open; without it the app is not built (``test_security_auth``)."""
    api = make_api(api_token="")
    assert api.get("/v1/jobs/x").status_code == 404


def test_body_limit(make_api: Callable[..., httpx.Client]) -> None:
    api = make_api(api_max_body_bytes=1000)
    over = {**JOB, "prompt": "x" * 1200}
    r = api.post("/v1/jobs", json=over)
    assert r.status_code == 413
    assert r.json() == {
        "error": "payload_too_large",
        "detail": "the request body is larger than 1000 bytes",
    }

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer
        yield b'{"prompt": "'
        for _ in range(20):
            yield b"x" * 100
        yield b'"}'

    streamed = api.post("/v1/jobs", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413
    assert "Content-Length" not in streamed.request.headers
    under = api.post("/v1/jobs", json={**JOB, "prompt": "x" * 500})
    assert under.status_code == 202


def test_health_with_redis_up_and_no_worker(make_api: Callable[..., httpx.Client]) -> None:
    api = make_api(api_ping_timeout_s=0.2)
    started = time.monotonic()
    r = api.get("/healthz")
    first = time.monotonic() - started
    assert r.status_code == 200
    report = r.json()
    assert report["status"] == "degraded"
    assert report["redis"]["ok"] is True and report["redis"]["latency_ms"] >= 0
    assert report["workers"]["count"] == 0 and report["workers"]["names"] == []
    started = time.monotonic()
    again = api.get("/healthz").json()
    assert time.monotonic() - started < first  # the ping's answer is reused
    assert again["workers"]["checked_at"] == report["workers"]["checked_at"]


@pytest.fixture
def dead_redis_url() -> str:
    port = free_port()
    with socket.socket() as s:  # nothing listens there
        assert s.connect_ex(("127.0.0.1", port)) != 0
    return f"redis://127.0.0.1:{port}/0"


def test_redis_down(serve: Callable[[Any], str], dead_redis_url: str, redis_prefix: str) -> None:
    app = create_app(make_settings(dead_redis_url, redis_prefix))
    try:
        with httpx.Client(base_url=serve(app), timeout=15) as api:
            started = time.monotonic()
            health = api.get("/healthz")
            assert time.monotonic() - started < 3
            assert health.status_code == 503
            report = health.json()
            assert report["status"] == "down" and report["redis"]["ok"] is False
            assert "Connection" in report["redis"]["error"]
            r = api.post("/v1/jobs", json=JOB)
            assert r.status_code == 503 and r.headers["retry-after"] == "5"
            assert r.json()["error"] == "unavailable"
            assert r.json()["detail"].startswith("Redis is unreachable")
            assert api.get("/v1/jobs/x").status_code == 503
    finally:
        app.state.service.close()


def test_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTINUUM_API_TOKEN", "from-env")
    monkeypatch.setenv("CONTINUUM_API_MAX_BODY_BYTES", "2048")
    monkeypatch.setenv("CONTINUUM_QUEUE", "env-queue")
    s = api_settings()
    assert s.api_token is not None and s.api_token.get_secret_value() == "from-env"
    assert s.api_max_body_bytes == 2048 and s.queue == "env-queue"
    assert "from-env" not in repr(s)
    base = Settings(queue="given")
    merged = api_settings(base)
    assert merged.queue == "given" and merged.api_max_body_bytes == 2048
    monkeypatch.delenv("CONTINUUM_API_TOKEN")
    monkeypatch.delenv("CONTINUUM_API_INSECURE_LOCAL", raising=False)
    assert ApiSettings().api_token is None
    with pytest.raises(NoToken, match="CONTINUUM_API_TOKEN is not set"):
        create_app(ApiSettings())
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("CONTINUUM_REDIS_URL", raising=False)
    monkeypatch.setenv("CONTINUUM_API_INSECURE_LOCAL", "1")
    with pytest.raises(RuntimeError, match="REDIS_URL is not set"):
        create_app(ApiSettings())


def test_docs(api: httpx.Client) -> None:
    docs = api.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    schema = api.get("/openapi.json").json()
    paths = schema["paths"]
    assert set(paths) == {
        "/v1/jobs",
        "/v1/batches",
        "/v1/jobs/{job_id}",
        "/v1/jobs/{job_id}/output",
        "/v1/jobs/{job_id}/result",
        "/v1/jobs/{job_id}/events",
        "/v1/batches/{batch_id}",
        "/healthz",
        "/metrics",
    }
    assert "securitySchemes" not in schema.get("components", {})
    assert set(paths["/v1/jobs/{job_id}"]) == {"get", "delete"}
    assert set(paths["/v1/jobs"]) == {"get", "post"}


def test_an_app_on_a_given_redis_client(
    serve: Callable[[Any], str], redis_client: Redis, redis_prefix: str
) -> None:
    """``create_app(settings, redis=client)``: no URL in the settings, the producer reaches
    the client's server."""
    settings = make_settings("", redis_prefix)
    assert settings.redis_url in {None, ""}
    app = create_app(settings, redis=redis_client)
    try:
        with httpx.Client(base_url=serve(app), timeout=15) as api:
            assert api.post("/v1/jobs", json={**JOB, "job_id": "given"}).status_code == 202
        assert [m["kwargs"] for m in queued(redis_client, redis_prefix)] == [
            {"job_id": "given", "iteration": 0}
        ]
    finally:
        app.state.service.close()
    assert redis_client.ping()  # not the app's to close


def test_a_submission_no_replica_confirmed_is_refused_naming_the_job(
    serve: Callable[[Any], str], redis_url: str, redis_prefix: str, redis_client: Redis
) -> None:
    """A store that waits for a replica, on a Redis that has none: the submission is
    answered 503 after ``wait_s``, naming the job, which exists (queued, never sent: the
    watchdog starts it)."""
    joiner = "&" if "?" in redis_url else "?"
    app = create_app(make_settings(f"{redis_url}{joiner}wait_replicas=1&wait_s=0.3", redis_prefix))
    try:
        with httpx.Client(base_url=serve(app), timeout=15) as api:
            started = time.monotonic()
            r = api.post("/v1/jobs", json={**JOB, "job_id": "unconfirmed"})
            assert 0.25 < time.monotonic() - started < 5
            assert r.status_code == 503 and r.json()["error"] == "unavailable"
            detail = r.json()["detail"]
            assert detail.startswith("Redis took the submission but no replica confirmed it")
            assert "jobs unconfirmed: 0 of the 1 replica(s)" in detail
            assert queued(redis_client, redis_prefix) == []
            assert api.get("/v1/jobs/unconfirmed").json()["status"] == "queued"
    finally:
        app.state.service.close()
