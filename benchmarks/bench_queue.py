"""Queue benchmarks: real ``continuum worker`` processes on a private Redis.

    uv run python -m benchmarks.bench_queue [--only hop|size|throughput|memory] [--rounds N]
        [--layouts 4x16,2x64] [--baseline] [--memory-iterations N]

1. hop: one zero-latency Continuum iteration vs one hop of a bare self-chaining no-op
   Celery task (``benchmarks/noop_app.py``: same reliability settings), each worker one
   thread of the threads pool, 200-hop chains. Target: ratio at most 2. A third case, the
   no-op with Continuum's observability settings (results, started state, task events),
   tells apart what the Celery configuration costs from what Continuum's own work costs;
   one more chain of each under MONITOR counts the Redis commands a hop sends.
2. size: an iteration hop when the job has already accumulated 10 MB vs 10 KB (the job
   is built in-process with ``start``/``advance`` and stored, then workers run 50 more
   iterations). Target: ratio at most 1.5; the ``continuum.iterate`` message a worker
   sends stays small (read from a queue nobody consumes).
3. throughput: 1,000 jobs x 5 iterations at 500 ms simulated latency reach at least 70%
   of the in-flight bound (total threads / latency, in iterations per second); with
   ``--baseline``, then the same load on Celery alone (no-op chains sleeping 500 ms).
4. memory: one worker's RSS, sampled every 1,000 zero-latency iterations over 10,000,
   under steady traffic (new jobs submitted as others end), stays flat.

The simulated model runs in-process in each worker (the ``sim`` profile without
``CONTINUUM_SIM_URL``): its latency is a sleep in the worker thread, as an HTTP call is.
Workers are subprocesses started like ``tests/acceptance/procs.py`` does; Redis is an
embedded server in a temporary directory (never the machine's own), stopped on exit with
every worker, also on Ctrl-C or an error. Cases compared are measured in alternate rounds
in one run; medians are reported. Times come from the workers' own commit timestamps.
The machine is shared: each test also reports the CPU other processes used meanwhile.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celery import Celery
from redis import Redis

from core import Continue, FinishReason, JobSpec, JobState, ProviderResponse, advance, start
from sim.model import SimModel
from sim.options import SimOptions
from workers.calls import ProviderPool, call_model
from workers.embedded import EmbeddedRedis
from workers.providers.registry import load_profiles
from workers.runtime import Runtime, build_runtime
from workers.settings import Settings
from workers.store import TERMINAL
from workers.submit import submit_batch

ROOT = Path(__file__).resolve().parents[1]
QUEUE = "continuum"
#: A queue no worker consumes: messages wait there until ``Harness.release``.
HELD = "bench-held"
READY_TIMEOUT = 60.0
#: Output limit of every simulated reply: 100 tokens x 4 characters = 400 characters, of
#: which 200 repeat the end of the previous reply (the simulator's overlap): each
#: continuation adds 200 characters.
MAX_TOKENS = 100
STEP = 200
CLK_TCK = os.sysconf("SC_CLK_TCK")
KB, MB = 1024, 1024 * 1024


def sim_spec(
    prompt: str, *, size: int, latency: float = 0.0, max_attempts: int = 1_000_000
) -> JobSpec:
    model = f"sim:format=text,size={size}" + (f",latency={latency:g}" if latency else "")
    return JobSpec(
        prompt=prompt,
        format="text",
        providers=["sim"],
        model=model,
        max_output_tokens=MAX_TOKENS,
        continuation={"max_attempts": max_attempts},
    )


def count_iterations(spec: JobSpec, pool: ProviderPool) -> int:
    """How many iterations the job takes, run in-process (engine and simulator, no queue)."""
    state, n = start(spec), 0
    while True:
        state, reply = call_model(state, pool)
        state, decision = advance(state, reply)
        n += 1
        if not isinstance(decision, Continue):
            return n


def sized_spec(prompt: str, iterations: int, *, latency: float = 0.0) -> JobSpec:
    """A job (prompt: ``prompt`` or a variant of it) whose simulated document takes
    exactly ``iterations`` replies to write.

    The document ends at a paragraph, a little past the size asked for, so not every
    count is reachable for a prompt: the smallest size reaching the count is searched
    (the count grows with the size), and the next variant of the prompt is tried when it
    overshoots.
    """
    pool = ProviderPool(load_profiles({}), env={})
    for variant in range(20):
        text = prompt if variant == 0 else f"{prompt} (variant {variant})"
        lo, hi = STEP * max(1, iterations - 3), STEP * (iterations + 2)
        while hi - lo > 8:
            mid = (lo + hi) // 2
            if count_iterations(sim_spec(text, size=mid), pool) >= iterations:
                hi = mid
            else:
                lo = mid
        if count_iterations(sim_spec(text, size=hi), pool) == iterations:
            return sim_spec(text, size=hi, latency=latency)
    raise RuntimeError(f"no document size gives {iterations} iterations for {prompt!r}")


# -- processes --------------------------------------------------------------------------


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the worker gets SIGKILL if the benchmark dies without cleaning up."""
    with contextlib.suppress(Exception):
        import ctypes  # noqa: PLC0415

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


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


