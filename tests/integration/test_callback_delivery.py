"""The callback outbox on a real Redis: written by the script that ends a job, claimed by
one deliverer at a time, retried with backoff, swept by the watchdog, dropped with its job.
The receiver is an in-process mock transport (the network is tested in acceptance)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from redis import Redis

from tests.conftest import decoded
from workers import callbacks
from workers.callbacks import EVENT_HEADER, IDEMPOTENCY_HEADER, SIGNATURE_HEADER, Outcome
from workers.keys import SHARDS, shard_of
from workers.runtime import Runtime
from workers.settings import Settings
from workers.store import CommitResult, JobStatus, JobStore
from workers.watchdog import sweep_outbox

URL = "http://127.0.0.1:9/hook?token=t"
STATE = '{"a": "state"}'  # any state but "{}" (which marks an invalid submission)


def settings(**kw: Any) -> Settings:
    return Settings(callback_allow="127.0.0.1", callback_secret=SecretStr("k"), **kw)


def created(store: JobStore, job_id: str, url: str | None = URL, state: str = STATE) -> None:
    spec = {"prompt": "p"} if url is None else {"prompt": "p", "callback_url": url}
    assert store.create(job_id, json.dumps(spec), state, deadline=time.time() + 60)


def succeed(store: JobStore, job_id: str) -> CommitResult:
    return store.commit(
        job_id,
        expected_iteration=0,
        state=STATE,
        append="the output",
        replace=False,
        status=JobStatus.SUCCEEDED,
        deadline=None,
        lease_token="t",
        summary={"chars": 10},
        result={"prefix": 10, "suffix": ""},
    )


ENDINGS: dict[str, Callable[[JobStore, str], object]] = {
    "succeeded": succeed,
    "failed": lambda s, j: s.fail(j, "the provider is gone"),
    "cancelled": lambda s, j: s.cancel(j),
}


class Receiver:
    """A mock transport answering with ``statuses`` in turn (then 204), keeping requests."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.got: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.got.append(request)
        return httpx.Response(self.statuses.pop(0) if self.statuses else 204)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def outbox(store: JobStore) -> dict[str, float]:
    """The outbox's entries, by their members ("<job id>:<event id>") without the event."""
    found: dict[str, float] = {}
    for shard in range(SHARDS):
        for entry in store.redis.zrange(store.keys.outbox(shard), 0, -1, withscores=True):
            assert isinstance(entry, tuple | list)  # (member, score)
            member, score = entry
            found[decoded(member).partition(":")[0]] = float(score)
    return found


def due_at(store: JobStore, job_id: str, at: float) -> None:
    """Make the job's entry due at ``at``, as the watchdog or a backoff does."""
    store.outbox_postpone(job_id, store.callback_event(job_id) or "", at)


@pytest.fixture
def store(redis_client: Redis, redis_prefix: str) -> JobStore:
    return JobStore(redis_client, prefix=redis_prefix)


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_every_ending_puts_the_callback_in_the_outbox_in_the_same_write(
    store: JobStore, ending: str
) -> None:
    """The job's end writes its outbox entry (due now), ``pending`` and the event id."""
    created(store, "j")
    before = time.time()
    ENDINGS[ending](store, "j")
    assert before <= outbox(store)["j"] <= time.time()
    record = store.load("j")
    assert record is not None and record.callback == "pending"
    event = store.callback_event("j")
    assert event is not None and len(event) == 32
    assert store.redis.zrange(store.keys.outbox(shard_of("j")), 0, -1) == [f"j:{event}".encode()]


def test_no_entry_without_a_callback_url_or_for_an_invalid_submission(store: JobStore) -> None:
    """A job that asked for no callback, or kept only to say its spec was invalid (its
    callback_url never validated), never enters the outbox."""
    created(store, "plain", url=None)
    created(store, "invalid", state="{}")
    store.fail("plain", "x")
    store.fail("invalid", "invalid job: ...")
    assert outbox(store) == {}
    assert all(r is not None and r.callback is None for r in map(store.load, ["plain", "invalid"]))


def test_an_ended_job_is_not_put_back_by_a_second_ending(store: JobStore) -> None:
    created(store, "j")
    succeed(store, "j")
    event = store.callback_event("j")
    assert store.fail("j", "late") is False and store.cancel("j") is False
    assert store.callback_event("j") == event


