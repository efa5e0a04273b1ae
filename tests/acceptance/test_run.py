"""`continuum run` end to end: the CLI against the simulated LLM over real HTTP.

Every format, and every chaos knob of the simulator, with the engine's expected reaction:
the exact target document, or the documented partial result and exit code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.main import main
from sim.app import create_app
from sim.model import SimOptions

PROMPT = "Write the inventory of the museum's storage rooms."


@pytest.fixture
def sim_url(serve: Callable[[Any], str]) -> str:
    return serve(create_app(SimOptions(seed=11)))


@pytest.fixture
def profiles(tmp_path: Path, sim_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A profile for the simulator with short timeouts and quick backoff (fast tests)."""
    path = tmp_path / "profiles.toml"
    path.write_text(
        f"""
[profiles.simtest]
kind = "openai"
base_url = "{sim_url}/v1"
timeout_s = 2.0
max_retries = 8
backoff_base_s = 0.01
backoff_cap_s = 0.05
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("CONTINUUM_PROFILES", str(path))
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "CONTINUUM_SIM_URL"):
        monkeypatch.delenv(var, raising=False)
    return path


def target(sim_url: str, model: str, prompt: str = PROMPT) -> str:
    answer = httpx.post(
        f"{sim_url}/sim/target", json={"prompt": prompt, "model": model}, timeout=10
    )
    answer.raise_for_status()
    text: str = answer.json()["target"]
    return text


def run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, model: str, fmt: str, *extra: str
) -> tuple[int, str, dict[str, Any]]:
    meta = tmp_path / "meta.json"
    code = main(
        [
            "run",
            "--provider",
            "simtest",
            "--model",
            model,
            "--format",
            fmt,
            "--max-tokens",
            "400",
            "--max-attempts",
            "200",
            "--prompt",
            PROMPT,
            "--metadata",
            str(meta),
            "--quiet",
            *extra,
        ]
    )
    out = capsys.readouterr().out
    return code, out, json.loads(meta.read_text(encoding="utf-8")) if meta.exists() else {}


def same_document(fmt: str, got: str, want: str) -> bool:
    if fmt == "json":
        return bool(json.loads(got) == json.loads(want))
    return got == want


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "text"])
def test_every_format_reconstructs_the_target_exactly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profiles: Path, sim_url: str, fmt: str
) -> None:
    """A clean simulator: several continuations, and the output is the target, byte for byte."""
    model = f"sim:format={fmt},size=12000"
    code, out, meta = run(capsys, tmp_path, model, fmt)
    assert code == 0, meta.get("reason")
    assert out == target(sim_url, model)
    assert meta["continuation_count"] >= 3 and meta["outcome"] == "succeeded"


RECOVERABLE = [
    "overlap=0",
    "overlap=40",
    "overlap=600",
    "fence=0.5",
    "prose=0.5",
    "reindent=0.6",
    "restart=0.15",
    "rate_limit=0.3,retry_after=0",
    "server_error=0.3",
    "timeout=0.2,hang=3",
    "empty=0.3",
    "latency=0.05",
]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "text"])
@pytest.mark.parametrize("knob", RECOVERABLE)
def test_recoverable_chaos_still_gives_the_target(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    profiles: Path,
    sim_url: str,
    fmt: str,
    knob: str,
) -> None:
    """Each knob that a correct engine survives: retries, merges, and the exact document."""
    if knob.startswith("reindent") and fmt != "json":
        pytest.skip("re-indenting applies to JSON")
    model = f"sim:format={fmt},size=8000,{knob}"
    code, out, meta = run(capsys, tmp_path, model, fmt)
    assert code == 0, (meta.get("reason"), meta.get("warnings"))
    assert same_document(fmt, out, target(sim_url, model))


def test_malformed_json_fragments_are_retried(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profiles: Path, sim_url: str
) -> None:
    """Garbage replies cannot be merged into JSON: they are retried, the result is exact."""
    model = "sim:format=json,size=8000,malformed=0.3"
    code, out, meta = run(capsys, tmp_path, model, "json")
    assert code == 0, meta.get("reason")
    assert meta["merge_failures"] >= 1  # the knob fired, and each failure was retried
    assert json.loads(out) == json.loads(target(sim_url, model))


@pytest.mark.parametrize("fmt", ["csv", "markdown", "text"])
def test_malformed_text_fragments_end_in_an_explained_state(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profiles: Path, sim_url: str, fmt: str
) -> None:
    """Plain text cannot tell garbage from an exact continuation (no repeat, no grammar):
    the job still ends, never loops, and a non-exact result is marked partial with why."""
    model = f"sim:format={fmt},size=8000,malformed=0.5"
    code, out, meta = run(capsys, tmp_path, model, fmt)
    if code == 0:
        assert out == target(sim_url, model)
    else:
        assert code == 3 and meta["reason"] and meta["fallback_used"]


def test_content_filter_stops_with_a_partial_result(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profiles: Path, sim_url: str
) -> None:
    """A filtered reply stops the job: exit 3, the valid part so far, the reason given."""
    model = "sim:format=json,size=8000,content_filter=1"
    code, out, meta = run(capsys, tmp_path, model, "json")
    assert code == 3
    assert meta["fallback_used"] and "content filter" in meta["reason"]
    json.loads(out)


def test_stall_stops_with_a_partial_result(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profiles: Path, sim_url: str
) -> None:
    """A model that stops making progress is stopped: exit 3, partial output, 'stalled'."""
    model = "sim:format=text,size=8000,stall=1"
    code, out, meta = run(capsys, tmp_path, model, "text")
    assert code == 3 and "stalled" in meta["reason"]
    assert out and target(sim_url, model).startswith(out)


@pytest.mark.parametrize(("on_invalid", "code"), [(None, 1), ("return_partial", 3)])
def test_a_result_that_fails_its_schema_is_no_success(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    profiles: Path,
    on_invalid: str | None,
    code: int,
) -> None:
    """--json-schema enforces the schema: a result missing a required key, still missing it
    after the repair, exits 1 (failed) or 3 (partial with on_invalid return_partial), with
    the schema's error as the reason; never 0."""
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "required": ["no_such_key"]}))
    extra = ["--json-schema", str(schema)]
    if on_invalid is not None:
        extra += ["--on-invalid", on_invalid]
    got, _, meta = run(capsys, tmp_path, "sim:format=json,size=3000", "json", *extra)
    assert got == code, meta
    assert "does not match the schema" in meta["reason"] and "no_such_key" in meta["reason"]
    assert meta["validation_errors"]


