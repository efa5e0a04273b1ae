"""The status API in front of a real worker process: submit over HTTP, follow the job
while it runs (its JSON output valid at every poll), read the exact result, cancel."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from sim.app import create_app as create_sim
from sim.model import SimModel, SimOptions
from tests.acceptance.procs import Cluster

SEED = 17
PROMPT = "Write the inventory of the natural history museum"
TOKEN = "e2e-token"


@pytest.fixture
def sim_url(serve: Callable[[Any], str]) -> str:
    return serve(create_sim(SimOptions(seed=SEED, latency=0.15)))


@pytest.fixture
def api(cluster_api: Callable[..., httpx.Client]) -> httpx.Client:
    """The API with a token (sent by the client)."""
    return cluster_api(TOKEN, api_health_cache_s=0)


def job(job_id: str, size: int, **extra: Any) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": f"{PROMPT} ({job_id})",
        "format": "json",
        "providers": ["sim"],
        "model": f"sim:format=json,size={size},overlap=80,fence=0.2,prose=0.2",
        "max_output_tokens": 250,
        "continuation": {"max_attempts": 200},
        **extra,
    }


def test_submit_follow_result_and_cancel_through_the_api(
    cluster: Callable[..., Cluster], sim_url: str, api: httpx.Client
) -> None:
    c = cluster(sim_url)
    c.worker(concurrency=4)

    health = api.get("/healthz").json()
    assert health["status"] == "ok" and health["workers"]["count"] >= 1, health

    body = job("e2e-doc", size=6000)
    r = api.post("/v1/jobs", json=body)
    assert r.status_code == 202, r.text
    target = SimModel(SimOptions(seed=SEED)).target_for(
        {"prompt": body["prompt"], "model": body["model"]}
    )

    partials: list[Any] = []
    deadline = time.monotonic() + 90
    while True:
        view = api.get("/v1/jobs/e2e-doc").json()
        out = api.get("/v1/jobs/e2e-doc/output")
        assert out.status_code in {200, 204}, out.text
        if out.status_code == 200:
            document = json.loads(out.text)  # valid JSON at every poll
            if out.headers["x-continuum-status"] == "running":
                partials.append(document)
        if view["status"] not in {"queued", "running"}:
            break
        assert time.monotonic() < deadline, (view, c.logs())
        pending = api.get("/v1/jobs/e2e-doc/result")
        assert pending.status_code in {409, 200}
        time.sleep(0.05)
    assert view["status"] == "succeeded", (view, c.logs())
    assert partials and partials[0] != json.loads(target)  # seen mid-way, then grown

    result = api.get("/v1/jobs/e2e-doc/result")
    assert result.status_code == 200
    done = result.json()
    assert json.loads(done["output"]) == json.loads(target)
    assert done["metadata"]["was_continued"] and done["metadata"]["continuation_count"] >= 3
    assert api.get("/v1/jobs/e2e-doc/output").text == done["output"]

    # A long job, cancelled while it runs: nothing more is committed, its output is kept.
    assert api.post("/v1/jobs", json=job("e2e-long", size=200_000)).status_code == 202
    while api.get("/v1/jobs/e2e-long").json()["iteration"] < 2:
        assert time.monotonic() < deadline, c.logs()
        time.sleep(0.05)
    cancelled = api.delete("/v1/jobs/e2e-long")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    stopped_at = cancelled.json()["iteration"]
    time.sleep(1.0)  # several model calls' worth
    after = api.get("/v1/jobs/e2e-long").json()
    assert after["status"] == "cancelled" and after["iteration"] == stopped_at
    kept = api.get("/v1/jobs/e2e-long/output")
    assert kept.status_code == 200 and json.loads(kept.text)
    assert api.get("/v1/jobs/e2e-long/result").json()["error"] == "cancelled"
    assert api.delete("/v1/jobs/e2e-long").status_code == 409
