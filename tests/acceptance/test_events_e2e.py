"""A real HTTP client follows a job's Server-Sent Events while the real worker running it
is SIGKILLed and replaced: the stream goes on, one event per committed iteration (each
once, in order, none missing), and ends with the outcome."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from sim.app import create_app as create_sim
from sim.model import SimOptions
from tests.acceptance.procs import Cluster

TOKEN = "events-token"
pytestmark = pytest.mark.slow


@pytest.fixture
def sim_url(serve: Callable[[Any], str]) -> str:
    return serve(create_sim(SimOptions(seed=23, latency=0.1)))


@pytest.fixture
def api(cluster_api: Callable[..., httpx.Client]) -> httpx.Client:
    return cluster_api(TOKEN, api_stream_heartbeat_s=0.5)


def test_the_event_stream_survives_a_killed_worker(
    cluster: Callable[..., Cluster], sim_url: str, api: httpx.Client
) -> None:
    c = cluster(sim_url)
    worker = c.worker(concurrency=2)
    c.beat()  # the watchdog resends the killed worker's iteration
    body = {
        "job_id": "followed",
        "prompt": "Write the inventory of the museum",
        "format": "text",
        "providers": ["sim"],
        "model": "sim:format=text,size=12000",
        "max_output_tokens": 200,
        "continuation": {"max_attempts": 200},
    }
    assert api.post("/v1/jobs", json=body).status_code == 202

    events: list[dict[str, Any]] = []

    def read() -> None:
        with api.stream("GET", "/v1/jobs/followed/events") as r:
            kind = ""
            for line in r.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    events.append({"event": kind, **json.loads(line[6:])})

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 60
    while len(events) < 3:
        assert time.monotonic() < deadline, c.logs()
        time.sleep(0.05)
    c.kill(worker)  # mid-job, while the stream is open
    c.worker(concurrency=2)
    reader.join(timeout=120)
    assert not reader.is_alive(), c.logs()

    view = api.get("/v1/jobs/followed").json()
    assert view["status"] == "succeeded", (view, c.logs())
    iterations = [e["iteration"] for e in events]
    assert iterations == list(range(1, view["iteration"] + 1))  # each once, in order
    assert events[-1]["event"] == "end" and events[-1]["status"] == "succeeded"
    assert all(e["event"] == "iteration" for e in events[:-1])
