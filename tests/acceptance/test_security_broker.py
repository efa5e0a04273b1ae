"""Crafted broker messages against a real worker process (issue 11, item 8).

Anyone who can write to Redis can push anything onto a queue. Each malformed message
(not JSON, a broken envelope, a bogus ``body_encoding``, an undecodable body, a refused
content type, a body of the wrong shape, arguments the task refuses, an unknown task) is
acknowledged away into the dead-letter record with its reason, logged without its body,
and the worker goes on to run the next good job. A worker that does stop on an unexpected
error exits non-zero, so a supervisor restarts it.
"""

from __future__ import annotations

import base64
import json
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from sim.app import create_app
from sim.model import SimOptions
from tests.acceptance.procs import Cluster
from tests.acceptance.test_cluster import SEED, check_exactly_once, reference, spec
from workers.deadletter import RAW_MAX_CHARS, DeadLetterBox, entry
from workers.keys import Keys
from workers.store import JobStore

pytestmark = [pytest.mark.security, pytest.mark.slow]

# A callback token as a producer might put it in a message: it must reach no log and no
# dead-letter record.
PLANTED = "planted-token-5b0e9c1d7a"
HOOK = f"https://hooks.example/done?token={PLANTED}"


@pytest.fixture
def sim_url(serve: Callable[[Any], str]) -> str:
    return serve(create_app(SimOptions(seed=SEED, latency=0.05)))


def envelope(
    marker: str,
    body: bytes | str,
    *,
    task: Any = "continuum.iterate",
    content_type: str = "application/json",
    headers: Any = None,
    **properties: Any,
) -> str:
    """A message as kombu's Redis transport queues it: ``body`` (bytes are base64-encoded)
    with ``marker`` as its task id and delivery tag."""
    if headers is None:
        headers = {"lang": "py", "task": task, "id": marker, "root_id": marker, "retries": 0}
    props = {
        "correlation_id": marker,
        "reply_to": "",
        "delivery_mode": 2,
        "delivery_info": {"exchange": "", "routing_key": "q"},
        "priority": 0,
        "body_encoding": "base64",
        "delivery_tag": marker,
        **properties,
    }
    if isinstance(body, bytes):
        body = base64.b64encode(body).decode()
    return json.dumps(
        {
            "body": body,
            "content-encoding": "utf-8",
            "content-type": content_type,
            "headers": headers,
            "properties": props,
        }
    )


def task_body(*args: Any, **kwargs: Any) -> bytes:
    return json.dumps([list(args), kwargs, {"callbacks": None, "chain": None}]).encode()


GOOD_ITERATE = task_body(job_id="nobody", iteration=0)

#: marker -> (the raw queue item, the kind of its dead-letter entry). Markers are unique
#: and none is a substring of another.
BAD: dict[str, tuple[bytes | str, str]] = {
    "dl-01": (b"\x00dl-01 not JSON at all " + b"x" * 100_000, "not-json"),
    "dl-02": (json.dumps(["dl-02", "a JSON list"]), "bad-envelope"),
    "dl-03": (
        envelope("dl-03", task_body(callback_url=HOOK), headers=f"dl-03 {HOOK}"),
        "bad-envelope",
    ),
    "dl-04": (envelope("dl-04", "cXJ0", body_encoding="rot13"), "bad-body-encoding"),
    "dl-05": (envelope("dl-05", "!!!not base64", body_encoding="base64"), "bad-body-encoding"),
    "dl-06": (envelope("dl-06", b"{not json " + HOOK.encode()), "undecodable-body"),
    "dl-07": (
        envelope("dl-07", GOOD_ITERATE, content_type="application/x-python-serialize"),
        "content-type-refused",
    ),
    "dl-08": (envelope("dl-08", b"5"), "invalid-task"),  # a body that is no [args, kwargs, ..]
    "dl-09": (envelope("dl-09", b'{"job_id": "x"}'), "invalid-task"),
    "dl-10": (envelope("dl-10", b"[[], [1, 2], {}]"), "invalid-arguments"),  # kwargs a list
    "dl-11": (envelope("dl-11", task_body(job_id="x", iteration=-3)), "invalid-arguments"),
    "dl-12": (
        envelope("dl-12", task_body(callback_url=HOOK), task="continuum.no-such-task"),
        "unknown-task",
    ),
    "dl-13": (envelope("dl-13", GOOD_ITERATE, headers={"id": "dl-13"}), "not-a-task"),
}


