"""What the queue benchmarks measure over the harness's processes, and how they print it.

CPU comes from /proc: each worker's, Redis's, this process's, and the rest of the
machine's (it is shared, so other processes' load is reported beside the results). Per-hop
samples keep one entry per round; medians are reported. Results end as rows of one
Markdown table (``| case | A | B | result | target | met |``), as docs/benchmarks.md
shows them.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis import Redis

from benchmarks.queue_harness import CLK_TCK, Harness, Worker


def machine_busy() -> float:
    """CPU seconds the whole machine spent busy (all cores), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def cpu_stall() -> float:
    """Seconds during which some runnable task waited for a CPU (Linux PSI), or NaN."""
    try:
        some = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except OSError:
        return float("nan")
    return int(some.rsplit("total=", 1)[1]) / 1e6


class Usage:
    """CPU use over a window: the workers', Redis's, this process's, and everybody else's
    (the machine is shared: other processes' load is reported beside the results)."""

    def __init__(self, h: Harness, workers: list[Worker]) -> None:
        self.h, self.workers = h, workers
        self.t0 = time.monotonic()
        self.w0 = [w.cpu() for w in workers]
        self.r0, self.d0 = h.redis_cpu(), time.process_time()
        self.m0, self.s0 = machine_busy(), cpu_stall()

    def stop(self) -> Usage:
        self.wall = time.monotonic() - self.t0
        self.worker_cpu = sum(w.cpu() - c for w, c in zip(self.workers, self.w0, strict=True))
        self.redis_cpu = self.h.redis_cpu() - self.r0
        self.driver_cpu = time.process_time() - self.d0
        machine = machine_busy() - self.m0
        self.others = max(0.0, machine - self.worker_cpu - self.redis_cpu - self.driver_cpu)
        self.stall = (cpu_stall() - self.s0) / self.wall
        return self

    def describe(self) -> str:
        w = self.wall
        return (
            f"cores used: workers {self.worker_cpu / w:.2f}, Redis {self.redis_cpu / w:.2f}, "
            f"benchmark {self.driver_cpu / w:.2f}, other processes {self.others / w:.2f}; "
            f"a task waited for a CPU {self.stall:.0%} of the time"
        )

    def per_unit(self, count: int, unit: str) -> str:
        """Workers' and Redis's CPU per iteration (or task), then ``describe()``."""
        return (
            f"CPU per {unit}: workers {ms(self.worker_cpu / count)}, "
            f"Redis {ms(self.redis_cpu / count)}; {self.describe()}"
        )


@dataclass
class Samples:
    """Per-hop wall time, worker CPU and Redis CPU, one entry per round."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    redis: list[float] = field(default_factory=list)

    def add(self, wall: float, cpu: float, redis: float) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)
        self.redis.append(redis)

    def median(self, what: str = "wall") -> float:
        values: list[float] = getattr(self, what)
        return statistics.median(values)

    def medians(self) -> str:
        """``wall | worker CPU | Redis CPU``, as the per-hop tables print them."""
        return f"{ms(self.median())} | {ms(self.median('cpu'))} | {ms(self.median('redis'))}"


def timed_hops(
    h: Harness, worker: Worker, run: Callable[[], tuple[float, int]], samples: Samples
) -> None:
    """``run`` returns (wall seconds, hops); record per-hop wall, worker and Redis CPU."""
    cpu0, redis0 = worker.cpu(), h.redis_cpu()
    wall, hops = run()
    samples.add(wall / hops, (worker.cpu() - cpu0) / hops, (h.redis_cpu() - redis0) / hops)


@dataclass
class Row:
    case: str
    a: str
    b: str
    result: str
    target: str
    met: bool | None


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def print_table(rows: list[Row]) -> None:
    print("\n| case | A | B | result | target | met |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        met = "-" if r.met is None else ("yes" if r.met else "**no**")
        print(f"| {r.case} | {r.a} | {r.b} | {r.result} | {r.target} | {met} |")


@contextlib.contextmanager
def monitored(url: str, tally: Callable[[dict[str, Any]], None]) -> Iterator[None]:
    """Hand ``tally`` every command Redis at ``url`` runs meanwhile (``MONITOR``: each a
    dict with ``command``, ``client_type``, ``client_address``, ``client_port``)."""
    stop_word = f"bench-monitor-stop-{uuid.uuid4().hex}"
    conn = Redis.from_url(url)
    ready = threading.Event()

    def listen() -> None:
        with conn.monitor() as m:  # type: ignore[no-untyped-call]  # redis-py: untyped
            ready.set()
            for cmd in m.listen():
                if stop_word in cmd["command"]:
                    return
                tally(cmd)

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    ready.wait(5)
    time.sleep(0.1)
    try:
        yield
    finally:
        with Redis.from_url(url) as client:
            client.echo(stop_word)
        thread.join(10)
        conn.close()


def command_name(cmd: dict[str, Any]) -> str:
    return str(cmd["command"]).split(" ", 1)[0].upper()
