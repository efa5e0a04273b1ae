"""The job store on a real Redis Cluster (three masters, ``tests/redis_cluster.py``):
every script names keys of one slot, the shards spread over the masters, and what reads
across jobs (the watchdog, listings, metrics, batches, events) sees every shard."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from redis import RedisCluster

from workers.keys import SHARDS, Keys, shard_of
from workers.store import STAGE_BYTES, CommitResult, JobStatus, JobStore, NewJob, redis_client

pytestmark = pytest.mark.slow


@pytest.fixture
def store(redis_cluster_url: str) -> Iterator[JobStore]:
    """A store on the cluster under a prefix of its own (keys deleted at the end)."""
    prefix = f"continuum-test:{uuid.uuid4().hex}:"
    store = JobStore.from_url(redis_cluster_url, prefix, retention_s=3600)
    assert store.is_cluster
    yield store
    client = store.redis
    assert isinstance(client, RedisCluster)
    for node in client.get_primaries():  # type: ignore[no-untyped-call]
        conn = node.redis_connection
        found = list(conn.scan_iter(match=f"{prefix}*", count=1000))
        for key in found:
            conn.delete(key)
    store.close()


def commit(store: JobStore, job_id: str, n: int, text: str, **kw: object) -> CommitResult:
    args: dict[str, object] = {
        "expected_iteration": n,
        "state": "{}",
        "append": text,
        "replace": False,
        "status": JobStatus.RUNNING,
        "deadline": time.time() + 60,
        "lease_token": "t",
        "summary": {"chars": len(text)},
        "counts": {"output_tokens": 2},
        **kw,
    }
    return store.commit(job_id, **args)  # type: ignore[arg-type]


def ids_on_shards(count: int) -> list[str]:
    """Job ids of ``count`` different shards."""
    out: dict[int, str] = {}
    n = 0
    while len(out) < count:
        out.setdefault(shard_of(f"j{n}"), f"j{n}")
        n += 1
    return list(out.values())


def test_the_shards_spread_over_every_master(redis_cluster_url: str) -> None:
    """A job's keys share one slot; the shards' slots fall on all three masters."""
    client: Any = redis_client(redis_cluster_url)  # redis-py's cluster has no hints
    keys = Keys()
    for job_id in ("a", "b.1", "x-9"):
        slots = {client.keyslot(k) for k in (*keys.job_keys(job_id), keys.active(shard_of(job_id)))}
        assert len(slots) == 1
    nodes = {client.get_node_from_key(keys.active(n)).name for n in range(SHARDS)}
    assert len(nodes) == 3
    client.close()


def test_jobs_commit_exactly_once_and_read_back_on_a_cluster(store: JobStore) -> None:
    """Create, commit (a staged text too), read the output, end: on every shard."""
    big = "é" * (STAGE_BYTES // 2 + 10)  # over STAGE_BYTES in UTF-8: staged first
    for job_id in ids_on_shards(6):
        assert store.create(job_id, json.dumps({"prompt": "p"}), "{}", deadline=time.time() + 60)
        assert not store.create(job_id, "{}", "{}", deadline=time.time() + 60)
        assert commit(store, job_id, 0, "abc") is CommitResult.COMMITTED
        assert commit(store, job_id, 0, "abc") is CommitResult.STALE
        assert commit(store, job_id, 1, big) is CommitResult.COMMITTED
        ended = commit(store, job_id, 2, "!", status=JobStatus.SUCCEEDED, deadline=None)
        assert ended is CommitResult.COMMITTED
        assert store.output(job_id) == "abc" + big + "!"
        record = store.load(job_id)
        assert record is not None and record.status is JobStatus.SUCCEEDED
        assert record.expires_at is not None
        assert [e.iteration for e in store.events(job_id)] == [1, 2, 3]
    assert store.counters()["iterations"] == 18
    assert store.counters()["output_tokens"] == 36


def test_watchdog_reads_listings_and_metrics_see_every_shard(store: JobStore) -> None:
    """Overdue jobs, the jobs listing (newest first, paged), the metrics' job scan and
    backlogs and the callback outbox, across all shards."""
    jobs = ids_on_shards(8)
    for n, job_id in enumerate(jobs):
        spec = {"prompt": "p", "callback_url": "https://example.com/h"}
        store.create(job_id, json.dumps(spec), '{"s": 1}', deadline=time.time() - 10 + n)
        time.sleep(0.002)  # distinct creation times
    assert set(store.overdue(time.time())) == set(jobs)
    assert store.acquire_lease(jobs[0], "tok", 30)
    assert jobs[0] not in store.overdue(time.time())
    page, cursor = store.list_jobs(limit=5)
    rest, end = store.list_jobs(limit=5, cursor=cursor)
    assert [r.job_id for r in page + rest] == list(reversed(jobs)) and end is None
    totals = store.metrics.jobs(100)
    assert totals.complete and totals.jobs["queued"] == 8
    assert store.metrics.backlogs()[0] == 7
    store.fail(jobs[1], "boom")
    store.cancel(jobs[2])
    due = store.outbox_due(time.time() + 1)
    assert {job_id for job_id, _ in due} == {jobs[1], jobs[2]}
    number, event = store.claim_callback(jobs[1], "c", hold_s=30, early_s=0)
    assert number == 1 and event
    assert store.settle_callback(jobs[1], "c", event, "delivered")
    assert store.metrics.backlogs()[1] == 1


def test_batches_count_their_ended_jobs_across_slots(store: JobStore) -> None:
    """A batch (its own slot) counts each ended job once, and expires after its last."""
    jobs = ids_on_shards(3)
    assert store.create_batch("b", len(jobs))
    for job_id in jobs:
        store.create(job_id, "{}", "{}", deadline=time.time() + 60, batch="b")
    assert store.batch_jobs("b") == sorted(jobs)
    store.fail(jobs[0], "x")
    store.fail(jobs[0], "again")  # ended already: not counted twice
    store.cancel(jobs[1])
    status = store.batch_status("b")
    assert status is not None and not status.done and status.expires_at is None
    commit(store, jobs[2], 0, "t", status=JobStatus.SUCCEEDED, deadline=None)
    status = store.batch_status("b")
    assert status is not None and status.done and status.expires_at is not None
    assert 0 < store.redis.pttl(store.keys.batch_meta("b")) <= 3_600_000
    assert store.settle_batch_ends(time.time() + 1) == []  # every note was settled


def test_a_batch_of_jobs_is_created_in_a_few_pipelines_across_the_masters(
    store: JobStore,
) -> None:
    """Jobs of every shard (valid and failed ones) created in one call: each job's script
    on its own master, the batch joined and its ended jobs counted in its own slot."""
    jobs = ids_on_shards(12)
    assert store.create_batch("b", len(jobs))
    new = [
        NewJob(job_id, "{}", "{}", time.time() + 60)
        if n % 2
        else NewJob(job_id, "{}", error="invalid job: x")
        for n, job_id in enumerate(jobs)
    ]
    assert store.create_jobs(new, batch="b") == [True] * len(jobs)
    status = store.batch_status("b")
    assert status is not None and status.jobs == sorted(jobs) and status.ended == 6
    assert status.counts["failed"] == 6 and status.counts["queued"] == 6
    assert store.settle_batch_ends(time.time() + 1) == []
    assert store.create_jobs(new, batch="b") == [False] * len(jobs)


def test_a_script_refused_for_a_slot_that_moved_runs_through_the_cluster(
    store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A master that no longer holds a job's slot (MOVED) refuses its script in the
    pipeline: it runs again on its own, the cluster client following the redirection."""
    client: Any = store.redis
    jobs = ids_on_shards(6)
    wrong = {client.get_node_from_key(store.keys.job(jobs[0])).name}
    elsewhere = next(n for n in client.get_primaries() if n.name not in wrong)
    monkeypatch.setattr(client, "get_node_from_key", lambda key, replica=False: elsewhere)
    new = [NewJob(job_id, "{}", error="invalid job: x") for job_id in jobs]
    assert store.create_jobs(new) == [True] * len(jobs)
    monkeypatch.undo()
    for job_id in jobs:
        assert store.load(job_id).status is JobStatus.FAILED  # type: ignore[union-attr]


