"""Where one iteration's time goes, in-process: ``run_iteration`` as a worker runs it,
without Celery, on a private embedded Redis, with the simulator in-process (zero latency).

    uv run python -m benchmarks.profile_iteration [--iterations N] [--jobs J]

Each job takes exactly N iterations; every phase of ``workers.iteration.run_iteration``
(Redis reads and writes, the model call, the engine, the state's JSON) is timed with
``time.perf_counter`` by wrapping the function that does it, and reported as the mean per
iteration. The deep copies of the job state (``JobState.model_copy(deep=True)``, made by
``call_model`` and by ``advance``) are timed on their own too; they are inside those two
phases. What Celery adds around the task (receiving, acks, results, events, sending the
next iteration) is not here: ``benchmarks/bench_queue.py`` measures it.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sim.app as sim_app
import workers.iteration as iteration_module
from benchmarks.queue_jobs import sized_spec
from core import JobState, start
from workers.embedded import EmbeddedRedis
from workers.runtime import Runtime, build_runtime
from workers.settings import Settings
from workers.store import JobStore

spent: Counter[str] = Counter()


def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - t0

    return wrapper


def instrument(rt: Runtime) -> list[str]:
    """Wrap every phase; returns the phase labels in the order an iteration runs them."""
    store_phases = {
        "load": "load the job (HGETALL)",
        "start_attempt": "take the lease, count the attempt (Lua: SET NX, ZADD, HINCRBY)",
        "commit": "commit (Lua: append, state, CAS)",
        "release_lease": "release the lease (Lua)",
    }
    for name, label in store_phases.items():
        setattr(JobStore, name, timed(label, getattr(JobStore, name)))
    validate = JobState.model_validate_json
    JobState.model_validate_json = timed("parse the state (JSON)", validate)  # type: ignore[method-assign]
    JobState.model_dump_json = timed("dump the state (JSON)", JobState.model_dump_json)  # type: ignore[method-assign]
    copy = JobState.model_copy

    def model_copy(self: JobState, *, update: Any = None, deep: bool = False) -> JobState:
        if not deep:
            return copy(self, update=update)
        t0 = time.perf_counter()
        try:
            return copy(self, update=update, deep=True)
        finally:
            spent["  of which: deep copies of the state"] += time.perf_counter() - t0

    JobState.model_copy = model_copy  # type: ignore[method-assign]
    renewer = type(rt.leases)
    renewer.hold = timed("hold the lease (one renewal thread per process)", renewer.hold)  # type: ignore[method-assign]
    call = iteration_module.call_model
    iteration_module.call_model = timed("model call (simulator in-process)", call)
    sim_app.dispatch = timed("  of which: the simulator itself", sim_app.dispatch)
    iteration_module.advance = timed("engine: advance()", iteration_module.advance)
    iteration_module._summary = timed("task summary", iteration_module._summary)
    return [
        "load the job (HGETALL)",
        "take the lease (Lua: SET NX, ZADD)",
        "parse the state (JSON)",
        "hold the lease (one renewal thread per process)",
        "model call (simulator in-process)",
        "engine: advance()",
        "  of which: deep copies of the state",
        "  of which: the simulator itself",
        "task summary",
        "dump the state (JSON)",
        "commit (Lua: append, state, CAS)",
        "release the lease (Lua)",
    ]


def run_job(rt: Runtime, spec: Any) -> tuple[int, float]:
    """Run a job's iterations one after the other; (iterations, seconds they took)."""
    job_id = uuid.uuid4().hex
    state = start(spec).model_dump_json()
    rt.store.create(job_id, spec.model_dump_json(), state, deadline=time.time() + 3600)
    sent: list[int] = [0]

    def enqueue(job: str, iteration: int, countdown: float, queue: str) -> None:
        sent.append(iteration)

    n = 0
    t0 = time.perf_counter()
    while True:
        iteration_module.run_iteration(rt, job_id, n, enqueue)
        if sent[-1] == n:
            break
        n = sent[-1]
    elapsed = time.perf_counter() - t0
    k = rt.store.keys
    rt.store.redis.delete(k.job(job_id), k.output(job_id), k.commits(job_id), k.lease(job_id))
    rt.store.redis.zrem(k.active, job_id)
    return n + 1, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200, help="iterations per job")
    parser.add_argument("--jobs", type=int, default=5, help="jobs (runs) to take the median of")
    args = parser.parse_args()
    spec = sized_spec("Write a long story about the sea.", args.iterations)
    with tempfile.TemporaryDirectory(prefix="profile-iteration-") as tmp:
        server = EmbeddedRedis(Path(tmp)).start()
        try:
            rt = build_runtime(Settings(), server.url)
            run_job(rt, spec)  # warm-up
            labels = instrument(rt)
            per_run: dict[str, list[float]] = {label: [] for label in [*labels, "total"]}
            for _ in range(args.jobs):
                spent.clear()
                n, total = run_job(rt, spec)
                for label in labels:
                    per_run[label].append(spent[label] / n)
                per_run["total"].append(total / n)
        finally:
            server.stop()
    total = statistics.median(per_run["total"])
    outer = sum(statistics.median(per_run[label]) for label in labels if not label.startswith(" "))
    print(f"{args.iterations}-iteration jobs, median of {args.jobs}: ms per iteration")
    for label in labels:
        print(f"  {label:<40} {statistics.median(per_run[label]) * 1000:7.3f}")
    print(f"  {'everything else':<40} {(total - outer) * 1000:7.3f}")
    print(f"  {'total':<40} {total * 1000:7.3f}")


if __name__ == "__main__":
    main()
