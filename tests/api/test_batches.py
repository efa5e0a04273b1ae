"""Batches through the status API: invalid specs kept as failed jobs, idempotent ids,
aggregated progress, cancellation."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from redis import Redis
from redis.connection import AbstractConnection

from tests.api.api_support import queued

VALID = {"prompt": "Write the catalogue", "format": "csv", "providers": ["sim"]}


def test_a_batch_runs_its_valid_specs_and_keeps_the_invalid_ones(
    api: httpx.Client, redis_client: Redis, redis_prefix: str
) -> None:
    body = {
        "batch_id": "b1",
        "specs": [VALID, {**VALID, "job_id": "named"}, {**VALID, "format": "yaml"}],
    }
    r = api.post("/v1/batches", json=body)
    assert r.status_code == 202, r.text
    assert r.headers["location"] == "/v1/batches/b1"
    done = r.json()
    assert done["batch_id"] == "b1" and done["created"] == 3
    assert done["jobs"] == ["b1.0", "named", "b1.2"]
    assert list(done["invalid"]) == ["b1.2"]
    assert done["invalid"]["b1.2"].startswith("invalid job: format: Input should be")
    sent = [m["kwargs"]["job_id"] for m in queued(redis_client, redis_prefix)]
    assert sorted(sent) == ["b1.0", "named"]  # the invalid one is not queued

    view = api.get("/v1/batches/b1").json()
    assert view["size"] == 3 and view["ended"] == 1 and view["done"] is False
    assert view["counts"]["queued"] == 2 and view["counts"]["failed"] == 1
    assert sorted(view["jobs"]) == ["b1.0", "b1.2", "named"]
    failed = api.get("/v1/jobs/b1.2").json()
    assert failed["status"] == "failed" and "format" in failed["error"]
    assert failed["metadata"] is None and failed["batch"] == "b1"

    again = api.post("/v1/batches", json=body)
    assert again.status_code == 200 and again.json()["created"] == 0
    assert len(queued(redis_client, redis_prefix)) == 2

    cancelled = api.delete("/v1/batches/b1")
    assert cancelled.status_code == 200
    out = cancelled.json()
    assert out["cancelled"] == 2 and out["size"] == 3
    assert out["batch"]["done"] is True and out["batch"]["counts"]["cancelled"] == 2


def test_a_batch_without_an_id_gets_one(api: httpx.Client) -> None:
    r = api.post("/v1/batches", json={"specs": [VALID]})
    assert r.status_code == 202
    batch_id = r.json()["batch_id"]
    assert r.json()["jobs"] == [f"{batch_id}.0"]


def test_invalid_batch_requests(api: httpx.Client) -> None:
    cases = [
        ({"specs": []}, "specs: List should have at least 1 item"),
        ({"specs": [VALID], "batch_id": "no spaces"}, "batch_id: String should match"),
        ({"specs": [VALID], "extra": 1}, "extra: Extra inputs are not permitted"),
        ({"specs": ["a string"]}, "specs.0: Input should be a valid dictionary"),
        ({}, "specs: Field required"),
    ]
    for body, message in cases:
        r = api.post("/v1/batches", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["detail"].startswith(message), r.json()


def test_a_batch_of_invalid_specs_costs_round_trips_per_chunk_not_per_job(
    api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,200 invalid specs become 1,200 failed jobs, counted in their batch, in a few Redis
    round trips per chunk of the batch (``workers.submit.BATCH_CHUNK``), not a few per job."""
    sent = [0]
    send: Any = AbstractConnection.send_packed_command  # redis-py: no hints

    def counted(conn: AbstractConnection, *args: Any, **kwargs: Any) -> None:
        sent[0] += 1
        send(conn, *args, **kwargs)

    specs = [{"prompt": f"p{n}", "format": "yaml"} for n in range(1200)]
    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    r = api.post("/v1/batches", json={"batch_id": "many", "specs": specs})
    monkeypatch.undo()
    assert r.status_code == 202 and r.json()["created"] == 1200
    assert len(r.json()["invalid"]) == 1200
    assert sent[0] <= 4 * 3 + 4  # 3 chunks; the batch's record; scripts loaded once
    view = api.get("/v1/batches/many").json()
    assert view["done"] is True and view["counts"]["failed"] == 1200
    assert view["expires_at"] is not None
    again = api.post("/v1/batches", json={"batch_id": "many", "specs": specs})
    assert again.status_code == 200 and again.json()["created"] == 0
    assert api.get("/v1/batches/many").json()["ended"] == 1200
