"""Hop: what one Continuum iteration costs on the queue, against bare Celery.

One zero-latency Continuum iteration vs one hop of a bare self-chaining no-op Celery task
(``benchmarks/noop_app.py``: the same reliability settings), each worker one thread of
the threads pool, chains of ``hops`` hops, the cases alternating round by round. Target:
ratio at most 2. A third case, the no-op without task events, tells apart what the Celery
configuration costs from what Continuum's own work costs; one more chain of each under
MONITOR counts the Redis commands a hop sends.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.queue_harness import Harness
from benchmarks.queue_jobs import continuum_chain, sized_spec
from benchmarks.queue_measure import Row, Samples, Usage, command_name, monitored, ms, timed_hops

PROMPT = "Write a long story about the sea."
#: Hops of the chain each case runs once more, under MONITOR.
PROBE_HOPS = 50
NOOP = "no-op task"
CONTINUUM = "Continuum iteration"
NOOP_PLAIN = "no-op, no task events"


@contextlib.contextmanager
def monitor(h: Harness) -> Iterator[Counter[str]]:
    """Count the commands clients send meanwhile (not those run inside Lua scripts, nor
    the harness's polls)."""
    counts: Counter[str] = Counter()

    def tally(cmd: dict[str, Any]) -> None:
        source = f"{cmd.get('client_address')}:{cmd.get('client_port')}"
        if cmd.get("client_type") != "lua" and source != h.poller_addr:
            counts[command_name(cmd)] += 1

    with monitored(h.url, tally):
        yield counts


def per_hop_commands(counts: Counter[str], hops: int) -> str:
    total = sum(counts.values())
    top = ", ".join(f"{c} {n / hops:.1f}" for c, n in counts.most_common() if n >= hops / 2)
    return f"{total / hops:.1f} ({top})"


def noop_chain(h: Harness, queue: str, hops: int) -> tuple[float, int]:
    key = f"bench:noop:{uuid.uuid4().hex}"
    t0 = time.time()
    h.producer.send_task("bench.noop", args=[hops - 1, key], queue=queue)
    deadline = time.monotonic() + 120
    while (end := h.poller.get(key)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no-op chain on {queue} did not end\n{h.logs()}")
        time.sleep(0.05)
    h.redis.delete(key)
    return float(end) - t0, hops


def chains(h: Harness, hops: int) -> dict[str, Callable[[], tuple[float, int]]]:
    """Each case's chain of ``hops`` hops, in the order the rounds run them."""
    spec = sized_spec(PROMPT, hops)
    return {
        NOOP: lambda: noop_chain(h, "bench-noop-full", hops),
        CONTINUUM: lambda: continuum_chain(h, spec, hops),
        NOOP_PLAIN: lambda: noop_chain(h, "bench-noop", hops),
    }


def bench_hop(h: Harness, rounds: int, hops: int) -> list[Row]:
    print(f"\n== hop: {hops}-hop chains, one worker thread each, {rounds} rounds", flush=True)
    workers = {
        NOOP: h.noop("noop-full", "bench-noop-full", events=True),
        CONTINUUM: h.continuum("hop", 1),
        NOOP_PLAIN: h.noop("noop-plain", "bench-noop", events=False),
    }
    for w in workers.values():
        w.wait_ready()
    cases = chains(h, hops)
    for run in cases.values():  # warm-up: imports, connections, the simulator's document
        run()
    results = {name: Samples() for name in cases}
    usage = Usage(h, list(workers.values()))
    for r in range(rounds):
        for name, run in cases.items():
            timed_hops(h, workers[name], run, results[name])
        line = "  ".join(f"{n}: {ms(results[n].wall[-1])}" for n in cases)
        print(f"  round {r + 1}: {line}", flush=True)
    print(f"  {usage.stop().describe()}")
    # One more (untimed) chain of each, with MONITOR on: the commands a hop sends to Redis.
    commands = {}
    for name, run in chains(h, PROBE_HOPS).items():
        with monitor(h) as counts:
            run()
        commands[name] = per_hop_commands(counts, PROBE_HOPS)
    print("  per hop (medians): wall | worker CPU | Redis CPU | Redis commands sent")
    for name in cases:
        print(f"  {name:<34} {results[name].medians()} | {commands[name]}")
    h.stop(*workers.values())
    noop, cont = results[NOOP], results[CONTINUUM]
    for what, x, y in (("wall", noop.wall, cont.wall), ("worker CPU", noop.cpu, cont.cpu)):
        ratios = sorted(b / a for a, b in zip(x, y, strict=True))
        print(f"  {what} B/A by round: {', '.join(f'{r:.2f}' for r in ratios)}")
    a, b, c = (results[name].median() for name in (NOOP, CONTINUUM, NOOP_PLAIN))
    a_cpu, b_cpu = noop.median("cpu"), cont.median("cpu")
    return [
        Row(
            "hop: bare self-chaining no-op task, Continuum's Celery settings "
            "(A) vs zero-latency Continuum iteration (B)",
            ms(a),
            ms(b),
            f"B/A = {b / a:.2f}",
            "<= 2",
            b / a <= 2,
        ),
        # Issue 15's measure: the worker's CPU per hop (wall time on a shared machine also
        # counts the waits for a CPU).
        Row(
            "hop, worker CPU: bare no-op task, Continuum's Celery settings (A) vs "
            "zero-latency Continuum iteration (B)",
            ms(a_cpu),
            ms(b_cpu),
            f"B/A = {b_cpu / a_cpu:.2f}",
            "<= 1.5",
            b_cpu / a_cpu <= 1.5,
        ),
        Row(
            "hop: no-op without task events (A) vs Continuum iteration (B)",
            ms(c),
            ms(b),
            f"B/A = {b / c:.2f}",
            "(breakdown)",
            None,
        ),
    ]
