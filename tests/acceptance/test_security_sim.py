"""The simulated LLM is off in a worker unless enabled: a deploy that forgot its provider
key fails jobs loudly instead of answering them with made-up text marked "succeeded".

Real ``continuum worker`` processes on a private Redis, fed by a bare Celery producer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.acceptance.procs import Cluster
from workers.providers.registry import NO_PROVIDER
from workers.store import JobStatus

pytestmark = [pytest.mark.security, pytest.mark.slow]


def spec(job_id: str, **extra: Any) -> dict[str, Any]:
    return {"job_id": job_id, "prompt": "Write the catalogue", "format": "text", **extra}


def test_a_worker_without_a_provider_fails_jobs_and_never_runs_the_sim(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster(CONTINUUM_ENABLE_SIM="")  # a deploy: no key, sim not enabled
    c.worker()
    producer = c.producer()
    producer.send_task("continuum.generate", kwargs={"spec": spec("no-key")}, queue="q")
    named = spec("names-sim", providers=["sim"])
    producer.send_task("continuum.generate", kwargs={"spec": named}, queue="q")

    records = c.wait_ended(["no-key", "names-sim"], timeout=60)

    store = c.store()
    for job_id, record in records.items():
        assert record.status is JobStatus.FAILED, (job_id, record.status)
        assert store.output(job_id) == ""  # no text, made up or not
    assert NO_PROVIDER in (records["no-key"].error or "")
    assert "unknown provider profile(s) 'sim'" in (records["names-sim"].error or "")


def test_an_enabled_sim_serves_jobs_that_name_no_provider(cluster: Callable[..., Cluster]) -> None:
    c = cluster(CONTINUUM_ENABLE_SIM="1")
    c.worker()
    c.producer().send_task(
        "continuum.generate",
        kwargs={"spec": spec("with-sim", model="sim:format=text,size=400")},
        queue="q",
    )
    record = c.wait_ended(["with-sim"], timeout=60)["with-sim"]
    assert record.status is JobStatus.SUCCEEDED, record.error
