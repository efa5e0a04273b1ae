"""Jobs on real worker processes over a real Redis: a bare Celery producer, the documented
raw message, duplicate deliveries, poison messages, batches, the command line, workers
killed with SIGKILL, and Redis restarted under load."""

from __future__ import annotations

import base64
import json
import random
import re
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from redis import Redis
from redis.cluster import RedisCluster

from core import JobSpec
from sim.app import create_app, make_transport
from sim.model import SimOptions
from tests.acceptance.procs import CONTINUUM, ROOT, Cluster
from tests.rabbitmq import require_rabbitmq
from workers.calls import ProviderPool
from workers.embedded import EmbeddedRedis
from workers.local import Outcome, run_job
from workers.providers.profiles import Profile

PROMPT = "Write the catalogue of the city archive"
SEED = 21
LATENCY = 0.25


@pytest.fixture
def sim_url(serve: Callable[[Any], str]) -> str:
    """The simulated LLM on a real HTTP server, with latency on every call."""
    return serve(create_app(SimOptions(seed=SEED, latency=LATENCY)))


def spec(job_id: str, fmt: str, size: int = 5000, **extra: Any) -> dict[str, Any]:
    knobs = "fence=0.2,prose=0.2" if fmt in {"json", "text"} else "fence=0.2"
    return {
        "job_id": job_id,
        "prompt": f"{PROMPT} ({job_id})",
        "format": fmt,
        "providers": ["sim"],
        "model": f"sim:format={fmt},size={size},overlap=80,{knobs}",
        "max_output_tokens": 250,
        "continuation": {"max_attempts": 60},
        **extra,
    }


def reference(specs: list[dict[str, Any]]) -> dict[str, str]:
    """Each job run in this process with no fault at all: what every run must give."""
    profile = Profile(name="sim", kind="openai", base_url="http://sim/v1")

    def one(raw: dict[str, Any]) -> tuple[str, str]:
        pool = ProviderPool(
            {"sim": profile},
            env={},
            transports={"sim": make_transport(SimOptions(seed=SEED))},
        )
        result = run_job(JobSpec.model_validate(raw), pool)
        assert result.outcome is Outcome.SUCCEEDED and result.output is not None
        return raw["job_id"], result.output

    with ThreadPoolExecutor(8) as ex:
        return dict(ex.map(one, specs))


def check_exactly_once(c: Cluster, expected: dict[str, str]) -> None:
    """Every job succeeded with the fault-free output, each iteration committed once."""
    store = c.store()
    for job_id, want in expected.items():
        record = store.load(job_id)
        assert record is not None and record.status.value == "succeeded", (job_id, record)
        got = store.final_output(record)
        assert got == want, f"{job_id}: output differs from the fault-free run"
        commits = store.commits(job_id)
        assert commits == dict.fromkeys(range(record.iteration), 1), (job_id, commits)


def send(c: Cluster, specs: list[dict[str, Any]], queue: str | None = None) -> None:
    producer = c.producer()
    for raw in specs:
        producer.send_task("continuum.generate", kwargs={"spec": raw}, queue=queue or c.queue)


def cli(c: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CONTINUUM, *args], env=c.env, capture_output=True, text=True, timeout=60, check=False
    )


# -- producers -----------------------------------------------------------------------------


def test_bare_celery_client_and_the_cli(
    cluster: Callable[..., Cluster], sim_url: str, broker: str | None
) -> None:
    """``Celery(broker=URL).send_task("continuum.generate", ...)`` creates and runs a job,
    on either broker (Redis, or RabbitMQ with job state in Redis); ``continuum status``,
    ``result`` and ``cancel`` report on it."""
    c = cluster(sim_url, broker_url=broker)
    c.worker()
    jobs = [spec("bare-json", "json"), spec("bare-csv", "csv")]
    send(c, jobs)
    c.wait_ended([j["job_id"] for j in jobs], timeout=60)
    check_exactly_once(c, reference(jobs))

    shown = cli(c, "status", "bare-json", "--json")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    assert view["status"] == "succeeded" and view["progress"]["chars"] > 4000
    meta = view["metadata"]
    retries = meta["merge_failures"] + meta["seam_retries"]  # calls that continued nothing
    assert meta["continuation_count"] == view["iteration"] - 1 - retries
    human = cli(c, "status", "bare-csv")
    assert "succeeded" in human.stdout and "progress:" in human.stdout
    result = cli(c, "result", "bare-csv")
    assert result.returncode == 0 and result.stdout == reference(jobs[1:])["bare-csv"]
    assert cli(c, "cancel", "bare-csv").returncode == 1  # it has ended
    missing = cli(c, "status", "nope")
    assert missing.returncode == 1 and "no such job: nope" in missing.stderr


