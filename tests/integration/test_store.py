"""The Redis job store on a real Redis: idempotent creation, exactly-once commits, leases."""

from __future__ import annotations

import time

import pytest
from redis import Redis

from workers.errors import OldKeyLayout
from workers.store import CommitResult, JobStatus, JobStore, NewJob


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


def test_load_and_start_reads_the_job_and_takes_its_lease_in_one_call(
    redis_client: Redis, redis_prefix: str
) -> None:
    """The job and the attempt's code at once; no lease for a job that has ended or is
    at another iteration, and no job read as None."""
    store = store_for(redis_client, redis_prefix)
    assert store.load_and_start("none", 0, "t", 30) == (None, -2)
    store.create("j", '{"p": 1}', '{"s": 1}', deadline=time.time() + 60)
    record, code = store.load_and_start("j", 0, "t1", 30)
    assert code == 1 and record is not None and record.spec == '{"p": 1}'
    assert record.status is JobStatus.QUEUED and record.state == '{"s": 1}'
    assert store.load_and_start("j", 0, "t2", 30)[1] == 0  # t1 holds the lease
    assert store.load_and_start("j", 1, "t2", 30)[1] == -1  # not at iteration 1
    store.release_lease("j", "t1")
    assert store.load_and_start("j", 0, "t3", 30)[1] == 2  # the second attempt at 0
    store.release_lease("j", "t3")
    store.fail("j", "x")
    record, code = store.load_and_start("j", 0, "t4", 30)
    assert code == -1 and record is not None and record.status is JobStatus.FAILED
    assert not redis_client.exists(store.keys.lease("j"))


def test_create_jobs_keeps_invalid_ones_failed_and_counts_them_in_their_batch(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Valid and invalid jobs of a batch created in one call: the invalid ones already
    failed with their error, expiring, counted as ended; a job that held an id already
    (valid or not) keeps everything, and only joins the batch if it is the batch's."""
    store = JobStore(redis_client, prefix=redis_prefix, retention_s=3600)
    store.create("taken", "{}", "{}", deadline=time.time() + 60)
    assert store.create_batch("b", 3)
    jobs = [
        NewJob("ok", "{}", '{"s": 1}', time.time() + 60),
        NewJob("bad", '{"format": "yaml"}', error="invalid job: format"),
        NewJob("taken", "{}", error="invalid job: taken"),
    ]
    assert store.create_jobs(jobs, batch="b") == [True, True, False]
    bad, taken = store.load("bad"), store.load("taken")
    assert bad is not None and bad.status is JobStatus.FAILED and bad.state == "{}"
    assert bad.error == "invalid job: format" and bad.batch == "b"
    assert bad.expires_at is not None and 0 < redis_client.ttl(store.keys.job("bad")) <= 3600
    assert [e.status for e in store.events("bad")] == [JobStatus.FAILED]
    assert taken is not None and taken.status is JobStatus.QUEUED and taken.error is None
    assert sorted(store.overdue(time.time() + 120)) == ["ok", "taken"]  # none for "bad"
    status = store.batch_status("b")
    assert status is not None and status.jobs == ["bad", "ok"] and status.ended == 1
    assert store.settle_batch_ends(time.time() + 1) == []  # its note was dropped
    assert store.create_jobs(jobs, batch="b") == [False, False, False]
    assert store.batch_status("b").ended == 1  # type: ignore[union-attr]


def test_a_batch_submitted_again_counts_the_ends_a_dead_process_left(
    redis_client: Redis, redis_prefix: str
) -> None:
    """A process that died between creating a batch's failed jobs and joining them to
    the batch left them out of it: the same submission made again joins and counts them."""
    store = JobStore(redis_client, prefix=redis_prefix, retention_s=3600)
    store.create_batch("b", 2)
    jobs = [NewJob(f"b.{n}", "{}", error="invalid job: x") for n in range(2)]
    store._join_batch = lambda *a: None  # type: ignore[method-assign]  # dies here
    assert store.create_jobs(jobs, batch="b") == [True, True]
    del store._join_batch
    assert store.batch_status("b").jobs == []  # type: ignore[union-attr]
    assert store.create_jobs(jobs, batch="b") == [False, False]
    status = store.batch_status("b")
    assert status is not None and status.jobs == ["b.0", "b.1"] and status.done
    assert status.expires_at is not None
    assert store.settle_batch_ends(time.time() + 1) == []


def test_create_jobs_loads_the_scripts_a_redis_does_not_hold(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Pipelined scripts go by their hash: a Redis that does not hold one yet (new, or
    restarted) gets it loaded and the refused calls run."""
    store = store_for(redis_client, redis_prefix)
    text = store._create_failed.script
    unique = f"{text!s}\n-- {redis_prefix}"  # a script this Redis has never seen
    store._create_failed = redis_client.register_script(unique)
    assert not redis_client.script_exists(store._create_failed.sha)[0]
    jobs = [NewJob(f"j{n}", "{}", error="invalid job: x") for n in range(3)]
    assert store.create_jobs([NewJob("v", "{}", "{}", time.time()), *jobs]) == [True] * 4
    assert store.load("j2").status is JobStatus.FAILED  # type: ignore[union-attr]


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