def test_a_request_the_provider_refuses_fails_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profiles: Path
) -> None:
    """A 400 (the simulator refuses a model asking for too much) will never succeed: one
    call, the job fails with the provider's message, no retry of the same request."""
    code, out, meta = run(capsys, tmp_path, "sim:size=500000000", "text")
    assert code == 1 and out == ""
    assert "refused the request" in meta["reason"] and "HTTP 400" in meta["reason"]
    assert meta["finish_reasons"] == ["error"] and meta["merge_failures"] == 0, meta


def test_permanent_errors_fail_the_job(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profiles: Path, sim_url: str
) -> None:
    """A server that always fails: no result, exit 1, the error in the reason."""
    model = "sim:format=text,size=8000,server_error=1"
    code, out, meta = run(capsys, tmp_path, model, "text")
    assert code == 1 and out == ""
    assert meta["outcome"] == "failed"


def test_openai_profile_works_against_any_compatible_server(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    sim_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--provider openai with OPENAI_BASE_URL: the built-in profile, no config file."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{sim_url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("CONTINUUM_PROFILES", raising=False)
    model = "sim:format=csv,size=6000"
    out_file = tmp_path / "out.csv"
    code = main(
        [
            "run",
            "--provider",
            "openai",
            "--model",
            model,
            "--format",
            "csv",
            "--max-tokens",
            "300",
            "--prompt",
            PROMPT,
            "-o",
            str(out_file),
            "--quiet",
            "--metadata",
            str(tmp_path / "m.json"),
            "--max-attempts",
            "100",
        ]
    )
    assert code == 0
    assert out_file.read_text(encoding="utf-8") == target(sim_url, model)


def test_fallback_to_the_next_profile_is_recorded(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    profiles: Path,
    sim_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first profile cannot be reached: the second serves, and the switch is recorded."""
    with profiles.open("a", encoding="utf-8") as f:
        f.write(
            '\n[profiles.down]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
            "max_retries = 1\nbackoff_base_s = 0.01\nbackoff_cap_s = 0.02\ntimeout_s = 1.0\n"
        )
    model = "sim:format=text,size=4000"
    meta_path = tmp_path / "meta.json"
    code = main(
        [
            "run",
            "--provider",
            "down",
            "--provider",
            "simtest",
            "--model",
            model,
            "--format",
            "text",
            "--max-tokens",
            "400",
            "--prompt",
            PROMPT,
            "--quiet",
            "--metadata",
            str(meta_path),
        ]
    )
    out = capsys.readouterr().out
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    assert code == 0 and out == target(sim_url, model)
    switch = meta["provider_fallbacks"][0]
    assert switch["from_profile"] == "down" and switch["to_profile"] == "simtest"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--format", "json", "--max-tokens", "100"],
        ["run", "--format", "json", "--max-tokens", "0", "--prompt", "x"],
        ["run", "--format", "json", "--max-tokens", "10", "--prompt", "x", "--max-attempts", "0"],
        ["run", "--format", "json", "--max-tokens", "10", "--prompt", "x", "--provider", "nope"],
        ["run", "--format", "xml", "--max-tokens", "10", "--prompt", "x"],
        ["run", "--format", "json", "--max-tokens", "10", "--prompt-file", "/nonexistent"],
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], profiles: Path, args: list[str]
) -> None:
    """Bad options are refused before any call, with a message naming the problem."""
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    assert code == 2
    assert capsys.readouterr().err


def test_cli_subprocess_as_a_user_runs_it(tmp_path: Path, sim_url: str) -> None:
    """The installed `continuum` command, in a subprocess, against the simulator's HTTP API."""
    env = {
        "PATH": str(Path(sys.executable).parent),
        "CONTINUUM_SIM_URL": f"{sim_url}/v1",
        "HOME": str(tmp_path),
    }
    model = "sim:format=json,size=6000,fence=0.3,prose=0.3"
    out = tmp_path / "result.json"
    done = subprocess.run(
        [
            "continuum",
            "run",
            "--provider",
            "sim",
            "--model",
            model,
            "--format",
            "json",
            "--max-tokens",
            "300",
            "--prompt",
            PROMPT,
            "-o",
            str(out),
            "--max-attempts",
            "100",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(target(sim_url, model))
    assert "[1]" in done.stderr and '"continuation_count"' in done.stderr
