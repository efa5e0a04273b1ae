"""Retention through the status API: the job, result and batch views say when the record
is deleted (``expires_at``), and a deleted job or batch is a 404."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest
from redis import Redis

from tests.api.api_support import Stepper
from workers.keys import Keys
from workers.store import DEFAULT_RETENTION_S

INVALID = {"prompt": "Write the catalogue", "format": "yaml"}


def text_job(job_id: str) -> dict[str, object]:
    return {
        "job_id": job_id,
        "prompt": "List the exhibits",
        "format": "text",
        "providers": ["sim"],
        "model": "sim:format=text,size=600",
        "max_output_tokens": 200,
    }


def test_the_job_view_says_when_an_ended_job_expires(api: httpx.Client, stepper: Stepper) -> None:
    """null while the job runs; once it ends, its end plus the retention (of the worker
    that ended it), in the job view and in the result."""
    assert api.post("/v1/jobs", json=text_job("doc")).status_code == 202
    assert api.get("/v1/jobs/doc").json()["expires_at"] is None
    for _ in range(50):
        stepper.step("doc")
        view = api.get("/v1/jobs/doc").json()
        if view["status"] != "running":
            break
        assert view["expires_at"] is None
    assert view["status"] == "succeeded", view
    assert view["expires_at"] == pytest.approx(view["updated_at"] + DEFAULT_RETENTION_S, abs=1e-3)
    result = api.get("/v1/jobs/doc/result").json()
    assert result["expires_at"] == view["expires_at"]


def test_a_job_cancelled_through_the_api_expires_after_the_apis_retention(
    make_api: Callable[..., httpx.Client], redis_client: Redis, redis_prefix: str
) -> None:
    api = make_api(retention_s=60)
    api.post("/v1/jobs", json=text_job("stop-me"))
    view = api.delete("/v1/jobs/stop-me").json()
    assert view["status"] == "cancelled"
    assert view["expires_at"] == pytest.approx(view["updated_at"] + 60, abs=1e-3)
    assert 55_000 < redis_client.pttl(Keys(redis_prefix).job("stop-me")) <= 60_000


def test_the_batch_view_says_when_it_expires(make_api: Callable[..., httpx.Client]) -> None:
    """A batch's expiry is null until every job has ended, then that of its last job."""
    api = make_api(retention_s=60)
    api.post("/v1/batches", json={"batch_id": "ended", "specs": [INVALID, INVALID]})
    view = api.get("/v1/batches/ended").json()
    assert view["done"] is True and view["expired"] == 0
    last = max(api.get(f"/v1/jobs/{j}").json()["expires_at"] for j in view["jobs"])
    assert view["expires_at"] == last

    api.post("/v1/batches", json={"batch_id": "running", "specs": [text_job("r"), INVALID]})
    view = api.get("/v1/batches/running").json()
    assert view["done"] is False and view["expires_at"] is None


def test_an_expired_job_and_batch_are_404(make_api: Callable[..., httpx.Client]) -> None:
    api = make_api(retention_s=0.3)
    api.post("/v1/batches", json={"batch_id": "brief", "specs": [INVALID]})
    assert api.get("/v1/jobs/brief.0").status_code == 200
    time.sleep(0.8)
    job = api.get("/v1/jobs/brief.0")
    assert job.status_code == 404 and job.json()["detail"] == "no such job: brief.0"
    batch = api.get("/v1/batches/brief")
    assert batch.status_code == 404 and batch.json()["detail"] == "no such batch: brief"
