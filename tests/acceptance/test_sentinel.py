"""Job state on a Sentinel-watched Redis (``redis+sentinel://``, ``tests/redis_sentinel.py``)
failed over in the middle of a batch run by real worker processes: the queue on a plain
Redis, Celery's results there too."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from celery import Celery

from sim.app import create_app
from sim.model import SimOptions
from tests.acceptance.procs import Cluster
from tests.acceptance.test_cluster import LATENCY, SEED, check_exactly_once, reference, spec
from tests.redis_sentinel import Address, Sentinels

pytestmark = pytest.mark.slow


def moved(c: Cluster, job_ids: list[str], iterations: int) -> int:
    """How many of the jobs have committed at least ``iterations`` iterations."""
    store = c.store()
    try:
        records = [store.load(j) for j in job_ids]
    finally:
        store.close()
    return sum(r is not None and r.iteration >= iterations for r in records)


def fail_over(sentinels: Sentinels, how: str) -> Address:
    """The new master, after ``SENTINEL FAILOVER`` or a SIGKILL of the master."""
    if how == "sentinel-failover":
        return sentinels.failover()
    return sentinels.promoted(sentinels.kill_master())


@pytest.mark.parametrize("how", ["sentinel-failover", "master-killed"])
def test_a_failover_in_the_middle_of_a_batch(
    cluster: Callable[..., Cluster],
    serve: Callable[[Any], str],
    redis_url: str,
    sentinels: Sentinels,
    how: str,
) -> None:
    """The master fails over (``SENTINEL FAILOVER``, or SIGKILLed) while two workers run
    a batch: the workers follow the new master and every job ends with the fault-free
    output, each iteration committed once on the new master. Commits refused meanwhile
    are tried again; commits the old master took after the replica's promotion (it stays
    a master until the Sentinels demote it) are lost with it, and the watchdog sends
    those iterations again."""
    sim_url = serve(create_app(SimOptions(seed=SEED, latency=LATENCY)))
    c = cluster(
        sim_url,
        url=sentinels.url,
        CONTINUUM_BROKER_URL=redis_url,
        CONTINUUM_RESULT_BACKEND=redis_url,
    )
    formats = ["text", "csv", "markdown", "json"]
    jobs = [spec(f"sentinel{i}", formats[i % 4], size=8000) for i in range(8)]
    expected = reference(jobs)
    beat = c.beat()
    workers = [c.worker(concurrency=3), c.worker(concurrency=3)]
    producer = Celery(broker=redis_url, broker_transport_options={"global_keyprefix": c.prefix})
    for raw in jobs:
        producer.send_task("continuum.generate", kwargs={"spec": raw}, queue=c.queue)
    producer.close()
    deadline = time.monotonic() + 60
    while moved(c, list(expected), 2) < len(jobs) // 2:
        assert time.monotonic() < deadline, c.logs()
        time.sleep(0.1)
    old = sentinels.master()
    started = time.monotonic()
    new = fail_over(sentinels, how)
    switched = time.monotonic() - started
    c.wait_ended(list(expected), timeout=120)
    ended = time.monotonic() - started
    check_exactly_once(c, expected)
    assert all(w.poll() is None for w in workers), c.logs()
    assert new != old
    with sentinels.client(new) as node:
        on_new = node.keys(f"{c.prefix}*job:sentinel*:commits")
    assert len(on_new) == len(jobs)  # the jobs ended on the new master
    logs = "".join(c.log(w) for w in workers)
    refused = len(re.findall(r"Redis refused the commit", logs))
    resent = c.log(beat).count("sent again")
    print(
        f"\n{how}: every Sentinel named the new master {switched:.2f} s after it began; "
        f"the batch ended {ended:.1f} s after it; commits refused for "
        f"now {refused}; iterations the watchdog sent again {resent}"
    )
