"""Where one iteration's time goes, in-process: ``run_iteration`` as a worker runs it,
without Celery, on a private embedded Redis, with the simulator in-process (zero latency).

    uv run python -m benchmarks.profile_iteration [--iterations N] [--jobs J]
        [--cprofile FILE] [--top N]

Each job takes exactly N iterations; every phase of ``workers.iteration.run_iteration``
(Redis reads and writes, the model call, the engine, the state's JSON) is timed with
``time.perf_counter`` by wrapping the function that does it, and reported as the mean per
iteration. The state's JSON (read with the job, written by the commit) is measured per
iteration, by top-level field, with the share of it that the iteration changed. One more
job runs under Redis's MONITOR: the commands an iteration sends (and those its Lua
scripts run). ``--cprofile FILE`` runs one more job under cProfile and prints the
functions that take the most time. What Celery adds around the task (receiving, acks,
events, sending the next iteration) is not here: ``benchmarks/bench_queue.py`` measures it
(and ``benchmarks/profile_hop.py`` samples a whole worker).

The simulator is switched on here (``CONTINUUM_ENABLE_SIM=1``) unless the environment says
otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import json
import os
import pstats
import statistics
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import sim.app as sim_app
import workers.iteration as iteration_module
from benchmarks.queue_jobs import sized_spec
from benchmarks.queue_measure import command_name, monitored
from core import JobState, start
from core.models import JobSpec
from workers.embedded import EmbeddedRedis
from workers.keys import shard_of
from workers.providers.registry import SIM_SWITCH
from workers.runtime import Runtime, build_runtime
from workers.settings import Settings
from workers.store import JobStore

spent: defaultdict[str, float] = defaultdict(float)
#: Per iteration: the state's JSON read (characters) and written, and what changed.
sizes: dict[str, list[int]] = {"read": [], "written": [], "changed": []}
fields_written: Counter[str] = Counter()
fields_changed: Counter[str] = Counter()

#: The store's methods an iteration calls, and the phase each one is.
STORE_PHASES = {
    "load": "load the job (HGETALL)",
    "load_and_start": "load the job, take the lease, charge the attempt (one Lua script)",
    "start_attempt": "take the lease, charge the attempt (Lua)",
    "commit": "commit (Lua: append, state, CAS, counters, event)",
    "release_lease": "release the lease (Lua)",
}
#: The functions ``workers.iteration`` calls by the names it imported them under.
ITERATION_PHASES = {
    "call_model": "model call (adapter, httpx, simulator in-process)",
    "advance": "engine: advance()",
    "settle": "settle (policy)",
    "step_counts": "step counts, summary",
    "_summary": "step counts, summary",
    "tag_iteration": "profile lookup, rate limit, tags",
}
LABELS = [
    STORE_PHASES["load"],
    STORE_PHASES["load_and_start"],
    STORE_PHASES["start_attempt"],
    "parse the state (JSON)",
    "profile lookup, rate limit, tags",
    "hold the lease (one renewal thread per process)",
    "model call (adapter, httpx, simulator in-process)",
    "  of which: the simulator itself",
    "engine: advance()",
    "settle (policy)",
    "  of which: deep copies of the state",
    "step counts, summary",
    "dump the state (JSON)",
    STORE_PHASES["commit"],
    STORE_PHASES["release_lease"],
    "send the next iteration (enqueue)",
]


def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - t0

    return wrapper


def _changed_fields(before: str, after: str) -> tuple[int, dict[str, int]]:
    """Characters of ``after`` in top-level fields whose value differs from ``before``'s,
    and each field's size in ``after``."""
    old, new = json.loads(before), json.loads(after)
    each = {k: len(json.dumps(v, ensure_ascii=False)) for k, v in new.items()}
    changed = sum(n for k, n in each.items() if old.get(k) != new[k])
    for k, n in each.items():
        fields_written[k] += n
        if old.get(k) != new[k]:
            fields_changed[k] += 1
    return changed, each


