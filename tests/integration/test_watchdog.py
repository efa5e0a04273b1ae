"""The watchdog on a real Redis: it re-sends what a dead worker lost, and nothing else."""

from __future__ import annotations

import time
from collections import deque

import pytest
from redis import Redis

from sim.model import SimModel, SimOptions
from tests.integration.test_iteration import PROMPT, drain, make_runtime, submit
from workers.iteration import run_iteration
from workers.keys import shard_of
from workers.watchdog import sweep

Sent = list[tuple[str, int, float, str]]


def test_an_overdue_job_is_sent_again_on_its_queue(redis_client: Redis, redis_prefix: str) -> None:
    rt = make_runtime(redis_client, redis_prefix, SimModel(SimOptions(seed=1)), queue="sim-q")
    submit(rt, "late", "sim:format=text,size=3000", fmt="text")
    sent: Sent = []
    assert sweep(rt, lambda *a: sent.append(a)) == []  # not overdue yet
    assert sweep(rt, lambda *a: sent.append(a), now=time.time() + 120) == ["late"]
    assert sent == [("late", 0, 0.0, "sim-q")]
    # Postponed by the queue grace: the next sweep leaves it alone.
    assert sweep(rt, lambda *a: sent.append(a), now=time.time() + 121) == []


def test_a_leased_job_is_left_to_its_worker(redis_client: Redis, redis_prefix: str) -> None:
    rt = make_runtime(redis_client, redis_prefix, SimModel(SimOptions(seed=1)))
    submit(rt, "busy", "sim:format=text,size=3000", fmt="text")
    assert rt.store.acquire_lease("busy", "token", 30)
    assert sweep(rt, lambda *a: None, now=time.time() + 600) == []


def test_ended_jobs_leave_the_watch_list(redis_client: Redis, redis_prefix: str) -> None:
    rt = make_runtime(redis_client, redis_prefix, SimModel(SimOptions(seed=1)))
    submit(rt, "gone", "sim:format=text,size=3000", fmt="text")
    rt.store.redis.hset(rt.store.keys.job("gone"), "status", "succeeded")
    assert sweep(rt, lambda *a: None, now=time.time() + 600) == []
    assert rt.store.redis.zscore(rt.store.keys.active(shard_of("gone")), "gone") is None


def test_a_crash_between_commit_and_enqueue_does_not_strand_the_job(
    redis_client: Redis, redis_prefix: str
) -> None:
    """The worker commits iteration 0, then dies before sending iteration 1: the job is
    overdue after the queue grace, the watchdog sends iteration 1, and the job ends with
    the exact document, every iteration committed once."""
    sim = SimModel(SimOptions(seed=4))
    rt = make_runtime(redis_client, redis_prefix, sim)
    model = "sim:format=text,size=4000"
    submit(rt, "crash", model, fmt="text")

    def die(*_: object) -> None:
        raise SystemExit("killed after the commit")

    with pytest.raises(SystemExit):
        run_iteration(rt, "crash", 0, die)
    record = rt.store.load("crash")
    assert record is not None and record.iteration == 1  # committed, never sent
    queue: deque[tuple[str, int, float]] = deque()
    later = time.time() + rt.settings.queue_grace_s + 1
    assert sweep(rt, lambda j, i, c, q: queue.append((j, i, c)), now=later) == ["crash"]
    assert list(queue) == [("crash", 1, 0.0)]
    drain(rt, "crash", queue)
    assert rt.store.output("crash") == sim.target_for({"prompt": PROMPT, "model": model})
    assert set(rt.store.commits("crash").values()) == {1}
