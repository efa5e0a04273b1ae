"""``continuum up`` keeps its stack running: a component that dies is started again with
backoff, and a crash loop stops everything with one line. The ``Supervisor`` on real
processes (a command that exits at once), then ``continuum up`` itself, SIGKILLed workers
and all."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from cli.stack import Component, Stack, Supervisor
from tests.acceptance.test_cli_stack import CONTINUUM, free_port, fresh_env, processes_in
from workers.errors import CrashLoop


def crashing(tmp_path: Path, lines: list[str]) -> tuple[Stack, Component]:
    """A stack with one component that exits with code 2 as soon as it starts (argparse
    refusing an unknown command)."""
    stack = Stack(root=tmp_path, say=lines.append)
    return stack, stack._spawn("broken", ["no-such-command"])


def test_a_component_that_keeps_dying_is_restarted_with_backoff_then_given_up(
    tmp_path: Path,
) -> None:
    ctrl_c = signal.getsignal(signal.SIGINT)
    lines: list[str] = []
    stack, broken = crashing(tmp_path, lines)
    supervisor = Supervisor(stack, limit=3, backoff_s=0.05, backoff_cap_s=0.15)
    pids = {broken.proc.pid}
    deadline = time.monotonic() + 30
    with stack, pytest.raises(CrashLoop) as caught:
        while time.monotonic() < deadline:
            supervisor.check()
            pids.add(broken.proc.pid)
            time.sleep(0.01)
    assert str(caught.value) == (
        "broken died again after 3 restarts within 60 s (exited with code 2); "
        f"giving up, see {broken.log}"
    )
    assert len(pids) == 4  # the first process and three restarts
    waits = [re.search(r"restarting it in (\S+) s", line) for line in lines]
    assert [m.group(1) for m in waits if m] == ["0.05", "0.1", "0.15"]  # doubled, capped
    assert sum("broken   restarted (pid" in line for line in lines) == 3
    log = broken.log.read_text()
    assert log.count("--- exited with code 2; restarted by the supervisor ---") == 3
    assert log.count("invalid choice: 'no-such-command'") == 4  # each run's own output
    # Stopping ignores Ctrl-C only while it runs: this process's later children get it.
    assert signal.getsignal(signal.SIGINT) is ctrl_c


def test_deaths_further_apart_than_the_window_are_restarted_forever(tmp_path: Path) -> None:
    """Only restarts within ``window_s`` count: a component that dies once a minute is
    restarted every time, each time after the first, shortest delay."""
    lines: list[str] = []
    now = [0.0]
    stack, broken = crashing(tmp_path, lines)
    supervisor = Supervisor(stack, limit=2, window_s=60, backoff_s=0.5, clock=lambda: now[0])
    with stack:
        for _ in range(3):  # more than ``limit``
            broken.proc.wait()
            supervisor.check()  # seen dead: due in 0.5 s
            now[0] += 0.5
            supervisor.check()  # restarted
            now[0] += 61
    assert sum("restarting it in 0.5 s" in line for line in lines) == 3
    assert sum("restarted (pid" in line for line in lines) == 3


class Output:
    """The lines a process writes, read by a thread, waited for by pattern."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        assert proc.stdout is not None
        stdout = proc.stdout

        def pump() -> None:
            with stdout:  # closed at the end of the output: an open pipe is a ResourceWarning
                for line in stdout:
                    self._queue.put(line)
            self._queue.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                raise AssertionError(f"no line matching {pattern!r} in:\n{''.join(self.lines)}")
            self.lines.append(line)
            if found := re.search(pattern, line):
                return found


def start_up(tmp_path: Path, port: int) -> tuple[subprocess.Popen[str], Output, int]:
    """``continuum up`` with one worker, recovering a killed worker's iteration quickly;
    the process, its output and the worker's pid once it is ready."""
    env = fresh_env() | {
        "CONTINUUM_LEASE_TTL_S": "3",
        "CONTINUUM_WATCHDOG_INTERVAL_S": "0.5",
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [*CONTINUUM, "up", "--workers", "1", "--port", str(port), "--no-flower"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = Output(proc)
    pid = int(out.wait_for(r"worker-1 +ready, .* \(pid (\d+)\)").group(1))
    out.wait_for("ready; Ctrl-C stops everything")
    return proc, out, pid


def stop(proc: subprocess.Popen[str]) -> None:
    """After a failure: SIGTERM, so ``continuum up`` stops its children; SIGKILL if not."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_up_restarts_a_killed_worker_and_the_job_it_was_running_finishes(
    tmp_path: Path,
) -> None:
    port = free_port()
    proc, out, first = start_up(tmp_path, port)
    try:
        base = f"http://127.0.0.1:{port}"
        job = {
            "prompt": "List the exhibits",
            "format": "text",
            "providers": ["sim"],
            "model": "sim:format=text,size=6000,latency=0.4",
            "max_output_tokens": 300,
        }
        created = httpx.post(f"{base}/v1/jobs", json=job, timeout=10)
        assert created.status_code == 202, created.text
        url = f"{base}/v1/jobs/{created.json()['job_id']}"
        deadline = time.monotonic() + 30
        while httpx.get(url, timeout=10).json()["iteration"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        os.kill(first, signal.SIGKILL)  # the only worker, with the job in flight
        out.wait_for(r"worker-1 +killed by SIGKILL; restarting it in 0\.5 s")
        second = int(out.wait_for(r"worker-1 +restarted \(pid (\d+)\)").group(1))
        assert second != first and alive(second)
        deadline = time.monotonic() + 90
        while (status := httpx.get(url, timeout=10).json())["status"] != "succeeded":
            assert status["status"] in ("queued", "running"), status
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out.wait_for("continuum up: stopped", timeout=30)
        assert proc.wait(timeout=30) == 0
    finally:
        stop(proc)
    assert processes_in(tmp_path) == []


@pytest.mark.slow
def test_up_gives_up_on_a_worker_that_keeps_dying(tmp_path: Path) -> None:
    """Killed as soon as it is restarted, five times: the sixth death stops the stack,
    with one line naming the worker and its log, and exit code 1."""
    proc, out, pid = start_up(tmp_path, free_port())
    try:
        for _ in range(5):
            os.kill(pid, signal.SIGKILL)
            pid = int(out.wait_for(r"worker-1 +restarted \(pid (\d+)\)").group(1))
        os.kill(pid, signal.SIGKILL)
        given_up = out.wait_for(r"continuum up: worker-1 died again .*").group(0)
        assert proc.wait(timeout=30) == 1
    finally:
        stop(proc)
    log = tmp_path / "var" / "log" / "worker-1.log"
    assert given_up == (
        "continuum up: worker-1 died again after 5 restarts within 60 s (killed by SIGKILL); "
        f"giving up, see {log}"
    )
    assert log.read_text().count("--- killed by SIGKILL; restarted by the supervisor ---") == 5
    assert processes_in(tmp_path) == []
