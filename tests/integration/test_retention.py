"""Retention on a real Redis: a job's keys expire together, set in the script that ends it;
a batch's keys expire with the last of its jobs; 0 keeps everything."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable

import pytest
from redis import Redis
from redis.cluster import RedisCluster

from workers import callbacks
from workers.keys import Keys
from workers.store import CommitResult, JobStatus, JobStore

HOUR = 3600.0


def store_for(client: Redis | RedisCluster, prefix: str, retention_s: float = HOUR) -> JobStore:
    return JobStore(client, prefix=prefix, retention_s=retention_s)


def commit(
    store: JobStore, job_id: str, iteration: int, status: JobStatus, **kw: object
) -> CommitResult:
    final = status is not JobStatus.RUNNING
    return store.commit(
        job_id,
        expected_iteration=iteration,
        state="{}",
        append=f"fragment {iteration};",
        replace=False,
        status=status,
        deadline=None if final else time.time() + 60,
        lease_token="mine",
        summary={"chars": 10},
        result={"prefix": 0, "suffix": ""} if final else None,
        **kw,  # type: ignore[arg-type]
    )


def started(store: JobStore, job_id: str, batch: str | None = None) -> None:
    """A job with an output, a commit, and an iteration in flight on another worker (whose
    lease has its own short TTL)."""
    assert store.create(job_id, "{}", "{}", deadline=time.time() + 60, batch=batch)
    assert commit(store, job_id, 0, JobStatus.RUNNING) is CommitResult.COMMITTED
    assert store.acquire_lease(job_id, "another worker", 30)


def job_keys_in_redis(store: JobStore, job_id: str) -> dict[str, int]:
    """Every key Redis holds for the job (whoever wrote it), with its TTL in ms."""
    own = store.keys.job(job_id)
    found = [own, *(k.decode() for k in store.redis.scan_iter(match=f"{own}:*"))]
    return {key: int(store.redis.pttl(key)) for key in found if store.redis.exists(key)}


#: Every way a job ends, each through the store call that ends it.
ENDINGS: dict[str, Callable[[JobStore, str], object]] = {
    "succeeded": lambda s, j: commit(s, j, 1, JobStatus.SUCCEEDED),
    "partial": lambda s, j: commit(s, j, 1, JobStatus.PARTIAL),
    "failed by its last commit": lambda s, j: commit(s, j, 1, JobStatus.FAILED),
    "failed": lambda s, j: s.fail(j, "the provider is gone"),
    "cancelled": lambda s, j: s.cancel(j),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_every_key_of_an_ended_job_expires_after_the_retention(
    redis_client: Redis, redis_prefix: str, ending: str
) -> None:
    """The job's hash, output and commits get a TTL of the retention, in the script that
    ends it; another worker's lease keeps its shorter TTL; ``expires_at`` says when."""
    store = store_for(redis_client, redis_prefix)
    started(store, "j")
    before = time.time()
    ENDINGS[ending](store, "j")
    after = time.time()

    keys = job_keys_in_redis(store, "j")
    k = store.keys
    assert set(keys) == {k.job("j"), k.output("j"), k.commits("j"), k.lease("j"), k.events("j")}
    assert set(keys) <= set(k.job_keys("j"))
    for key in (k.job("j"), k.output("j"), k.commits("j"), k.events("j")):
        assert HOUR * 1000 - 5_000 < keys[key] <= HOUR * 1000, key
    assert 0 < keys[k.lease("j")] <= 30_000  # a lease is never lengthened
    record = store.load("j")
    assert record is not None and record.expires_at is not None
    assert before + HOUR <= record.expires_at <= after + HOUR


def test_a_running_job_does_not_expire(redis_client: Redis, redis_prefix: str) -> None:
    """Commits that do not end the job set no TTL and no ``expires_at``."""
    store = store_for(redis_client, redis_prefix)
    started(store, "j")
    assert commit(store, "j", 1, JobStatus.RUNNING) is CommitResult.COMMITTED
    keys = job_keys_in_redis(store, "j")
    k = store.keys
    assert {keys[k.job("j")], keys[k.output("j")], keys[k.commits("j")], keys[k.events("j")]} == {
        -1
    }
    record = store.load("j")
    assert record is not None and record.expires_at is None


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_retention_0_keeps_an_ended_job_forever(
    redis_client: Redis, redis_prefix: str, ending: str
) -> None:
    store = store_for(redis_client, redis_prefix, retention_s=0)
    started(store, "j")
    ENDINGS[ending](store, "j")
    keys = job_keys_in_redis(store, "j")
    k = store.keys
    assert {keys[k.job("j")], keys[k.output("j")], keys[k.commits("j")], keys[k.events("j")]} == {
        -1
    }
    record = store.load("j")
    assert record is not None and record.status.value in ending and record.expires_at is None


