"""The deployment files at the repository's root.

``compose.yaml`` and the ``Dockerfile`` are checked structurally (the build machines have
no Docker): the services, Redis's persistence, commands that ``continuum``'s own parser
accepts, a scalable worker, health-gated ``depends_on``, no secret in the file. The
``Procfile`` is run for real: every line through ``bash -c``, as foreman, honcho or Heroku
would, on the test's Redis; one job goes through the api and the worker, the compose
healthchecks run against those processes, then SIGTERM stops them all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from cli.main import build_parser
from tests.conftest import free_port

ROOT = Path(__file__).parents[2]
APP_SERVICES = ("worker", "beat", "api", "flower")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASS|AUTH|DSN|CREDENTIAL", re.IGNORECASE)
# ``${NAME}``, ``${NAME:-}`` / ``${NAME-}`` (empty default), ``${NAME:?message}``.
FROM_ENV = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?::?-)|(?::?\?[^}]*))?\}")
START_TIMEOUT = 60.0  # generous: four interpreters start at once on a busy machine
STOP_TIMEOUT = 15.0
API_TOKEN = "deploy-test-token"


# -- reading the files ----------------------------------------------------------------------


def compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def services() -> dict[str, dict[str, Any]]:
    found = compose()["services"]
    assert isinstance(found, dict)
    return found


def argv(command: str | list[Any]) -> list[str]:
    """A compose ``command`` (exec list or string) as the argv after the entrypoint."""
    return shlex.split(command) if isinstance(command, str) else [str(a) for a in command]


def parse(args: list[str], what: str) -> argparse.Namespace:
    """``continuum``'s own parser on ``args``: an unknown command or option fails."""
    try:
        return build_parser().parse_args(args)
    except SystemExit as exc:
        pytest.fail(f"{what}: `continuum {shlex.join(args)}` is refused by the parser ({exc})")


def environment(service: dict[str, Any]) -> dict[str, str | None]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # ["NAME=value", "NAME"]
        return {k: v if eq else None for k, eq, v in (e.partition("=") for e in env)}
    return {k: None if v is None else str(v) for k, v in env.items()}


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def healthcheck_argv(service: dict[str, Any]) -> list[str]:
    test = service["healthcheck"]["test"]
    if isinstance(test, str):
        return ["sh", "-c", test]
    kind, *rest = test
    assert kind in {"CMD", "CMD-SHELL"}, test
    return ["sh", "-c", rest[0]] if kind == "CMD-SHELL" else rest


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def procfile() -> dict[str, str]:
    entries = {}
    for line in (ROOT / "Procfile").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_-]+):\s*(.+)$", line)
        if match:
            assert match[1] not in entries, f"Procfile: {match[1]} twice"
            entries[match[1]] = match[2]
    return entries


# -- compose.yaml and the Dockerfile, structurally ------------------------------------------


def test_compose_runs_redis_and_four_continuum_services_from_one_image() -> None:
    svc = services()
    assert set(svc) == {"redis", *APP_SERVICES}
    images = {svc[name].get("image") for name in APP_SERVICES}
    assert len(images) == 1 and None not in images, images
    for name in APP_SERVICES:
        build = svc[name].get("build")
        context = build if isinstance(build, str) else (build or {}).get("context")
        assert context == ".", f"{name} is not built from the repository: {build!r}"
        dockerfile_name = build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else None
        assert (ROOT / (dockerfile_name or "Dockerfile")).is_file()


def test_redis_appends_to_a_volume_and_has_a_healthcheck() -> None:
    redis = services()["redis"]
    assert redis["image"].split(":")[0] in {"redis", "docker.io/library/redis", "library/redis"}
    args = argv(redis["command"])
    assert args[0] == "redis-server"
    assert args[args.index("--appendonly") + 1] == "yes", args
    mounts = [v if isinstance(v, str) else f"{v['source']}:{v['target']}" for v in redis["volumes"]]
    data = [m.split(":")[0] for m in mounts if m.split(":")[1] == "/data"]
    assert data, f"nothing mounted on /data: {mounts}"
    assert data[0] in (compose().get("volumes") or {}), "the Redis volume is not declared"
    assert "redis-cli ping" in " ".join(healthcheck_argv(redis))
    assert "ports" not in redis, "Redis has no auth here: keep it off the host's ports"


def test_every_service_command_is_a_real_continuum_subcommand() -> None:
    svc = services()
    for name in APP_SERVICES:
        service = svc[name]
        assert service.get("entrypoint") in {None, "continuum", ("continuum",)}, name
        args = parse(argv(service["command"]), f"compose service {name}")
        assert args.command == name, f"service {name} runs `continuum {args.command}`"
        assert args.run is not None


