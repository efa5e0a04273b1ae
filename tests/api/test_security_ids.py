"""Job and batch ids against the key layout, through the real API and a real Redis.

An id holding ``:`` once named another job's keys: ``GET /v1/jobs/x:commits`` read job
``x``'s commit hash as a job (a 500), and a job named ``victim:lease`` wrote over job
``victim``'s lease. One rule (``core.ids``) now refuses such ids everywhere they enter.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from redis import Redis

from core.ids import ID_RULE, MAX_BATCH_ID, MAX_ID
from tests.api.api_support import queued
from workers.store import JobStore

pytestmark = pytest.mark.security

SPEC: dict[str, Any] = {
    "prompt": "List the exhibits",
    "format": "json",
    "providers": ["sim"],
    "max_output_tokens": 200,
}


@pytest.mark.parametrize("suffix", ["commits", "out", "lease"])
def test_a_key_suffix_in_a_path_is_refused_not_a_500(api: httpx.Client, suffix: str) -> None:
    assert api.post("/v1/jobs", json={**SPEC, "job_id": "x"}).status_code == 202
    for path in (f"/v1/jobs/x:{suffix}", f"/v1/jobs/x:{suffix}/output"):
        r = api.get(path)
        assert r.status_code == 422, (path, r.status_code, r.text)
    assert api.get("/v1/jobs/x").json()["status"] == "queued"


@pytest.mark.parametrize("job_id", ["victim:lease", "victim:out", "victim:commits", "a:b"])
def test_a_job_id_naming_another_jobs_key_is_refused(
    api: httpx.Client, redis_client: Redis, redis_prefix: str, job_id: str
) -> None:
    assert api.post("/v1/jobs", json={**SPEC, "job_id": "victim"}).status_code == 202
    store = JobStore(redis_client, prefix=redis_prefix)
    before = {k: redis_client.type(k) for k in redis_client.scan_iter(f"{redis_prefix}*")}

    r = api.post("/v1/jobs", json={**SPEC, "job_id": job_id})

    assert r.status_code == 422, r.text
    assert "job_id" in r.text
    after = {k: redis_client.type(k) for k in redis_client.scan_iter(f"{redis_prefix}*")}
    assert after == before  # nothing written, the victim's keys untouched
    record = store.load("victim")
    assert record is not None and record.status.value == "queued"
    assert len(queued(redis_client, redis_prefix)) == 1


def test_a_batch_id_with_a_colon_is_refused(api: httpx.Client) -> None:
    r = api.post("/v1/batches", json={"specs": [SPEC], "batch_id": "b:meta"})
    assert r.status_code == 422, r.text
    assert api.get("/v1/batches/b:meta").status_code == 422


def test_the_longest_batch_id_gives_job_ids_that_obey_the_rule(api: httpx.Client) -> None:
    batch_id = "b" * MAX_BATCH_ID
    r = api.post("/v1/batches", json={"specs": [SPEC] * 3, "batch_id": batch_id})
    assert r.status_code in (200, 202), r.text
    for job_id in r.json()["jobs"]:
        assert len(job_id) <= MAX_ID
        assert api.get(f"/v1/jobs/{job_id}").status_code == 200
    longer = api.post("/v1/batches", json={"specs": [SPEC], "batch_id": "b" * (MAX_BATCH_ID + 1)})
    assert longer.status_code == 422


def test_the_rule_is_named_in_words() -> None:
    assert "':'" not in ID_RULE and "letters, digits" in ID_RULE