def dead_letters(redis_client: Redis, prefix: str) -> list[dict[str, Any]]:
    return DeadLetterBox(JobStore(redis_client, prefix)).recent(10_000)


def owner(record: dict[str, Any]) -> str | None:
    """The marker of the bad message a dead-letter entry is about."""
    found = [m for m in BAD if record["id"] == m or m in (record["raw"] or "")]
    return found[0] if len(found) == 1 else None


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_every_malformed_message_is_dead_lettered_and_the_worker_goes_on(
    cluster: Callable[..., Cluster], sim_url: str, redis_client: Redis
) -> None:
    """Thirteen crafted messages, then a good job, on one worker: it stays up, the good job
    gives the fault-free output, each bad message is in the dead-letter record once with
    its reason, nothing waits for redelivery, and no body reaches the log."""
    c = cluster(sim_url)
    queue = f"{c.prefix}q"
    for raw, _ in BAD.values():
        redis_client.lpush(queue, raw)
    good = spec("after-the-bad", "text")
    c.producer().send_task("continuum.generate", kwargs={"spec": good}, queue="q")
    worker = c.worker(concurrency=1)  # one at a time, in the order sent

    records = c.wait_ended(["after-the-bad"], timeout=90)
    assert records["after-the-bad"].status.value == "succeeded", c.logs()
    check_exactly_once(c, reference([good]))
    wait_for(
        lambda: len(dead_letters(redis_client, c.prefix)) >= len(BAD),
        10,
        f"dead letters: {dead_letters(redis_client, c.prefix)}\n{c.logs()}",
    )
    assert worker.poll() is None, c.log(worker)

    entries = dead_letters(redis_client, c.prefix)
    by_marker = {owner(e): e for e in entries}
    assert len(entries) == len(BAD) and None not in by_marker, entries
    for marker, (_, kind) in BAD.items():
        record = by_marker[marker]
        assert record["kind"] == kind, (marker, record)
        assert record["reason"], record
        assert record["raw"] is not None and len(record["raw"]) <= RAW_MAX_CHARS
    assert by_marker["dl-01"]["size"] > 100_000  # the size received, the start kept
    assert "rot13" in by_marker["dl-04"]["reason"]
    assert "continuum.no-such-task" in by_marker["dl-12"]["reason"]
    assert "iteration" in by_marker["dl-11"]["reason"]
    assert "https://hooks.example/done?***" in by_marker["dl-03"]["raw"]  # body decoded, masked

    assert redis_client.llen(queue) == 0
    wait_for(lambda: redis_client.hlen(f"{c.prefix}unacked") == 0, 10, "a message left unacked")
    log = c.log(worker)
    assert log.count("dead-lettered a broker message") == len(BAD), log
    assert "Unrecoverable error" not in log
    assert PLANTED not in log, "a message body reached the log"
    assert PLANTED not in json.dumps(entries), "a callback token reached the record"


def test_a_malformed_broadcast_does_not_stop_a_worker(
    cluster: Callable[..., Cluster], sim_url: str, redis_client: Redis
) -> None:
    """The remote-control channel every worker listens on takes the same checks."""
    c = cluster(sim_url)
    worker = c.worker(concurrency=1)
    channel = f"{c.prefix}/0.celery.pidbox"  # kombu's fanout topic for Celery's mailbox
    sent = [
        envelope("bc-1", "cXJ0", body_encoding="rot13"),
        json.dumps(["bc-2"]),
        envelope("bc-3", b"{not json", headers={}),
    ]
    for raw in sent:
        assert redis_client.publish(channel, raw) == 1, "the worker does not listen there"
    wait_for(
        lambda: len(dead_letters(redis_client, c.prefix)) >= len(sent),
        10,
        f"dead letters: {dead_letters(redis_client, c.prefix)}\n{c.log(worker)}",
    )
    kinds = sorted(e["kind"] for e in dead_letters(redis_client, c.prefix))
    assert kinds == ["bad-body-encoding", "bad-envelope", "undecodable-body"]
    good = spec("after-broadcast", "text", size=2000)
    c.producer().send_task("continuum.generate", kwargs={"spec": good}, queue="q")
    assert c.wait_ended(["after-broadcast"], timeout=60)["after-broadcast"].status.value == (
        "succeeded"
    )
    assert worker.poll() is None


