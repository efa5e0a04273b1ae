"""Numbers a job chooses are bounded by the operator (``CONTINUUM_LIMIT_*``), through the
real API and Redis: a spec over a limit is refused with a 422 that names the setting, and
nothing is created or queued."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from redis import Redis

from sim.options import SimOptions, model_options
from tests.api.api_support import queued

pytestmark = pytest.mark.security

SPEC: dict[str, Any] = {"prompt": "Write the catalogue", "format": "text", "providers": ["sim"]}

OVER = [
    ({"max_output_tokens": 10**9}, "max_output_tokens", "CONTINUUM_LIMIT_MAX_OUTPUT_TOKENS"),
    ({"continuation": {"max_attempts": 10**9}}, "max_attempts", "CONTINUUM_LIMIT_MAX_ATTEMPTS"),
    (
        {"validation": {"max_repair_attempts": 10**6}},
        "max_repair_attempts",
        "CONTINUUM_LIMIT_MAX_REPAIR_ATTEMPTS",
    ),
    (
        {"continuation": {"context_budget_chars": 10**9}},
        "context_budget_chars",
        "CONTINUUM_LIMIT_CONTEXT_BUDGET_CHARS",
    ),
    ({"continuation": {"overlap_chars": 10**9}}, "overlap_chars", "CONTINUUM_LIMIT_OVERLAP_CHARS"),
    ({"continuation": {"stall_limit": 10**9}}, "stall_limit", "CONTINUUM_LIMIT_STALL_LIMIT"),
    (
        {"continuation": {"max_merge_failures": 10**9}},
        "max_merge_failures",
        "CONTINUUM_LIMIT_MAX_MERGE_FAILURES",
    ),
]


@pytest.mark.parametrize(("extra", "field", "setting"), OVER, ids=[o[1] for o in OVER])
def test_a_number_over_the_operators_limit_is_refused(
    api: httpx.Client,
    redis_client: Redis,
    redis_prefix: str,
    extra: dict[str, Any],
    field: str,
    setting: str,
) -> None:
    r = api.post("/v1/jobs", json={**SPEC, "job_id": "greedy", **extra})
    assert r.status_code == 422, r.text
    assert field in r.json()["detail"] and setting in r.json()["detail"]
    assert api.get("/v1/jobs/greedy").status_code == 404
    assert queued(redis_client, redis_prefix) == []


def test_the_operator_may_raise_a_limit(make_api: Callable[..., httpx.Client]) -> None:
    api = make_api(limit_max_output_tokens=10**9)
    assert api.post("/v1/jobs", json={**SPEC, "max_output_tokens": 10**9}).status_code == 202


def test_a_batch_keeps_a_spec_over_a_limit_as_a_failed_job(api: httpx.Client) -> None:
    body = {"specs": [SPEC, {**SPEC, "max_output_tokens": 10**9}], "batch_id": "limits"}
    r = api.post("/v1/batches", json=body)
    assert r.status_code == 202, r.text
    assert list(r.json()["invalid"]) == ["limits.1"]
    assert "CONTINUUM_LIMIT_MAX_OUTPUT_TOKENS" in r.json()["invalid"]["limits.1"]
    assert api.get("/v1/jobs/limits.0").json()["status"] == "queued"
    assert api.get("/v1/jobs/limits.1").json()["status"] == "failed"


@pytest.mark.parametrize(
    "model", ["sim:size=500000000", "sim:hang=100000", "sim:latency=1000", "sim:overlap=10000000"]
)
def test_the_sim_refuses_a_model_name_asking_for_too_much(model: str) -> None:
    with pytest.raises(ValueError, match=r"at most|less than or equal"):
        model_options(model, SimOptions())


def test_an_unknown_provider_profile_is_refused_at_submission(
    api: httpx.Client, redis_client: Redis, redis_prefix: str
) -> None:
    r = api.post("/v1/jobs", json={**SPEC, "job_id": "typo", "providers": ["sim", "opnai"]})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "unknown_profile"
    assert "'opnai'" in body["detail"] and "known: " in body["detail"]
    assert "sim" in body["detail"].split("known: ")[1]  # it names the profiles there are
    assert api.get("/v1/jobs/typo").status_code == 404
    assert queued(redis_client, redis_prefix) == []


def test_a_batch_keeps_a_spec_naming_an_unknown_profile_as_a_failed_job(
    api: httpx.Client,
) -> None:
    body = {"specs": [SPEC, {**SPEC, "providers": ["nope"]}], "batch_id": "profiles"}
    r = api.post("/v1/batches", json=body)
    assert r.status_code == 202, r.text
    assert list(r.json()["invalid"]) == ["profiles.1"]
    assert "unknown provider profile" in r.json()["invalid"]["profiles.1"]
    assert api.get("/v1/jobs/profiles.1").json()["status"] == "failed"
