"""``GET /metrics`` on a real uvicorn and a real Redis: the numbers are what Redis holds
(jobs by status, iterations, fallbacks, queue depths, unacknowledged messages, overdue
jobs, pending callbacks), the route needs the token unless made public, and a scrape's
cost is capped. With a RabbitMQ broker, the queue depths are RabbitMQ's."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis

from sim.app import make_transport
from sim.model import SimModel, SimOptions
from tests.api.api_support import QUEUE, make_settings
from tests.conftest import free_port
from tests.rabbitmq import delete_queues, queue_name, require_rabbitmq
from workers.app import make_app
from workers.calls import ProviderPool
from workers.iteration import run_iteration
from workers.providers.registry import load_profiles
from workers.ratelimit import TokenBucket
from workers.runtime import Runtime
from workers.store import TERMINAL, JobStore

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(client: httpx.Client, **headers: str) -> Samples:
    r = client.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            out[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, tuple(sorted(labels.items()))]


def by_status(samples: Samples, name: str) -> dict[str, float]:
    return {dict(labels)["status"]: v for (n, labels), v in samples.items() if n == name}


def spec(job_id: str, providers: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": "List the exhibits of the museum",
        "format": "text",
        "providers": providers,
        "model": "sim:format=text,size=1500",
        "max_output_tokens": 200,
        "continuation": {"max_attempts": 40},
        **extra,
    }


@pytest.fixture
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A profile with its own queue, and one whose server is down (a job naming it first
    falls back to ``sim``); read by the API and by ``runner``."""
    path = tmp_path / "profiles.toml"
    path.write_text(
        f"""
[profiles.fast]
kind = "openai"
base_url = "http://127.0.0.1:{free_port()}/v1"
queue = "fast-q"

[profiles.down]
kind = "openai"
base_url = "http://127.0.0.1:{free_port()}/v1"
timeout_s = 2.0
max_retries = 0
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("CONTINUUM_PROFILES", str(path))
    monkeypatch.setenv("CONTINUUM_METRICS_CACHE_S", "0")
    return path


def runner(client: Redis, prefix: str) -> Callable[[str], None]:
    """``run(job_id)`` runs the job's iterations in this process until it ends, as a
    worker would, with the profiles of the environment (``sim`` in-process)."""
    pool = ProviderPool(
        load_profiles(os.environ), transports={"sim": make_transport(model=SimModel(SimOptions()))}
    )
    settings = make_settings("redis://unused", prefix)
    store = JobStore(client, prefix=prefix)
    rt = Runtime(settings, store, pool, TokenBucket(store))

    def run(job_id: str) -> None:
        sent = [0]
        while sent:
            run_iteration(rt, job_id, sent.pop(), lambda _j, i, _c, _q: sent.append(i))
        record = rt.store.load(job_id)
        assert record is not None and record.status in TERMINAL, record

    return run


def test_metrics_are_what_redis_holds(
    make_api: Callable[..., httpx.Client],
    redis_client: Redis,
    redis_prefix: str,
    redis_url: str,
    profiles: Path,
) -> None:
    api = make_api(queue_grace_s=0.2)
    empty = scrape(api)
    assert set(by_status(empty, "continuum_jobs").values()) == {0}
    assert value(empty, "continuum_queue_messages", queue=QUEUE) == 0
    assert value(empty, "continuum_metrics_jobs_complete") == 1

    hook = {"callback_url": "https://hooks.example.com/continuum"}
    for job_id, providers, extra in [
        ("done-1", ["sim"], hook),
        ("done-2", ["down", "sim"], {}),
        ("cancelled", ["sim"], {}),
        ("waiting-1", ["sim"], {}),
        ("waiting-2", ["sim"], {}),
        ("elsewhere", ["fast"], {}),
    ]:
        r = api.post("/v1/jobs", json=spec(job_id, providers, **extra))
        assert r.status_code == 202, r.text
    run = runner(redis_client, redis_prefix)
    run("done-1")
    run("done-2")
    assert api.delete("/v1/jobs/cancelled").status_code == 200
    time.sleep(0.3)  # past queue_grace_s: the waiting jobs are overdue

    got = scrape(api)
    assert by_status(got, "continuum_jobs") == {
        "queued": 3,
        "running": 0,
        "succeeded": 2,
        "partial": 0,
        "failed": 0,
        "cancelled": 1,
    }
    views = {j: api.get(f"/v1/jobs/{j}").json() for j in ("done-1", "done-2")}
    iterations = by_status(got, "continuum_job_iterations")
    assert iterations["succeeded"] == sum(v["iteration"] for v in views.values()) > 2
    assert iterations["queued"] == iterations["cancelled"] == 0
    assert value(got, "continuum_job_provider_fallbacks") == 1
    assert views["done-2"]["fallbacks"][0]["from_profile"] == "down"
    # Every job's iteration 0 went to its profile's queue; the runner took none of them.
    assert value(got, "continuum_queue_messages", queue=QUEUE) == 5
    assert value(got, "continuum_queue_messages", queue="fast-q") == 1
    assert value(got, "continuum_queue_messages", queue="celery") == 0
    assert value(got, "continuum_jobs_overdue") == 3
    assert value(got, "continuum_callbacks_pending") == 1
    assert value(got, "continuum_broker_unacked_messages") == 0
    assert value(got, "continuum_metrics_jobs_read") == 6
    assert value(got, "continuum_metrics_jobs_complete") == 1
    assert 0 < value(got, "continuum_metrics_read_seconds") < 5

    # A consumer takes a message and holds it unacknowledged, as a worker running it does.
    producer = make_app(make_settings(redis_url, redis_prefix), broker_url=redis_url)
    with producer.connection_for_read() as conn:
        queue = conn.SimpleQueue(QUEUE)
        message = queue.get(timeout=5)
        held = scrape(api)
        assert value(held, "continuum_queue_messages", queue=QUEUE) == 4
        assert value(held, "continuum_broker_unacked_messages") == 1
        message.ack()
        assert value(scrape(api), "continuum_broker_unacked_messages") == 0
        queue.close()


def test_queue_depth_is_read_from_a_rabbitmq_broker(
    make_api: Callable[..., httpx.Client],
    redis_client: Redis,
    redis_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``CONTINUUM_BROKER_URL`` on RabbitMQ the API sends there (the store's Redis
    holds no queue), and ``/metrics`` counts the queue's messages on RabbitMQ."""
    rabbit = require_rabbitmq()
    monkeypatch.setenv("CONTINUUM_METRICS_CACHE_S", "0")
    queue = queue_name()
    try:
        api = make_api(broker_url=rabbit, queue=queue, consume_default_queue=False)
        assert value(scrape(api), "continuum_queue_messages", queue=queue) == 0  # undeclared
        for n in range(3):
            created = api.post("/v1/jobs", json=spec(f"rabbit-{n}", ["sim"]))
            assert created.status_code == 202, created.text

        got = scrape(api)

        assert value(got, "continuum_queue_messages", queue=queue) == 3
        assert not any(name == "continuum_broker_unacked_messages" for name, _ in got)
        assert redis_client.llen(f"{redis_prefix}{queue}") == 0  # nothing went to Redis
    finally:
        delete_queues(rabbit, queue)


def test_metrics_need_the_token_unless_public(
    make_api: Callable[..., httpx.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    guarded = make_api(api_token="metrics-token", api_insecure_local=False)
    refused = guarded.get("/metrics")
    assert refused.status_code == 401
    assert refused.json()["error"] == "unauthorized"
    assert guarded.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert "continuum_jobs" in str(scrape(guarded, Authorization="Bearer metrics-token"))

    monkeypatch.setenv("CONTINUUM_METRICS_PUBLIC", "1")
    public = make_api(api_token="metrics-token", api_insecure_local=False)
    assert ("continuum_metrics_jobs_complete", ()) in scrape(public)
    assert public.get("/v1/jobs/x").status_code == 401  # only /metrics is opened

    # What Prometheus asks for first: OpenMetrics.
    accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    r = public.get("/metrics", headers={"Accept": accept})
    assert r.headers["content-type"].startswith("application/openmetrics-text")
    assert r.text.endswith("# EOF\n")


def test_a_scrape_reads_at_most_max_jobs_and_reuses_its_answer(
    make_api: Callable[..., httpx.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTINUUM_METRICS_MAX_JOBS", "2")
    monkeypatch.setenv("CONTINUUM_METRICS_CACHE_S", "0")
    capped = make_api()
    for n in range(5):
        assert capped.post("/v1/jobs", json=spec(f"job-{n}", ["sim"])).status_code == 202
    got = scrape(capped)
    read = value(got, "continuum_metrics_jobs_read")
    assert read <= 2 and value(got, "continuum_metrics_jobs_complete") == 0
    assert sum(by_status(got, "continuum_jobs").values()) == read

    monkeypatch.delenv("CONTINUUM_METRICS_MAX_JOBS")
    monkeypatch.setenv("CONTINUUM_METRICS_CACHE_S", "60")
    cached = make_api()
    first = scrape(cached)
    assert value(first, "continuum_jobs", status="queued") == 5
    assert cached.post("/v1/jobs", json=spec("job-5", ["sim"])).status_code == 202
    assert value(scrape(cached), "continuum_jobs", status="queued") == 5  # the same answer
    assert value(scrape(capped), "continuum_metrics_jobs_read") <= 2


def test_commit_counters_add_up_to_the_jobs_metadata(
    make_api: Callable[..., httpx.Client],
    redis_client: Redis,
    redis_prefix: str,
    profiles: Path,
) -> None:
    """Tokens, cost, merge failures, fallbacks and iteration times are counted by the
    commits that land, once each: their totals are the sums of the jobs' metadata."""
    api = make_api()
    before = scrape(api)
    assert value(before, "continuum_iterations_total") == 0
    assert value(before, "continuum_iteration_seconds_count") == 0
    # c3's replies are now and then garbage: JSON that fails to merge, asked again.
    chaos = {"format": "json", "model": "sim:format=json,size=6000,malformed=0.4"}
    for job_id, providers in [("c1", ["sim"]), ("c2", ["down", "sim"]), ("c3", ["sim"])]:
        body = spec(job_id, providers, **(chaos if job_id == "c3" else {}))
        assert api.post("/v1/jobs", json=body).status_code == 202
        runner(redis_client, redis_prefix)(job_id)
    metas = [api.get(f"/v1/jobs/{j}/result").json()["metadata"] for j in ("c1", "c2", "c3")]
    views = [api.get(f"/v1/jobs/{j}").json() for j in ("c1", "c2", "c3")]
    assert sum(m["merge_failures"] for m in metas) > 0  # the malformed replies were counted
    got = scrape(api)
    assert value(got, "continuum_iterations_total") == sum(v["iteration"] for v in views)
    assert value(got, "continuum_input_tokens_total") == sum(m["total_input_tokens"] for m in metas)
    assert value(got, "continuum_output_tokens_total") == sum(
        m["total_output_tokens"] for m in metas
    )
    assert value(got, "continuum_merge_failures_total") == sum(m["merge_failures"] for m in metas)
    assert value(got, "continuum_provider_fallbacks_total") == 1
    assert value(got, "continuum_cost_estimate_usd_total") == pytest.approx(
        sum(m["total_cost_estimate"] for m in metas)
    )
    count = value(got, "continuum_iteration_seconds_count")
    assert count == value(got, "continuum_iterations_total")
    assert value(got, "continuum_iteration_seconds_bucket", le="+Inf") == count
    assert 0 < value(got, "continuum_iteration_seconds_sum") < 60

    # A commit that does not land (stale: the job moved on) counts nothing.
    store = JobStore(redis_client, prefix=redis_prefix)
    record = store.load("c1")
    assert record is not None
    stale = store.commit(
        "c1",
        expected_iteration=0,
        state=record.state,
        append="",
        replace=False,
        status=record.status,
        deadline=None,
        lease_token="t",
        summary={},
        counts={"input_tokens": 1000, "seconds": 1.0, "seconds_le": "1.0"},
    )
    assert stale.value == "stale"
    assert value(scrape(api), "continuum_iterations_total") == value(
        got, "continuum_iterations_total"
    )
