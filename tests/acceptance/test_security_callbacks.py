"""Callbacks attacked through real ``continuum worker`` processes on a private Redis.

A job's ``callback_url`` cannot make a worker call loopback in any spelling (the check runs
after DNS), a redirect is not followed, and a delivery refused says why in the job's
``callback`` field, once, without retrying. A callback token planted in the URL (query and
path) appears nowhere but in the job's spec: not in a worker's INFO log, any other Redis
key or value under the test's prefix (task results included), or Flower's task list. A
receiver that answers a byte at a time holds a worker's delivery for its deadline, no
longer; a callback URL whose "host" holds a path is refused at submission.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request, Response
from pydantic import ValidationError
from redis import Redis, RedisCluster

from core import JobSpec
from core.models import describe_errors
from tests.acceptance.procs import Cluster
from tests.acceptance.test_flower import Flower
from tests.conftest import decoded
from workers.callbacks import TIMEOUT_S

pytestmark = [pytest.mark.security, pytest.mark.slow]

SECRET = f"planted-cb-token-{uuid.uuid4().hex}"
PATH_SECRET = f"planted-cb-path-{uuid.uuid4().hex}"


def spec(job_id: str, callback_url: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": f"Write the catalogue ({job_id})",
        "format": "text",
        "providers": ["sim"],
        "model": "sim:format=text,size=400",
        "callback_url": callback_url,
    }


class Receiver:
    """A callback receiver on loopback: every POST it gets, and its answers in turn."""

    def __init__(self, serve: Callable[[Any], str], *answers: Response) -> None:
        self.got: list[Request] = []
        self.bodies: list[Any] = []
        self.answers = list(answers)
        app = FastAPI()

        @app.post("/{path:path}")
        async def hook(request: Request) -> Response:
            self.got.append(request)
            self.bodies.append(await request.json())
            return self.answers.pop(0) if self.answers else Response(status_code=204)

        self.url = serve(app)
        self.port = int(self.url.rsplit(":", 1)[1])


def callback_field(c: Cluster, job_id: str, settled: Callable[[str], bool]) -> str:
    """The job's ``callback`` field once ``settled`` says it is final."""
    deadline = time.monotonic() + 30
    while True:
        value = decoded(c.store().redis.hget(c.store().keys.job(job_id), "callback"))
        if settled(value):
            return value
        assert time.monotonic() < deadline, (job_id, value, c.logs())
        time.sleep(0.1)


def test_loopback_in_any_spelling_is_refused_by_default(
    cluster: Callable[..., Cluster], serve: Callable[[Any], str]
) -> None:
    """With no allow-list, a receiver on loopback is never called, however its address is
    spelt; each job's callback says it was refused and why, and is not retried."""
    receiver = Receiver(serve)
    port = receiver.port
    c = cluster()  # CONTINUUM_CALLBACK_ALLOW unset: the default
    c.worker()
    spellings = {
        "dotted": f"http://127.0.0.1:{port}/hook",
        "decimal": f"http://2130706433:{port}/hook",
        "hex": f"http://0x7f.1:{port}/hook",
        "short": f"http://127.1:{port}/hook",
        "mapped": f"http://[::ffff:127.0.0.1]:{port}/hook",
        "name": f"http://localhost:{port}/hook",
        "unspecified": f"http://0.0.0.0:{port}/hook",
        "v6": f"http://[::1]:{port}/hook",
    }
    producer = c.producer()
    for name, url in spellings.items():
        job = spec(f"ssrf-{name}", f"{url}?token={SECRET}")
        producer.send_task("continuum.generate", kwargs={"spec": job}, queue="q")
    c.wait_ended([f"ssrf-{name}" for name in spellings], timeout=60)

    for name in spellings:
        outcome = callback_field(c, f"ssrf-{name}", lambda v: v.startswith(("refused", "fail")))
        assert outcome.startswith("refused: callback to http://"), (name, outcome)
        assert "loopback" in outcome or "unspecified" in outcome, (name, outcome)
        assert "CONTINUUM_CALLBACK_ALLOW" in outcome and SECRET not in outcome
    time.sleep(1.5)  # longer than a first retry's countdown: none comes
    assert receiver.got == []
    for name in spellings:
        assert callback_field(c, f"ssrf-{name}", bool).startswith("refused")


