"""Sentry on a real worker: a local endpoint receives the SDK's envelopes.

A job whose model always fails ends failed, so its ``continuum.iterate`` task raises
``JobFailed``; a poison ``continuum.generate`` message raises ``InvalidMessage``. Both
reach Sentry, tagged with the job, and no envelope (errors, transactions) carries the
prompt or the API key planted in the worker's environment.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response

from sim.app import create_app
from sim.model import SimOptions
from tests.acceptance.procs import Cluster

SECRET = "SECRET-PROMPT-7f3a"
PROMPT = f"{SECRET} Write the confidential minutes of the board meeting"
# Not shaped like a provider key: only the environment's value can hide it. The poison
# message uses it as its job id, so it lands in an exception message, a tag and Redis
# keys in spans, and must be redacted from each.
PLANTED = "planted-key-9c2e51d0ab77f4"
JOB = "sentry-failing"
WAIT_S = 20.0


class Sink:
    """A stand-in for Sentry: keeps every envelope posted to it (decompressed)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.items: list[tuple[dict[str, Any], bytes]] = []
        self.lock = threading.Lock()
        self.app = FastAPI()
        self.app.add_api_route("/api/{project}/envelope/", self.receive, methods=["POST"])
        self.app.add_api_route("/api/{project}/store/", self.receive, methods=["POST"])

    async def receive(self, project: str, request: Request) -> Response:
        body = decode_body(await request.body(), request.headers.get("content-encoding", ""))
        items = (
            parse_envelope(body)
            if request.url.path.endswith("/envelope/")
            else [({"type": "event"}, body)]
        )
        with self.lock:
            self.bodies.append(body)
            self.items.extend(items)
        return Response(status_code=200, content=b"{}", media_type="application/json")

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [json.loads(p) for h, p in self.items if h.get("type") == kind]

    def raw(self) -> bytes:
        with self.lock:
            return b"\n".join(self.bodies)

    def wait_for(self, kind: str, **count: int) -> list[dict[str, Any]]:
        """The items of ``kind`` once ``count[task]`` came from each task (``_`` for ``.``)."""
        want: Counter[str | None] = Counter(
            {task.replace("_", "."): n for task, n in count.items()}
        )
        deadline = time.monotonic() + WAIT_S
        while True:
            found = self.of_type(kind)
            if not want - Counter(task_of(item) for item in found):
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"not {want} {kind}s in {WAIT_S} s: {found}")
            time.sleep(0.1)


def decode_body(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    if encoding == "br":
        import brotli  # type: ignore[import-not-found]  # noqa: PLC0415  (only if the SDK has it)

        return bytes(brotli.decompress(body))
    assert encoding in {"", "identity"}, encoding
    return body


def parse_envelope(body: bytes) -> list[tuple[dict[str, Any], bytes]]:
    """The items of an envelope: a header line, then per item a header line and a payload
    (``length`` bytes, else up to the next newline)."""
    _, _, rest = body.partition(b"\n")
    items = []
    while rest.strip():
        line, _, rest = rest.partition(b"\n")
        header = json.loads(line)
        if "length" in header:
            payload, rest = rest[: header["length"]], rest[header["length"] :]
            rest = rest.removeprefix(b"\n")
        else:
            payload, _, rest = rest.partition(b"\n")
        items.append((header, payload))
    return items


def task_of(item: dict[str, Any]) -> str | None:
    """The task an error event (its ``celery-job`` extra) or a transaction comes from."""
    if item.get("type") == "transaction":
        return str(item.get("transaction"))
    celery_job = item.get("extra", {}).get("celery-job")
    return celery_job.get("task_name") if isinstance(celery_job, dict) else None


def message_of(event: dict[str, Any]) -> str:
    return str(event["exception"]["values"][-1]["value"])


@pytest.fixture
def sink(serve: Callable[[Any], str]) -> tuple[Sink, str]:
    s = Sink()
    url = serve(s.app)
    return s, url.replace("http://", "http://publickey@") + "/1"


@pytest.mark.parametrize("pool", ["threads", "prefork"])
def test_failed_jobs_and_poison_messages_reach_sentry_scrubbed(
    pool: str,
    cluster: Callable[..., Cluster],
    serve: Callable[[Any], str],
    sink: tuple[Sink, str],
    tmp_path: Path,
) -> None:
    received, dsn = sink
    sim_url = serve(create_app(SimOptions(seed=3)))
    profiles = tmp_path / "profiles.toml"
    profiles.write_text("[profiles.sim]\nmax_retries = 0\n")  # fail at once, no backoff
    c = cluster(
        sim_url,
        SENTRY_DSN=dsn,
        OPENAI_API_KEY=PLANTED,
        CONTINUUM_PROFILES=str(profiles),
        CONTINUUM_SENTRY_TRACES_SAMPLE_RATE="1.0",  # transactions must be scrubbed too
    )
    if pool == "threads":
        c.worker()
    else:
        # Sentry starts in the parent (celeryd_init); the children inherit it by fork.
        args = ["worker", "--pool=prefork", "--concurrency=2", "--loglevel=INFO"]
        c.wait_for_log(c._spawn("worker", args), " ready.")
    producer = c.producer()
    failing = {
        "job_id": JOB,
        "prompt": PROMPT,
        "format": "text",
        "providers": ["sim"],
        "model": "sim:format=text,size=3000,server_error=1",
        "max_output_tokens": 250,
        "continuation": {"max_merge_failures": 1},
    }
    poison = {"job_id": PLANTED, "prompt": PROMPT, "format": "yaml", "providers": ["sim"]}
    producer.send_task("continuum.generate", kwargs={"spec": failing}, queue="q")
    producer.send_task("continuum.generate", kwargs={"spec": poison}, queue="q")
    records = c.wait_ended([JOB, PLANTED], timeout=30)
    assert records[JOB].status.value == "failed", c.logs()
    assert records[PLANTED].status.value == "failed", c.logs()

    events = received.wait_for("event", continuum_iterate=1, continuum_generate=1)
    # Every task is traced: the scrubbing of transactions is checked with the rest.
    received.wait_for("transaction", continuum_iterate=1, continuum_generate=2)
    failed = next(e for e in events if task_of(e) == "continuum.iterate")
    assert failed["tags"]["job_id"] == JOB
    assert str(failed["tags"]["iteration"]) == "0"
    assert failed["tags"]["provider"] == "sim"
    assert failed["exception"]["values"][-1]["type"] == "JobFailed"
    reason = (records[JOB].result or {}).get("reason")
    assert reason and "HTTP 500" in reason, reason
    assert message_of(failed) == f"job {JOB} failed at iteration 0: {reason}"

    bad = next(e for e in events if task_of(e) == "continuum.generate")
    assert bad["exception"]["values"][-1]["type"] == "InvalidMessage"
    assert message_of(bad).startswith("invalid job ***: spec.format")  # the key, redacted
    assert bad["tags"]["job_id"] == "***"

    for event in (failed, bad):
        celery_job = event["extra"]["celery-job"]
        shown = json.dumps(celery_job)
        assert SECRET not in shown and '"prompt"' not in shown, celery_job
        assert celery_job["kwargs"] == "[Filtered]", celery_job  # PII is off
    raw = received.raw()
    assert SECRET.encode() not in raw
    assert PLANTED.encode() not in raw
