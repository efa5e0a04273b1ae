"""``continuum demo`` and ``continuum up`` as a newcomer runs them: a fresh folder, no
REDIS_URL, no key; real processes, stopped with the signals a terminal sends."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.acceptance.procs import ROOT

CONTINUUM = [sys.executable, "-m", "cli.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def processes_in(folder: Path) -> list[str]:
    """Processes working in ``folder`` or below (workers; Redis runs in var/redis)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(os.readlink(proc / "cwd")).is_relative_to(folder):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


def fresh_env() -> dict[str, str]:
    drop = ("REDIS_URL", "CONTINUUM_", "OPENAI_", "ANTHROPIC_", "SENTRY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.mark.slow
def test_demo_on_a_fresh_folder_ends_with_every_job_exact(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CONTINUUM, "demo", "--jobs-per-format", "1", "--size", "8000", "--latency", "0.1"],
        cwd=tmp_path,
        env=fresh_env(),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "every job is exact" in done.stdout
    assert "killed with SIGKILL" in done.stdout
    assert done.stdout.count(" yes ") == 4
    assert (tmp_path / "var" / "redis" / "appendonly.aof").exists() or any(
        (tmp_path / "var" / "redis").glob("appendonlydir/*")
    )
    assert processes_in(tmp_path) == []  # Redis and every worker stopped


@pytest.mark.slow
def test_up_runs_the_stack_and_ctrl_c_stops_it(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [*CONTINUUM, "up", "--workers", "1", "--port", str(port), "--no-flower"],
        cwd=tmp_path,
        env=fresh_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "ready; Ctrl-C stops everything" in line or proc.poll() is not None:
                break
        out = "".join(lines)
        assert "ready; Ctrl-C" in out, out
        for component in ("redis", "worker-1", "beat", "api"):
            assert f"  {component}" in out
        base = f"http://127.0.0.1:{port}"
        job = {
            "prompt": "List the exhibits",
            "format": "text",
            "providers": ["sim"],
            "model": "sim:format=text,size=3000",
            "max_output_tokens": 300,
        }
        created = httpx.post(f"{base}/v1/jobs", json=job, timeout=10)
        assert created.status_code == 202, created.text
        job_id = created.json()["job_id"]
        deadline = time.monotonic() + 60
        while httpx.get(f"{base}/v1/jobs/{job_id}", timeout=10).json()["status"] != "succeeded":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0 and "continuum up: stopped" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert processes_in(tmp_path) == []


URL_COMMANDS = [
    ["worker"],
    ["beat"],
    ["status", "some-job"],
    ["api"],
    ["flower"],
    ["submit", "--format", "text", "--prompt", "p"],
]


@pytest.mark.parametrize(
    ("setting", "url", "expected"),
    [
        ("REDIS_URL", "amqp://guest:secret@127.0.0.1:1//", "REDIS_URL must be a Redis URL"),
        ("REDIS_URL", "sentinel://:secret@127.0.0.1:1", "REDIS_URL must be a Redis URL"),
        ("REDIS_URL", "x:1", "REDIS_URL must be a Redis URL"),
        (
            "CONTINUUM_BROKER_URL",
            "sentinel://:secret@127.0.0.1:1",
            "CONTINUUM_BROKER_URL must be a broker URL",
        ),
        ("CONTINUUM_BROKER_URL", "amqp://guest:secret@127.0.0.1:x//", "not a number"),
    ],
)
@pytest.mark.parametrize("command", URL_COMMANDS, ids=lambda c: c[0])
def test_a_url_no_client_can_use_stops_with_one_line_and_exit_2(
    tmp_path: Path, setting: str, url: str, expected: str, command: list[str]
) -> None:
    """A supervisor restarts what fails: a REDIS_URL no Redis client can use (a broker's,
    a Sentinel's) or a CONTINUUM_BROKER_URL no broker client can use exits 2 (a
    configuration error) with one line naming the setting, not 0, a traceback or a hang;
    and the URL (which may hold a password) is never printed."""
    env = {**fresh_env(), setting: url}
    done = subprocess.run(
        [*CONTINUUM, *command],
        cwd=tmp_path,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], done.stderr
    assert lines[0].startswith(f"continuum {command[0]}: ")
    assert "secret" not in done.stderr + done.stdout
    assert "127.0.0.1:1" not in done.stderr + done.stdout
    assert not (tmp_path / "var").exists()  # no embedded Redis started for nothing