def test_commit_takes_the_retention_as_a_keyword(redis_client: Redis, redis_prefix: str) -> None:
    """``commit(retention_s=...)`` overrides the store's retention for that job."""
    store = store_for(redis_client, redis_prefix)
    started(store, "j")
    commit(store, "j", 1, JobStatus.SUCCEEDED, retention_s=60)
    assert 55_000 < store.redis.pttl(store.keys.job("j")) <= 60_000


def test_a_refused_ending_leaves_the_expiry_alone(redis_client: Redis, redis_prefix: str) -> None:
    """Failing, cancelling or committing to an ended job changes neither TTL nor
    ``expires_at``: the job expires as it ended first."""
    store = store_for(redis_client, redis_prefix)
    started(store, "j")
    store.cancel("j")
    first = store.load("j")
    assert first is not None and first.expires_at is not None
    for key in store.keys.job_keys("j"):
        store.redis.pexpire(key, 10_000)  # shorter than any retention below
    late = store_for(store.redis, redis_prefix, retention_s=2 * HOUR)
    assert not late.fail("j", "too late")
    assert late.cancel("j") is False
    assert commit(late, "j", 1, JobStatus.SUCCEEDED) is CommitResult.CANCELLED
    again = late.load("j")
    assert again is not None and again.expires_at == first.expires_at
    assert all(0 < ttl <= 10_000 for ttl in job_keys_in_redis(late, "j").values())


def test_an_expired_job_is_gone(redis_client: Redis, redis_prefix: str) -> None:
    """Past its retention, the job and every key of it are deleted by Redis itself."""
    store = store_for(redis_client, redis_prefix, retention_s=0.3)
    started(store, "j")
    store.release_lease("j", "another worker")
    commit(store, "j", 1, JobStatus.SUCCEEDED)
    assert store.load("j") is not None
    time.sleep(0.6)
    assert store.load("j") is None and job_keys_in_redis(store, "j") == {}
    assert store.output("j") == "" and store.commits("j") == {}


def test_a_field_written_after_expiry_is_no_job(redis_client: Redis, redis_prefix: str) -> None:
    """A late ``HSET`` on an expired job's hash (a callback's outcome) makes no job."""
    store = store_for(redis_client, redis_prefix)
    store.redis.hset(store.keys.job("gone"), "callback", "delivered")
    assert store.load("gone") is None


# -- batches ------------------------------------------------------------------------------


def batch_ttls(store: JobStore, batch: str) -> tuple[int, int]:
    k = store.keys
    return int(store.redis.pttl(k.batch(batch))), int(store.redis.pttl(k.batch_meta(batch)))


def test_a_batch_expires_with_the_last_of_its_jobs(redis_client: Redis, redis_prefix: str) -> None:
    """No TTL while a job runs; when the last ends, the batch's keys get the latest expiry
    of its jobs (a job retained longer keeps the batch as long)."""
    store = store_for(redis_client, redis_prefix)
    assert store.create_batch("b", 3)
    for job_id in ("b.0", "b.1", "b.2"):
        started(store, job_id, batch="b")

    commit(store, "b.0", 1, JobStatus.SUCCEEDED, retention_s=2 * HOUR)
    store.fail("b.1", "bad")
    assert batch_ttls(store, "b") == (-1, -1)
    status = store.batch_status("b")
    assert status is not None and status.expires_at is None and not status.done

    store.cancel("b.2")  # the last, retained an hour: the batch stays two
    longest = store.load("b.0")
    assert longest is not None and longest.expires_at is not None
    status = store.batch_status("b")
    assert status is not None and status.done and status.expires_at == longest.expires_at
    for ttl in batch_ttls(store, "b"):
        assert HOUR * 1000 < ttl <= 2 * HOUR * 1000


