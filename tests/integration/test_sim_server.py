"""The simulator as a real HTTP server (uvicorn in a thread, real httpx), and the engine
driven against it until every format's document comes back exactly."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from cli.main import main
from core import (
    ContinuationConfig,
    Continue,
    Fallback,
    Finish,
    JobSpec,
    OutputFormat,
    ProviderResponse,
    Retry,
    Usage,
    advance,
    start,
)
from sim.app import create_app, make_transport
from sim.options import SimOptions

Serve = Callable[[Any], str]
AUTH = {"Authorization": "Bearer sk-not-a-real-key"}


def chat(model: str, prompt: str, max_tokens: int = 200) -> dict[str, Any]:
    messages = [{"role": "user", "content": prompt}]
    return {"model": model, "messages": messages, "max_tokens": max_tokens}


def test_chat_completions_over_real_http(serve: Serve) -> None:
    base = serve(create_app(SimOptions(size=3000)))
    with httpx.Client(base_url=base, headers=AUTH) as client:
        reply = client.post("/v1/chat/completions", json=chat("sim", "Write CSV rows"))
        target = client.post("/sim/target", json={"prompt": "Write CSV rows"}).json()["target"]
        assert reply.status_code == 200
        body = reply.json()
        assert body["object"] == "chat.completion"
        assert body["choices"][0]["message"] == {
            "role": "assistant",
            "content": target[:800],
            "refusal": None,
        }
        assert body["choices"][0]["finish_reason"] == "length"
        assert body["usage"]["completion_tokens"] == 200
        assert client.get("/v1/models").json()["data"][0]["id"] == "sim"
        assert client.get("/healthz").json() == {"status": "ok"}


def test_errors_over_http_are_in_openai_shape(serve: Serve) -> None:
    base = serve(create_app())
    with httpx.Client(base_url=base) as client:
        limited = client.post(
            "/v1/chat/completions", json=chat("sim:rate_limit=1,retry_after=2", "x")
        )
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "2"
        assert limited.json()["error"]["code"] == "rate_limit_exceeded"
        failed = client.post("/v1/chat/completions", json=chat("sim:server_error=1", "x"))
        assert failed.status_code == 500
        bad = client.post("/v1/chat/completions", content=b"{not json")
        assert bad.status_code == 400
        assert bad.json()["error"]["type"] == "invalid_request_error"
        missing = client.get("/v1/nothing-here")
        assert missing.status_code == 404
        assert "message" in missing.json()["error"]
        assert client.get("/v1/chat/completions").status_code == 405


def test_latency_does_not_block_other_calls(serve: Serve) -> None:
    base = serve(create_app(SimOptions(size=2000, latency=0.4)))
    statuses: list[int] = []

    def call() -> None:
        with httpx.Client(base_url=base) as client:
            statuses.append(client.post("/v1/chat/completions", json=chat("sim", "x")).status_code)

    began = time.monotonic()
    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * 8
    # Served one after another, 8 calls take at least 3.2 s; concurrent ones about 0.4 s.
    assert time.monotonic() - began < 0.75 * 8 * 0.4


def run_job(client: httpx.Client, fmt: str, model: str, max_tokens: int = 300) -> tuple[str, str]:
    """Play the engine's runner: call, advance, append, until the job finishes.

    Returns the merged output and the target it should equal.
    """
    prompt = f"Write a long {fmt} document about lighthouses"
    spec = JobSpec(
        prompt=prompt,
        format=OutputFormat(fmt),
        model=model,
        max_output_tokens=max_tokens,
        continuation=ContinuationConfig(max_attempts=40),
    )
    state, output = start(spec), ""
    for _ in range(60):
        request = {
            "model": model,
            "messages": [m.model_dump() for m in state.messages],
            "max_tokens": max_tokens,
        }
        try:
            reply = client.post("/v1/chat/completions", json=request)
        except httpx.TimeoutException:
            continue
        if reply.status_code != 200:
            assert reply.status_code in (429, 500), reply.text
            continue
        body = reply.json()
        response = ProviderResponse(
            text=body["choices"][0]["message"]["content"],
            finish_reason=body["choices"][0]["finish_reason"],
            usage=Usage(
                input_tokens=body["usage"]["prompt_tokens"],
                output_tokens=body["usage"]["completion_tokens"],
            ),
            provider="sim",
            model=body["model"],
        )
        state, decision = advance(state, response)
        assert not isinstance(decision, Fallback), decision.reason
        if isinstance(decision, Retry):
            continue
        if isinstance(decision, Finish):
            output = decision.append if decision.replace else output + decision.append
            output = output[: decision.output.prefix] + decision.output.suffix
            break
        output += decision.append
        assert isinstance(decision, Continue)
    else:
        pytest.fail("the job did not finish")
    target = client.post("/sim/target", json={"prompt": prompt, "model": model}).json()["target"]
    return output, target


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "text"])
def test_the_engine_rebuilds_each_format_exactly_over_http(serve: Serve, fmt: str) -> None:
    base = serve(create_app(SimOptions(size=6000, seed=3)))
    with httpx.Client(base_url=base, headers=AUTH) as client:
        output, target = run_job(client, fmt, f"sim:format={fmt}")
    assert output == target


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "text"])
@pytest.mark.parametrize(
    "knobs",
    [
        "overlap=0",
        "overlap=37",
        "overlap=800",
        "marker=false",
        "fence=1",
        "rate_limit=0.3,server_error=0.3,timeout=0.3,retry_after=0",
        "empty=0.2",
    ],
)
def test_the_engine_rebuilds_each_format_under_chaos_in_process(fmt: str, knobs: str) -> None:
    transport = make_transport(SimOptions.parse(f"size=6000,seed=5,{knobs}"))
    with httpx.Client(transport=transport, base_url="http://sim") as client:
        output, target = run_job(client, fmt, f"sim:format={fmt}")
    assert output == target


def test_the_transport_raises_a_read_timeout_at_once() -> None:
    transport = make_transport(SimOptions(timeout=1.0, hang=60))
    with httpx.Client(transport=transport, base_url="http://sim") as client:
        began = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            client.post("/v1/chat/completions", json=chat("sim", "x"))
        assert time.monotonic() - began < 1


def test_continuum_sim_serves_on_loopback_and_prints_the_base_url() -> None:
    command = [sys.executable, "-m", "cli.main", "sim", "--port", "0", "--options", "size=500"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            assert line.startswith("OPENAI_BASE_URL=http://127.0.0.1:")
            base = line.split("=", 1)[1]
            assert base.endswith("/v1")
            body = httpx.post(
                f"{base}/chat/completions", json=chat("sim", "Write JSON"), timeout=10
            )
            assert body.json()["choices"][0]["message"]["content"].startswith("{")
        finally:
            process.terminate()
            process.wait(timeout=10)


def test_continuum_sim_refuses_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "--options", "sizes=3"]) == 2
    assert "unknown sim option 'sizes'" in capsys.readouterr().err
