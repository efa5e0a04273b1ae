"""Retention end to end: a real worker ends a job with ``CONTINUUM_RETENTION_S=2``; its keys
(and its batch's) are gone from Redis seconds later, and the API and the command line
say the job does not exist."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.acceptance.procs import CONTINUUM, Cluster

pytestmark = pytest.mark.slow

RETENTION_S = 2.0


@pytest.fixture
def api(cluster_api: Callable[..., httpx.Client]) -> httpx.Client:
    return cluster_api(retention_s=RETENTION_S)


def spec(job_id: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": "List the exhibits",
        "format": "text",
        "model": "sim:format=text,size=1500",
        "max_output_tokens": 200,
    }


def ended_views(api: httpx.Client, c: Cluster, paths: list[str]) -> dict[str, Any]:
    """Each job's (or batch's) first view once it has ended (a job) or is done and has an
    expiry (a batch): polled, as each may be gone seconds after."""
    seen: dict[str, Any] = {}
    deadline = time.monotonic() + 60
    while len(seen) < len(paths):
        assert time.monotonic() < deadline, f"not ended: {set(paths) - set(seen)}\n{c.logs()}"
        for path in set(paths) - set(seen):
            view = api.get(path).json()
            if view.get("expires_at") is not None:
                seen[path] = view
        time.sleep(0.05)
    return seen


def cli(c: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CONTINUUM, *args], env=c.env, capture_output=True, text=True, timeout=60, check=False
    )


def test_an_ended_job_and_its_batch_vanish_after_the_retention(
    cluster: Callable[..., Cluster], api: httpx.Client
) -> None:
    c = cluster(CONTINUUM_RETENTION_S=str(RETENTION_S))
    c.worker(concurrency=2)
    store = c.store()
    assert api.post("/v1/jobs", json=spec("alone")).status_code == 202
    batch = {"batch_id": "pair", "specs": [spec("pair-ok"), {"prompt": "x", "format": "yaml"}]}
    assert api.post("/v1/batches", json=batch).status_code == 202
    jobs = ["alone", "pair-ok", "pair.1"]
    views = ended_views(api, c, [f"/v1/jobs/{j}" for j in jobs] + ["/v1/batches/pair"])

    for job_id in jobs:
        view = views[f"/v1/jobs/{job_id}"]
        assert view["status"] == ("failed" if job_id == "pair.1" else "succeeded"), view
        assert view["expires_at"] == pytest.approx(view["updated_at"] + RETENTION_S, abs=1e-3)
    last = max(views[f"/v1/jobs/{j}"]["expires_at"] for j in ["pair-ok", "pair.1"])
    assert views["/v1/batches/pair"]["expires_at"] == last

    deadline = time.monotonic() + RETENTION_S + 8
    while left := sorted(
        k.decode()
        for pattern in ("{*}job:*", "{batch:*")  # a job's keys (shard tag), a batch's
        for k in store.redis.scan_iter(match=f"{c.prefix}{pattern}")
    ):
        assert time.monotonic() < deadline, f"still in Redis: {left}\n{c.logs()}"
        time.sleep(0.2)

    for job_id in jobs:
        r = api.get(f"/v1/jobs/{job_id}")
        assert r.status_code == 404 and r.json()["detail"] == f"no such job: {job_id}"
    assert api.get("/v1/batches/pair").status_code == 404
    status = cli(c, "status", "alone")
    assert status.returncode == 1 and "no such job: alone" in status.stderr
    result = cli(c, "result", "pair-ok")
    assert result.returncode == 1 and "no such job: pair-ok" in result.stderr
    shown_batch = cli(c, "status", "--batch", "pair")
    assert shown_batch.returncode == 1 and "no such batch: pair" in shown_batch.stderr