def instrument_sizes() -> Callable[[bool], None]:
    """Record the state's sizes while switched on (the switch returned): off in the timed
    jobs, as the extra read it takes would count in them."""
    on = [False]
    load, load_and_start, commit = JobStore.load, JobStore.load_and_start, JobStore.commit

    def read(record: Any) -> None:
        if on[0] and record is not None and record.state:
            sizes["read"].append(len(record.state))

    def sized_load(self: JobStore, job_id: str) -> Any:
        record = load(self, job_id)
        read(record)
        return record

    def sized_load_and_start(self: JobStore, *args: Any) -> Any:
        record, code = load_and_start(self, *args)
        read(record)
        return record, code

    def sized_commit(self: JobStore, job_id: str, **kwargs: Any) -> Any:
        if on[0]:
            before = self.redis.hget(self.keys.job(job_id), "state")
            state = kwargs["state"]
            sizes["written"].append(len(state))
            if before is not None:
                old = before if isinstance(before, str) else before.decode()
                sizes["changed"].append(_changed_fields(old, state)[0])
        return commit(self, job_id, **kwargs)

    JobStore.load = sized_load  # type: ignore[method-assign]
    JobStore.load_and_start = sized_load_and_start  # type: ignore[method-assign,assignment]
    JobStore.commit = sized_commit  # type: ignore[method-assign]

    def switch(value: bool) -> None:
        on[0] = value

    return switch


def instrument(rt: Runtime) -> None:
    """Wrap every phase (``LABELS``)."""
    for name, label in STORE_PHASES.items():
        setattr(JobStore, name, timed(label, getattr(JobStore, name)))
    JobState.model_validate_json = timed(  # type: ignore[method-assign]
        "parse the state (JSON)", JobState.model_validate_json
    )
    JobState.model_dump_json = timed("dump the state (JSON)", JobState.model_dump_json)  # type: ignore[method-assign]
    clone = JobState.clone
    JobState.clone = timed("  of which: deep copies of the state", clone)  # type: ignore[method-assign]
    copy = JobState.model_copy

    def model_copy(self: JobState, *, update: Any = None, deep: bool = False) -> JobState:
        if not deep:
            return copy(self, update=update)
        t0 = time.perf_counter()
        try:
            return copy(self, update=update, deep=True)
        finally:
            spent["  of which: deep copies of the state"] += time.perf_counter() - t0

    JobState.model_copy = model_copy  # type: ignore[method-assign,assignment]
    renewer = type(rt.leases)
    renewer.hold = timed("hold the lease (one renewal thread per process)", renewer.hold)  # type: ignore[method-assign]
    sim_app.dispatch = timed("  of which: the simulator itself", sim_app.dispatch)
    for name, label in ITERATION_PHASES.items():  # names workers.iteration imported
        setattr(iteration_module, name, timed(label, getattr(iteration_module, name)))
    for name in ("profile_for", "rate_wait", "queue_for"):
        setattr(Runtime, name, timed("profile lookup, rate limit, tags", getattr(Runtime, name)))


def run_job(rt: Runtime, spec: JobSpec) -> tuple[int, float]:
    """Run a job's iterations one after the other; (iterations, seconds they took)."""
    job_id = uuid.uuid4().hex
    state = start(spec).model_dump_json()
    rt.store.create(job_id, spec.model_dump_json(), state, deadline=time.time() + 3600)
    sent: list[int] = [0]

    def enqueue(job: str, iteration: int, countdown: float, queue: str) -> None:
        sent.append(iteration)

    enqueue = timed("send the next iteration (enqueue)", enqueue)
    n = 0
    t0 = time.perf_counter()
    while True:
        iteration_module.run_iteration(rt, job_id, n, enqueue)
        if sent[-1] == n:
            break
        n = sent[-1]
    elapsed = time.perf_counter() - t0
    k = rt.store.keys
    rt.store.redis.delete(*k.job_keys(job_id), k.lease(job_id))
    rt.store.redis.zrem(k.active(shard_of(job_id)), job_id)
    return n + 1, elapsed


@contextlib.contextmanager
def monitor(url: str) -> Iterator[tuple[Counter[str], Counter[str]]]:
    """Count the commands clients send meanwhile, and those Lua scripts run."""
    sent: Counter[str] = Counter()
    scripted: Counter[str] = Counter()

    def tally(cmd: dict[str, Any]) -> None:
        (scripted if cmd.get("client_type") == "lua" else sent)[command_name(cmd)] += 1

    with monitored(url, tally):
        yield sent, scripted