def test_a_worker_stopped_by_an_unexpected_error_exits_non_zero(
    cluster: Callable[..., Cluster], redis_client: Redis
) -> None:
    """A queue key that holds a string (WRONGTYPE on every read) is an error no message
    handling can contain: the worker stops, with exit code 1, not 0. A worker stopped by
    SIGTERM still exits 0."""
    c = cluster()
    redis_client.set(f"{c.prefix}q", "not a list")
    broken = c.worker(concurrency=1, wait=False)
    assert broken.wait(timeout=60) == 1, c.log(broken)
    assert "Unrecoverable error" in c.log(broken)

    healthy = c.worker(concurrency=1, queues="elsewhere")
    healthy.send_signal(signal.SIGTERM)
    assert healthy.wait(timeout=30) == 0, c.log(healthy)


def test_the_record_is_bounded_and_masks_secrets(redis_client: Redis, redis_prefix: str) -> None:
    """At most ``max_entries`` entries, newest first; each raw body cut to RAW_MAX_CHARS
    with URL queries and passwords masked."""
    from workers.deadletter import DeadLetter, Kind  # noqa: PLC0415

    box = DeadLetterBox(JobStore(redis_client, redis_prefix), max_entries=3)
    for i in range(5):
        raw = f"#{i} {HOOK} redis://:pw-{PLANTED}@10.0.0.1:6390/0 " + "y" * 10_000
        box.put(entry(DeadLetter(Kind.NOT_JSON, f"reason {i}", raw=raw), now=float(i)))
    recent = box.recent()
    assert [e["reason"] for e in recent] == ["reason 4", "reason 3", "reason 2"]
    assert redis_client.llen(Keys(redis_prefix).dead_letters) == 3
    for record in recent:
        assert len(record["raw"]) == RAW_MAX_CHARS and record["size"] > 10_000
        assert PLANTED not in record["raw"]
        assert "https://hooks.example/done?***" in record["raw"]
        assert "redis://***@10.0.0.1" in record["raw"]


# -- what decoding itself chokes on (RecursionError, AttributeError), and slow masking ------

DEEP = "[" * 100_000 + "]" * 100_000  # json.loads: RecursionError, not a ValueError
DEEP_OBJECT = '{"a":' * 50_000 + "1" + "}" * 50_000
BAD_TYPE = json.dumps({"__type__": "bytes", "__value__": 5})  # kombu's hook: AttributeError
# Text on which the dead-letter masking once backtracked quadratically (~90 s a message).
# Every item here has its own length: the tests tell the entries apart by their size.
SLOW_MASK = ["a." * 99_000, "x://" * 40_000, "ab:/" * 30_000 + "@"]


def wait_dead_letters(redis_client: Redis, prefix: str, count: int, timeout: float) -> list[Any]:
    wait_for(
        lambda: len(dead_letters(redis_client, prefix)) >= count,
        timeout,
        f"dead letters: {[e['reason'] for e in dead_letters(redis_client, prefix)]}",
    )
    return dead_letters(redis_client, prefix)


