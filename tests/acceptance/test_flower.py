"""``continuum flower`` on a real cluster: Flower lists the worker, every iteration as a
``continuum.iterate`` task whose arguments are the job id and the iteration only (in
JSON), whose result carries the job's progress (in JSON), and a failed job's last
iteration as a failed task with the reason. Its task list and task page name each
iteration ``continuum.iterate[<job id>#<iteration>]``, while the task keeps its name
everywhere else (routing, Flower's API, task types and Prometheus labels)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.acceptance.procs import CONTINUUM, ROOT, Cluster
from tests.conftest import free_port

USER, PASSWORD = "ops", "s3cret-flower"
PROGRESS = ("iteration", "iterations_done", "percent", "chars", "records", "fallbacks")


def profiles(tmp_path: Path) -> Path:
    """The in-process simulator with quick retries, and a profile whose server is down
    (so a job naming it first falls back to ``sim``)."""
    path = tmp_path / "profiles.toml"
    path.write_text(
        f"""
[profiles.sim]
max_retries = 1
backoff_base_s = 0.01
backoff_cap_s = 0.05

[profiles.down]
kind = "openai"
base_url = "http://127.0.0.1:{free_port()}/v1"
timeout_s = 2.0
max_retries = 0
""",
        encoding="utf-8",
    )
    return path


def spec(job_id: str, model: str, providers: list[str], **continuation: Any) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": f"Write the secret catalogue of the archive ({job_id})",
        "format": "text",
        "providers": providers,
        "model": model,
        "max_output_tokens": 250,
        "continuation": {"max_attempts": 40, **continuation},
    }


class Flower:
    """A ``continuum flower`` subprocess and an HTTP client with its basic auth."""

    def __init__(self, c: Cluster, log: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("wb") as fh:
            self.proc = subprocess.Popen(
                [*CONTINUUM, "flower", f"--port={self.port}"],
                env={**c.env, "FLOWER_BASIC_AUTH": f"{USER}:{PASSWORD}"},
                stdout=fh,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
        c.procs.append(self.proc)  # killed at teardown if still running
        self.http = httpx.Client(base_url=self.base, auth=(USER, PASSWORD), timeout=10)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def get(self, path: str, **params: Any) -> Any:
        answer = self.http.get(path, params=params)
        answer.raise_for_status()
        return answer.json() if path.startswith("/api/") else answer.text

    def wait(self, what: str, check: Callable[[], Any], timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"flower exited ({self.proc.returncode}):\n{self.text()}")
            try:
                found = check()
            except httpx.HTTPError:
                found = None
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"flower: no {what} in {timeout} s:\n{self.text()}")
            time.sleep(0.1)


def iterations(tasks: dict[str, Any], job_id: str) -> list[dict[str, Any]]:
    """The job's ``continuum.iterate`` tasks in Flower's API, by iteration."""
    mine = [
        {"uuid": uuid_, **t}
        for uuid_, t in tasks.items()
        if t.get("name") == "continuum.iterate" and json.loads(t["kwargs"])["job_id"] == job_id
    ]
    return sorted(mine, key=lambda t: json.loads(t["kwargs"])["iteration"])


def listed(flower: Flower, search: str) -> list[dict[str, Any]]:
    """The rows of Flower's task list (the page's table) that ``search`` finds."""
    params: dict[str, str | int] = {
        "draw": 1,
        "start": 0,
        "length": 1000,
        "search[value]": search,
        "order[0][column]": 0,
        "order[0][dir]": "asc",
        "columns[0][data]": "received",
    }
    answer = flower.http.get("/tasks/datatable", params=params)
    answer.raise_for_status()
    return list(answer.json()["data"])


def assert_iterations_carry_progress(done: list[dict[str, Any]], ok: str, worker: str) -> None:
    """The succeeded job's iterate tasks as Flower shows them: their arguments, and a
    result that carries the progress."""
    # The arguments: the job id and the iteration, in JSON, nothing of the prompt.
    for n, task in enumerate(done):
        assert task["args"] == "[]"
        assert json.loads(task["kwargs"]) == {"job_id": ok, "iteration": n}
        assert "secret catalogue" not in str(task)
        assert task["worker"] == worker

    # Every succeeded iteration's result carries the progress, in JSON; the fallback too.
    assert all(t["state"] == "SUCCESS" for t in done)
    results = [json.loads(t["result"]) for t in done]
    for n, result in enumerate(results):
        assert set(PROGRESS) <= set(result), result
        # ``iteration`` is the task's (0-based); ``iterations_done`` counts the job's.
        assert result["job_id"] == ok and result["iteration"] == n
        assert result["iterations_done"] == n + 1
    assert results[-1]["status"] == "succeeded" and results[-1]["chars"] > 3000
    assert results[-1]["chars"] == max(r["chars"] for r in results)
    switch = results[0]["fallbacks"][0]
    assert (switch["from_profile"], switch["to_profile"]) == ("down", "sim")


def assert_metrics_count_iterations(flower: Flower, ok_iterations: int) -> None:
    """Flower's /metrics (open, as docs/operations.md says) has the iterations' runtimes
    (``ok_iterations``: those of the job that succeeded)."""
    metrics = httpx.get(f"{flower.base}/metrics", timeout=10).text
    labels = set(re.findall(r'task="([^"]*)"', metrics))
    assert labels == {"continuum.generate", "continuum.iterate"}, labels
    runtimes = [
        sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "flower_task_runtime_seconds_count"
        and sample.labels["task"] == "continuum.iterate"
    ]
    assert runtimes == [ok_iterations + 1]  # every iteration that succeeded, the job's and bad's


def test_flower_shows_iterations_with_progress_and_failures(
    cluster: Callable[..., Cluster], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    c = cluster(CONTINUUM_PROFILES=str(profiles(tmp_path)), CONTINUUM_MAX_COUNTDOWN_S="0.2")
    flower = Flower(c, tmp_path / "flower.log")
    request.addfinalizer(flower.http.close)  # an open client is a ResourceWarning: an error
    worker = c.worker()

    # Up, on loopback, behind basic auth; it learns of the worker before any job is sent.
    assert flower.wait("banner", lambda: f"http://127.0.0.1:{flower.port}/" in flower.text())
    flower.wait("answer", lambda: flower.http.get("/healthcheck").status_code == 200)
    assert httpx.get(f"{flower.base}/api/workers", timeout=10).status_code == 401
    workers = flower.wait(
        "worker", lambda: [w for w in flower.get("/api/workers", refresh=1) if "continuum-" in w]
    )
    assert len(workers) == 1 and workers[0].startswith(f"continuum-{worker.pid}@")

    run = uuid.uuid4().hex[:8]
    ok, bad = f"flower-ok-{run}", f"flower-bad-{run}"
    producer = c.producer()
    for raw in (
        spec(ok, "sim:format=text,size=4000", ["down", "sim"]),
        spec(bad, "sim:format=text,size=3000,server_error=1", ["sim"], max_merge_failures=2),
    ):
        producer.send_task("continuum.generate", kwargs={"spec": raw}, queue="q")
    ended = c.wait_ended([ok, bad], timeout=20)
    assert ended[ok].status.value == "succeeded" and ended[bad].status.value == "failed"

    def settled() -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        tasks = flower.get("/api/tasks", taskname="continuum.iterate")
        done, failed = iterations(tasks, ok), iterations(tasks, bad)
        finished = len(done) == ended[ok].iteration and len(failed) == ended[bad].iteration
        if finished and all(t["state"] in {"SUCCESS", "FAILURE"} for t in done + failed):
            return done, failed
        return None

    done, failed = flower.wait("settled iterate tasks", settled)

    assert_iterations_carry_progress(done, ok, workers[0])

    # The failed job: its first iteration asked for a retry, its last one failed with
    # the reason (the task's exception), as ``continuum status`` would say it.
    assert [t["state"] for t in failed] == ["SUCCESS", "FAILURE"]
    assert "the provider reported an error" in json.loads(failed[0]["result"])["reason"]
    exception = failed[-1]["exception"]
    assert exception.startswith("JobFailed(")
    assert f"job {bad} failed at iteration 1: 2 consecutive failures" in exception
    assert "the provider reported an error" in exception
    info = flower.get(f"/api/task/info/{failed[-1]['uuid']}")
    assert info["state"] == "FAILURE" and info["exception"] == exception
    assert "JobFailed" in info["traceback"]

    # The task list names each iteration by its job and number; a search for the job's
    # id finds its iterations and its generate task, and nothing of the other job.
    rows = listed(flower, ok)
    shown = {r["uuid"]: r["name"] for r in rows if r["name"] != "continuum.generate"}
    assert shown == {t["uuid"]: f"continuum.iterate[{ok}#{n}]" for n, t in enumerate(done)}
    assert len(rows) == len(done) + 1
    everything = {r["name"] for r in listed(flower, "")}
    assert f"continuum.iterate[{bad}#1]" in everything
    assert "continuum.generate" in everything  # other tasks keep their names

    # The task page shows the same name and result.
    page = flower.get(f"/task/{done[-1]['uuid']}")
    for field in (*PROGRESS, ok, "succeeded", f"continuum.iterate[{ok}#{len(done) - 1}]"):
        assert field in page, field

    # The name is for display only: the worker routed and ran every message by the task's
    # name, and Flower's task types and Prometheus labels do not grow with iterations.
    assert flower.get("/api/task/types")["task-types"] == [
        "continuum.generate",
        "continuum.iterate",
    ]
    assert_metrics_count_iterations(flower, len(done))

    # SIGTERM stops it cleanly.
    flower.proc.send_signal(signal.SIGTERM)
    assert flower.proc.wait(timeout=10) == 0, flower.text()