@dataclass
class Worker:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def rss(self) -> float:
        return rss_mib(self.pid)

    def tail(self, chars: int = 3000) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} (pid {self.pid}) ---\n{text[-chars:]}"

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while " ready." not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"worker {self.name} not ready:\n{self.tail()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Ended:
    status: str
    iteration: int
    updated_at: float


class Harness:
    """A private Redis, the workers started on it, and clients to drive them."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        # Background AOF rewrites fork the server mid-measurement: off (this Redis is ours;
        # clients may not change its configuration, so it is set at start).
        self.server = EmbeddedRedis(
            tmp / "redis", config={"auto-aof-rewrite-percentage": "0"}
        ).start()
        try:
            self._connect()
        except BaseException:
            self.server.stop()
            raise

    def _connect(self) -> None:
        self.url = self.server.url
        self.redis = Redis.from_url(self.url)
        # Polls (single-threaded) go through one connection of their own, pipelines too, so
        # MONITOR can leave them out.
        self.poller = Redis.from_url(self.url, max_connections=1)
        self.poller_addr = str(self.poller.client_info()["addr"])
        self.producer = Celery("bench-producer", broker=self.url, set_as_current=False)
        self.rt: Runtime = build_runtime(Settings(), self.url)
        self.store = self.rt.store
        self.workers: list[Worker] = []
        # Default settings; the in-process simulator (no CONTINUUM_SIM_URL); no Sentry.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTINUUM_", "SENTRY_"))}
        self.env = {**env, "REDIS_URL": self.url, "PYTHONUNBUFFERED": "1"}

    def close(self) -> None:
        try:
            for worker in self.workers:
                worker.stop()
            self.workers.clear()
            with contextlib.suppress(Exception):
                self.producer.close()
            with contextlib.suppress(Exception):
                self.rt.pool.close()
                self.redis.close()
                self.poller.close()
        finally:
            self.server.stop()

    # -- workers ------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> Worker:
        log = self.tmp / f"{len(self.workers):02d}-{name}.log"
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                argv,
                env={**self.env, **env},
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
                start_new_session=True,  # Ctrl-C reaches the benchmark, which stops them
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads run yet here
            )
        worker = Worker(name, proc, log)
        self.workers.append(worker)
        return worker

    def continuum(self, name: str, concurrency: int, *, queues: str = QUEUE, **env: str) -> Worker:
        argv = [
            sys.executable,
            "-m",
            "cli.main",
            "worker",
            f"--concurrency={concurrency}",
            "--pool=threads",
            f"--queues={queues}",
            "--loglevel=INFO",
            f"--hostname=bench-{name}-{uuid.uuid4().hex[:6]}@%h",
        ]
        return self._spawn(name, argv, env)

    def noop(self, name: str, queue: str, *, events: bool, concurrency: int = 1) -> Worker:
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "benchmarks.noop_app",
            "worker",
            "--pool=threads",
            f"--concurrency={concurrency}",
            f"--queues={queue}",
            "--loglevel=INFO",
            "--without-mingle",
            "--without-gossip",
            f"--hostname=bench-{name}-{uuid.uuid4().hex[:6]}@%h",
        ]
        env = {"BENCH_NOOP_QUEUE": queue, "BENCH_NOOP_EVENTS": "1" if events else "0"}
        return self._spawn(name, argv, env)

    def stop(self, *workers: Worker) -> None:
        for worker in workers:
            worker.stop()
            self.workers.remove(worker)

    def logs(self) -> str:
        return "\n".join(w.tail() for w in self.workers)

    def redis_cpu(self) -> float:
        pid = self.server.pid
        return cpu_seconds(pid) if pid else 0.0

    # -- jobs ---------------------------------------------------------------------------
    def create(self, spec: JobSpec, state: JobState | None = None, output: str = "") -> str:
        """Store a job (optionally one already under way: ``state`` and its output)."""
        job_id = uuid.uuid4().hex
        state = state or start(spec)
        self.store.create(
            job_id, spec.model_dump_json(), state.model_dump_json(), deadline=time.time() + 3600
        )
        if state.iteration:
            keys = self.store.keys
            pipe = self.redis.pipeline(transaction=True)
            pipe.set(keys.output(job_id), output)
            pipe.hset(keys.job(job_id), "iteration", state.iteration)
            pipe.execute()
        return job_id

    def send_iterate(self, job_id: str, iteration: int, queue: str = QUEUE) -> None:
        self.producer.send_task(
            "continuum.iterate", kwargs={"job_id": job_id, "iteration": iteration}, queue=queue
        )

    def enqueue(self, job_id: str, iteration: int, countdown: float, queue: str) -> None:
        self.producer.send_task(
            "continuum.iterate",
            kwargs={"job_id": job_id, "iteration": iteration},
            queue=queue or QUEUE,
            countdown=countdown or None,
        )

    def wait_ended(
        self, job_ids: list[str], timeout: float, interval: float = 0.05
    ) -> dict[str, Ended]:
        """Wait until every job has ended (polling only those that have not)."""
        keys = self.store.keys
        deadline = time.monotonic() + timeout
        ended: dict[str, Ended] = {}
        pending = list(job_ids)
        while True:
            pipe = self.poller.pipeline(transaction=False)
            for job_id in pending:
                pipe.hmget(keys.job(job_id), ["status", "iteration", "updated_at"])
            rows = pipe.execute()
            still = []
            for job_id, (status, iteration, updated_at) in zip(pending, rows, strict=True):
                if status is not None and status.decode() in TERMINAL:
                    ended[job_id] = Ended(status.decode(), int(iteration), float(updated_at))
                else:
                    still.append(job_id)
            pending = still
            if not pending:
                return {j: ended[j] for j in job_ids}
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{len(pending)} of {len(job_ids)} jobs not ended in {timeout:.0f} s\n"
                    f"{self.logs()}"
                )
            time.sleep(interval)

    def release(self, held: str, queue: str) -> int:
        """Move every message waiting in the queue ``held`` (which nobody consumes) to
        ``queue``, oldest first, at once; returns how many."""
        count = int(self.redis.llen(held))
        pipe = self.redis.pipeline(transaction=False)
        for _ in range(count):
            pipe.lmove(held, queue, "RIGHT", "LEFT")
        pipe.execute()
        return count

    def drop(self, job_ids: list[str]) -> None:
        """Delete the jobs' keys (this Redis is ours), so rounds do not pile up data."""
        k = self.store.keys
        pipe = self.redis.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.delete(k.job(job_id), k.output(job_id), k.lease(job_id), k.commits(job_id))
            pipe.zrem(k.active, job_id)
        pipe.execute()

    # -- what reaches Redis -------------------------------------------------------------
    @contextlib.contextmanager
    def monitor(self) -> Iterator[Counter[str]]:
        """Count the commands clients send (not those run inside Lua scripts) meanwhile."""
        counts: Counter[str] = Counter()
        stop_word = f"bench-monitor-stop-{uuid.uuid4().hex}"
        conn = Redis.from_url(self.url)
        ready = threading.Event()
        addr = self.poller_addr

        def listen() -> None:
            with conn.monitor() as m:
                ready.set()
                for cmd in m.listen():
                    if stop_word in cmd["command"]:
                        return
                    source = f"{cmd.get('client_address')}:{cmd.get('client_port')}"
                    if cmd.get("client_type") == "lua" or source == addr:
                        continue
                    counts[cmd["command"].split(" ", 1)[0].upper()] += 1

        thread = threading.Thread(target=listen, daemon=True)
        thread.start()
        ready.wait(5)
        time.sleep(0.1)
        try:
            yield counts
        finally:
            self.redis.echo(stop_word)
            thread.join(10)
            conn.close()