def test_a_delivery_posts_once_signed_with_the_event_id(store: JobStore) -> None:
    """Delivered: out of the outbox, ``delivered`` in the job; another attempt skips."""
    created(store, "j")
    succeed(store, "j")
    receiver = Receiver()
    done = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert done.outcome is Outcome.DELIVERED and done.detail == "http://127.0.0.1:9"
    [request] = receiver.got
    event = store.callback_event("j")
    assert request.headers[IDEMPOTENCY_HEADER] == request.headers[EVENT_HEADER] == event
    assert callbacks.verify("k", request.content, request.headers[SIGNATURE_HEADER])
    body = json.loads(request.content)
    assert body["event_id"] == event and body["result"] == "the output"
    assert "callback" not in body["job"]
    assert outbox(store) == {}
    record = store.load("j")
    assert record is not None and record.callback == "delivered"
    again = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert again.outcome is Outcome.SKIPPED and len(receiver.got) == 1


def test_one_deliverer_at_a_time(store: JobStore) -> None:
    """The task and the watchdog's copy of it never both post: the second finds the
    entry claimed (and not due: the claim moved its next attempt past the hold)."""
    created(store, "j")
    succeed(store, "j")
    event = store.callback_event("j")
    assert event is not None
    assert store.claim_callback("j", "first", hold_s=30, early_s=1) == (1, event)
    assert store.claim_callback("j", "second", hold_s=30, early_s=1) == (-2, "")
    due_at(store, "j", time.time())  # the watchdog's postponement
    assert store.claim_callback("j", "second", hold_s=30, early_s=1) == (0, "")
    receiver = Receiver()
    skipped = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert skipped.outcome is Outcome.SKIPPED and receiver.got == []
    assert outbox(store)["j"] > time.time() - 1


def test_a_failed_attempt_is_due_again_after_the_backoff_with_the_same_event(
    store: JobStore,
) -> None:
    """500, then 204: the entry is due after 1 s (not before), the job says ``retrying``,
    and the redelivery carries the same idempotency key and body."""
    created(store, "j")
    succeed(store, "j")
    receiver = Receiver(500)
    first = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert first.outcome is Outcome.RETRY and first.wait == 1.0 and first.number == 1
    record = store.load("j")
    assert record is not None
    assert record.callback == "retrying: POST to http://127.0.0.1:9: HTTP 500"
    assert time.time() < outbox(store)["j"] <= time.time() + 1.0
    assert store.claim_callback("j", "early", hold_s=30, early_s=0) == (-2, "")
    time.sleep(1.05)
    second = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert second.outcome is Outcome.DELIVERED and second.number == 2
    one, two = receiver.got
    assert one.headers[IDEMPOTENCY_HEADER] == two.headers[IDEMPOTENCY_HEADER]
    assert one.content == two.content
    assert (one.headers["x-continuum-attempt"], two.headers["x-continuum-attempt"]) == ("1", "2")


def test_after_the_last_attempt_the_callback_is_undeliverable(store: JobStore) -> None:
    created(store, "j")
    succeed(store, "j")
    receiver = Receiver(*[503] * callbacks.MAX_ATTEMPTS)
    outcomes = []
    for _ in range(callbacks.MAX_ATTEMPTS):
        due_at(store, "j", time.time())  # due now, as if the backoff had passed
        done = callbacks.attempt(
            store, "j", settings(max_countdown_s=0.1), transport=receiver.transport()
        )
        outcomes.append(done.outcome)
    assert outcomes == [Outcome.RETRY] * (callbacks.MAX_ATTEMPTS - 1) + [Outcome.UNDELIVERABLE]
    record = store.load("j")
    assert record is not None
    assert record.callback == (
        f"undeliverable: POST to http://127.0.0.1:9: HTTP 503 ({callbacks.MAX_ATTEMPTS} attempts)"
    )
    assert outbox(store) == {}


def test_a_refused_callback_leaves_the_outbox_at_once(store: JobStore) -> None:
    created(store, "j", url="http://127.0.0.2:9/hook")
    succeed(store, "j")
    done = callbacks.attempt(store, "j", settings(), transport=Receiver().transport())
    assert done.outcome is Outcome.REFUSED and outbox(store) == {}
    record = store.load("j")
    assert record is not None and (record.callback or "").startswith("refused: callback to")


