"""The queue benchmarks' harness: a private Redis, real worker processes on it, and the
jobs and messages that drive them.

Redis is an embedded server in a temporary directory, never the machine's own (AOF
``everysec``, automatic AOF rewrites off). Workers are subprocesses started as
``tests/acceptance/procs.py`` starts them: ``continuum worker --pool=threads`` with default
settings and the simulator in-process, or a bare Celery worker of
``benchmarks/noop_app.py``. Every one is stopped on exit, also on Ctrl-C or an error, and
killed by the kernel if the benchmark dies first. What is measured over them (CPU, the
tables) is in ``benchmarks/queue_measure.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from celery import Celery
from redis import Redis

from core import JobSpec, JobState, start
from workers.embedded import EmbeddedRedis
from workers.keys import shard_of
from workers.providers.registry import SIM_SWITCH
from workers.runtime import Runtime, build_runtime
from workers.settings import Settings
from workers.store import TERMINAL, Client

ROOT = Path(__file__).resolve().parents[1]
QUEUE = "continuum"
#: A queue no worker consumes: messages wait there until ``Harness.release``.
HELD = "bench-held"
READY_TIMEOUT = 60.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


def isolate_environment() -> None:
    """Give this process the workers' settings: the defaults, with the simulator enabled
    (the driver validates and builds jobs with the same provider profiles they run)."""
    for key in [k for k in os.environ if k.startswith("CONTINUUM_")]:
        del os.environ[key]
    os.environ[SIM_SWITCH] = "1"


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


@dataclass(frozen=True)
class Progress:
    """Where a job stands: its status, iterations committed and the worker's timestamp of
    its last commit."""

    status: str
    iteration: int
    updated_at: float

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL


class Harness:
    """A private Redis, the workers started on it, and clients to drive them. With
    ``store_url`` (a ``redis+cluster://`` URL) job state lives there, and the private
    Redis is the broker and Celery's result backend only."""

    def __init__(self, tmp: Path, store_url: str | None = None) -> None:
        self.tmp = tmp
        self.store_url = store_url
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
        self.rt: Runtime = build_runtime(Settings(), self.store_url or self.url)
        self.store = self.rt.store
        # The harness's own reads and writes of job keys: on the store elsewhere, or here.
        self.jobs: Client = self.store.redis if self.store_url else self.redis
        self.jobs_poller: Client = self.store.redis if self.store_url else self.poller
        self.workers: list[Worker] = []
        # Default settings; the in-process simulator (no CONTINUUM_SIM_URL); no Sentry.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTINUUM_", "SENTRY_"))}
        self.env = {**env, "REDIS_URL": self.url, "PYTHONUNBUFFERED": "1", SIM_SWITCH: "1"}
        if self.store_url:
            self.env.update(
                REDIS_URL=self.store_url,
                CONTINUUM_BROKER_URL=self.url,
                CONTINUUM_RESULT_BACKEND=self.url,
            )

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
        argv = [sys.executable, "-m", "cli.main", "worker", f"--queues={queues}"]
        return self._spawn(name, argv + self._worker_flags(name, concurrency), env)

    def noop(self, name: str, queue: str, *, events: bool, concurrency: int = 1) -> Worker:
        argv = [sys.executable, "-m", "celery", "-A", "benchmarks.noop_app", "worker"]
        argv += [f"--queues={queue}", "--without-mingle", "--without-gossip"]
        env = {"BENCH_NOOP_QUEUE": queue, "BENCH_NOOP_EVENTS": "1" if events else "0"}
        return self._spawn(name, argv + self._worker_flags(name, concurrency), env)

    @staticmethod
    def _worker_flags(name: str, concurrency: int) -> list[str]:
        return [
            "--pool=threads",
            f"--concurrency={concurrency}",
            "--loglevel=INFO",
            f"--hostname=bench-{name}-{uuid.uuid4().hex[:6]}@%h",
        ]

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
            pipe = self.jobs.pipeline(transaction=True)
            pipe.set(keys.output(job_id), output)
            pipe.hset(keys.job(job_id), "iteration", state.iteration)
            pipe.execute()
        return job_id

    def enqueue(self, job_id: str, iteration: int, countdown: float = 0.0, queue: str = "") -> None:
        """Send ``continuum.iterate`` (the signature ``submit_batch`` calls)."""
        self.producer.send_task(
            "continuum.iterate",
            kwargs={"job_id": job_id, "iteration": iteration},
            queue=queue or QUEUE,
            countdown=countdown or None,
        )

    def progress(self, job_ids: list[str]) -> list[Progress]:
        """Where each job stands, read in one round trip on the polling connection."""
        pipe = self.jobs_poller.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.hmget(self.store.keys.job(job_id), ["status", "iteration", "updated_at"])
        return [
            Progress((status or b"").decode(), int(iteration or 0), float(updated_at or 0))
            for status, iteration, updated_at in pipe.execute()
        ]

    def wait_ended(
        self, job_ids: list[str], timeout: float, interval: float = 0.05
    ) -> dict[str, Progress]:
        """Wait until every job has ended (polling only those that have not)."""
        deadline = time.monotonic() + timeout
        ended: dict[str, Progress] = {}
        pending = list(job_ids)
        while True:
            rows = self.progress(pending)
            ended.update((j, row) for j, row in zip(pending, rows, strict=True) if row.ended)
            pending = [j for j in pending if j not in ended]
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
        pipe = self.jobs.pipeline(transaction=False)
        for job_id in job_ids:
            for key in (k.job(job_id), k.output(job_id), k.lease(job_id), k.commits(job_id)):
                pipe.delete(key)  # one key a command: a cluster's pipeline takes no more
            pipe.zrem(k.active(shard_of(job_id)), job_id)
        pipe.execute()