def test_a_batch_still_being_submitted_does_not_expire(
    redis_client: Redis, redis_prefix: str
) -> None:
    """A job that ends while its batch is still being submitted (an invalid spec fails at
    once) is not the last of the batch: the batch gets no expiry until every job of its
    declared size has ended, and then the latest of theirs."""
    store = store_for(redis_client, redis_prefix)
    store.create_batch("b", 2)
    started(store, "b.0", batch="b")
    commit(store, "b.0", 1, JobStatus.SUCCEEDED, retention_s=60)
    assert batch_ttls(store, "b") == (-1, -1)
    status = store.batch_status("b")
    assert status is not None and status.expires_at is None
    started(store, "b.1", batch="b")
    commit(store, "b.1", 1, JobStatus.SUCCEEDED)
    assert all(60_000 < ttl <= HOUR * 1000 for ttl in batch_ttls(store, "b"))


def test_a_batch_with_a_job_kept_forever_is_kept(redis_client: Redis, redis_prefix: str) -> None:
    store = store_for(redis_client, redis_prefix)
    store.create_batch("b", 2)
    started(store, "b.0", batch="b")
    started(store, "b.1", batch="b")
    commit(store, "b.0", 1, JobStatus.SUCCEEDED, retention_s=0)
    commit(store, "b.1", 1, JobStatus.SUCCEEDED)
    assert batch_ttls(store, "b") == (-1, -1)
    status = store.batch_status("b")
    assert status is not None and status.done and status.expires_at is None


def test_a_batch_counts_its_expired_jobs_as_ended(redis_client: Redis, redis_prefix: str) -> None:
    """A job that expired before its batch still counts: the batch stays done."""
    store = store_for(redis_client, redis_prefix)
    store.create_batch("b", 2)
    started(store, "b.0", batch="b")
    started(store, "b.1", batch="b")
    commit(store, "b.0", 1, JobStatus.SUCCEEDED, retention_s=0.2)
    commit(store, "b.1", 1, JobStatus.PARTIAL)
    time.sleep(0.4)
    assert store.load("b.0") is None
    status = store.batch_status("b")
    assert status is not None
    assert (status.expired, status.ended, status.done) == (1, 2, True)
    assert status.counts["partial"] == 1 and status.counts["succeeded"] == 0


def test_job_keys_lists_every_key_of_a_job() -> None:
    """Every ``Keys`` method that builds a key from a job id is in ``job_keys``: a new
    per-job key cannot be left out of retention."""
    keys = Keys("p:")
    per_job = {
        name
        for name, method in inspect.getmembers(Keys, inspect.isfunction)
        if name != "job_keys" and "job_id" in inspect.signature(method).parameters
    }
    assert per_job >= {"job", "output", "lease", "commits"}
    assert {getattr(keys, name)("x") for name in per_job} == set(keys.job_keys("x"))
    assert keys.job_keys("x")[0] == keys.job("x")  # the hash first: retain.lua writes it


def test_a_callback_outcome_never_recreates_an_expired_job(
    redis_client: Redis, redis_prefix: str
) -> None:
    """A callback retried past the job's retention writes its outcome nowhere."""
    store = store_for(redis_client, redis_prefix, retention_s=0.3)
    started(store, "cb")
    callbacks.mark(store, "cb", "retrying: no answer")
    assert store.redis.hget(store.keys.job("cb"), "callback") == b"retrying: no answer"
    store.release_lease("cb", "another worker")
    commit(store, "cb", 1, JobStatus.SUCCEEDED)
    time.sleep(0.6)
    callbacks.mark(store, "cb", "delivered")
    assert job_keys_in_redis(store, "cb") == {}


def test_a_worker_writing_to_an_expired_job_recreates_nothing(
    redis_client: Redis, redis_prefix: str
) -> None:
    """A worker still busy with an iteration when its job expired (cancelled mid-call,
    a short retention) writes its attempt's notes nowhere."""
    store = store_for(redis_client, redis_prefix, retention_s=0.3)
    started(store, "late")
    store.refund_attempt("late")
    store.count_deferral("late", 1)
    store.record_crash("late", 1, "ResponseError: boom", step="{}")
    assert store.attempt_error("late") == "ResponseError: boom"
    store.release_lease("late", "another worker")
    store.cancel("late")
    time.sleep(0.6)
    store.refund_attempt("late")
    store.count_deferral("late", 1)
    store.record_crash("late", 1, "ResponseError: boom", step="{}")
    assert job_keys_in_redis(store, "late") == {}
    assert store.create("late", "{}", "{}", deadline=time.time() + 60)  # the id is free