def per_iteration(counts: Counter[str], n: int) -> str:
    total = sum(counts.values())
    each = ", ".join(f"{c} {k / n:.2f}" for c, k in counts.most_common())
    return f"{total / n:.2f} ({each})"


def report_sizes() -> None:
    def mean(values: list[int]) -> float:
        return statistics.fmean(values) if values else 0.0

    print("state JSON per iteration (characters): ", end="")
    print(
        f"read {mean(sizes['read']):,.0f}, written {mean(sizes['written']):,.0f}, "
        f"in fields that changed {mean(sizes['changed']):,.0f}"
    )
    commits = max(1, len(sizes["written"]))
    print("  by top-level field: mean characters written | share of commits that changed it")
    for name, chars in fields_written.most_common():
        share = fields_changed[name] / commits
        print(f"    {name:<22} {chars / commits:9,.0f} | {share:4.0%}")


def profile_job(rt: Runtime, spec: JobSpec, path: Path) -> int:
    """Run one job under cProfile, its stats dumped to ``path``; its iterations."""
    profiler = cProfile.Profile()
    profiler.enable()
    n, _ = run_job(rt, spec)
    profiler.disable()
    profiler.dump_stats(path)
    return n


def time_jobs(rt: Runtime, spec: JobSpec, jobs: int) -> dict[str, list[float]]:
    """``jobs`` instrumented runs: each run's seconds per iteration, by label."""
    instrument(rt)
    per_run: dict[str, list[float]] = {label: [] for label in [*LABELS, "total"]}
    for _ in range(jobs):
        spent.clear()
        n, total = run_job(rt, spec)
        for label in LABELS:
            per_run[label].append(spent[label] / n)
        per_run["total"].append(total / n)
    return per_run


def report_timings(per_run: dict[str, list[float]], iterations: int, jobs: int) -> None:
    total = statistics.median(per_run["total"])
    outer = sum(statistics.median(per_run[label]) for label in LABELS if not label.startswith(" "))
    print(f"{iterations}-iteration jobs, median of {jobs}: ms per iteration | share")
    for label in LABELS:
        value = statistics.median(per_run[label])
        print(f"  {label:<50} {value * 1000:7.3f} | {value / total:4.0%}")
    rest = total - outer
    print(f"  {'everything else':<50} {rest * 1000:7.3f} | {rest / total:4.0%}")
    print(f"  {'total':<50} {total * 1000:7.3f}")


def report_profile(path: Path, n_prof: int, top: int) -> None:
    print(f"\ncProfile of one more job ({n_prof} iterations), by own time:")
    stats = pstats.Stats(str(path))
    stats.sort_stats("tottime").print_stats(top)
    print("by cumulative time:")
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200, help="iterations per job")
    parser.add_argument("--jobs", type=int, default=5, help="jobs (runs) to take the median of")
    parser.add_argument("--cprofile", type=Path, help="also profile one job; pstats file")
    parser.add_argument("--top", type=int, default=35, help="functions --cprofile prints")
    args = parser.parse_args()
    os.environ.setdefault(SIM_SWITCH, "1")
    spec = sized_spec("Write a long story about the sea.", args.iterations)
    with tempfile.TemporaryDirectory(prefix="profile-iteration-") as tmp:
        server = EmbeddedRedis(Path(tmp)).start()
        try:
            rt = build_runtime(Settings(), server.url)
            run_job(rt, spec)  # warm-up
            n_prof = 0 if args.cprofile is None else profile_job(rt, spec, args.cprofile)
            with monitor(server.url) as (sent, scripted):
                n_mon, _ = run_job(rt, spec)
            sizing = instrument_sizes()
            sizing(True)
            run_job(rt, spec)
            sizing(False)
            per_run = time_jobs(rt, spec, args.jobs)
        finally:
            server.stop()
    report_timings(per_run, args.iterations, args.jobs)
    report_sizes()
    print(f"Redis commands per iteration (one more job of {n_mon}, MONITOR):")
    print(f"  sent by the worker: {per_iteration(sent, n_mon)}")
    print(f"  run inside Lua scripts: {per_iteration(scripted, n_mon)}")
    if args.cprofile is not None:
        report_profile(args.cprofile, n_prof, args.top)


if __name__ == "__main__":
    main()