# -- measurements -----------------------------------------------------------------------


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
        return statistics.median(getattr(self, what))


def timed_hops(
    h: Harness, worker: Worker, run: Callable[[], tuple[float, float]], samples: Samples
) -> None:
    """``run`` returns (wall seconds, hops); record per-hop wall, worker and Redis CPU."""
    cpu0, redis0 = worker.cpu(), h.redis_cpu()
    wall, hops = run()
    samples.add(wall / hops, (worker.cpu() - cpu0) / hops, (h.redis_cpu() - redis0) / hops)


def noop_chain(h: Harness, queue: str, hops: int) -> tuple[float, float]:
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


def continuum_chain(
    h: Harness,
    spec: JobSpec,
    hops: int,
    *,
    state: JobState | None = None,
    output: str = "",
    status: str = "succeeded",
) -> tuple[float, float]:
    job_id = h.create(spec, state, output)
    first = state.iteration if state else 0
    t0 = time.time()
    h.send_iterate(job_id, first)
    ended = h.wait_ended([job_id], timeout=300)[job_id]
    h.drop([job_id])
    done = ended.iteration - first
    if ended.status != status or done != hops:
        raise RuntimeError(
            f"job ended {ended.status} after {done} iterations, expected {status} after {hops}"
        )
    return ended.updated_at - t0, done


