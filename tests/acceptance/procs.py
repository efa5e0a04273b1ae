"""Real worker processes: ``continuum worker`` and ``continuum beat`` as subprocesses on a
real Redis (and a RabbitMQ broker when ``broker_url`` is set), killed with SIGKILL when a
test says so (fixture ``cluster`` in conftest).

Every key a cluster writes (ours and Celery's: queues, results, unacked messages) lives
under the test's ``redis_prefix`` (``CONTINUUM_KEY_PREFIX`` and Celery's
``global_keyprefix``), so a shared ``REDIS_URL`` is never polluted and never flushed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celery import Celery

from workers.store import TERMINAL, JobRecord, JobStore

ROOT = Path(__file__).parents[2]
CONTINUUM = [sys.executable, "-m", "cli.main"]
READY_TIMEOUT = 30.0


@dataclass
class Cluster:
    """Worker and watchdog processes sharing one Redis, one key prefix and one queue."""

    redis_url: str
    prefix: str
    log_dir: Path
    env: dict[str, str]
    #: The broker when it is not the Redis (a RabbitMQ's URL).
    broker_url: str | None = None
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _logs: dict[int, Path] = field(default_factory=dict)
    _count: int = 0

    @property
    def queue(self) -> str:
        """The workers' queue (``CONTINUUM_QUEUE``)."""
        return self.env["CONTINUUM_QUEUE"]

    # -- processes ---------------------------------------------------------------------
    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Any:
        self._count += 1
        log = self.log_dir / f"{self._count:02d}-{name}.log"
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                [*CONTINUUM, *args],
                env={**self.env, **(env or {})},
                stdout=fh,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
        self.procs.append(proc)
        self._logs[proc.pid] = log
        return proc

    def worker(
        self, concurrency: int = 4, *, wait: bool = True, queues: str | None = None, **env: str
    ) -> Any:
        """Start ``continuum worker``; with ``wait``, return once it consumes."""
        args = ["worker", f"--concurrency={concurrency}", "--loglevel=INFO"]
        if queues:
            args.append(f"--queues={queues}")
        proc = self._spawn("worker", args, env)
        if wait:
            self.wait_for_log(proc, " ready.")
        return proc

    def beat(self) -> Any:
        proc = self._spawn("beat", ["beat"])
        self.wait_for_log(proc, "continuum beat: watching")
        return proc

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL, as the OOM killer or a lost machine would."""
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

    def log(self, proc: subprocess.Popen[bytes]) -> str:
        return self._logs[proc.pid].read_text(errors="replace")

    def logs(self, tail: int = 3000) -> str:
        """The tail of every process's log (for assertion messages)."""
        parts = []
        for pid, path in self._logs.items():
            text = path.read_text(errors="replace")
            parts.append(f"--- {path.name} (pid {pid}) ---\n{text[-tail:]}")
        return "\n".join(parts)

    def wait_for_log(
        self, proc: subprocess.Popen[bytes], needle: str, timeout: float = READY_TIMEOUT
    ) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.log(proc):
            if proc.poll() is not None:
                raise AssertionError(f"process exited ({proc.returncode}):\n{self.log(proc)}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {needle!r} in {timeout} s:\n{self.log(proc)}")
            time.sleep(0.05)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        for proc in self.procs:
            proc.wait(timeout=10)

    # -- clients -----------------------------------------------------------------------
    def producer(self) -> Celery:
        """A bare Celery client, as a producer that imports nothing of ours would make."""
        if self.broker_url is not None:  # RabbitMQ: as docs/protocol.md says
            app = Celery(broker=self.broker_url)
            app.conf.task_create_missing_queue_type = "quorum"
            app.conf.task_create_missing_queue_exchange_type = "topic"
            return app
        return Celery(
            broker=self.redis_url,
            broker_transport_options={"global_keyprefix": self.prefix},
        )

    def store(self) -> JobStore:
        return JobStore.from_url(self.redis_url, prefix=self.prefix)

    def wait_ended(
        self, job_ids: list[str], timeout: float, tick: Callable[[], None] | None = None
    ) -> dict[str, JobRecord]:
        """Wait until every job has ended; ``tick`` runs between polls (chaos)."""
        store = self.store()
        deadline = time.monotonic() + timeout
        while True:
            records = {j: store.load(j) for j in job_ids}
            if all(r is not None and r.status in TERMINAL for r in records.values()):
                return {j: r for j, r in records.items() if r is not None}
            if time.monotonic() > deadline:
                states = {
                    j: (r.status.value, r.iteration) if r else None for j, r in records.items()
                }
                raise AssertionError(f"jobs not ended in {timeout} s: {states}\n{self.logs()}")
            if tick is not None:
                tick()
            time.sleep(0.1)