def test_the_worker_scales() -> None:
    worker = services()["worker"]
    for key in ("container_name", "ports", "hostname"):
        assert key not in worker, f"worker has {key}: `--scale worker=N` would collide"
    args = parse(argv(worker["command"]), "worker")
    assert args.hostname is None or "%h" in args.hostname, "every worker needs its own node name"
    assert args.queues is None, "the worker consumes the default queue (CONTINUUM_QUEUE)"


def test_depends_on_waits_for_healthchecks_that_exist() -> None:
    svc = services()
    for name, service in svc.items():
        for target, condition in depends_on(service).items():
            assert target in svc, f"{name} depends on unknown {target}"
            assert condition in {
                "service_started",
                "service_healthy",
                "service_completed_successfully",
            }, condition
            if condition == "service_healthy":
                check = svc[target].get("healthcheck") or {}
                assert check.get("test") and not check.get("disable"), (
                    f"{name} waits for {target}'s healthcheck, which {target} does not have"
                )
    for name in APP_SERVICES:
        assert depends_on(svc[name]).get("redis") == "service_healthy", name


def test_healthchecks_use_python_and_no_compose_interpolation() -> None:
    for name in ("worker", "api"):
        check = healthcheck_argv(services()[name])
        assert check[0] == "python", f"{name}: the slim image has python, not curl: {check}"
        # Compose interpolates ``$`` everywhere, healthchecks included.
        assert "$" not in " ".join(check).replace("$$", ""), check


def test_the_api_is_published_and_its_healthcheck_hits_healthz() -> None:
    api = services()["api"]
    args = parse(argv(api["command"]), "api")
    assert args.host == "0.0.0.0" and args.port == 8000
    published = [str(p) for p in api["ports"]]
    assert any(p.endswith(f":{args.port}") or p == str(args.port) for p in published), published
    assert "8000:8000" in published
    check = " ".join(healthcheck_argv(api))
    assert f"127.0.0.1:{args.port}/healthz" in check, check


@pytest.mark.security
def test_compose_requires_the_api_token_and_never_publishes_an_open_api() -> None:
    """The API is published on every interface, so compose refuses to start without
    ``CONTINUUM_API_TOKEN`` (``${NAME:?message}`` fails on unset and on empty), and nothing
    tells the API it is local-only."""
    api = services()["api"]
    value = environment(api)["CONTINUUM_API_TOKEN"]
    assert value is not None and re.fullmatch(r"\$\{CONTINUUM_API_TOKEN:\?[^}]+\}", value), value
    assert api.get("ports"), "the API is published: the token is what guards it"
    assert not parse(argv(api["command"]), "api").insecure_local
    for name, service in services().items():
        assert "CONTINUUM_API_INSECURE_LOCAL" not in environment(service), name


def test_flower_requires_basic_auth_from_the_environment() -> None:
    flower = services()["flower"]
    args = parse(argv(flower["command"]), "flower")
    assert args.address == "0.0.0.0"
    assert "--basic-auth" not in " ".join(argv(flower["command"])), "password on a command line"
    value = environment(flower)["FLOWER_BASIC_AUTH"]
    assert value is not None and re.fullmatch(r"\$\{FLOWER_BASIC_AUTH:\?[^}]+\}", value), value
    assert any(str(p).endswith(f":{args.port}") for p in flower["ports"])


def test_no_secret_is_written_in_compose() -> None:
    text = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    assert not re.search(r"\bsk-[A-Za-z0-9_-]{8,}", text), "an API key in compose.yaml"
    assert not re.search(r"://[^/\s:@]*:[^/\s@$]+@", text), "a password in a URL"
    for name, service in services().items():
        for var, value in environment(service).items():
            if not SECRET_NAME.search(var) or value is None:  # None: passed through as is
                continue
            match = FROM_ENV.fullmatch(value)
            assert match, f"{name}: {var}={value!r} is not read from the environment"
            assert match["name"] == var, f"{name}: {var} comes from {match['name']}"
    worker = environment(services()["worker"])
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SENTRY_DSN"):
        assert var in worker, f"{var} is not passed to the workers"
    assert "CONTINUUM_API_TOKEN" in environment(services()["api"])