def per_hop_commands(counts: Counter[str], hops: int) -> str:
    total = sum(counts.values())
    top = ", ".join(f"{c} {n / hops:.1f}" for c, n in counts.most_common() if n >= hops / 2)
    return f"{total / hops:.1f} ({top})"


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


def bench_hop(h: Harness, rounds: int, hops: int) -> list[Row]:
    print(f"\n== hop: {hops}-hop chains, one worker thread each, {rounds} rounds", flush=True)
    cont = h.continuum("hop", 1)
    plain = h.noop("noop-plain", "bench-noop", events=False)
    full = h.noop("noop-full", "bench-noop-full", events=True)
    for w in (cont, plain, full):
        w.wait_ready()
    spec = sized_spec("Write a long story about the sea.", hops)
    cases: list[tuple[str, Worker, Callable[[], tuple[float, float]]]] = [
        ("no-op task", full, lambda: noop_chain(h, "bench-noop-full", hops)),
        ("Continuum iteration", cont, lambda: continuum_chain(h, spec, hops)),
        ("no-op, no task events", plain, lambda: noop_chain(h, "bench-noop", hops)),
    ]
    for _, _, run in cases:  # warm-up: imports, connections, the simulator's document
        run()
    results = {name: Samples() for name, _, _ in cases}
    usage = Usage(h, [cont, plain, full])
    for r in range(rounds):
        for name, worker, run in cases:
            timed_hops(h, worker, run, results[name])
        line = "  ".join(f"{n}: {ms(results[n].wall[-1])}" for n, _, _ in cases)
        print(f"  round {r + 1}: {line}", flush=True)
    print(f"  {usage.stop().describe()}")
    # One more (untimed) chain of each, with MONITOR on: the commands a hop sends to Redis.
    probe = 50
    commands = {}
    spec_probe = sized_spec("Write a long story about the sea.", probe)
    for name, run in (
        ("no-op task", lambda: noop_chain(h, "bench-noop-full", probe)),
        ("Continuum iteration", lambda: continuum_chain(h, spec_probe, probe)),
        ("no-op, no task events", lambda: noop_chain(h, "bench-noop", probe)),
    ):
        with h.monitor() as counts:
            run()
        commands[name] = per_hop_commands(counts, probe)
    print("  per hop (medians): wall | worker CPU | Redis CPU | Redis commands sent")
    for name, _, _ in cases:
        s = results[name]
        print(
            f"  {name:<34} {ms(s.median())} | {ms(s.median('cpu'))} | "
            f"{ms(s.median('redis'))} | {commands[name]}"
        )
    h.stop(cont, plain, full)
    a = results["no-op task"].median()
    b = results["Continuum iteration"].median()
    c = results["no-op, no task events"].median()
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
        Row(
            "hop: no-op without task events (A) vs Continuum iteration (B)",
            ms(c),
            ms(b),
            f"B/A = {b / c:.2f}",
            "(breakdown)",
            None,
        ),
    ]


