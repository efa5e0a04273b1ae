"""Attacks with a job's JSON Schema through the real API (uvicorn, Redis) and real worker
processes (issue 11, items 4 and 7): a ``$ref`` to a file or a URL is refused with a 422
naming it and nothing is ever fetched; a deeply nested schema is a 422, never a 500; a
catastrophic ``pattern`` is checked at once by a worker, which then runs the next job."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis import Redis

from core.schema_safety import MAX_SCHEMA_DEPTH
from tests.acceptance.procs import Cluster
from tests.api.api_support import Stepper, queued
from tests.conftest import decoded
from workers.iteration import JobFailed
from workers.store import JobStatus

pytestmark = [pytest.mark.security]

SPEC: dict[str, Any] = {"prompt": "The catalogue as JSON", "format": "json", "providers": ["sim"]}
EVIL = "(a+)+$"  # 2^40 steps for Python's re on 40 a's and a "!"
SUBJECT = "a" * 40 + "!"


class Canary:
    """An HTTP server on a free loopback port that records every request it receives
    (and would serve a valid schema, so a fetch would succeed)."""

    def __init__(self) -> None:
        hits: list[str] = []
        self.hits = hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                body = b'{"type": "object"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def reachable(self) -> bool:
        """The canary answers (so that its silence means nobody asked)."""
        before = len(self.hits)
        assert httpx.get(f"{self.url}/probe").status_code == 200
        self.hits.pop(before)
        return True

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def canary() -> Iterator[Canary]:
    server = Canary()
    yield server
    server.close()


def with_schema(job_id: str, schema: dict[str, Any], field: str = "json_schema") -> dict[str, Any]:
    return {**SPEC, "job_id": job_id, "validation": {field: schema}}


def assert_refused(r: httpx.Response, *needles: str) -> None:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    for needle in needles:
        assert needle in detail, detail


# -- item 4: no file read, no URL fetched ------------------------------------------------


@pytest.mark.parametrize(
    "ref",
    ["file:///etc/passwd", "file:///dev/zero", "file:/proc/self/environ"],
)
@pytest.mark.parametrize("field", ["json_schema", "item_schema"])
def test_a_file_ref_is_refused_with_a_422_naming_it(
    api: httpx.Client, redis_client: Redis, redis_prefix: str, ref: str, field: str
) -> None:
    r = api.post("/v1/jobs", json=with_schema("reader", {"$ref": ref}, field))
    assert_refused(r, ref, f"validation.{field}")
    assert api.get("/v1/jobs/reader").status_code == 404
    assert queued(redis_client, redis_prefix) == []


@pytest.mark.parametrize(
    "shape",
    [
        lambda url: {"$ref": f"{url}/schema.json"},
        lambda url: {"properties": {"a": {"items": {"$ref": f"{url}/deep.json#/x"}}}},
        lambda url: {"$defs": {"d": {"$ref": f"{url}/defs.json"}}, "$ref": "#/$defs/d"},
        lambda url: {"$dynamicRef": f"{url}/dynamic.json#meta"},
        lambda url: {"$schema": f"{url}/metaschema.json", "type": "object"},
    ],
    ids=["ref", "nested-ref", "ref-in-defs", "dynamic-ref", "metaschema"],
)
def test_an_http_ref_is_refused_and_the_url_never_fetched(
    api: httpx.Client, redis_client: Redis, redis_prefix: str, canary: Canary, shape: Any
) -> None:
    assert canary.reachable()
    schema = shape(canary.url)
    r = api.post("/v1/jobs", json=with_schema("fetcher", schema))
    assert_refused(r, canary.url)
    r = api.post("/v1/jobs", json=with_schema("fetcher", schema, "item_schema"))
    assert_refused(r, canary.url)
    assert queued(redis_client, redis_prefix) == []
    time.sleep(0.2)
    assert canary.hits == []


def test_a_batch_with_a_remote_ref_records_the_job_invalid_and_fetches_nothing(
    api: httpx.Client, redis_client: Redis, redis_prefix: str, canary: Canary
) -> None:
    """In a batch a bad spec becomes a failed job saying why; the others run."""
    specs = [with_schema("remote", {"$ref": f"{canary.url}/s.json"}), {**SPEC, "job_id": "fine"}]
    r = api.post("/v1/batches", json={"specs": specs})
    assert r.status_code in (200, 201, 202), r.text
    assert canary.url in r.json()["invalid"]["remote"]
    assert [m["kwargs"].get("job_id") for m in queued(redis_client, redis_prefix)] == ["fine"]
    assert canary.hits == []


def test_a_job_stored_before_the_checks_fails_before_any_model_call(
    api: httpx.Client, stepper: Stepper, redis_client: Redis, redis_prefix: str, canary: Canary
) -> None:
    """A job stored by an older version with a schema now refused: its iteration fails the
    job at once, saying why, before the model is called; it does not raise five times
    after paying for five replies, and it fetches nothing."""
    assert api.post("/v1/jobs", json=with_schema("legacy", {"type": "object"})).status_code == 202
    key = stepper.rt.store.keys.job("legacy")
    ref = f"{canary.url}/schema.json"
    state = redis_client.hget(key, "state")
    assert isinstance(state, bytes)
    planted = state.replace(b'{"type":"object"}', json.dumps({"$ref": ref}).encode())
    assert planted != state
    redis_client.hset(key, "state", planted)

    with pytest.raises(JobFailed):
        stepper.step("legacy")

    record = stepper.rt.store.load("legacy")
    assert record is not None and record.status is JobStatus.FAILED
    assert ref in (record.error or "")
    assert stepper.rt.store.output("legacy") == ""  # no reply was taken (or paid for)
    assert not [f for f in redis_client.hkeys(key) if decoded(f).startswith("crashes:")]
    assert canary.hits == []


# -- item 7: depth and size are a 422, never a 500 ---------------------------------------


def _nested_not(depth: int) -> str:
    return '{"not": ' * (depth - 1) + "{}" + "}" * (depth - 1)


def _nested_properties(depth: int) -> str:
    return '{"type": "object", "properties": {"a": ' * depth + "{}" + "}}" * depth


@pytest.mark.parametrize("depth", [150, 250, 1000])
@pytest.mark.parametrize("shape", [_nested_not, _nested_properties], ids=["not", "properties"])
def test_a_deeply_nested_schema_is_refused_never_a_500(
    api: httpx.Client, redis_client: Redis, redis_prefix: str, depth: int, shape: Any
) -> None:
    """A 422 naming the limit. A body nested about a thousand levels deep cannot even be
    parsed (Python's JSON decoder stops there): that is the API's 400 saying so. The body
    is written by hand: Python's own encoder refuses to nest this deep."""
    body = (
        '{"job_id": "deep", "prompt": "p", "format": "json", "providers": ["sim"], '
        f'"validation": {{"json_schema": {shape(depth)}}}}}'
    )
    r = api.post("/v1/jobs", content=body, headers={"Content-Type": "application/json"})
    if r.status_code == 400:
        assert depth >= 1000 and "nested too deeply" in r.json()["detail"]
    else:
        assert_refused(r, "validation.json_schema", f"nests deeper than {MAX_SCHEMA_DEPTH} levels")
    assert len(r.text) < 2000  # one line, not a path a thousand levels long
    assert queued(redis_client, redis_prefix) == []


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        ({"description": "x" * 200_000}, "bytes of JSON"),
        ({"enum": list(range(20_000))}, "values"),
        ({"properties": {"a": {"pattern": "(?=a)"}}}, "linear-time engine"),
        (
            {
                "$ref": "#/$defs/a9",
                "$defs": {"a0": {"type": "integer"}}
                | {f"a{i}": {"allOf": [{"$ref": f"#/$defs/a{i - 1}"}] * 10} for i in range(1, 10)},
            },
            "subschemas",
        ),
        ({"$ref": "#/$defs/a", "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}}, "never end"),
    ],
    ids=["bytes", "nodes", "look-ahead", "fan-out", "loop"],
)
def test_a_schema_too_large_or_too_costly_is_a_422(
    api: httpx.Client, schema: dict[str, Any], needle: str
) -> None:
    assert_refused(api.post("/v1/jobs", json=with_schema("big", schema)), needle)


# -- through real worker processes -------------------------------------------------------


@pytest.fixture
def cluster(redis_url: str, redis_prefix: str, tmp_path: Path) -> Iterator[Cluster]:
    """Worker processes on the test's Redis prefix and the API's queue (as the acceptance
    tests' ``cluster`` fixture makes them), with the in-process simulated model."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONTINUUM_", "OPENAI_", "ANTHROPIC_", "SENTRY_"))
    }
    env.update(
        REDIS_URL=redis_url,
        CONTINUUM_KEY_PREFIX=redis_prefix,
        CONTINUUM_BROKER_PREFIX=redis_prefix,
        CONTINUUM_QUEUE="q",
        CONTINUUM_LEASE_TTL_S="2",
        CONTINUUM_QUEUE_GRACE_S="5",
        CONTINUUM_WATCHDOG_INTERVAL_S="0.25",
        CONTINUUM_ENABLE_SIM="1",
        PYTHONUNBUFFERED="1",
    )
    made = Cluster(redis_url, redis_prefix, tmp_path, env)
    yield made
    made.stop()


@pytest.mark.slow
def test_a_catastrophic_pattern_is_checked_at_once_and_the_worker_runs_the_next_job(
    api: httpx.Client, cluster: Any
) -> None:
    """One worker slot: were the pattern to backtrack (about 2^40 steps), the job would
    hold it for hours and the next job would never run. The simulated model titles its
    JSON with the prompt's first line, so the title is 40 a's and a "!"."""
    cluster.worker(concurrency=1)
    schema = {
        "type": "object",
        "required": ["title"],
        "properties": {"title": {"type": "string", "pattern": EVIL}},
        "patternProperties": {EVIL: {"type": "string"}},
    }
    evil = {
        **SPEC,
        "job_id": "redos",
        "prompt": f"{SUBJECT}\nThe catalogue as JSON",
        "model": "sim:format=json,size=800",
        "validation": {
            "json_schema": schema,
            "max_repair_attempts": 2,
            "on_invalid": "return_partial",  # still invalid: partial, the output kept
        },
    }
    started = time.monotonic()
    assert api.post("/v1/jobs", json=evil).status_code in (200, 201, 202)
    cluster.wait_ended(["redos"], timeout=60)
    took = time.monotonic() - started
    result = api.get("/v1/jobs/redos/result").json()
    assert result["status"] == JobStatus.PARTIAL.value, result
    errors = result["metadata"]["validation_errors"]
    assert len(errors) == 2  # the first reply and the one repair, both checked
    assert all(e.startswith("at $['title']:") and f'does not match "{EVIL}"' in e for e in errors)
    assert took < 30, took

    after = {**SPEC, "job_id": "after", "model": "sim:format=json,size=400"}
    assert api.post("/v1/jobs", json=after).status_code in (200, 201, 202)
    record = cluster.wait_ended(["after"], timeout=30)["after"]
    assert record.status is JobStatus.SUCCEEDED, record.error


@pytest.mark.slow
def test_a_worker_fed_a_remote_ref_directly_fetches_nothing(cluster: Any, canary: Canary) -> None:
    """A producer that skips the API (a bare ``continuum.generate`` message): the worker
    validates the spec, records the job failed naming the ref, and fetches nothing. A
    schema whose root ``$id`` is the canary's URL resolves its ``#`` refs locally: the job
    is validated and succeeds without a request either."""
    assert canary.reachable()
    cluster.worker(concurrency=1)
    ref = f"{canary.url}/schema.json"
    producer = cluster.producer()
    for job_id, field in (("direct", "json_schema"), ("direct-items", "item_schema")):
        spec = with_schema(job_id, {"$ref": ref}, field)
        producer.send_task("continuum.generate", kwargs={"spec": spec}, queue="q")
    anchored = {
        "$id": f"{canary.url}/root.json",
        "$ref": "#/$defs/doc",
        "$defs": {"doc": {"type": "object", "required": ["title"]}},
    }
    spec = {**with_schema("anchored", anchored), "model": "sim:format=json,size=400"}
    producer.send_task("continuum.generate", kwargs={"spec": spec}, queue="q")
    records = cluster.wait_ended(["direct", "direct-items", "anchored"], timeout=60)
    for job_id in ("direct", "direct-items"):
        assert records[job_id].status is JobStatus.FAILED
        assert ref in (records[job_id].error or "")
    assert records["anchored"].status is JobStatus.SUCCEEDED, records["anchored"].error
    assert canary.hits == []
