"""A producer that names no queue reaches a worker (issue: the default Celery queue).

``send_task("continuum.generate", kwargs=...)`` with Celery's default configuration puts
the message on the ``celery`` queue. Workers given no ``--queues`` consume it too, so the
job runs instead of waiting forever unseen. Each test runs on a Redis of its own (the
``celery`` list of a shared Redis may be another application's).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from celery import Celery
from redis import Redis

from tests.acceptance.procs import Cluster
from workers.embedded import EmbeddedRedis
from workers.store import JobStatus

pytestmark = pytest.mark.slow

#: What a Celery user writes first: the app's defaults, the broker URL, no queue.
BARE_PRODUCER = """
import sys
from celery import Celery

Celery(broker=sys.argv[1]).send_task(
    "continuum.generate",
    kwargs={"spec": {"job_id": sys.argv[2], "prompt": "List the exhibits", "format": "text",
                     "model": "sim:format=text,size=600", "max_output_tokens": 100}},
)
"""


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[str]:
    with EmbeddedRedis(tmp_path / "own-redis") as server:
        yield server.url


def send_bare(url: str, job_id: str) -> None:
    subprocess.run([sys.executable, "-c", BARE_PRODUCER, url, job_id], check=True, timeout=60)


def test_a_job_sent_with_no_queue_runs(cluster: Callable[..., Cluster], own_redis: str) -> None:
    c = cluster(url=own_redis, CONTINUUM_BROKER_PREFIX="")
    c.worker()
    send_bare(own_redis, "no-queue")

    record = c.wait_ended(["no-queue"], timeout=60)["no-queue"]

    assert record.status is JobStatus.SUCCEEDED, record.error
    assert len(c.store().output("no-queue")) > 100
    assert Redis.from_url(own_redis).llen("celery") == 0


def test_the_default_queue_can_be_left_to_another_application(
    cluster: Callable[..., Cluster], own_redis: str
) -> None:
    c = cluster(url=own_redis, CONTINUUM_BROKER_PREFIX="", CONTINUUM_CONSUME_DEFAULT_QUEUE="0")
    c.worker()
    send_bare(own_redis, "left-alone")
    # A job on the worker's own queue runs, proving the worker consumes meanwhile.
    Celery(broker=own_redis).send_task(
        "continuum.generate",
        kwargs={
            "spec": {
                "job_id": "named",
                "prompt": "p",
                "format": "text",
                "model": "sim:format=text,size=300",
                "max_output_tokens": 100,
            }
        },
        queue="q",
    )
    c.wait_ended(["named"], timeout=60)

    assert c.store().load("left-alone") is None
    assert Redis.from_url(own_redis).llen("celery") == 1  # still there, for its consumer
