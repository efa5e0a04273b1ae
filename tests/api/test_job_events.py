"""``GET /v1/jobs/{id}/events`` on a real uvicorn and Redis: a real HTTP client reads the
Server-Sent Events while the job's iterations run (here, in this process, as a worker
would; ``tests/acceptance/test_events_e2e.py`` kills a real worker meanwhile)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.api.api_support import Stepper

PROMPT = "List the exhibits of the museum"


def spec(job_id: str, size: int = 3000) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": PROMPT,
        "format": "text",
        "providers": ["sim"],
        "model": f"sim:format=text,size={size}",
        "max_output_tokens": 200,
        "continuation": {"max_attempts": 60},
    }


def read_events(client: httpx.Client, job_id: str, **headers: str) -> list[dict[str, Any]]:
    """Every frame of the stream until the server ends it: {id, event, data} (comments
    as {"comment": text})."""
    frames: list[dict[str, Any]] = []
    with client.stream("GET", f"/v1/jobs/{job_id}/events", headers=headers) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        frame: dict[str, Any] = {}
        for line in r.iter_lines():
            if not line:
                if frame:
                    frames.append(frame)
                frame = {}
            elif line.startswith(":"):
                frames.append({"comment": line[1:].strip()})
            else:
                key, _, value = line.partition(": ")
                frame[key] = json.loads(value) if key == "data" else value
    return frames


def run_to_end(stepper: Stepper, job_id: str) -> None:
    while stepper.step(job_id).get("status", "running") in ("running", "queued"):
        pass


def test_one_event_per_committed_iteration_then_the_end(
    api: httpx.Client, stepper: Stepper
) -> None:
    api.post("/v1/jobs", json=spec("ev"))
    got: list[list[dict[str, Any]]] = []
    reader = threading.Thread(target=lambda: got.append(read_events(api, "ev")))
    reader.start()
    run_to_end(stepper, "ev")
    reader.join(timeout=30)
    assert not reader.is_alive() and got
    events = [f for f in got[0] if "event" in f]
    view = api.get("/v1/jobs/ev").json()
    assert view["status"] == "succeeded"
    assert [e["data"]["iteration"] for e in events] == list(range(1, view["iteration"] + 1))
    assert [e["event"] for e in events] == ["iteration"] * (len(events) - 1) + ["end"]
    end = events[-1]["data"]
    assert end["status"] == "succeeded" and end["progress"] == view["progress"]
    chars = [e["data"]["progress"]["chars"] for e in events]
    assert chars == sorted(chars) and chars[-1] == view["progress"]["chars"] > 0
    ids = [e["id"] for e in events]
    assert len(set(ids)) == len(ids)


def test_a_client_resumes_after_its_last_event_id(api: httpx.Client, stepper: Stepper) -> None:
    api.post("/v1/jobs", json=spec("resume"))
    run_to_end(stepper, "resume")
    everything = [f for f in read_events(api, "resume") if "event" in f]
    assert len(everything) >= 3
    middle = everything[1]["id"]
    rest = [f for f in read_events(api, "resume", **{"Last-Event-ID": middle}) if "event" in f]
    assert rest == everything[2:]


def test_a_cancelled_job_ends_its_stream(api: httpx.Client, stepper: Stepper) -> None:
    api.post("/v1/jobs", json=spec("stop", size=20_000))
    stepper.step("stop")
    assert api.delete("/v1/jobs/stop").status_code == 200
    events = [f for f in read_events(api, "stop") if "event" in f]
    assert [e["event"] for e in events] == ["iteration", "end"]
    assert events[-1]["data"]["status"] == "cancelled"


def test_a_quiet_job_gets_keep_alive_comments(
    make_api: Callable[..., httpx.Client], stepper: Stepper
) -> None:
    api = make_api(api_stream_heartbeat_s=0.2)
    api.post("/v1/jobs", json=spec("quiet"))
    got: list[list[dict[str, Any]]] = []
    reader = threading.Thread(target=lambda: got.append(read_events(api, "quiet")))
    reader.start()
    threading.Event().wait(1.0)  # nothing runs: only keep-alives go out
    run_to_end(stepper, "quiet")
    reader.join(timeout=30)
    frames = got[0]
    assert sum(1 for f in frames if f.get("comment") == "keep-alive") >= 2
    assert frames[-1]["event"] == "end"


@pytest.mark.parametrize(
    ("job_id", "headers", "status"),
    [
        ("nope", {}, 404),
        ("bad", {"Last-Event-ID": "1; rm -rf"}, 422),
        ("bad", {"Last-Event-ID": "9" * 100}, 422),
    ],
)
def test_a_bad_request_is_refused_with_a_reason(
    api: httpx.Client, job_id: str, headers: dict[str, str], status: int
) -> None:
    api.post("/v1/jobs", json=spec("bad"))
    r = api.get(f"/v1/jobs/{job_id}/events", headers=headers)
    assert r.status_code == status, r.text
    assert r.json()["detail"]


def test_streams_past_the_limit_are_refused(
    make_api: Callable[..., httpx.Client], stepper: Stepper
) -> None:
    api = make_api(api_max_streams=1, api_stream_heartbeat_s=0.2)
    api.post("/v1/jobs", json=spec("one"))
    with api.stream("GET", "/v1/jobs/one/events") as first:
        assert first.status_code == 200
        next(first.iter_lines())  # the stream is open and counted
        second = api.get("/v1/jobs/one/events")
        assert second.status_code == 503 and "CONTINUUM_API_MAX_STREAMS" in second.text
    run_to_end(stepper, "one")
    assert [f for f in read_events(api, "one") if "event" in f][-1]["event"] == "end"