RAW_DOC = ROOT / "docs" / "protocol.md"


def documented_message() -> str:
    """The raw message of docs/protocol.md, byte for byte (the block after the marker)."""
    text = RAW_DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- raw-message -->\n```json\n(.*?)\n```", text, re.S)
    assert found, "docs/protocol.md lost its raw message block"
    return found.group(1)


def test_the_documented_raw_message_creates_a_job(
    cluster: Callable[..., Cluster], sim_url: str, redis_client: Redis
) -> None:
    """What any language can do: LPUSH the documented JSON to the ``continuum`` list."""
    c = cluster(sim_url, CONTINUUM_QUEUE="continuum")
    message = documented_message()
    envelope = json.loads(message)
    assert envelope["headers"]["task"] == "continuum.generate"
    redis_client.lpush(f"{c.prefix}continuum", message)  # the prefix is the test's own
    c.worker()
    body = json.loads(envelope["body"])
    job_id = body[1]["spec"]["job_id"]
    records = c.wait_ended([job_id], timeout=60)
    assert records[job_id].status.value == "succeeded", c.logs()
    assert len(c.store().final_output(records[job_id]) or "") > 1000


# -- exactly once ----------------------------------------------------------------------------


def test_duplicate_deliveries_through_celery_are_no_ops(
    cluster: Callable[..., Cluster], sim_url: str
) -> None:
    """Iteration 0 delivered three times at once, then every iteration again at the end:
    one commit each, and the output of a run without duplicates."""
    c = cluster(sim_url)
    c.worker(concurrency=6)
    job = spec("dup", "text")
    producer = c.producer()
    producer.send_task("continuum.generate", kwargs={"spec": job}, queue="q")
    for _ in range(2):
        producer.send_task("continuum.iterate", kwargs={"job_id": "dup", "iteration": 0}, queue="q")
    records = c.wait_ended(["dup"], timeout=60)
    for i in range(records["dup"].iteration + 1):  # late copies of every message
        producer.send_task("continuum.iterate", kwargs={"job_id": "dup", "iteration": i}, queue="q")
    time.sleep(2 * LATENCY + 1)
    check_exactly_once(c, reference([job]))


def test_poison_messages_fail_clearly_and_the_worker_goes_on(
    cluster: Callable[..., Cluster], sim_url: str, redis_client: Redis
) -> None:
    c = cluster(sim_url)
    producer = c.producer()
    bad = {"job_id": "bad-1", "prompt": "x", "format": "yaml", "max_output_tokens": "many"}
    producer.send_task("continuum.generate", kwargs={"spec": bad}, queue="q")
    producer.send_task("continuum.generate", args=["positional"], queue="q")
    producer.send_task("continuum.iterate", kwargs={"job_id": "bad-1", "iteration": -3}, queue="q")
    redis_client.lpush(f"{c.prefix}q", b"\x00not json at all")
    good = spec("after-poison", "text")
    producer.send_task("continuum.generate", kwargs={"spec": good}, queue="q")
    worker = c.worker(concurrency=1)  # in order: the bad iterate must not beat generate
    records = c.wait_ended(["bad-1", "after-poison"], timeout=60)
    failed = records["bad-1"]
    assert failed.status.value == "failed"
    assert (
        failed.error is not None
        and "format" in failed.error
        and "max_output_tokens" in failed.error
    )
    assert json.loads(failed.spec) == bad  # what the user sent is kept
    check_exactly_once(c, reference([good]))
    log = c.log(worker)
    assert "invalid job bad-1" in log and "keyword arguments only" in log
    assert worker.poll() is None  # still running
    assert redis_client.llen(f"{c.prefix}q") == 0  # nothing left to redeliver forever


# -- routing and rate limits ------------------------------------------------------------------


