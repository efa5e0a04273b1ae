"""Callbacks at least once, through real ``continuum worker`` and ``continuum beat``
processes on a private Redis, to a receiver on loopback.

A worker that ends a job and is killed (SIGKILL) before it posts the callback loses
nothing: the job's end put the callback in the outbox, and the watchdog has another
worker deliver it, signed with ``CONTINUUM_CALLBACK_SECRET``, under one idempotency key
on every attempt. A callback no attempt can deliver says so in the job's status.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response

from tests.acceptance.procs import CONTINUUM, Cluster
from tests.conftest import decoded
from workers.callbacks import MAX_ATTEMPTS
from workers.keys import SHARDS, shard_of

pytestmark = pytest.mark.slow

SECRET = "whsec-outbox-test"


def spec(job_id: str, callback_url: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": f"Write the catalogue ({job_id})",
        "format": "text",
        "providers": ["sim"],
        "model": "sim:format=text,size=600",
        "callback_url": callback_url,
    }


class Receiver:
    """A receiver on loopback answering ``statuses`` in turn (then 204); it keeps each
    POST's headers and raw body, and checks each signature as a receiver would."""

    def __init__(self, serve: Callable[[Any], str], *statuses: int, always: int = 0) -> None:
        self.statuses, self.always = list(statuses), always
        self.got: list[tuple[dict[str, str], bytes]] = []
        app = FastAPI()

        @app.post("/hook")
        async def hook(request: Request) -> Response:
            self.got.append((dict(request.headers), await request.body()))
            status = self.statuses.pop(0) if self.statuses else self.always or 204
            return Response(status_code=status)

        self.url = serve(app)

    @staticmethod
    def signed(headers: dict[str, str], body: bytes) -> bool:
        """docs/operations.md's check: HMAC-SHA256 of "<t>.<body>" with the secret."""
        t, v1 = (part.split("=", 1)[1] for part in headers["x-continuum-signature"].split(","))
        expected = hmac.new(SECRET.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, v1) and abs(time.time() - int(t)) < 300


def callback_field(c: Cluster, job_id: str, settled: Callable[[str], bool], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        value = decoded(c.store().redis.hget(c.store().keys.job(job_id), "callback"))
        if settled(value):
            return value
        assert time.monotonic() < deadline, (job_id, value, c.logs())
        time.sleep(0.1)


def test_a_worker_killed_between_the_end_and_the_post_loses_no_callback(
    cluster: Callable[..., Cluster], serve: Callable[[Any], str], tmp_path: Path
) -> None:
    """Worker A runs the job to its end, but its callback task goes to a queue nobody
    consumes (the seam: the job has ended, nothing was posted); A is killed. The watchdog
    finds the outbox entry overdue and worker B delivers it: the first POST is answered
    500, the redelivery is taken, both signed and under the same idempotency key."""
    receiver = Receiver(serve, 500)
    profiles = tmp_path / "profiles.toml"
    profiles.write_text('[profiles.sim]\nqueue = "q"\n')  # iterations on q, whatever QUEUE says
    c = cluster(
        CONTINUUM_CALLBACK_ALLOW="127.0.0.1",
        CONTINUUM_CALLBACK_SECRET=SECRET,
        CONTINUUM_PROFILES=str(profiles),
        CONTINUUM_MAX_COUNTDOWN_S="1",
    )
    worker_a = c.worker(queues="q", CONTINUUM_QUEUE="parked")  # callbacks go to "parked"
    c.producer().send_task(
        "continuum.generate", kwargs={"spec": spec("kept", f"{receiver.url}/hook")}, queue="q"
    )
    c.wait_ended(["kept"], timeout=60)
    store = c.store()
    deadline = time.monotonic() + 10
    while store.redis.llen(f"{c.prefix}parked") < 1:  # A sent its callback task: parked
        assert time.monotonic() < deadline, c.logs()
        time.sleep(0.05)
    record = store.load("kept")
    assert record is not None and record.status.value == "succeeded"
    assert record.callback == "pending" and receiver.got == []
    event = store.callback_event("kept")
    assert store.redis.zscore(store.keys.outbox(shard_of("kept")), f"kept:{event}") is not None
    c.kill(worker_a)

    beat = c.beat()
    c.worker()
    waiting = {"", "pending"}
    outcome = callback_field(c, "kept", lambda v: v not in waiting and "retrying" not in v, 60)
    assert outcome == "delivered"
    assert "kept: its callback is overdue: sent again" in c.log(beat)
    assert "continuum.callback[" not in c.log(worker_a)  # A never ran a delivery

    assert len(receiver.got) == 2
    for headers, body in receiver.got:
        assert Receiver.signed(headers, body), headers
        assert headers["idempotency-key"] == headers["x-continuum-event-id"] == event
        assert json.loads(body)["event_id"] == event
    assert receiver.got[0][1] == receiver.got[1][1]  # the same body, twice
    view = json.loads(receiver.got[1][1])
    assert view["job"]["job_id"] == "kept" and view["job"]["status"] == "succeeded"
    assert view["result"] == store.final_output(record)
    assert sum(store.redis.zcard(store.keys.outbox(s)) for s in range(SHARDS)) == 0


def test_an_undeliverable_callback_shows_in_the_job_status(
    cluster: Callable[..., Cluster], serve: Callable[[Any], str]
) -> None:
    """A receiver that always answers 500 gets every attempt (the same event each time);
    then the job's status says the callback is undeliverable, and why."""
    receiver = Receiver(serve, always=500)
    c = cluster(CONTINUUM_CALLBACK_ALLOW="127.0.0.1", CONTINUUM_MAX_COUNTDOWN_S="0.05")
    c.worker()
    c.producer().send_task(
        "continuum.generate", kwargs={"spec": spec("lost", f"{receiver.url}/hook")}, queue="q"
    )
    c.wait_ended(["lost"], timeout=60)
    outcome = callback_field(c, "lost", lambda v: v.startswith(("undeliverable", "deliv")), 60)
    port = receiver.url.rsplit(":", 1)[1]
    expected = f"undeliverable: POST to http://127.0.0.1:{port}: HTTP 500 ({MAX_ATTEMPTS} attempts)"
    assert outcome == expected

    shown = subprocess.run(
        [*CONTINUUM, "status", "lost", "--json"],
        env=c.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert json.loads(shown.stdout)["callback"] == expected, shown.stderr
    human = subprocess.run(
        [*CONTINUUM, "status", "lost"],
        env=c.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert f"  callback: {expected}\n" in human.stdout, human.stdout + human.stderr
    assert len(receiver.got) == MAX_ATTEMPTS
    assert len({headers["idempotency-key"] for headers, _ in receiver.got}) == 1
    assert all("x-continuum-signature" not in headers for headers, _ in receiver.got)  # no secret
    assert c.store().redis.zcard(f"{c.prefix}outbox") == 0
