"""Memory: one worker's RSS stays flat under steady traffic.

One worker runs ``total`` zero-latency iterations as jobs of ``per_job`` iterations,
``in_flight`` at a time: new jobs are submitted as others end, so every stretch of the run
does the same work (job ages mixed). RSS is sampled at every ``every`` committed
iterations; from a fifth of the run (when the start-up growth is over) to the end it must
grow by at most 2 MiB or 5%.
"""

from __future__ import annotations

import time

from benchmarks.queue_harness import Harness, Progress
from benchmarks.queue_jobs import sized_spec
from benchmarks.queue_measure import Row, Usage
from workers.submit import submit_batch

#: The longest a run may take before it counts as stuck.
TIMEOUT = 1800.0


def bench_memory(
    h: Harness, *, total: int, per_job: int, threads: int, in_flight: int, every: int
) -> list[Row]:
    jobs = total // per_job
    print(
        f"\n== memory: one worker x {threads} threads, {jobs} jobs x {per_job} iterations, "
        f"{in_flight} jobs at a time, zero latency",
        flush=True,
    )
    worker = h.continuum("memory", threads)
    worker.wait_ready()
    kinds = [sized_spec(f"Write a long story, variant {i}.", per_job) for i in range(4)]
    series = [(0, worker.rss())]
    usage = Usage(h, [worker])
    t0 = time.time()
    active: list[str] = []
    finished: dict[str, Progress] = {}
    submitted, mark = 0, every
    deadline = time.monotonic() + TIMEOUT
    while True:
        if len(active) < in_flight and submitted < jobs:
            n = min(in_flight - len(active), jobs - submitted)
            specs = [kinds[(submitted + i) % len(kinds)].model_dump() for i in range(n)]
            _, subs = submit_batch(h.rt, specs, h.enqueue)
            active += [s.job_id for s in subs]
            submitted += n
        rows = h.progress(active)
        finished.update((j, row) for j, row in zip(active, rows, strict=True) if row.ended)
        running = sum(row.iteration for row in rows if not row.ended)
        active = [j for j in active if j not in finished]
        done = running + sum(e.iteration for e in finished.values())
        if done >= mark:
            series.append((done, worker.rss()))
            mark = (done // every + 1) * every
        if not active and submitted >= jobs:
            break
        if worker.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"memory run stuck at {done} iterations\n{h.logs()}")
        time.sleep(0.1)
    wall = time.time() - t0
    usage.stop()
    if series[-1][0] < done:
        series.append((done, worker.rss()))
    bad = sum(1 for e in finished.values() if e.status != "succeeded" or e.iteration != per_job)
    h.drop(list(finished))
    h.stop(worker)
    print(
        f"  {done} iterations in {wall:.1f} s ({done / wall:.0f} it/s); "
        f"jobs not succeeded after {per_job} iterations: {bad}"
    )
    print(f"  {usage.describe()}")
    print("  iterations -> RSS: " + ", ".join(f"{n}: {r:.1f} MiB" for n, r in series))
    first_n, first = next((n, r) for n, r in series if n >= done // 5)
    last_n, last = series[-1]
    growth = last - first
    return [
        Row(
            f"worker RSS over {done:,} iterations: at {first_n:,} (A) vs at {last_n:,} (B)",
            f"{first:.1f} MiB",
            f"{last:.1f} MiB",
            f"{growth:+.1f} MiB ({growth / first:+.1%})",
            "flat",
            abs(growth) <= max(2.0, 0.05 * first),
        )
    ]