def test_a_redirect_is_not_followed(
    cluster: Callable[..., Cluster], serve: Callable[[Any], str]
) -> None:
    """An allow-listed receiver that answers 307 elsewhere gets one POST; the place it
    points to gets none, and the delivery is refused for good (no retry)."""
    landing = Receiver(serve)
    hook = Receiver(
        serve,
        Response(status_code=307, headers={"Location": f"{landing.url}/landing"}),
    )
    c = cluster(CONTINUUM_CALLBACK_ALLOW="127.0.0.1")
    c.worker()
    job = spec("redirected", f"{hook.url}/hook?token={SECRET}")
    c.producer().send_task("continuum.generate", kwargs={"spec": job}, queue="q")
    c.wait_ended(["redirected"], timeout=60)

    outcome = callback_field(c, "redirected", lambda v: v.startswith(("refused", "fail")))
    assert outcome == (
        f"refused: POST to http://127.0.0.1:{hook.port}: HTTP 307, a redirect"
        " (redirects are not followed)"
    )
    time.sleep(1.5)
    assert len(hook.got) == 1 and landing.got == []


# -- the planted secret ----------------------------------------------------------------------


def redis_dump(client: Redis | RedisCluster, prefix: str) -> dict[str, str]:
    """Every key under ``prefix`` and everything it holds, as text (``key`` or
    ``key field`` -> value); key names are entries too."""
    out: dict[str, str] = {}
    for raw_key in client.scan_iter(match=f"{prefix}*", count=1000):
        key = raw_key.decode("latin-1")
        kind = decoded(client.type(raw_key))
        out[f"{key} (name)"] = key
        if kind == "string":
            out[key] = decoded(client.get(raw_key), "latin-1")
        elif kind == "hash":
            for field, value in client.hgetall(raw_key).items():
                out[f"{key} {decoded(field, 'latin-1')}"] = decoded(value, "latin-1")
        elif kind == "list":
            out[key] = repr(client.lrange(raw_key, 0, -1))
        elif kind == "set":
            out[key] = repr(client.smembers(raw_key))
        elif kind == "zset":
            out[key] = repr(client.zrange(raw_key, 0, -1, withscores=True))
        else:
            out[key] = f"<{kind}>"
    return out


def holding(texts: dict[str, str], *secrets: str) -> set[str]:
    return {where for where, text in texts.items() if any(s in text for s in secrets)}


def test_a_planted_callback_token_is_nowhere_but_in_the_job_spec(
    cluster: Callable[..., Cluster], serve: Callable[[Any], str], tmp_path: Path
) -> None:
    """A job whose callback URL carries a token in its query and its path, delivered after
    a retry, and a batch job whose callback is refused: at INFO, the token reaches the
    receiver and the job hash's spec and state (they are what delivers it), and nothing
    else: not the worker's log, not a task result or any other Redis key, not Flower."""
    receiver = Receiver(serve, Response(status_code=500))  # then 204: one retry
    c = cluster(CONTINUUM_CALLBACK_ALLOW="127.0.0.1", CONTINUUM_MAX_COUNTDOWN_S="0.5")
    flower = Flower(c, tmp_path / "flower.log")
    flower.wait("answer", lambda: flower.http.get("/healthcheck").status_code == 200)
    worker = c.worker()  # --loglevel=INFO

    delivered = spec("planted", f"{receiver.url}/hook/{PATH_SECRET}?token={SECRET}")
    refused = spec("planted-v6", f"http://[::1]:{receiver.port}/hook/{PATH_SECRET}?token={SECRET}")
    producer = c.producer()
    producer.send_task("continuum.generate", kwargs={"spec": delivered}, queue="q")
    producer.send_task(
        "continuum.submit_batch", kwargs={"batch_id": "planted-b", "specs": [refused]}, queue="q"
    )
    c.wait_ended(["planted", "planted-v6"], timeout=60)
    outcome = callback_field(c, "planted", lambda v: v == "delivered" or v.startswith("fail"))
    assert outcome == "delivered"
    assert callback_field(c, "planted-v6", lambda v: v.startswith("refused")) == (
        f"refused: callback to http://[::1]:{receiver.port} refused: ::1 is a loopback"
        " address (an operator may allow it with CONTINUUM_CALLBACK_ALLOW)"
    )

    # Where the token must be: at the receiver, called twice (500, then taken).
    assert len(receiver.got) == 2
    assert all(r.query_params["token"] == SECRET for r in receiver.got)
    assert all(r.url.path == f"/hook/{PATH_SECRET}" for r in receiver.got)
    assert receiver.bodies[-1]["job"]["job_id"] == "planted"

    # Flower: every task it saw (generate, submit_batch, iterate, callback and its retry).
    def settled() -> dict[str, Any] | None:
        tasks = flower.get("/api/tasks")
        names = [t.get("name") for t in tasks.values()]
        callbacks = [t for t in tasks.values() if t.get("name") == "continuum.callback"]
        done = [t for t in callbacks if t.get("state") == "SUCCESS"]
        wanted = {"continuum.generate", "continuum.submit_batch", "continuum.iterate"}
        if wanted <= set(names) and len(done) == 2:
            return dict(tasks)
        return None

    tasks = flower.wait("the callback tasks", settled)
    infos = {uuid_: flower.get(f"/api/task/info/{uuid_}") for uuid_ in tasks}
    shown = {f"flower {uuid_}": json.dumps(info) for uuid_, info in infos.items()}
    generate = next(i for i in infos.values() if i["name"] == "continuum.generate")
    assert f"'callback_url': 'http://127.0.0.1:{receiver.port}'" in generate["kwargs"]
    results = [i["result"] for i in infos.values() if i["name"] == "continuum.callback"]
    assert f"'delivered': 'http://127.0.0.1:{receiver.port}'" in " ".join(results)
    assert holding(shown, SECRET, PATH_SECRET) == set()

    # The worker's and Flower's logs: httpx's request lines are gone, Celery's task lines
    # (received, retry, succeeded with the result) name the receiver by origin.
    logs = {"worker log": c.log(worker), "flower log": flower.text()}
    assert "continuum.callback[" in logs["worker log"] and "retry" in logs["worker log"]
    assert "HTTP Request:" not in logs["worker log"]
    assert holding(logs, SECRET, PATH_SECRET) == set(), logs["worker log"][-3000:]

    # Redis under the test's prefix (job store, queues, Celery task results): only the
    # spec, and the state that embeds it, of each job.
    dump = redis_dump(c.store().redis, c.prefix)
    assert any("celery-task-meta-" in key for key in dump)  # the results are searched
    keys = c.store().keys
    must = {f"{keys.job(j)} {f}" for j in ("planted", "planted-v6") for f in ("spec", "state")}
    assert holding(dump, SECRET) == must
    assert holding(dump, PATH_SECRET) == must


