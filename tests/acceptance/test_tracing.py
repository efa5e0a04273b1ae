"""OpenTelemetry traces (``workers.tracing``): with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, a
real worker and a real ``continuum api`` post their spans to an OTLP/HTTP receiver (a
small HTTP server here that decodes what it is sent), and a job's iterations, from its
``POST /v1/jobs`` to its last model call, are one trace. Without it, nothing of
OpenTelemetry's SDK is even imported."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from sim.app import create_app as create_sim
from sim.model import SimOptions
from tests.acceptance.procs import CONTINUUM, ROOT, Cluster
from tests.conftest import free_port

SECRETS = ("path-secret-41", "query-secret-42")


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    trace: str
    span: str
    parent: str
    attributes: dict[str, str]


class Receiver:
    """An OTLP/HTTP trace receiver: keeps every span POSTed to ``/v1/traces``; any other
    POST is a job's callback, counted."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.callbacks: list[str] = []
        lock, spans, callbacks = threading.Lock(), self.spans, self.callbacks

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with lock:
                    if self.path == "/v1/traces":
                        spans.extend(_spans(ExportTraceServiceRequest.FromString(body)))
                    else:
                        callbacks.append(self.path)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, what: str, check: Callable[[list[Span]], bool], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not check(list(self.spans)):
            if time.monotonic() > deadline:
                names = sorted({(s.service, s.name) for s in self.spans})
                raise AssertionError(f"no {what} in {timeout} s; spans: {names}")
            time.sleep(0.1)


def _spans(request: ExportTraceServiceRequest) -> Iterator[Span]:
    for resource in request.resource_spans:
        attributes = {a.key: a.value.string_value for a in resource.resource.attributes}
        for scope in resource.scope_spans:
            for s in scope.spans:
                yield Span(
                    attributes["service.name"],
                    s.name,
                    s.trace_id.hex(),
                    s.span_id.hex(),
                    s.parent_span_id.hex(),
                    {a.key: _text(a.value) for a in s.attributes},
                )


def _text(value: Any) -> str:
    """An OTLP attribute value (``AnyValue``: a string, a number, a list...) as text."""
    kind = value.WhichOneof("value")
    return str(getattr(value, kind)) if kind else ""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def start_api(c: Cluster, tmp_path: Path) -> httpx.Client:
    """``continuum api`` on the cluster's settings, once ``/healthz`` answers 200."""
    port = free_port()
    with (tmp_path / "api.log").open("wb") as log:
        api_proc = subprocess.Popen(
            [*CONTINUUM, "api", f"--port={port}"], env=c.env, stdout=log, stderr=log, cwd=ROOT
        )
    c.procs.append(api_proc)
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    deadline = time.monotonic() + 30
    while True:
        try:
            if api.get("/healthz").status_code == 200:
                return api
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, (tmp_path / "api.log").read_text()
        time.sleep(0.1)


@pytest.mark.slow
def test_a_job_is_one_trace_from_its_submit_to_its_last_call(
    cluster: Callable[..., Cluster],
    serve: Callable[[Any], str],
    receiver: Receiver,
    tmp_path: Path,
) -> None:
    sim = serve(create_sim(SimOptions(seed=3)))
    c = cluster(
        sim,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
        OTEL_BSP_SCHEDULE_DELAY="100",
        CONTINUUM_CALLBACK_ALLOW="127.0.0.1",
    )
    c.worker()
    api = start_api(c, tmp_path)

    spec = {
        "job_id": "traced",
        "prompt": "List the exhibits of the museum",
        "format": "json",
        "providers": ["sim"],
        "model": "sim:format=json,size=2500",
        "max_output_tokens": 200,
        "continuation": {"max_attempts": 40},
        "callback_url": f"{receiver.url}/hook/{SECRETS[0]}?token={SECRETS[1]}",
    }
    assert api.post("/v1/jobs", json=spec).status_code == 202
    iterations = c.wait_ended(["traced"], timeout=60)["traced"].iteration
    assert iterations >= 3

    def callback(spans: list[Span]) -> Span | None:
        """The httpx span of the callback's POST, inside the callback task's run."""
        tasks = {s.span for s in spans if s.name == "run/continuum.callback"}
        return next((s for s in spans if s.name == "POST" and s.parent in tasks), None)

    def runs(spans: list[Span]) -> list[Span]:
        return [s for s in spans if s.name == "run/continuum.iterate"]

    receiver.wait("iteration spans", lambda spans: len(runs(spans)) == iterations)
    receiver.wait("the submit's span", lambda spans: any(s.name == "POST /v1/jobs" for s in spans))
    receiver.wait("the callback's span", lambda spans: callback(spans) is not None)
    assert receiver.callbacks == [f"/hook/{SECRETS[0]}?token={SECRETS[1]}"]
    spans = list(receiver.spans)
    by_id = {s.span: s for s in spans}
    submit = next(s for s in spans if s.name == "POST /v1/jobs")
    assert submit.service == "continuum-api" and submit.parent == ""

    # Every iteration in the submit's trace: the first one sent by the request itself,
    # each next one by the run of the one before it (through its send's span).
    chain = runs(spans)
    assert {s.trace for s in chain} == {submit.trace}
    assert {s.service for s in chain} == {"continuum-worker"}
    roots = [s for s in chain if s.parent == submit.span]
    assert len(roots) == 1
    for run in chain:
        if run is roots[0]:
            continue
        send = by_id[run.parent]
        assert send.name == "apply_async/continuum.iterate"
        assert by_id[send.parent].name == "run/continuum.iterate"

    # The model calls are in it too: an httpx span per call, inside an iteration's run.
    calls = [s for s in spans if s.trace == submit.trace and s.name == "POST"]
    model_calls = [s for s in calls if by_id[s.parent].name == "run/continuum.iterate"]
    assert len(model_calls) >= iterations

    # And the callback, sent by the last iteration; its URL named by origin only, as in
    # the logs: its path and query hold the receiver's token.
    hook = callback(spans)
    assert hook is not None and hook.trace == submit.trace
    leaked = [s for s in spans if any(x in str(s) for x in SECRETS)]
    assert leaked == []
    assert hook.attributes["http.url"] == hook.attributes["url.full"] == receiver.url
    api.close()


def test_without_an_endpoint_nothing_is_traced_or_loaded() -> None:
    """The API and the worker's start with no ``OTEL_EXPORTER_OTLP_ENDPOINT``: no tracer
    provider, no tracing SDK, exporter or instrumentation loaded (redis-py loads the SDK's
    metrics module on its own when installed), no trace headers on the messages."""
    script = """
import sys
from opentelemetry import trace
from api.app import create_app
from api.settings import ApiSettings
from workers.app import _start_worker
from workers.tracing import init_tracing, trace_headers
create_app(ApiSettings(REDIS_URL="redis://127.0.0.1:9/0", api_insecure_local=True))
_start_worker()
assert init_tracing("x") is False and trace_headers() == {}
assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
ours = ("opentelemetry.sdk.trace", "opentelemetry.exporter", "opentelemetry.instrumentation")
print(sorted(m for m in sys.modules if m.startswith(ours)))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SENTRY_"))}
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
