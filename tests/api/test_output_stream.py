"""``/output`` and ``/result`` streamed from an output in many chunks: the exact bytes the
whole text in memory gives, multibyte characters across chunk edges, and a JSON result's
closing suffix (kept apart from the output) after the streamed part."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from redis import Redis

from core import JobState
from core.formats import resume_stitcher
from tests.api.api_support import Stepper
from tests.conftest import decoded
from workers.store import JobStatus, JobStore

PROMPT = "List the exhibits of the museum"


def spec(job_id: str, model: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": PROMPT,
        "format": "json",
        "providers": ["sim"],
        "model": model,
        "max_output_tokens": 200,
        "continuation": {"max_attempts": 100},
    }


def in_memory(store: JobStore, job_id: str) -> str | None:
    """What ``/output`` shows, computed from the whole output in memory."""
    record = store.load(job_id)
    assert record is not None
    text = store.output(job_id)
    if record.result is not None and "prefix" in record.result:
        prefix: int = record.result["prefix"]
        suffix: str = record.result["suffix"]
        return text[:prefix] + suffix
    state = JobState.model_validate_json(record.state)
    assert state.scan is not None
    closed = resume_stitcher(state.scan).close()
    return None if closed is None else (text[: closed[0]] + closed[1]) or None


def compact(body: dict[str, Any]) -> bytes:
    """A JSON body as ``JSONResponse`` renders it."""
    text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode()


def test_a_many_chunk_output_streams_the_exact_bytes(
    api: httpx.Client, stepper: Stepper, redis_client: Redis, redis_prefix: str
) -> None:
    """A JSON job rich in multibyte text, stored in 64-byte chunks: at every step
    ``/output`` and ``?raw=true`` give the bytes of the whole text in memory; the result
    is the compact JSON body with the exact output."""
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=64)
    stepper.rt.store = store
    model = "sim:format=json,size=6000,multibyte=0.3"
    assert api.post("/v1/jobs", json=spec("many", model)).status_code == 202
    while True:
        stepper.step("many")
        out = api.get("/v1/jobs/many/output")
        want = in_memory(store, "many")
        assert want is not None and out.status_code == 200
        assert out.content == want.encode()
        raw = api.get("/v1/jobs/many/output", params={"raw": "true"})
        assert raw.content == store.output("many").encode()
        if api.get("/v1/jobs/many").json()["status"] != "running":
            break
    chunks = redis_client.lrange(store.keys.output("many"), 0, -1)
    assert len(chunks) > 50 and all(len(c) <= 64 for c in chunks)
    assert any(len(decoded(c)) < len(c) for c in chunks)  # multibyte text in them
    result = api.get("/v1/jobs/many/result")
    record = store.load("many")
    assert record is not None and record.status is JobStatus.SUCCEEDED
    final = store.final_output(record)
    assert final is not None and result.json()["output"] == final
    assert result.content == compact({**result.json(), "output": final})


def test_a_json_result_streams_its_part_then_its_suffix(
    api: httpx.Client, redis_client: Redis, redis_prefix: str
) -> None:
    """A partial job whose result is the output's first characters (cut inside nothing
    but ending mid-string) and a closing suffix: ``/result`` and ``/output`` stream that
    part of the output, then the suffix; ``raw`` the whole output."""
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=64)
    assert api.post("/v1/jobs", json=spec("cut", "sim:format=json")).status_code == 202
    record = store.load("cut")
    assert record is not None
    text = '{"items": ["' + 'é漢🙂 \\"quoted\\" ' * 40 + "half a wo"
    prefix = len(text) - 3
    store.commit(
        "cut",
        expected_iteration=0,
        state=record.state,
        append=text,
        replace=False,
        status=JobStatus.PARTIAL,
        deadline=None,
        lease_token="t",
        summary={},
        result={"outcome": "partial", "reason": "cut short", "prefix": prefix, "suffix": '"]}'},
    )
    want = text[:prefix] + '"]}'
    assert json.loads(want)["items"][0].endswith("half a")
    result = api.get("/v1/jobs/cut/result")
    assert result.status_code == 200 and result.json()["status"] == "partial"
    assert result.json()["output"] == want and result.json()["reason"] == "cut short"
    assert result.content == compact({**result.json(), "output": want})
    assert api.get("/v1/jobs/cut/output").content == want.encode()
    raw = api.get("/v1/jobs/cut/output", params={"raw": "true"})
    assert raw.content == text.encode()
    assert time.time() <= result.json()["expires_at"]