# -- a receiver that answers a byte at a time ------------------------------------------------


class Drip:
    """A receiver on a free loopback port that sends a status line and then one endless
    header, a byte every 0.25 s; ``held`` is how long each connection stayed open before
    the client closed it (at most ``cap`` seconds)."""

    ANSWER = b"HTTP/1.1 200 OK\r\nX-Drip: " + b"a" * 60_000

    def __init__(self, cap: float = 40.0) -> None:
        self.cap = cap
        self.held: list[float] = []
        self.stop = threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        start, pending = time.monotonic(), self.ANSWER
        with conn:
            try:
                while not self.stop.is_set() and time.monotonic() - start < self.cap:
                    if select.select([conn], [], [], 0.25)[0]:
                        if not conn.recv(65536):
                            break  # the worker closed the connection
                    elif pending:
                        conn.sendall(pending[:1])
                        pending = pending[1:]
            except OSError:
                pass
        self.held.append(time.monotonic() - start)

    def close(self) -> None:
        self.stop.set()
        self.server.close()


def test_a_receiver_that_drips_its_answer_holds_a_worker_for_the_deadline_only(
    cluster: Callable[..., Cluster],
) -> None:
    """Before the deadline, each byte restarted httpx's read timeout: one callback held a
    worker thread for hours, and N jobs N threads. Now the worker hangs up when the
    deadline (``TIMEOUT_S``) passes, and the delivery is retried, named by origin."""
    drip = Drip()
    try:
        c = cluster(CONTINUUM_CALLBACK_ALLOW="127.0.0.1", CONTINUUM_MAX_COUNTDOWN_S="30")
        c.worker()
        job = spec("dripped", f"http://127.0.0.1:{drip.port}/hook/{PATH_SECRET}?token={SECRET}")
        c.producer().send_task("continuum.generate", kwargs={"spec": job}, queue="q")
        c.wait_ended(["dripped"], timeout=60)

        deadline = time.monotonic() + TIMEOUT_S + 20
        while not drip.held:
            assert time.monotonic() < deadline, c.logs()
            time.sleep(0.1)
        assert TIMEOUT_S - 0.5 < drip.held[0] < TIMEOUT_S + 1.5, drip.held
        outcome = callback_field(c, "dripped", lambda v: v.startswith(("retrying", "fail")))
        assert outcome == (
            f"retrying: POST to http://127.0.0.1:{drip.port}: no answer within {TIMEOUT_S:g} s"
            " (the deadline for connecting, sending and the response headers)"
        )
    finally:
        drip.close()


def test_a_callback_url_whose_host_holds_a_path_is_refused_at_submission() -> None:
    """httpx reads ``https://h.example\\services\\token`` as one host: such a URL would have
    put the token wherever a worker names the receiver."""
    with pytest.raises(ValidationError) as refused:
        JobSpec(prompt="p", callback_url=f"https://hooks.example.com\\services\\{SECRET}?x=1")
    assert describe_errors(refused.value) == (
        "callback_url: callback_url's host must be a DNS name or an IP address"
    )
