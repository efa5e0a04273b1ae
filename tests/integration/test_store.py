"""The Redis job store on a real Redis: idempotent creation, exactly-once commits, leases."""

from __future__ import annotations

import time

import pytest
from redis import Redis

from workers.errors import OldKeyLayout
from workers.store import CommitResult, JobStatus, JobStore


def store_for(client: Redis, prefix: str) -> JobStore:
    return JobStore(client, prefix=prefix)


def commit(store: JobStore, job_id: str, iteration: int, append: str, **kw: object) -> CommitResult:
    args: dict[str, object] = {
        "expected_iteration": iteration,
        "state": f'{{"it": {iteration + 1}}}',
        "append": append,
        "replace": False,
        "status": JobStatus.RUNNING,
        "deadline": time.time() + 60,
        "lease_token": "t",
        "summary": {"iteration": iteration + 1},
        **kw,
    }
    return store.commit(job_id, **args)  # type: ignore[arg-type]


def test_create_is_idempotent(redis_client: Redis, redis_prefix: str) -> None:
    """Submitting the same job id twice creates one job."""
    store = store_for(redis_client, redis_prefix)
    assert store.create("j1", "{}", "{}", deadline=time.time() + 60)
    assert not store.create("j1", '{"other": 1}', "{}", deadline=time.time() + 60)
    record = store.load("j1")
    assert record is not None and record.spec == "{}" and record.status is JobStatus.QUEUED


def test_commit_is_compare_and_set_on_the_iteration(redis_client: Redis, redis_prefix: str) -> None:
    """A duplicate or stale delivery never appends twice nor skips a fragment."""
    store = store_for(redis_client, redis_prefix)
    store.create("j", "{}", "{}", deadline=time.time() + 60)
    assert commit(store, "j", 0, "abc") is CommitResult.COMMITTED
    assert commit(store, "j", 0, "abc") is CommitResult.STALE  # the same message again
    assert commit(store, "j", 2, "zzz") is CommitResult.STALE  # from the future
    assert commit(store, "j", 1, "def") is CommitResult.COMMITTED
    assert store.output("j") == "abcdef"
    assert store.commits("j") == {0: 1, 1: 1}
    record = store.load("j")
    assert record is not None and record.iteration == 2 and record.state == '{"it": 2}'


def test_replace_and_unicode_output(redis_client: Redis, redis_prefix: str) -> None:
    """A repaired output replaces the accumulated one; text round-trips as UTF-8."""
    store = store_for(redis_client, redis_prefix)
    store.create("j", "{}", "{}", deadline=time.time() + 60)
    commit(store, "j", 0, "é漢🙂")
    commit(store, "j", 1, "[1]", replace=True, status=JobStatus.SUCCEEDED, deadline=None)
    assert store.output("j") == "[1]"
    record = store.load("j")
    assert record is not None and record.status is JobStatus.SUCCEEDED
    assert store.overdue(time.time() + 10_000) == []  # a finished job is no longer tracked


def test_cancelled_job_refuses_commits(redis_client: Redis, redis_prefix: str) -> None:
    """A job cancelled while its iteration ran commits nothing more."""
    store = store_for(redis_client, redis_prefix)
    store.create("j", "{}", "{}", deadline=time.time() + 60)
    assert store.cancel("j") is True
    assert store.cancel("j") is False
    assert store.cancel("missing") is None
    assert commit(store, "j", 0, "x") is CommitResult.CANCELLED
    assert store.output("j") == ""


def test_lease_admits_one_runner_and_expires(redis_client: Redis, redis_prefix: str) -> None:
    """One worker holds an iteration; others are refused until the lease lapses."""
    store = store_for(redis_client, redis_prefix)
    store.create("j", "{}", "{}", deadline=time.time() + 60)
    assert store.acquire_lease("j", "a", 0.3)
    assert not store.acquire_lease("j", "b", 0.3)
    assert not store.renew_lease("j", "b", 0.3)
    assert store.renew_lease("j", "a", 0.3)
    store.release_lease("j", "b")  # not b's: no effect
    assert not store.acquire_lease("j", "b", 0.3)
    time.sleep(0.4)
    assert store.acquire_lease("j", "b", 0.3)


def test_overdue_lists_jobs_nobody_holds(redis_client: Redis, redis_prefix: str) -> None:
    """The watchdog sees jobs past their deadline, except those whose lease is held."""
    store = store_for(redis_client, redis_prefix)
    now = time.time()
    store.create("late", "{}", "{}", deadline=now - 1)
    store.create("held", "{}", "{}", deadline=now - 1)
    store.create("fine", "{}", "{}", deadline=now + 60)
    store.acquire_lease("held", "w", 30)
    store.postpone("held", now - 1)
    assert store.overdue(now) == ["late"]


def test_fail_marks_the_reason(redis_client: Redis, redis_prefix: str) -> None:
    store = store_for(redis_client, redis_prefix)
    store.create("j", "{}", "{}", deadline=time.time() + 60)
    assert store.fail("j", "invalid iteration message: iteration: must be >= 0")
    record = store.load("j")
    assert record is not None and record.status is JobStatus.FAILED
    assert record.error is not None and "iteration" in record.error


def test_a_store_refuses_to_run_on_keys_of_the_layout_before_shards(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Jobs written before shards (one ``{prefix}active``, ``{prefix}jobs``) would be lost
    silently: a worker's runtime refuses to start on them, naming the way out."""
    from workers.runtime import build_runtime  # noqa: PLC0415
    from workers.settings import Settings  # noqa: PLC0415

    store = store_for(redis_client, redis_prefix)
    store.check_layout()  # a fresh prefix: nothing old
    redis_client.hset(f"{redis_prefix}metrics", "iterations", 5)  # old counters: no work
    redis_client.zadd(f"{redis_prefix}jobs", {"old": 1.0})  # an expired job's entry
    store.check_layout()
    redis_client.hset(f"{redis_prefix}job:old", "status", "succeeded")  # still retained
    with pytest.raises(OldKeyLayout, match="key layout before shards"):
        store.check_layout()
    redis_client.delete(f"{redis_prefix}job:old")
    store.check_layout()
    redis_client.zadd(f"{redis_prefix}active", {"running": 1.0})  # unfinished work
    with pytest.raises(OldKeyLayout, match="key layout before shards"):
        store.check_layout()
    url = store.server_url()
    with pytest.raises(RuntimeError, match=r"finish its jobs"):
        build_runtime(Settings(key_prefix=redis_prefix), url)
