"""A RabbitMQ broker (``CONTINUUM_BROKER_URL``) with job state in Redis, on real worker
processes: a countdown is held by RabbitMQ and then delivered (native delayed delivery on
quorum queues), bad messages never poison a worker, and how fast a job recovers after
its worker is killed, on each broker (the numbers in docs/operations.md).

Skipped, saying why, when no RabbitMQ is reachable (``tests/rabbitmq.py``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from kombu.connection import Connection
from kombu.entity import Exchange
from kombu.messaging import Producer
from redis import Redis

from sim.app import create_app
from sim.model import SimOptions
from tests.acceptance.procs import Cluster
from tests.rabbitmq import depth, require_rabbitmq
from workers.app import make_app
from workers.settings import Settings
from workers.store import JobStatus


@pytest.fixture
def rabbit() -> str:
    return require_rabbitmq()


def spec(job_id: str, size: int = 600) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": f"List the exhibits ({job_id})",
        "format": "text",
        "providers": ["sim"],
        "model": f"sim:format=text,size={size}",
        "max_output_tokens": 100,
    }


def received_at(log: str, task_id: str) -> float:
    """When the worker's log says it received ``task_id`` (Unix time)."""
    for line in log.splitlines():
        if task_id in line and "received" in line.lower():
            found = re.search(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})", line)
            assert found, line
            return time.mktime(time.strptime(found.group(1)[:19], "%Y-%m-%d %H:%M:%S")) + (
                int(found.group(1)[20:]) / 1000
            )
    raise AssertionError(f"{task_id} was never received:\n{log}")


def test_a_countdown_is_held_by_rabbitmq_then_delivered(
    cluster: Callable[..., Cluster], rabbit: str
) -> None:
    """A message sent with a 3 s countdown reaches the worker 3 s later (RabbitMQ held it,
    not the worker), and its job runs: retries and rate limits rely on this."""
    c = cluster(broker_url=rabbit)
    worker = c.worker(concurrency=2)
    app = make_app(
        Settings(REDIS_URL=c.redis_url, broker_url=rabbit, queue=c.queue, key_prefix=c.prefix)
    )
    try:
        sent = time.time()
        result = app.send_task(
            "continuum.generate", kwargs={"spec": spec("later")}, queue=c.queue, countdown=3
        )
        time.sleep(1.5)
        assert c.store().load("later") is None  # not run early
        record = c.wait_ended(["later"], timeout=30)["later"]
    finally:
        app.close()
    assert record.status is JobStatus.SUCCEEDED, record.error
    delay = received_at(c.log(worker), result.id) - sent
    assert 2.5 <= delay <= 6.0, delay


def test_bad_messages_are_dead_lettered_and_the_worker_goes_on(
    cluster: Callable[..., Cluster], rabbit: str, redis_client: Redis
) -> None:
    """On RabbitMQ too: a body that is not JSON, a content type workers refuse, a message
    with no task, an unknown task, and arguments the contract refuses are each recorded in
    the dead-letter list with their reason and removed from the queue; the worker goes on
    and runs the next job."""
    c = cluster(broker_url=rabbit)
    worker = c.worker(concurrency=1)  # declares the queue (quorum, on a topic exchange)
    exchange = Exchange(c.queue, type="topic")
    headers = {"lang": "py", "id": "poison-unknown", "task": "no.such.task"}
    # Publisher confirms: each poison message is in the queue before "after" is sent on
    # another connection (without them, RabbitMQ may enqueue "after" first).
    with Connection(rabbit, transport_options={"confirm_publish": True}) as conn:
        producer = Producer(conn.channel(), exchange=exchange, routing_key=c.queue)
        producer.publish(b"\x00not json at all", content_type="application/json")
        producer.publish(b"just bytes", content_type="application/octet-stream")
        producer.publish({"a": 1}, serializer="json")
        producer.publish([[], {}, {}], serializer="json", headers=headers)
        bad = {**headers, "id": "poison-args", "task": "continuum.generate"}
        producer.publish([["positional"], {}, {}], serializer="json", headers=bad)
    c.producer().send_task("continuum.generate", kwargs={"spec": spec("after")}, queue=c.queue)

    record = c.wait_ended(["after"], timeout=60)["after"]

    assert record.status is JobStatus.SUCCEEDED, record.error
    assert worker.poll() is None  # still running
    assert depth(rabbit, c.queue) == 0  # nothing left to be delivered again
    # The consumer records the first four; the pool child records the invalid arguments
    # when that task fails, which need not be before "after" ends.
    deadline = time.monotonic() + 30
    while redis_client.llen(f"{c.prefix}deadletter") < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    letters = [json.loads(x) for x in redis_client.lrange(f"{c.prefix}deadletter", 0, -1)]
    kinds = sorted(letter["kind"] for letter in letters)
    expected = ["content-type-refused", "invalid-arguments", "not-a-task", "undecodable-body"]
    assert kinds == [*expected, "unknown-task"], (letters, c.log(worker))
    assert all(letter["queue"] == c.queue for letter in letters if letter["kind"] != "not-a-task")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("broker", "state_on"),
    [("redis", "redis"), ("rabbitmq", "redis"), ("rabbitmq", "redis-cluster")],
    ids=["redis", "rabbitmq", "rabbitmq-cluster"],
    indirect=["broker"],
)
def test_recovery_after_kill_9_on_each_broker(
    cluster: Callable[..., Cluster],
    serve: Callable[[Any], str],
    broker: str | None,
    state_on: str,
    request: pytest.FixtureRequest,
) -> None:
    """A worker killed with SIGKILL in the middle of a model call, a new one started at
    once: the job's next commit comes about one lease later (the watchdog re-sends the
    iteration), on either broker, and with job state on a 3-master Redis Cluster (queue on
    RabbitMQ, results on the plain Redis). Prints the measured time (docs/operations.md)."""
    sim_url = serve(create_app(SimOptions(seed=3, latency=1.5)))
    if state_on == "redis-cluster":
        c = cluster(
            sim_url,
            url=request.getfixturevalue("redis_cluster_url"),
            broker_url=broker,
            CONTINUUM_RESULT_BACKEND=request.getfixturevalue("redis_url"),
        )
    else:
        c = cluster(sim_url, broker_url=broker)
    c.beat()
    victim = c.worker(concurrency=2)
    c.producer().send_task(
        "continuum.generate", kwargs={"spec": spec("phoenix", size=4000)}, queue=c.queue
    )
    store = c.store()
    deadline = time.monotonic() + 30
    while (record := store.load("phoenix")) is None or record.iteration < 1:
        assert time.monotonic() < deadline, c.logs()
        time.sleep(0.05)
    time.sleep(0.5)  # inside the next call (1.5 s)
    before = record.iteration
    c.kill(victim)
    killed = time.monotonic()
    c.worker(concurrency=2)
    startup = time.monotonic() - killed  # the new worker's start, 1 s idle, 8 s loaded
    while (record := store.load("phoenix")) is not None and record.iteration == before:
        assert time.monotonic() - killed < 60, c.logs()
        time.sleep(0.02)
    recovered = time.monotonic() - killed
    on = f"{'RabbitMQ' if broker else 'Redis'} broker, {state_on} store"
    print(f"\nrecovery after kill -9 ({on}): {recovered:.2f} s (new worker up in {startup:.2f} s)")
    c.wait_ended(["phoenix"], timeout=60)
    # The lease (2 s here) must expire first; the rest is the watchdog's pass and the call,
    # once the new worker is up (its start-up is the machine's, not the recovery's).
    assert recovered < max(startup, 2 + 5) + 1.5 + 5, (recovered, startup)
