"""Jobs through the status API: submit (idempotent), status, output, result, cancel."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from redis import Redis

from sim.model import SimModel, SimOptions
from tests.api.api_support import Stepper, queued
from workers.store import JobStore

PROMPT = "List the exhibits of the museum"


def spec(job_id: str | None = None, fmt: str = "json", size: int = 3000, **extra: Any) -> Any:
    body: dict[str, Any] = {
        "prompt": PROMPT,
        "format": fmt,
        "providers": ["sim"],
        "model": f"sim:format={fmt},size={size}",
        "max_output_tokens": 200,
        "continuation": {"max_attempts": 60},
        **extra,
    }
    if job_id is not None:
        body["job_id"] = job_id
    return body


def test_submit_creates_the_job_and_queues_iteration_0(
    api: httpx.Client, redis_client: Redis, redis_prefix: str
) -> None:
    r = api.post("/v1/jobs", json=spec("job-1"))
    assert r.status_code == 202, r.text
    assert r.json() == {"job_id": "job-1", "created": True}
    assert r.headers["location"] == "/v1/jobs/job-1"
    assert queued(redis_client, redis_prefix) == [
        {"task": "continuum.iterate", "kwargs": {"job_id": "job-1", "iteration": 0}}
    ]
    view = api.get("/v1/jobs/job-1").json()
    assert view["status"] == "queued" and view["iteration"] == 0
    assert view["progress"] == {"percent": None, "chars": 0, "records": 0}
    assert view["metadata"]["continuation_count"] == 0
    assert view["created_at"] <= view["updated_at"]


def test_the_same_job_id_twice_is_one_job(
    api: httpx.Client, redis_client: Redis, redis_prefix: str
) -> None:
    assert api.post("/v1/jobs", json=spec("twice")).status_code == 202
    again = api.post("/v1/jobs", json=spec("twice"))
    assert again.status_code == 200
    assert again.json() == {"job_id": "twice", "created": False}
    assert again.headers["location"] == "/v1/jobs/twice"
    assert len(queued(redis_client, redis_prefix)) == 1  # nothing sent twice

    other = api.post("/v1/jobs", json=spec("twice", fmt="csv"))
    assert other.status_code == 409
    assert other.json() == {
        "error": "job_exists",
        "detail": "job twice exists with a different spec",
        "status": "queued",
    }


def test_a_job_without_an_id_gets_one(api: httpx.Client) -> None:
    r = api.post("/v1/jobs", json=spec())
    assert r.status_code == 202
    job_id = r.json()["job_id"]
    assert len(job_id) == 32 and r.headers["location"] == f"/v1/jobs/{job_id}"
    assert api.get(f"/v1/jobs/{job_id}").status_code == 200


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        ({**spec(), "promt": "typo"}, ["body", "promt"], "Extra inputs are not permitted"),
        ({"format": "json"}, ["body"], "give exactly one of prompt or messages"),
        ({**spec(), "format": "yaml"}, ["body", "format"], "Input should be"),
        (
            {**spec(), "continuation": {"max_attempts": 0}},
            ["body", "continuation", "max_attempts"],
            "max_attempts must be positive",
        ),
        ({**spec(), "job_id": "-bad"}, ["body", "job_id"], "String should match pattern"),
        ([1, 2], ["body"], "Input should be a valid dictionary"),
    ],
)
def test_an_invalid_spec_is_a_422_naming_the_field(
    api: httpx.Client, body: Any, where: list[str], message: str
) -> None:
    r = api.post("/v1/jobs", json=body)
    assert r.status_code == 422, r.text
    error = r.json()
    assert error["error"] == "invalid_request"
    assert any(e["loc"] == where and message in e["msg"] for e in error["errors"]), error
    assert message in error["detail"]
    field = ".".join(where[1:]) or "body"
    assert error["detail"].startswith(f"{field}: ") or f"; {field}: " in error["detail"]


def test_malformed_json_and_a_missing_body(api: httpx.Client) -> None:
    broken = api.post(
        "/v1/jobs", content=b'{"prompt": "x",', headers={"content-type": "application/json"}
    )
    assert broken.status_code == 400
    assert broken.json()["error"] == "invalid_json"
    assert broken.json()["detail"].startswith("the request body is not valid JSON")
    missing = api.post("/v1/jobs")
    assert missing.status_code == 422
    assert missing.json()["detail"] == "body: Field required"
    not_utf8 = api.post(
        "/v1/jobs", content=b'{"prompt": "\xff"}', headers={"content-type": "application/json"}
    )
    assert not_utf8.status_code in {400, 422}
    assert "error" in not_utf8.json()


def test_unknown_and_malformed_ids(api: httpx.Client) -> None:
    for path in ("/v1/jobs/nope", "/v1/jobs/nope/output", "/v1/jobs/nope/result"):
        r = api.get(path)
        assert r.status_code == 404
        assert r.json() == {"error": "not_found", "detail": "no such job: nope"}
    assert api.delete("/v1/jobs/nope").status_code == 404
    assert api.get("/v1/batches/nope").json() == {
        "error": "not_found",
        "detail": "no such batch: nope",
    }
    assert api.delete("/v1/batches/nope").status_code == 404
    for bad in ("-x", "a" * 129, "a%20b", "%C3%A9"):
        r = api.get(f"/v1/jobs/{bad}")
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["detail"].startswith("path parameter job_id: String should match")
    assert api.get("/v1/nothing-here").json() == {"error": "not_found", "detail": "no such path"}
    wrong = api.put("/v1/jobs/x")
    assert wrong.status_code == 405 and wrong.json()["error"] == "method_not_allowed"


def test_a_queued_job_has_no_output_and_no_result_yet(api: httpx.Client) -> None:
    api.post("/v1/jobs", json=spec("waiting"))
    out = api.get("/v1/jobs/waiting/output")
    assert out.status_code == 204 and out.content == b""
    assert out.headers["x-continuum-status"] == "queued"
    assert out.headers["x-continuum-format"] == "json"
    result = api.get("/v1/jobs/waiting/result")
    assert result.status_code == 409
    assert result.json() == {
        "error": "not_ready",
        "detail": "job waiting is queued (iteration 0); its result is not ready",
        "status": "queued",
    }


def test_json_output_is_valid_json_at_every_step(
    api: httpx.Client, stepper: Stepper, redis_client: Redis, redis_prefix: str
) -> None:
    """The partial output closes what is open (valid JSON), grows as iterations commit,
    and ends as the result; ``raw`` shows the cut text."""
    body = spec("doc", size=4000, model="sim:format=json,size=4000,fence=0.3,prose=0.3")
    api.post("/v1/jobs", json=body)
    target = SimModel(SimOptions(seed=5)).target_for({"prompt": PROMPT, "model": body["model"]})
    store = JobStore(redis_client, prefix=redis_prefix)
    shown: list[Any] = []
    while True:
        stepper.step("doc")
        view = api.get("/v1/jobs/doc").json()
        out = api.get("/v1/jobs/doc/output")
        assert out.status_code == 200, out.text
        assert out.headers["content-type"] == "application/json"
        assert out.headers["x-continuum-iteration"] == str(view["iteration"])
        shown.append(json.loads(out.text))  # valid JSON, whatever the cut
        raw = api.get("/v1/jobs/doc/output", params={"raw": "true"})
        assert raw.headers["content-type"].startswith("text/plain")
        assert raw.text == store.output("doc")
        if view["status"] != "running":
            break
        result = api.get("/v1/jobs/doc/result")
        assert result.status_code == 409 and result.json()["status"] == "running"
    assert view["status"] == "succeeded" and len(shown) >= 3
    assert json.loads(out.text) == json.loads(target)
    result = api.get("/v1/jobs/doc/result")
    assert result.status_code == 200
    done = result.json()
    assert done["status"] == "succeeded" and done["format"] == "json"
    assert json.loads(done["output"]) == json.loads(target)
    meta = done["metadata"]
    retries = meta["merge_failures"] + meta["seam_retries"]  # calls that continued nothing
    assert meta["continuation_count"] == view["iteration"] - 1 - retries
    assert done["metadata"]["was_continued"] is True


@pytest.mark.parametrize(
    ("fmt", "media"),
    [("csv", "text/csv"), ("markdown", "text/markdown"), ("text", "text/plain")],
)
def test_text_formats_grow_as_is(api: httpx.Client, stepper: Stepper, fmt: str, media: str) -> None:
    body = spec(f"doc-{fmt}", fmt=fmt)
    api.post("/v1/jobs", json=body)
    target = SimModel(SimOptions(seed=5)).target_for({"prompt": PROMPT, "model": body["model"]})
    stepper.step(f"doc-{fmt}")
    out = api.get(f"/v1/jobs/doc-{fmt}/output")
    assert out.status_code == 200
    assert out.headers["content-type"] == f"{media}; charset=utf-8"
    assert 0 < len(out.text) < len(target)
    if fmt == "csv":  # stops at the last complete row
        assert out.text.endswith("\n") and target.startswith(out.text)
    while api.get(f"/v1/jobs/doc-{fmt}").json()["status"] == "running":
        stepper.step(f"doc-{fmt}")
    result = api.get(f"/v1/jobs/doc-{fmt}/result").json()
    assert result["status"] == "succeeded" and result["format"] == fmt
    assert result["output"].strip() == target.strip()


def test_cancel(api: httpx.Client, stepper: Stepper) -> None:
    api.post("/v1/jobs", json=spec("stop-me"))
    stepper.step("stop-me")
    r = api.delete("/v1/jobs/stop-me")
    assert r.status_code == 200
    assert r.json()["status"] == "cancelled" and r.json()["iteration"] == 1
    assert stepper.step("stop-me")["skipped"]  # its next iteration does nothing
    again = api.delete("/v1/jobs/stop-me")
    assert again.status_code == 409
    assert again.json() == {
        "error": "ended",
        "detail": "job stop-me has ended already (cancelled)",
        "status": "cancelled",
    }
    result = api.get("/v1/jobs/stop-me/result")
    assert result.status_code == 409 and result.json()["error"] == "cancelled"
    kept = api.get("/v1/jobs/stop-me/output")
    assert kept.status_code == 200 and json.loads(kept.text)  # what it had is kept


def test_a_failed_job_has_no_result(
    api: httpx.Client, redis_client: Redis, redis_prefix: str
) -> None:
    api.post("/v1/jobs", json=spec("doomed"))
    JobStore(redis_client, prefix=redis_prefix).fail("doomed", "the provider is gone")
    r = api.get("/v1/jobs/doomed/result")
    assert r.status_code == 409
    assert r.json() == {
        "error": "failed",
        "detail": "job doomed failed: the provider is gone",
        "status": "failed",
    }
    view = api.get("/v1/jobs/doomed").json()
    assert view["status"] == "failed" and view["error"] == "the provider is gone"


def test_odd_inputs_are_4xx_never_5xx(api: httpx.Client) -> None:
    as_json = {"content-type": "application/json"}
    deep = "[" * 5000 + "]" * 5000
    cases: list[tuple[str, str, dict[str, Any], int, str]] = [
        ("POST", "/v1/jobs", {"content": b"[" * 100_000, "headers": as_json}, 400, "nested"),
        (
            "POST",
            "/v1/jobs",
            {"content": f'{{"prompt": "x", "metadata": {{"a": {deep}}}}}', "headers": as_json},
            400,
            "nested",
        ),
        ("POST", "/v1/jobs", {"content": b'{"prompt": "x"}'}, 415, "no Content-Type"),
        ("POST", "/v1/jobs", {"data": {"prompt": "x"}}, 415, "application/x-www-form-urlencoded"),
        (
            "POST",
            "/v1/batches",
            {"content": b"{}", "headers": {"content-type": "text/plain"}},
            415,
            "text/plain",
        ),
        ("POST", "/v1/jobs", {"content": b"\x00\x01", "headers": as_json}, 400, "not valid JSON"),
        ("POST", "/v1/jobs", {"content": b'"\xff"', "headers": as_json}, 400, "JSON"),
        (
            "POST",
            "/v1/jobs",
            {"json": {**spec(), "validation": {"json_schema": {"type": 12}}}},
            422,
            "validation.json_schema: not a valid JSON Schema",
        ),
        ("POST", "/v1/jobs", {"json": {**spec(), "max_output_tokens": "12"}}, 422, "integer"),
        ("GET", "/v1/jobs/x/output", {"params": {"raw": "perhaps"}}, 422, "query parameter raw"),
        ("GET", "/v1/jobs/" + "a" * 5000, {}, 422, "path parameter job_id"),
        ("DELETE", "/v1/batches/..", {}, 404, "no such path"),
        ("PATCH", "/v1/jobs", {}, 405, "PATCH is not allowed here; allowed: GET, HEAD, POST"),
    ]
    for method, path, kwargs, status, words in cases:
        r = api.request(method, path, **kwargs)
        assert r.status_code == status, (method, path, r.status_code, r.text)
        body = r.json()
        assert body["error"] and words in body["detail"], (method, path, body)