def message_size(h: Harness, job_id: str, iteration: int) -> tuple[int, dict[str, Any]]:
    """Bytes of the ``continuum.iterate`` message a worker sends after ``iteration``.

    The probe worker consumes ``bench-probe-in`` and sends the next iteration to its
    default queue, ``bench-probe-out``, which nobody consumes: the message is read there.
    """
    out = "bench-probe-out"
    h.send_iterate(job_id, iteration, queue="bench-probe-in")
    deadline = time.monotonic() + 120
    while (raw := h.redis.lpop(out)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the probe worker sent nothing\n{h.logs()}")
        time.sleep(0.05)
    envelope = json.loads(raw)
    body = json.loads(base64.b64decode(envelope["body"]))
    return len(raw), body[1]


def bench_size(h: Harness, rounds: int, hops: int) -> list[Row]:
    small, big = 10 * KB, 10 * MB
    print(f"\n== size: {hops} iterations after 10 KB vs 10 MB, {rounds} rounds", flush=True)
    size = big + STEP * (hops + 20)
    prompt = "Write a very long chronicle of a river town."
    spec = sim_spec(prompt, size=size, max_attempts=hops)
    doc = SimModel().target_for(prompt, SimOptions.parse(spec.model.partition(":")[2]))

    def prepared(chars: int, spec: JobSpec) -> JobState:
        reply = ProviderResponse(text=doc[:chars], finish_reason=FinishReason.LENGTH)
        state, decision = advance(start(spec), reply)
        assert type(decision).__name__ == "Continue", decision
        return state

    states = {small: prepared(small, spec), big: prepared(big, spec)}
    worker = h.continuum("size", 1)
    probe = h.continuum("probe", 1, queues="bench-probe-in", CONTINUUM_QUEUE="bench-probe-out")
    worker.wait_ready()
    probe.wait_ready()
    warm = sim_spec(prompt, size=size, max_attempts=3)
    for chars in (small, big):  # warm-up: the worker's simulator builds its 10 MB document
        continuum_chain(
            h, warm, 3, state=prepared(chars, warm), output=doc[:chars], status="partial"
        )
    results = {small: Samples(), big: Samples()}
    usage = Usage(h, [worker])
    for r in range(rounds):
        for chars in (small, big):
            timed_hops(
                h,
                worker,
                lambda c=chars: continuum_chain(
                    h, spec, hops, state=states[c], output=doc[:c], status="partial"
                ),
                results[chars],
            )
        print(
            f"  round {r + 1}: 10 KB {ms(results[small].wall[-1])}  "
            f"10 MB {ms(results[big].wall[-1])}",
            flush=True,
        )
    print(f"  {usage.stop().describe()}")
    sizes = {}
    for chars in (small, big):
        job_id = h.create(spec, states[chars], doc[:chars])
        sizes[chars], kwargs = message_size(h, job_id, states[chars].iteration)
        h.drop([job_id])
        print(f"  message after {chars:,} chars: {sizes[chars]} bytes, kwargs {kwargs}")
    state_json = {c: len(s.model_dump_json()) for c, s in states.items()}
    print("  per hop (medians): wall | worker CPU | Redis CPU | state JSON")
    for chars, label in ((small, "10 KB"), (big, "10 MB")):
        s = results[chars]
        print(
            f"  {label:<6} {ms(s.median())} | {ms(s.median('cpu'))} | {ms(s.median('redis'))} "
            f"| {state_json[chars]:,} chars"
        )
    h.stop(worker, probe)
    a, b = results[small].median(), results[big].median()
    return [
        Row(
            "hop at 10 KB (A) vs 10 MB (B) accumulated",
            ms(a),
            ms(b),
            f"B/A = {b / a:.2f}",
            "<= 1.5",
            b / a <= 1.5,
        ),
        Row(
            "`continuum.iterate` message sent by a worker, at 10 KB (A) vs 10 MB (B)",
            f"{sizes[small]} B",
            f"{sizes[big]} B",
            f"B-A = {sizes[big] - sizes[small]} B",
            "small, constant",
            sizes[big] == sizes[small] and sizes[big] < 4096,
        ),
    ]


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
        deadline = time.monotonic() + 60
        while h.poller.llen(warm) < count * threads:
            if time.monotonic() > deadline:
                raise RuntimeError(f"Celery warm-up did not end\n{h.logs()}")
            time.sleep(0.1)
        for _ in range(chains):
            h.producer.send_task("bench.sleep_chain", args=[hops, key, latency], queue=HELD)
        usage = Usage(h, workers)
        t0 = time.time()
        h.release(HELD, queue)
        deadline = time.monotonic() + chains * hops * latency + 120
        while h.poller.llen(key) < chains:
            if time.monotonic() > deadline:
                raise RuntimeError(f"Celery chains did not end\n{h.logs()}")
            time.sleep(0.5)
        usage.stop()
        wall = max(float(t) for t in h.poller.lrange(key, 0, -1)) - t0
    finally:
        h.redis.delete(key, warm)
        h.stop(*workers)
    return wall, usage


def bench_throughput(
    h: Harness,
    layouts: list[tuple[int, int]],
    *,
    jobs: int,
    iterations: int,
    latency: float,
    baseline: bool,
) -> list[Row]:
    """The jobs are submitted first (``submit_batch``), their first iterations sent to a
    queue nobody consumes; then they are all moved to the workers' queue at once: the
    clock starts there and stops at the last commit. The bound: every thread always in a
    model call. With ``baseline``, the same load runs on Celery alone next (see
    ``celery_chains``)."""
    rows = []

    def hold(job_id: str, iteration: int, countdown: float, queue: str) -> None:
        h.enqueue(job_id, iteration, countdown, HELD)

    quick = sized_spec("Write a short fable.", iterations)
    slow = sized_spec("Write a short fable.", iterations, latency=latency).model_dump()
    for count, threads in layouts:
        total = count * threads
        bound = total / latency
        print(
            f"\n== throughput: {jobs} jobs x {iterations} iterations at {latency * 1000:.0f} ms, "
            f"{count} worker(s) x {threads} threads (bound {bound:.0f} it/s)",
            flush=True,
        )
        workers = [h.continuum(f"tp{i}", threads) for i in range(count)]
        for w in workers:
            w.wait_ready()
        # Warm-up: every thread runs a quick job first (imports, connections, documents).
        _, subs = submit_batch(h.rt, [quick.model_dump()] * total, h.enqueue)
        h.drop(list(h.wait_ended([s.job_id for s in subs], timeout=120)))
        t_create = time.time()
        _, subs = submit_batch(h.rt, [slow] * jobs, hold)
        created = time.time() - t_create
        job_ids = [s.job_id for s in subs]
        usage = Usage(h, workers)
        t0 = time.time()
        h.release(HELD, QUEUE)
        sent = time.time() - t0
        ended = h.wait_ended(job_ids, timeout=jobs * iterations * latency + 120, interval=0.5)
        usage.stop()
        t_end = max(e.updated_at for e in ended.values())
        wall = t_end - t0
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
        print(
            f"  CPU per iteration: workers {usage.worker_cpu / done * 1000:.2f} ms, "
            f"Redis {usage.redis_cpu / done * 1000:.2f} ms; {usage.describe()}"
        )
        if bad:
            print(f"  !! {len(bad)} jobs did not succeed after {iterations} iterations")
        rows.append(
            Row(
                f"throughput {jobs} x {iterations} at {latency * 1000:.0f} ms, "
                f"{count} x {threads} threads: bound (A) vs achieved (B)",
                f"{bound:.0f} it/s",
                f"{rate:.0f} it/s",
                f"{fraction:.0%} ({wall:.1f} s vs {at_bound:.1f} s)",
                ">= 70%",
                fraction >= 0.7 and not bad,
            )
        )
        if not baseline:
            continue
        c_wall, c_usage = celery_chains(
            h, count, threads, chains=jobs, hops=iterations, latency=latency
        )
        c_rate = jobs * iterations / c_wall
        print(
            f"  Celery alone (sleeping no-op chains, Continuum's Celery settings, same layout): "
            f"{c_rate:.1f} it/s = {c_rate / bound:.0%} of the bound in {c_wall:.2f} s"
        )
        print(
            f"  CPU per task: workers {c_usage.worker_cpu / (jobs * iterations) * 1000:.2f} ms, "
            f"Redis {c_usage.redis_cpu / (jobs * iterations) * 1000:.2f} ms; "
            f"{c_usage.describe()}"
        )
        rows.append(
            Row(
                f"same load on Celery alone (no-op chains sleeping {latency * 1000:.0f} ms, "
                f"{count} x {threads}): bound (A) vs achieved (B)",
                f"{bound:.0f} it/s",
                f"{c_rate:.0f} it/s",
                f"{c_rate / bound:.0%} ({c_wall:.1f} s)",
                "(reference)",
                None,
            )
        )
    return rows


def bench_memory(
    h: Harness, *, total: int, per_job: int, threads: int, in_flight: int, every: int
) -> list[Row]:
    """Steady traffic: new jobs are submitted as others end, ``in_flight`` at a time, so
    every stretch of the run does the same work (job ages mixed); RSS is sampled at every
    ``every`` committed iterations."""
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
    finished: dict[str, Ended] = {}
    submitted, mark = 0, every
    deadline = time.monotonic() + 1800
    while True:
        if len(active) < in_flight and submitted < jobs:
            n = min(in_flight - len(active), jobs - submitted)
            specs = [kinds[(submitted + i) % len(kinds)].model_dump() for i in range(n)]
            _, subs = submit_batch(h.rt, specs, h.enqueue)
            active += [s.job_id for s in subs]
            submitted += n
        pipe = h.poller.pipeline(transaction=False)
        for job_id in active:
            pipe.hmget(h.store.keys.job(job_id), ["status", "iteration", "updated_at"])
        still, running = [], 0
        for job_id, (status, iteration, updated) in zip(active, pipe.execute(), strict=True):
            if status is not None and status.decode() in TERMINAL:
                finished[job_id] = Ended(status.decode(), int(iteration), float(updated))
            else:
                still.append(job_id)
                running += int(iteration or 0)
        active = still
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
    # From a fifth of the run (2,000 of 10,000 iterations): the start-up growth is over.
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


def print_table(rows: list[Row]) -> None:
    print("\n| case | A | B | result | target | met |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        met = "-" if r.met is None else ("yes" if r.met else "**no**")
        print(f"| {r.case} | {r.a} | {r.b} | {r.result} | {r.target} | {met} |")


def layouts(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        count, _, threads = item.strip().partition("x")
        out.append((int(count), int(threads)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["hop", "size", "throughput", "memory"])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of hop and size")
    parser.add_argument("--hops", type=int, default=200, help="hops per chain (hop)")
    parser.add_argument("--size-hops", type=int, default=50, help="iterations per round (size)")
    parser.add_argument(
        "--layouts",
        type=layouts,
        default=[(4, 16)],
        help="throughput: workers x threads, comma-separated, e.g. 2x64,4x16 (default 4x16)",
    )
    parser.add_argument("--jobs", type=int, default=1000, help="throughput: jobs")
    parser.add_argument("--latency", type=float, default=0.5, help="throughput: seconds")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="throughput: also run the same load on Celery alone, for reference",
    )
    parser.add_argument("--memory-iterations", type=int, default=10_000)
    parser.add_argument("--memory-threads", type=int, default=16)
    args = parser.parse_args()

    # A terminated benchmark cleans up as an interrupted one does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for key in [k for k in os.environ if k.startswith("CONTINUUM_")]:
        del os.environ[key]  # the driver's settings must match the workers' (defaults)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-queue-") as tmp:
        h = Harness(Path(tmp))
        try:
            if args.only in (None, "hop"):
                rows += bench_hop(h, args.rounds, args.hops)
            if args.only in (None, "size"):
                rows += bench_size(h, args.rounds, args.size_hops)
            if args.only in (None, "throughput"):
                rows += bench_throughput(
                    h,
                    args.layouts,
                    jobs=args.jobs,
                    iterations=5,
                    latency=args.latency,
                    baseline=args.baseline,
                )
            if args.only in (None, "memory"):
                rows += bench_memory(
                    h,
                    total=args.memory_iterations,
                    per_job=20,
                    threads=args.memory_threads,
                    in_flight=64,
                    every=max(100, args.memory_iterations // 10),
                )
        finally:
            h.close()
    print_table(rows)


if __name__ == "__main__":
    main()
