"""``GET /v1/jobs`` on a real uvicorn and Redis: newest first, filters, cursor paging that
stays right while jobs are created, bounded work per page, expired jobs leave the index."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from redis import Redis

from tests.api.api_support import Stepper
from workers.keys import SHARDS, shard_of
from workers.store import JobStore

PROMPT = "List the exhibits of the museum"


def spec(job_id: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": PROMPT,
        "format": "text",
        "providers": ["sim"],
        "model": "sim:format=text,size=600",
        "max_output_tokens": 400,
    }


def every_page(api: httpx.Client, **params: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        r = api.get("/v1/jobs", params=query)
        assert r.status_code == 200, r.text
        body = r.json()
        pages.append([j["job_id"] for j in body["jobs"]])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages


def test_jobs_come_newest_first_in_pages_that_miss_none(api: httpx.Client) -> None:
    ids = [f"j{i:02d}" for i in range(12)]
    for job_id in ids:
        assert api.post("/v1/jobs", json=spec(job_id)).status_code == 202
    pages = every_page(api, limit=5)
    assert [len(p) for p in pages] == [5, 5, 2]
    assert [j for p in pages for j in p] == ids[::-1]
    first = api.get("/v1/jobs", params={"limit": 1}).json()["jobs"][0]
    assert first["job_id"] == "j11" and first["status"] == "queued"
    assert "metadata" not in first or first["metadata"] is None


def test_a_page_stays_right_while_jobs_are_created(api: httpx.Client) -> None:
    for i in range(4):
        api.post("/v1/jobs", json=spec(f"old{i}"))
    first = api.get("/v1/jobs", params={"limit": 2}).json()
    api.post("/v1/jobs", json=spec("newer"))  # after the first page: not in the next ones
    rest = every_page(api, limit=2, cursor=first["next_cursor"])
    assert [j["job_id"] for j in first["jobs"]] + [j for p in rest for j in p] == [
        "old3",
        "old2",
        "old1",
        "old0",
    ]


def test_filters_by_status_batch_and_creation_time(
    api: httpx.Client, stepper: Stepper, redis_client: Redis, redis_prefix: str
) -> None:
    api.post("/v1/jobs", json=spec("done"))
    while stepper.step("done").get("status", "running") == "running":
        pass
    api.post("/v1/jobs", json=spec("waiting"))
    body = {"specs": [spec("b0") | {"job_id": None}, spec("b1") | {"job_id": None}]}
    api.post("/v1/batches", json={**body, "batch_id": "bt"})
    assert [j for p in every_page(api, status="succeeded") for j in p] == ["done"]
    queued = [j for p in every_page(api, status=["queued", "running"]) for j in p]
    assert set(queued) == {"waiting", "bt.0", "bt.1"}
    assert sorted(j for p in every_page(api, batch="bt") for j in p) == ["bt.0", "bt.1"]
    store = JobStore(redis_client, prefix=redis_prefix)
    since = store.load("waiting")
    assert since is not None
    recent = [j for p in every_page(api, created_since=since.created_at) for j in p]
    assert "done" not in recent and "waiting" in recent


def test_a_page_looks_at_a_bounded_number_of_jobs(
    redis_client: Redis, redis_prefix: str, api: httpx.Client
) -> None:
    """A status nobody has: each call looks at most ``scan`` jobs and says where to go on."""
    for i in range(7):
        api.post("/v1/jobs", json=spec(f"s{i}"))
    store = JobStore(redis_client, prefix=redis_prefix)
    from workers.store import JobStatus  # noqa: PLC0415

    calls = 0
    cursor = None
    while True:
        found, cursor = store.list_jobs(
            limit=10, cursor=cursor, statuses=frozenset({JobStatus.FAILED}), scan=3
        )
        calls += 1
        assert found == []
        if cursor is None:
            break
    assert calls == 3  # 7 jobs, 3 looked at per call


def test_expired_jobs_leave_the_index(
    redis_client: Redis, redis_prefix: str, api: httpx.Client
) -> None:
    for job_id in ("keep", "gone1", "gone2"):
        api.post("/v1/jobs", json=spec(job_id))
    store = JobStore(redis_client, prefix=redis_prefix)
    redis_client.delete(store.keys.job("gone1"), store.keys.job("gone2"))  # as expiry does
    assert store.prune_jobs_index() == 2
    assert redis_client.zrange(store.keys.jobs(shard_of("keep")), 0, -1) == [b"keep"]
    redis_client.delete(store.keys.job("keep"))
    assert api.get("/v1/jobs").json() == {"jobs": [], "next_cursor": None}
    left = sum(redis_client.zcard(store.keys.jobs(shard)) for shard in range(SHARDS))
    assert left == 0  # a listing drops what it finds gone


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 101},
        {"status": "sleeping"},
        {"batch": "no:colon"},
        {"cursor": "not-a-cursor"},
        {"cursor": "12.5:bad:id"},
        {"created_since": -1},
    ],
)
def test_bad_parameters_are_refused_with_a_reason(
    api: httpx.Client, params: dict[str, Any]
) -> None:
    r = api.get("/v1/jobs", params=params)
    assert r.status_code == 422, r.text
    assert r.json()["detail"]