def test_an_entry_whose_job_expired_is_not_delivered_and_is_dropped(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Retention ran out before delivery: the attempt posts nothing and does not recreate
    the job; the watchdog drops the entry."""
    store = JobStore(redis_client, prefix=redis_prefix, retention_s=0.2)
    created(store, "j")
    succeed(store, "j")
    time.sleep(0.4)
    receiver = Receiver()
    done = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert done.outcome is Outcome.SKIPPED and receiver.got == []
    assert not store.redis.exists(store.keys.job("j"))
    notified: list[str] = []
    assert sweep_outbox(runtime_for(store), notified.append, now=time.time() + 60) == []
    assert outbox(store) == {} and notified == [] and receiver.got == []


def test_a_claim_expires_with_its_job(redis_client: Redis, redis_prefix: str) -> None:
    """A claim held past its job's expiry would hold off the next job of that id."""
    store = JobStore(redis_client, prefix=redis_prefix, retention_s=0.3)
    created(store, "j")
    succeed(store, "j")
    number, _ = store.claim_callback("j", "t", hold_s=30, early_s=1)
    assert number == 1 and 0 < redis_client.pttl(store.keys.callback_claim("j")) <= 300


def runtime_for(store: JobStore, grace: float = 5) -> Runtime:
    return Runtime(settings(queue_grace_s=grace), store, None, None)  # type: ignore[arg-type]


def test_the_watchdog_resends_overdue_entries_only_and_drops_expired_ones(
    redis_client: Redis, redis_prefix: str
) -> None:
    """An entry overdue by the queue grace is sent again (and postponed by as much); one
    not yet overdue is left to its task; one whose job expired is dropped; a pass sends
    at most ``limit``."""
    store = JobStore(redis_client, prefix=redis_prefix)
    for job_id in ("a", "b", "c", "fresh"):
        created(store, job_id)
        succeed(store, job_id)
    rt = runtime_for(store)
    now = time.time()
    for job_id in ("a", "b", "c"):
        due_at(store, job_id, now - 10)
    due_at(store, "fresh", now + 1)  # it ends just now: its own task is on its way
    redis_client.delete(store.keys.job("c"))  # expired
    sent: list[str] = []
    assert sweep_outbox(rt, sent.append, now=now, limit=2) == ["a", "b"]
    assert sweep_outbox(rt, sent.append, now=now, limit=2) == []  # c dropped, a b postponed
    assert sent == ["a", "b"] and "c" not in outbox(store)
    assert sweep_outbox(rt, sent.append, now=now + 5.1) == ["a", "b"]
    assert sweep_outbox(rt, sent.append, now=now + 6.1) == ["fresh"]


def test_a_job_ended_before_the_outbox_existed_is_still_called_back(store: JobStore) -> None:
    """An upgrade: a job ended by an older worker (callback ``pending``, no event id, no
    outbox entry) is put in the outbox by the task that finds it, and delivered."""
    created(store, "old")
    store.fail("old", "x")
    store.outbox_drop("old", store.callback_event("old") or "")
    store.redis.hdel(store.keys.job("old"), "callback_event", "callback_attempts")
    receiver = Receiver()
    done = callbacks.attempt(store, "old", settings(), transport=receiver.transport())
    assert done.outcome is Outcome.DELIVERED and len(receiver.got) == 1
    assert receiver.got[0].headers[IDEMPOTENCY_HEADER] == store.callback_event("old")
    assert outbox(store) == {}
    again = callbacks.attempt(store, "old", settings(), transport=receiver.transport())
    assert again.outcome is Outcome.SKIPPED and len(receiver.got) == 1


# -- one job instance, one entry: ids may be reused once a job expired -------------------------


def expired_undelivered(redis_client: Redis, redis_prefix: str, job_id: str) -> None:
    """``job_id`` ends with a callback to another receiver, and expires before any attempt."""
    short = JobStore(redis_client, prefix=redis_prefix, retention_s=0.2)
    created(short, job_id, url="http://127.0.0.1:9/the-old-receiver")
    succeed(short, job_id)
    time.sleep(0.3)
    assert not redis_client.exists(short.keys.job(job_id))


def test_an_expired_jobs_entry_is_not_delivered_for_a_new_job_with_its_id(
    store: JobStore, redis_client: Redis, redis_prefix: str
) -> None:
    """The first job named "j" expired with its callback undelivered; a producer reuses the
    id. The old entry posts nothing while the new job runs (it used to post the new job's
    queued state, under the job id as its event). Once the new job ends, its own callback
    is delivered once, with its own event and body; the watchdog drops the old entry."""
    expired_undelivered(redis_client, redis_prefix, "j")
    created(store, "j")
    receiver = Receiver()
    early = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert early.outcome is Outcome.SKIPPED and receiver.got == []
    succeed(store, "j")
    event = store.callback_event("j")
    done = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert done.outcome is Outcome.DELIVERED and done.number == 1
    [request] = receiver.got
    assert request.url.path == "/hook" and request.headers[IDEMPOTENCY_HEADER] == event
    body = json.loads(request.content)
    assert body["event_id"] == event and body["job"]["status"] == "succeeded"
    sent: list[str] = []  # the old job's dead entry is the watchdog's to drop
    assert sweep_outbox(runtime_for(store), sent.append, now=time.time() + 60) == []
    assert outbox(store) == {} and len(receiver.got) == 1


def test_the_watchdog_drops_an_expired_jobs_entry_even_when_its_id_was_reused(
    store: JobStore, redis_client: Redis, redis_prefix: str
) -> None:
    """The old job's entry is overdue and a new job runs under its id: the watchdog drops
    the entry instead of sending a callback task for it (it used to send one, which then
    posted the new job)."""
    expired_undelivered(redis_client, redis_prefix, "j")
    created(store, "j")
    sent: list[str] = []
    assert sweep_outbox(runtime_for(store), sent.append, now=time.time() + 60) == []
    assert sent == [] and outbox(store) == {}


def test_a_job_replaced_while_its_callback_is_built_is_not_posted(
    store: JobStore, redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempt claims the entry of the job that ended; by the time it reads the job,
    that job has expired and a new one runs under its id. Nothing is posted: the body
    would be the new job's (it was, under the job id as its event)."""
    short = JobStore(redis_client, prefix=redis_prefix, retention_s=0.3)
    created(short, "j")
    succeed(short, "j")
    load = store.load

    def replaced(job_id: str) -> Any:
        time.sleep(0.4)  # the first job expires
        created(store, "j")
        return load(job_id)

    monkeypatch.setattr(store, "load", replaced)
    receiver = Receiver()
    done = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert done.outcome is Outcome.SKIPPED and receiver.got == []
    record = load("j")
    assert record is not None and record.status is JobStatus.QUEUED and record.callback is None


def test_an_attempt_that_outlived_its_claim_settles_nothing(
    store: JobStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A POST outlasts its claim: another deliverer claims the entry meanwhile and
    delivers it. The first one's late 500 then changes nothing (it used to overwrite
    ``delivered`` with ``retrying``); it is logged, and no retry of it is asked for."""
    monkeypatch.setattr(callbacks, "HOLD_S", 0.2)
    created(store, "j")
    succeed(store, "j")
    second = Receiver()

    def slow_then_500(request: httpx.Request) -> httpx.Response:
        time.sleep(0.3)  # past the claim
        took_over = callbacks.attempt(store, "j", settings(), transport=second.transport())
        assert took_over.outcome is Outcome.DELIVERED and took_over.number == 2
        return httpx.Response(500)

    late = callbacks.attempt(store, "j", settings(), transport=httpx.MockTransport(slow_then_500))
    record = store.load("j")
    assert record is not None and record.callback == "delivered" and outbox(store) == {}
    assert late.outcome is Outcome.SKIPPED and late.number == 1
    assert len(second.got) == 1
    assert "job j: callback attempt 1 outlived its claim" in caplog.text


def bare(store: JobStore, job_id: str) -> None:
    """Write the job's entry as a worker before this version did: the bare job id."""
    event = store.callback_event(job_id) or ""
    store.outbox_drop(job_id, event)
    store.redis.zadd(store.keys.outbox(shard_of(job_id)), {job_id: time.time() - 10})  # and overdue


def test_an_entry_written_before_entries_named_their_event_is_still_delivered(
    store: JobStore, redis_client: Redis, redis_prefix: str
) -> None:
    """An upgrade: a bare-id entry is the job's while the job waits for its callback. The
    watchdog sends it, the first attempt takes it over under the job's event, a retry
    delivers it. A bare entry whose job expired is dropped, unsent (by the attempt or the
    watchdog, whichever finds it first)."""
    created(store, "j")
    succeed(store, "j")
    bare(store, "j")
    short = JobStore(redis_client, prefix=redis_prefix, retention_s=0.2)
    created(short, "gone")
    succeed(short, "gone")
    bare(short, "gone")
    time.sleep(0.3)
    gone = callbacks.attempt(store, "gone", settings(), transport=Receiver().transport())
    assert gone.outcome is Outcome.SKIPPED and outbox(store).keys() == {"j"}
    sent: list[str] = []
    assert sweep_outbox(runtime_for(store), sent.append) == ["j"]
    receiver = Receiver(500)
    first = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert first.outcome is Outcome.RETRY and first.number == 1
    event = store.callback_event("j")
    assert store.redis.zrange(store.keys.outbox(shard_of("j")), 0, -1) == [f"j:{event}".encode()]
    due_at(store, "j", time.time())
    second = callbacks.attempt(store, "j", settings(), transport=receiver.transport())
    assert second.outcome is Outcome.DELIVERED and outbox(store) == {}
    assert {r.headers[IDEMPOTENCY_HEADER] for r in receiver.got} == {event}
