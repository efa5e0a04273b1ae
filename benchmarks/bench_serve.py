"""Serving a large output: the API's memory growth while it streams one
(``docs/benchmarks.md``, "Serving a large output").

    uv run python -m benchmarks.bench_serve [--mb 200]

Starts a private embedded Redis (a temporary directory, no persistence) and a real API
process (``continuum api`` on a free loopback port), submits a JSON job through it and
writes its output directly through the store, ``--mb`` MB of JSON rich in multibyte text
in 1 MB commits (then ends it with a result whose closing suffix is kept apart). Then
GETs ``/output``, ``/output?raw=true`` and ``/result``, each streamed to nowhere, and
reports the API process's resident memory (``/proc/<pid>/status``: ``VmRSS`` before,
``VmHWM``, the peak, after each request; the peak is reset between requests through
``/proc/<pid>/clear_refs`` where the kernel allows, else it is the peak so far).
Target: growth under 20 MB for 200 MB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from redis import Redis

from workers.embedded import EmbeddedRedis
from workers.store import JobStatus, JobStore

ROOT = Path(__file__).parents[1]
PREFIX = "bench-serve:"
JOB = "big"
PATHS = (f"/v1/jobs/{JOB}/output", f"/v1/jobs/{JOB}/output?raw=true", f"/v1/jobs/{JOB}/result")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def start_api(redis_url: str, port: int) -> subprocess.Popen[bytes]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CONTINUUM_")},
        "REDIS_URL": redis_url,
        "CONTINUUM_KEY_PREFIX": PREFIX,
        "CONTINUUM_BROKER_PREFIX": PREFIX,
        "CONTINUUM_ENABLE_SIM": "1",
    }
    cmd = [sys.executable, "-m", "cli.main", "api", "--port", str(port), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code < 600:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the API did not start")


def write_output(store: JobStore, mb: int) -> tuple[int, int]:
    """Commit ``mb`` MB of a JSON array of strings (its closing ``]}`` kept as the result's
    suffix); the job ends succeeded. Returns (bytes, characters) of the output."""
    record = store.load(JOB)
    assert record is not None
    item = json.dumps("é漢🙂 " + "archive ledger entry " * 20, ensure_ascii=False) + ",\n"
    block = '{"items": [\n' + item * (1024 * 1024 // len(item.encode()))
    size = chars = 0
    for iteration in range(mb):
        text = block if iteration == 0 else block[len('{"items": [\n') :]
        if iteration == mb - 1:
            text += '"end"'
        done = iteration == mb - 1
        result = {"outcome": "succeeded", "reason": None, "prefix": chars + len(text)}
        store.commit(
            JOB,
            expected_iteration=iteration,
            state=record.state,
            append=text,
            replace=False,
            status=JobStatus.SUCCEEDED if done else JobStatus.RUNNING,
            deadline=None if done else time.time() + 3600,
            lease_token="bench",
            summary={},
            result={**result, "suffix": "\n]}"} if done else None,
            retention_s=0,
        )
        size += len(text.encode())
        chars += len(text)
    return size, chars


def fetch(client: httpx.Client, path: str) -> tuple[int, float, str]:
    """GET ``path``, streaming the body to nowhere: (bytes, seconds, its SHA-256)."""
    started = time.perf_counter()
    total = 0
    digest = hashlib.sha256()
    with client.stream("GET", path) as r:
        r.raise_for_status()
        for data in r.iter_bytes():
            total += len(data)
            digest.update(data)
    return total, time.perf_counter() - started, digest.hexdigest()


def expected(store: JobStore) -> str:
    """The SHA-256 of the result's text, read from the store a part at a time."""
    record = store.load(JOB)
    parts = None if record is None else store.iter_result(record)
    assert parts is not None
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="output size in MB (default 200)")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp,
        EmbeddedRedis(Path(tmp) / "redis", config={"appendonly": "no"}) as server,
    ):
        port = free_port()
        api = start_api(server.url, port)
        try:
            client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600)
            body = {
                "job_id": JOB,
                "prompt": "A large catalogue",
                "format": "json",
                "providers": ["sim"],
                "model": "sim:format=json",
            }
            r = client.post("/v1/jobs", json=body)
            assert r.status_code == 202, r.text
            store = JobStore(Redis.from_url(server.url), prefix=PREFIX)
            started = time.perf_counter()
            size, chars = write_output(store, args.mb)
            wrote = time.perf_counter() - started
            print(f"output: {size / 1e6:.1f} MB ({chars:,} characters), written in {wrote:.1f} s")
            fetch(client, "/v1/jobs/big/output?raw=true")  # warm up every code path once
            base = memory_kb(api.pid, "VmRSS")
            print(f"API RSS before: {base / 1024:.1f} MiB")
            worst = 0
            for path in PATHS:
                exact = reset_peak(api.pid)
                got, took, sha = fetch(client, path)
                if path.endswith("/output"):
                    assert sha == expected(store), "the streamed output differs"
                peak = memory_kb(api.pid, "VmHWM")
                growth = peak - base
                worst = max(worst, growth)
                kind = "peak" if exact else "peak since start"
                print(
                    f"GET {path}: {got / 1e6:.1f} MB in {took:.1f} s; {kind} RSS "
                    f"{peak / 1024:.1f} MiB, growth {growth / 1024:+.1f} MiB"
                )
            print(f"largest growth: {worst / 1024:.1f} MiB (target < 20 MB)")
            client.close()
        finally:
            api.terminate()
            api.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
