"""``continuum submit`` as a user runs it: a subprocess with the cluster's environment, real
worker processes on a real Redis, the simulated model over HTTP."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from sim.app import create_app
from sim.model import SimOptions
from tests.acceptance.procs import CONTINUUM, ROOT, Cluster
from tests.acceptance.test_cluster import SEED, cli, reference, spec


@pytest.fixture
def sim_url(serve: Callable[[Any], str]) -> str:
    """The simulator of ``test_cluster`` (same seed: same documents), with some latency so
    the progress has something to show."""
    return serve(create_app(SimOptions(seed=SEED, latency=0.1)))


def options(raw: dict[str, Any]) -> list[str]:
    """``continuum submit``'s options for a spec of ``test_cluster.spec``."""
    args = [
        "--format",
        raw["format"],
        "--max-tokens",
        str(raw["max_output_tokens"]),
        "--model",
        raw["model"],
        "--prompt",
        raw["prompt"],
        "--max-attempts",
        str(raw["continuation"]["max_attempts"]),
    ]
    for provider in raw["providers"]:
        args += ["--provider", provider]
    return args


def test_submit_and_wait_gives_the_fault_free_result_once(
    cluster: Callable[..., Cluster], sim_url: str, tmp_path: Path
) -> None:
    """``--wait -o`` follows the job to its end with plain progress lines on stderr (no
    terminal here) and writes the exact fault-free result; the same ``--job-id`` again
    creates nothing; with another spec it is refused."""
    c = cluster(sim_url)
    c.worker()
    raw = spec("submit-json", "json")
    out = tmp_path / "result.json"
    waited = cli(c, "submit", *options(raw), "--job-id", "submit-json", "--wait", "-o", str(out))
    assert waited.returncode == 0, waited.stderr + c.logs()
    assert waited.stdout == ""
    assert out.read_text(encoding="utf-8") == reference([raw])["submit-json"]
    lines = [ln for ln in waited.stderr.splitlines() if ln.startswith("submit-json: ")]
    assert len(lines) >= 3, waited.stderr  # queued or running, progress, the end
    assert lines[-1].startswith("submit-json: succeeded, iteration "), waited.stderr
    assert any(" chars" in ln and not ln.endswith(" 0 chars") for ln in lines[:-1])
    assert len(lines) == len(set(lines))  # one line per change, never repeated
    assert "\x1b[" not in waited.stderr  # no terminal: no escape codes
    record = c.store().load("submit-json")
    assert record is not None
    assert c.store().commits("submit-json") == dict.fromkeys(range(record.iteration), 1)

    again = cli(c, "submit", *options(raw), "--job-id", "submit-json")
    assert again.returncode == 0 and again.stdout == "submit-json\n", again.stderr
    assert "job submit-json exists already (succeeded)" in again.stderr
    after = c.store().load("submit-json")
    assert after == record  # not created again, not run again

    other = dict(raw, model=raw["model"].replace("size=5000", "size=4000"))
    clash = cli(c, "submit", *options(other), "--job-id", "submit-json")
    assert clash.returncode == 1 and "exists with a different spec" in clash.stderr


def test_submit_prints_an_id_that_status_shows(cluster: Callable[..., Cluster]) -> None:
    """No worker here: the job waits in the queue, and ``status`` shows it."""
    c = cluster()
    done = cli(c, "submit", *options(spec("x", "csv")), "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    job_id = done.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{32}", job_id) and done.stdout == f"{job_id}\n"
    shown = cli(c, "status", job_id)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"job {job_id}: queued (iteration 0)"), shown.stdout


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--max-tokens", "0"], "max_output_tokens"),
        (["--job-id", "no spaces"], "job_id"),
        (["--callback-url", "ftp://example.com/x"], "callback_url"),
        (["--max-attempts", "0"], "max_attempts"),
        (["-o", "out.txt"], "--output"),
    ],
)
def test_invalid_input_exits_2_naming_the_field(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    extra: list[str],
    field: str,
) -> None:
    """Refused before any Redis is looked for (this REDIS_URL goes nowhere)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    args = ["--format", "json", "--max-tokens", "10", "--prompt", "x", *extra]
    assert main(["submit", *args]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("continuum submit: ") and field in err, err
    assert out == ""
    assert not (tmp_path / "var").exists()  # no embedded Redis either


def test_a_failed_job_exits_1_with_its_reason(
    cluster: Callable[..., Cluster], sim_url: str, tmp_path: Path
) -> None:
    profiles = tmp_path / "profiles.toml"
    profiles.write_text("[profiles.sim]\nmax_retries = 0\n")  # fail at once, no backoff
    c = cluster(sim_url, CONTINUUM_PROFILES=str(profiles), CONTINUUM_MAX_COUNTDOWN_S="0.2")
    c.worker()
    args = ["--provider", "sim", "--format", "text", "--max-tokens", "250", "--prompt", "x"]
    model = "sim:format=text,size=3000,server_error=1"
    done = cli(c, "submit", *args, "--model", model, "--job-id", "doomed", "--wait")
    assert done.returncode == 1, done.stderr + c.logs()
    assert done.stdout == ""
    assert "continuum submit: job doomed failed: " in done.stderr
    assert "HTTP 500" in done.stderr.rsplit("job doomed failed: ", 1)[1]


def test_ctrl_c_stops_waiting_and_the_job_goes_on(cluster: Callable[..., Cluster]) -> None:
    """Ctrl-C while following: exit 130 with how to follow the job, which is not
    cancelled (no worker here: it stays queued)."""
    c = cluster()
    proc = subprocess.Popen(
        [*CONTINUUM, "submit", *options(spec("ctrl-c", "text")), "--job-id", "ctrl-c", "--wait"],
        env=c.env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen: list[str] = []
        while not (line := proc.stderr.readline()).startswith("ctrl-c: queued"):
            assert line, f"submit ended before following the job: {seen}"
            seen.append(line)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert out == ""
    assert "Traceback" not in err and "`continuum status ctrl-c`" in err, err
    shown = cli(c, "status", "ctrl-c")
    assert shown.stdout.startswith("job ctrl-c: queued"), shown.stdout