def test_the_dockerfile_builds_the_continuum_entrypoint() -> None:
    steps = dockerfile()
    assert steps[0] == ("FROM", "python:3.12-slim")
    syncs = [args for op, args in steps if op == "RUN" and "uv sync" in args]
    assert syncs and all("--frozen" in s or "--locked" in s for s in syncs), syncs
    assert all("--no-dev" in s or "--no-default-groups" in s for s in syncs), syncs
    users = [args for op, args in steps if op == "USER"]
    assert users and users[-1].split(":")[0] not in {"root", "0"}, users
    entrypoint = [json.loads(args) for op, args in steps if op == "ENTRYPOINT"]
    assert entrypoint[-1] == ["continuum"]
    env = " ".join(args for op, args in steps if op == "ENV")
    venv = re.search(r"UV_PROJECT_ENVIRONMENT=(\S+)", env)
    assert venv and f"{venv[1]}/bin:" in env, "the venv's bin (continuum) is not on PATH"
    cmd = [json.loads(args) for op, args in steps if op == "CMD"]
    if cmd and cmd[-1] != ["--help"]:
        parse(cmd[-1], "Dockerfile CMD")
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    for entry in (".venv/", ".env", "var/", ".git/"):
        assert entry in ignored, f".dockerignore: {entry} would be sent into the image"


# -- the Procfile, for real -----------------------------------------------------------------