def test_a_profile_queue_routes_iterations_and_its_rate_limit_is_shared(
    cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    """A profile with its own queue and a rate limit of 4 calls/s: its iterations run only
    on the worker that consumes that queue, and two workers together never exceed the rate."""
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(
        '[profiles.limited]\nkind = "sim"\nqueue = "limited-q"\nrate_limit_per_s = 4.0\n',
        encoding="utf-8",
    )
    c = cluster(CONTINUUM_PROFILES=str(profiles))
    general = c.worker(concurrency=2)
    dedicated = [c.worker(concurrency=4, queues="limited-q") for _ in range(2)]
    jobs = [{**spec(f"lim{i}", "text", size=4500), "providers": ["limited"]} for i in range(2)]
    started = time.monotonic()
    send(c, jobs)
    records = c.wait_ended([j["job_id"] for j in jobs], timeout=60)
    elapsed = time.monotonic() - started
    calls = sum(r.iteration for r in records.values())
    assert all(r.status.value == "succeeded" for r in records.values()), c.logs()
    assert calls >= 8 and elapsed >= (calls - 1) / 4.0 * 0.9, (calls, elapsed)
    assert "Task continuum.iterate[" not in c.log(general)  # it only created the jobs
    assert "Task continuum.generate[" in c.log(general)
    logs = "".join(c.log(w) for w in dedicated)
    assert '"commit": "committed"' in logs and '"deferred_s"' in logs


# -- callbacks ----------------------------------------------------------------------------


def test_the_result_is_posted_to_the_callback_url_with_retries(
    cluster: Callable[..., Cluster], sim_url: str, serve: Callable[[Any], str]
) -> None:
    """The receiver answers 500 twice; the third POST is taken (retried with a countdown). It holds
    the status view and the exact result; the job records the delivery."""
    received: list[dict[str, Any]] = []
    receiver = FastAPI()

    @receiver.post("/hook")
    async def hook(request: Request) -> Response:
        received.append(await request.json())
        return Response(status_code=500 if len(received) < 3 else 204)

    url = serve(receiver)
    c = cluster(sim_url, CONTINUUM_CALLBACK_ALLOW="127.0.0.1")  # the receiver is on loopback
    c.worker()
    job = spec("cb", "csv", callback_url=f"{url}/hook")
    send(c, [job])
    c.wait_ended(["cb"], timeout=60)
    deadline = time.monotonic() + 30
    while (c.store().redis.hget(c.store().keys.job("cb"), "callback") or b"") != b"delivered":
        assert time.monotonic() < deadline, (received, c.logs())
        time.sleep(0.1)
    assert len(received) == 3
    last = received[-1]
    assert last["job"]["job_id"] == "cb" and last["job"]["status"] == "succeeded"
    assert last["job"]["metadata"]["continuation_count"] >= 1
    assert last["result"] == reference([job])["cb"]


# -- batches -----------------------------------------------------------------------------


def test_batch_progress_and_cancellation(cluster: Callable[..., Cluster], sim_url: str) -> None:
    c = cluster(sim_url)
    c.worker(concurrency=4)
    specs = [spec(f"b{i}", "text", size=40_000) for i in range(4)]
    specs.append({"prompt": "an unknown format", "format": "yaml"})
    producer = c.producer()
    producer.send_task(
        "continuum.submit_batch", kwargs={"batch_id": "batch-1", "specs": specs}, queue="q"
    )
    store = c.store()
    deadline = time.monotonic() + 30
    while (status := store.batch_status("batch-1")) is None or status.iterations < 8:
        assert time.monotonic() < deadline, c.logs()
        time.sleep(0.1)
    assert status.size == 5 and status.counts["failed"] == 1  # the invalid spec, kept
    shown = cli(c, "status", "batch-1", "--batch", "--json")
    view = json.loads(shown.stdout)
    assert view["size"] == 5 and view["chars"] > 0 and not view["done"]
    cancel = cli(c, "cancel", "batch-1", "--batch")
    assert cancel.returncode == 0 and "4 of 5 jobs cancelled" in cancel.stdout
    c.wait_ended([f"b{i}" for i in range(4)], timeout=10)
    time.sleep(2 * LATENCY + 0.5)  # iterations in flight when cancelled commit nothing
    final = store.batch_status("batch-1")
    assert final is not None and final.done and final.counts["cancelled"] == 4
    for i in range(4):
        record = store.load(f"b{i}")
        assert record is not None and record.status.value == "cancelled"
        assert record.iteration == status.iterations or record.iteration < 40


# -- crashes ------------------------------------------------------------------------------


def _unacked_bodies(redis_client: Redis, prefix: str) -> list[dict[str, Any]]:
    """The messages a killed worker held (kombu keeps them in its ``unacked`` hash)."""
    out = []
    for raw in redis_client.hvals(f"{prefix}unacked"):
        envelope = json.loads(raw)[0]  # [message, exchange, routing key]
        body = envelope["body"]
        if envelope["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        out.append({"task": envelope["headers"]["task"], "body": body, "size": len(raw)})
    return out


@pytest.mark.slow
def test_workers_killed_again_and_again(
    cluster: Callable[..., Cluster], sim_url: str, redis_client: Redis, broker: str | None
) -> None:
    """A batch on two workers; one is SIGKILLed every second or two and replaced. Every
    job ends with the fault-free output, every iteration committed exactly once, on either
    broker; and (on Redis, where kombu keeps them where a test can read them) the messages
    a dead worker held name only a job and an iteration."""
    c = cluster(sim_url, broker_url=broker)
    formats = ["text", "csv", "markdown", "json"]
    jobs = [spec(f"chaos{i}", formats[i % 4], size=12000) for i in range(12)]
    expected = reference(jobs)
    beat = c.beat()
    workers = [c.worker(concurrency=3), c.worker(concurrency=3)]
    send(c, jobs)
    rng = random.Random(5)
    kills: list[float] = []
    inspected: list[dict[str, Any]] = []
    next_kill = time.monotonic() + 1.5

    def chaos() -> None:
        nonlocal next_kill
        if len(kills) >= 6 or time.monotonic() < next_kill:
            return
        victim = workers.pop(rng.randrange(len(workers)))
        c.kill(victim)
        kills.append(time.monotonic())
        if not inspected and broker is None:
            inspected.extend(_unacked_bodies(redis_client, c.prefix))
        workers.append(c.worker(concurrency=3, wait=False))
        next_kill = time.monotonic() + rng.uniform(1.0, 2.5)

    c.wait_ended(list(expected), timeout=150, tick=chaos)
    assert len(kills) >= 4, "the jobs ended before the chaos did its work"
    check_exactly_once(c, expected)
    assert "sent again" in c.log(beat), "no iteration was lost with its worker"
    assert broker is not None or any(m["task"] == "continuum.iterate" for m in inspected)
    for message in inspected:
        if message["task"] == "continuum.iterate":
            args, kwargs, _ = json.loads(message["body"])
            assert args == [] and set(kwargs) == {"job_id", "iteration"}
            assert message["size"] < 4096 and PROMPT not in str(message["body"])


@pytest.mark.slow
def test_workers_killed_on_a_redis_cluster_store_with_a_rabbitmq_broker(
    cluster: Callable[..., Cluster], sim_url: str, redis_url: str, redis_cluster_url: str
) -> None:
    """Beyond one Redis: the queue on RabbitMQ, job state on a 3-master Redis Cluster
    (``redis+cluster://``), Celery's results on a plain Redis. A batch on two workers, one
    SIGKILLed twice and replaced: every job ends with the fault-free output, each iteration
    committed once, and the jobs' keys live on every master."""
    broker = require_rabbitmq()
    c = cluster(
        sim_url, url=redis_cluster_url, broker_url=broker, CONTINUUM_RESULT_BACKEND=redis_url
    )
    formats = ["text", "csv", "markdown", "json"]
    jobs = [spec(f"shard{i}", formats[i % 4], size=8000) for i in range(9)]
    expected = reference(jobs)
    c.beat()
    workers = [c.worker(concurrency=3), c.worker(concurrency=3)]
    started = time.monotonic()
    send(c, jobs)
    kills: list[float] = []

    def chaos() -> None:
        if len(kills) < 2 and time.monotonic() - started > 1.5 * (len(kills) + 1):
            c.kill(workers.pop(0))
            kills.append(time.monotonic())
            workers.append(c.worker(concurrency=3, wait=False))

    c.wait_ended(list(expected), timeout=150, tick=chaos)
    assert kills, "the jobs ended before the chaos did its work"
    check_exactly_once(c, expected)
    store = c.store()
    assert isinstance(store.redis, RedisCluster)
    share = 16384 // 3  # tests/redis_cluster.py gives each master an equal share of slots
    masters = {min(store.redis.keyslot(store.keys.job(j)) // share, 2) for j in expected}  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
    assert masters == {0, 1, 2}, "the jobs did not spread over the cluster's masters"


@pytest.mark.slow
def test_redis_restarted_in_the_middle_of_a_batch(
    cluster: Callable[..., Cluster], sim_url: str, tmp_path: Path
) -> None:
    """The broker and store restart (AOF replayed); workers reconnect and jobs resume."""
    server = EmbeddedRedis(tmp_path / "own-redis").start()
    try:
        c = cluster(sim_url, url=server.url)
        jobs = [spec(f"rr{i}", ["text", "json", "csv"][i % 3], size=6000) for i in range(6)]
        expected = reference(jobs)
        c.beat()
        c.worker(concurrency=4)
        send(c, jobs)
        store = c.store()
        deadline = time.monotonic() + 30

        def moved(job_id: str) -> bool:
            record = store.load(job_id)
            return record is not None and record.iteration >= 2

        while sum(map(moved, expected)) < 3:
            assert time.monotonic() < deadline, c.logs()
            time.sleep(0.05)
        server.restart()
        c.wait_ended(list(expected), timeout=120)
        check_exactly_once(c, expected)
    finally:
        server.stop()