def test_items_that_break_the_json_decoder_are_dead_lettered(
    cluster: Callable[..., Cluster], sim_url: str, redis_client: Redis
) -> None:
    """Queue items nested 100,000 deep (RecursionError), one kombu's JSON hook fails on
    (AttributeError), three on which masking used to take minutes, and one over
    MAX_ITEM_BYTES: each is dead-lettered with its reason, the worker stays up and answers
    a ping, and the good job queued behind them finishes promptly."""
    from workers.transport import MAX_ITEM_BYTES  # noqa: PLC0415

    c = cluster(sim_url)
    queue = f"{c.prefix}q"
    huge = b"[" + b" " * MAX_ITEM_BYTES + b"]"  # valid JSON, refused before decoding
    items: list[str | bytes] = [DEEP, DEEP_OBJECT, BAD_TYPE, *SLOW_MASK, huge]
    for raw in items:
        redis_client.lpush(queue, raw)
    del huge
    good = spec("after-deep", "text", size=2000)
    c.producer().send_task("continuum.generate", kwargs={"spec": good}, queue="q")
    worker = c.worker(concurrency=1)
    ready = time.monotonic()

    entries = wait_dead_letters(redis_client, c.prefix, len(items), timeout=20)
    assert worker.poll() is None, c.log(worker)
    records = c.wait_ended(["after-deep"], timeout=60)
    took = time.monotonic() - ready
    assert records["after-deep"].status.value == "succeeded", c.logs()
    check_exactly_once(c, reference([good]))
    assert took < 30, f"the good job behind the bad items took {took:.1f} s"
    assert c.producer().control.ping(timeout=5), "the worker does not answer a ping"

    assert len(entries) == len(items), entries
    by_size = {e["size"]: e for e in entries}
    for raw in items:
        record = by_size[len(raw)]
        assert record["queue"] == "q", record
        assert record["raw"] is not None and len(record["raw"]) <= RAW_MAX_CHARS
        expected = "too-large" if raw is items[-1] else "not-json"
        assert record["kind"] == expected, record
    assert "RecursionError" in by_size[len(DEEP)]["reason"]
    assert "RecursionError" in by_size[len(DEEP_OBJECT)]["reason"]
    assert "AttributeError" in by_size[len(BAD_TYPE)]["reason"]
    assert str(MAX_ITEM_BYTES) in by_size[MAX_ITEM_BYTES + 2]["reason"]
    assert redis_client.llen(queue) == 0
    log = c.log(worker)
    assert log.count("dead-lettered a broker message") == len(items), log[-3000:]
    assert "Unrecoverable error" not in log


def test_broadcasts_that_break_the_json_decoder_stop_no_worker(
    cluster: Callable[..., Cluster], sim_url: str, redis_client: Redis
) -> None:
    """The same on the remote-control channel every worker listens on: one PUBLISH used to
    stop every worker at once. Both workers stay up, dead-letter each broadcast, still
    answer remote control, and run a good job after."""
    c = cluster(sim_url)
    workers = [c.worker(concurrency=1), c.worker(concurrency=1)]
    channel = f"{c.prefix}/0.celery.pidbox"
    sent = [DEEP, DEEP_OBJECT, BAD_TYPE, SLOW_MASK[0]]
    for raw in sent:
        assert redis_client.publish(channel, raw) == len(workers), "not every worker listens"

    entries = wait_dead_letters(redis_client, c.prefix, len(sent) * len(workers), timeout=20)
    assert len(entries) == len(sent) * len(workers), entries
    assert {e["kind"] for e in entries} == {"not-json"}
    reasons = [e["reason"] for e in entries]
    assert sum("RecursionError" in r for r in reasons) == 2 * len(workers), reasons
    assert sum("AttributeError" in r for r in reasons) == len(workers), reasons
    for worker in workers:
        assert worker.poll() is None, c.log(worker)
    replies = c.producer().control.ping(timeout=5)
    assert len(replies) == len(workers), replies

    good = spec("after-deep-broadcast", "text", size=2000)
    c.producer().send_task("continuum.generate", kwargs={"spec": good}, queue="q")
    records = c.wait_ended(["after-deep-broadcast"], timeout=60)
    assert records["after-deep-broadcast"].status.value == "succeeded", c.logs()
    for worker in workers:
        assert worker.poll() is None, c.log(worker)
        assert "Unrecoverable error" not in c.log(worker)