def procfile_env(redis_url: str, redis_prefix: str, **extra: str) -> dict[str, str]:
    """A clean environment with this venv's ``continuum`` first on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONTINUUM_", "OPENAI_", "ANTHROPIC_", "SENTRY_", "FLOWER_"))
        and k not in {"PORT", "REDIS_URL"}
    }
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "continuum").is_file(), f"no continuum script in {bin_dir}"
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        REDIS_URL=redis_url,
        CONTINUUM_KEY_PREFIX=redis_prefix,
        CONTINUUM_BROKER_PREFIX=redis_prefix,
        CONTINUUM_QUEUE=f"deploy-{uuid.uuid4().hex[:8]}",
        CONTINUUM_CONCURRENCY="2",
        CONTINUUM_API_HEALTH_CACHE_S="0",
        CONTINUUM_ENABLE_SIM="1",  # the job below runs on the simulated LLM
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def test_procfile_names_the_four_processes() -> None:
    lines = procfile()
    assert set(lines) == set(APP_SERVICES)
    assert "${PORT:-" in lines["api"] and "0.0.0.0" in lines["api"]
    assert "--basic-auth" not in lines["flower"], "password on a command line"


def test_the_operations_guide_shows_the_procfile_as_it_is() -> None:
    guide = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert (ROOT / "Procfile").read_text(encoding="utf-8").strip() in guide


def test_procfile_flower_refuses_to_start_without_basic_auth(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        ["bash", "-c", procfile()["flower"]],
        env=procfile_env(redis_url, redis_prefix, FLOWER_PORT=str(free_port())),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode != 0 and "FLOWER_BASIC_AUTH" in done.stderr, done


@pytest.mark.security
def test_procfile_api_refuses_to_start_without_a_token(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    """The Procfile's api binds 0.0.0.0: without ``CONTINUUM_API_TOKEN`` it says why and
    exits before binding anything."""
    done = subprocess.run(
        ["bash", "-c", procfile()["api"]],
        env=procfile_env(redis_url, redis_prefix, PORT=str(free_port())),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done
    assert "CONTINUUM_API_TOKEN" in done.stderr and done.stdout == "", done


class Proc:
    """One Procfile line running in ``bash -c``, in its own process group."""

    def __init__(self, name: str, command: str, env: dict[str, str], cwd: Path) -> None:
        self.name = name
        self.log = cwd / f"{name}.log"
        with self.log.open("wb") as fh:
            self.popen = subprocess.Popen(
                ["bash", "-c", command],
                env=env,
                cwd=cwd,
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.killed = False

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> None:
        code = self.popen.poll()
        assert code is None, f"{self.name} exited ({code}):\n{self.text()}"

    def group_alive(self) -> bool:
        try:
            os.killpg(self.popen.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def terminate(self) -> None:
        if self.group_alive():
            os.killpg(self.popen.pid, signal.SIGTERM)

    def finish(self, deadline: float) -> None:
        """Wait for SIGTERM to work until ``deadline``, then SIGKILL what is left."""
        try:
            self.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.killed = True
        while self.group_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.group_alive():
            self.killed = True
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=10)


def wait_until(what: str, check: Any, procs: dict[str, Proc]) -> Any:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        for proc in procs.values():
            proc.alive()
        try:
            found = check()
        except httpx.HTTPError:
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {p.name}\n{p.text()[-2000:]}" for p in procs.values())
            raise AssertionError(f"{what}: not within {START_TIMEOUT} s\n{logs}")
        time.sleep(0.1)


def run_healthcheck(service: str, env: dict[str, str], api_port: int) -> subprocess.Popen[str]:
    """compose.yaml's healthcheck of ``service``, run here with this venv's python."""
    check = healthcheck_argv(services()[service])
    assert check[0] == "python"
    program = [arg.replace("127.0.0.1:8000/", f"127.0.0.1:{api_port}/") for arg in check[1:]]
    return subprocess.Popen(
        [sys.executable, *program],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_a_job(api: httpx.Client, api_port: int, procs: dict[str, Proc]) -> str:
    """A job submitted without the token is refused; with it, it succeeds through the
    stack. Returns its id."""
    job = {
        "prompt": "List the exhibits",
        "format": "text",
        "providers": ["sim"],
        "model": "sim:format=text,size=2000",
        "max_output_tokens": 300,
    }
    refused = httpx.post(f"http://127.0.0.1:{api_port}/v1/jobs", json=job, timeout=10)
    assert refused.status_code == 401, refused.text
    r = api.post("/v1/jobs", json=job)
    assert r.status_code == 202, r.text
    job_id: str = r.json()["job_id"]

    def ended() -> dict[str, Any] | None:
        view: dict[str, Any] = api.get(f"/v1/jobs/{job_id}").json()
        return None if view["status"] in {"queued", "running"} else view

    view = wait_until("the job ended", ended, procs)
    assert view["status"] == "succeeded", view
    return job_id


@pytest.mark.slow
def test_procfile_runs_the_stack_and_a_job_goes_through_it(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    api_port, flower_port = free_port(), free_port()
    env = procfile_env(
        redis_url,
        redis_prefix,
        PORT=str(api_port),
        FLOWER_PORT=str(flower_port),
        FLOWER_BASIC_AUTH="user:pass",
        CONTINUUM_API_TOKEN=API_TOKEN,
    )
    procs: dict[str, Proc] = {}
    checks: dict[str, subprocess.Popen[str]] = {}
    started = time.monotonic()
    try:
        for name, command in procfile().items():
            procs[name] = Proc(name, command, env, tmp_path)

        wait_until("worker ready", lambda: " ready." in procs["worker"].text(), procs)
        marks = {"worker": time.monotonic() - started}
        checks["worker"] = run_healthcheck("worker", env, api_port)
        wait_until("beat", lambda: "continuum beat: watching" in procs["beat"].text(), procs)
        marks["beat"] = time.monotonic() - started
        auth = {"Authorization": f"Bearer {API_TOKEN}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{api_port}", timeout=10, headers=auth) as api:

            def healthy() -> dict[str, Any] | None:
                r = api.get("/healthz")
                body: dict[str, Any] = r.json()
                return body if r.status_code == 200 and body["workers"]["count"] else None

            health = wait_until("api /healthz with the worker seen", healthy, procs)
            marks["api"] = time.monotonic() - started
            checks["api"] = run_healthcheck("api", env, api_port)
            assert health["status"] == "ok", health
            flower = f"http://127.0.0.1:{flower_port}/"
            assert wait_until("flower", lambda: httpx.get(flower).status_code, procs) == 401
            assert httpx.get(flower, auth=("user", "pass")).status_code == 200
            marks["flower"] = time.monotonic() - started

            job_id = run_a_job(api, api_port, procs)
            marks["job"] = time.monotonic() - started
            result = api.get(f"/v1/jobs/{job_id}/result")
            assert result.status_code == 200 and len(result.json()["output"]) >= 1000
            for name, check in checks.items():
                out, _ = check.communicate(timeout=30)
                assert check.returncode == 0, f"compose healthcheck of {name} failed:\n{out}"
            marks["healthchecks"] = time.monotonic() - started
        assert "(basic auth)" in procs["flower"].text(), procs["flower"].text()
    finally:
        for check in checks.values():
            if check.poll() is None:
                check.kill()
                check.wait()
        stopping = time.monotonic()
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.finish(stopping + STOP_TIMEOUT)

    marks["stopped"] = time.monotonic() - started
    print("procfile stack, s since start:", {k: round(v, 1) for k, v in marks.items()})
    for proc in procs.values():
        assert not proc.group_alive()
        assert not proc.killed, f"{proc.name} ignored SIGTERM:\n{proc.text()[-3000:]}"
