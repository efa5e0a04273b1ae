"""Throughput: many jobs at a simulated model latency reach the in-flight bound.

``jobs`` jobs x ``iterations`` iterations at ``latency`` seconds per model call, on each
layout of workers x threads. The bound: every thread always in a model call (total threads
/ latency, in iterations per second). Target: at least 70% of it. With ``baseline``, the
same load runs on Celery alone next (no-op chains sleeping ``latency``, Continuum's Celery
settings, same layout), for reference.

The jobs are submitted first (``submit_batch``), their first iterations sent to a queue
nobody consumes; then they are all moved to the workers' queue at once: the clock starts
there and stops at the last commit (the last task, for Celery alone).
"""

from __future__ import annotations

import time
import uuid

from benchmarks.queue_harness import HELD, QUEUE, Harness
from benchmarks.queue_jobs import sized_spec
from benchmarks.queue_measure import Row, Usage
from workers.submit import Enqueue, submit_batch

PROMPT = "Write a short fable."
TARGET = 0.7


def hold(h: Harness) -> Enqueue:
    """An ``enqueue`` for ``submit_batch`` that sends every first iteration to ``HELD``."""

    def enqueue(job_id: str, iteration: int, countdown: float, queue: str) -> None:
        h.enqueue(job_id, iteration, countdown, HELD)

    return enqueue


def wait_list(h: Harness, key: str, length: int, timeout: float, interval: float) -> None:
    """Wait until the list at ``key`` holds ``length`` entries (one per ended chain)."""
    deadline = time.monotonic() + timeout
    while h.poller.llen(key) < length:
        if time.monotonic() > deadline:
            raise RuntimeError(f"Celery chains in {key} did not end\n{h.logs()}")
        time.sleep(interval)


def celery_chains(
    h: Harness, count: int, threads: int, *, chains: int, hops: int, latency: float
) -> tuple[float, Usage]:
    """The same load on Celery alone: ``chains`` chains of ``hops`` tasks that each sleep
    ``latency`` (no-op workers with Continuum's Celery settings, same layout), released at
    once as the jobs are. Returns the wall time from the release to the last task."""
    queue = "bench-chain"
    workers = [h.noop(f"chain{i}", queue, events=True, concurrency=threads) for i in range(count)]
    for w in workers:
        w.wait_ready()
    warm = f"bench:chain:{uuid.uuid4().hex}"
    key = f"bench:chain:{uuid.uuid4().hex}"
    try:
        for _ in range(count * threads):
            h.producer.send_task("bench.sleep_chain", args=[1, warm, 0.0], queue=queue)
        wait_list(h, warm, count * threads, 60, interval=0.1)
        for _ in range(chains):
            h.producer.send_task("bench.sleep_chain", args=[hops, key, latency], queue=HELD)
        usage = Usage(h, workers)
        t0 = time.time()
        h.release(HELD, queue)
        wait_list(h, key, chains, chains * hops * latency + 120, interval=0.5)
        usage.stop()
        wall = max(float(t) for t in h.poller.lrange(key, 0, -1)) - t0
    finally:
        h.redis.delete(key, warm)
        h.stop(*workers)
    return wall, usage


def continuum_load(
    h: Harness, count: int, threads: int, *, jobs: int, iterations: int, latency: float
) -> Row:
    """The jobs on ``count`` Continuum workers of ``threads`` threads each; every thread
    runs a quick job first (imports, connections, documents)."""
    bound = count * threads / latency
    print(
        f"\n== throughput: {jobs} jobs x {iterations} iterations at {latency * 1000:.0f} ms, "
        f"{count} worker(s) x {threads} threads (bound {bound:.0f} it/s)",
        flush=True,
    )
    workers = [h.continuum(f"tp{i}", threads) for i in range(count)]
    for w in workers:
        w.wait_ready()
    quick, slow = (sized_spec(PROMPT, iterations, latency=x).model_dump() for x in (0, latency))
    _, subs = submit_batch(h.rt, [quick] * (count * threads), h.enqueue)
    h.drop(list(h.wait_ended([s.job_id for s in subs], timeout=120)))
    t_create = time.time()
    _, subs = submit_batch(h.rt, [slow] * jobs, hold(h))
    created = time.time() - t_create
    job_ids = [s.job_id for s in subs]
    usage = Usage(h, workers)
    t0 = time.time()
    h.release(HELD, QUEUE)
    sent = time.time() - t0
    ended = h.wait_ended(job_ids, timeout=jobs * iterations * latency + 120, interval=0.5)
    usage.stop()
    wall = max(e.updated_at for e in ended.values()) - t0
    done = sum(e.iteration for e in ended.values())
    bad = [e for e in ended.values() if e.status != "succeeded" or e.iteration != iterations]
    h.drop(job_ids)
    h.stop(*workers)
    rate = done / wall
    fraction = rate / bound
    at_bound = jobs * iterations / bound
    print(
        f"  {done} iterations in {wall:.2f} s (at the bound: {at_bound:.2f} s): "
        f"{rate:.1f} it/s = {fraction:.0%} of the bound (submitting took {created:.2f} s "
        f"beforehand; releasing their first iterations {sent * 1000:.0f} ms)"
    )
    print(f"  {usage.per_unit(done, 'iteration')}")
    if bad:
        print(f"  !! {len(bad)} jobs did not succeed after {iterations} iterations")
    return Row(
        f"throughput {jobs} x {iterations} at {latency * 1000:.0f} ms, "
        f"{count} x {threads} threads: bound (A) vs achieved (B)",
        f"{bound:.0f} it/s",
        f"{rate:.0f} it/s",
        f"{fraction:.0%} ({wall:.1f} s vs {at_bound:.1f} s)",
        f">= {TARGET:.0%}",
        fraction >= TARGET and not bad,
    )


def celery_load(
    h: Harness, count: int, threads: int, *, jobs: int, iterations: int, latency: float
) -> Row:
    """The same load on Celery alone (see ``celery_chains``)."""
    bound = count * threads / latency
    wall, usage = celery_chains(h, count, threads, chains=jobs, hops=iterations, latency=latency)
    rate = jobs * iterations / wall
    print(
        f"  Celery alone (sleeping no-op chains, Continuum's Celery settings, same layout): "
        f"{rate:.1f} it/s = {rate / bound:.0%} of the bound in {wall:.2f} s"
    )
    print(f"  {usage.per_unit(jobs * iterations, 'task')}")
    return Row(
        f"same load on Celery alone (no-op chains sleeping {latency * 1000:.0f} ms, "
        f"{count} x {threads}): bound (A) vs achieved (B)",
        f"{bound:.0f} it/s",
        f"{rate:.0f} it/s",
        f"{rate / bound:.0%} ({wall:.1f} s)",
        "(reference)",
        None,
    )


def bench_throughput(
    h: Harness,
    layouts: list[tuple[int, int]],
    *,
    jobs: int,
    iterations: int,
    latency: float,
    baseline: bool,
) -> list[Row]:
    rows = []
    for count, threads in layouts:
        rows.append(
            continuum_load(h, count, threads, jobs=jobs, iterations=iterations, latency=latency)
        )
        if baseline:
            rows.append(
                celery_load(h, count, threads, jobs=jobs, iterations=iterations, latency=latency)
            )
    return rows