def test_a_batch_count_a_dead_process_left_is_settled_by_the_watchdog(store: JobStore) -> None:
    """A job ended but not counted in its batch (its process died between the two
    writes) is counted by ``settle_batch_ends``, once."""
    store.create_batch("b", 1)
    store.create("only", "{}", "{}", deadline=time.time() + 60, batch="b")
    store._count_batch_end = lambda job_id: None  # type: ignore[method-assign]  # dies here
    store.fail("only", "x")
    del store._count_batch_end
    assert store.batch_status("b").expires_at is None  # type: ignore[union-attr]
    assert store.settle_batch_ends(time.time() + 1) == ["only"]
    assert store.batch_status("b").expires_at is not None  # type: ignore[union-attr]
    assert store.settle_batch_ends(time.time() + 1) == []


def test_event_waits_dead_letters_and_buckets_on_a_cluster(store: JobStore) -> None:
    """Waiting on the streams of jobs of several shards, the dead letters, a bucket."""
    jobs = ids_on_shards(3)
    for job_id in jobs:
        store.create(job_id, "{}", "{}", deadline=time.time() + 60)
    cursors = dict.fromkeys(jobs, "0-0")
    assert store.wait_events(cursors, 50) == {}
    commit(store, jobs[2], 0, "x")
    assert set(store.wait_events(cursors, 1000)) == {jobs[2]}
    store.put_dead_letter({"why": "x"}, 10)
    assert store.dead_letters() == [{"why": "x"}]
    assert store.take_tokens("p", 1.0, 1, 1) == 0
    assert store.take_tokens("p", 1.0, 1, 1) > 0
