"""The job store on a real Sentinel set-up (a master, a replica, three Sentinels:
``tests/redis_sentinel.py``): it finds the master through the Sentinels, and after a
failover (``SENTINEL FAILOVER``, or the master SIGKILLed) it writes to the new master,
where what was committed before is (replication had caught up: ``WAIT 1``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.integration.test_store_cluster import commit
from tests.redis_sentinel import Sentinels
from workers.iteration import refused_for_now
from workers.store import CommitResult, JobStatus, JobStore

SPEC = json.dumps({"prompt": "p", "callback_url": "https://example.com/h"})
#: Not "{}", which marks a job kept only to say its spec was invalid (never called back).
STATE = '{"s": 1}'


@pytest.fixture
def store(sentinels: Sentinels) -> Iterator[JobStore]:
    store = JobStore.from_url(sentinels.url, "continuum-test:", retention_s=3600)
    yield store
    store.close()


def on_node(sentinels: Sentinels, port: int, store: JobStore, job_id: str) -> tuple[int, str]:
    """The job's iteration and output as one data node (not the store's client) holds them."""
    with sentinels.client(("127.0.0.1", port)) as node:
        iteration = int(node.hget(store.keys.job(job_id), "iteration") or 0)
        output = b"".join(node.lrange(store.keys.output(job_id), 0, -1)).decode()
    return iteration, output


def replicated(store: JobStore) -> None:
    """``WAIT 1``: the replica has every write so far (a failover then loses none)."""
    assert store.redis.wait(1, 5000) == 1


def test_commits_reads_and_the_outbox_through_the_sentinels(
    sentinels: Sentinels, store: JobStore
) -> None:
    """The store talks to the master the Sentinels name; commits are compare-and-set,
    an ended job's callback is in the outbox; the replica holds it all."""
    assert not store.is_cluster
    assert store.create("s1", SPEC, STATE, deadline=time.time() + 60)
    assert commit(store, "s1", 0, "abc", state=STATE) is CommitResult.COMMITTED
    assert commit(store, "s1", 0, "abc", state=STATE) is CommitResult.STALE
    ended = commit(store, "s1", 1, "def", state=STATE, status=JobStatus.SUCCEEDED, deadline=None)
    assert ended is CommitResult.COMMITTED
    record = store.load("s1")
    assert record is not None and record.status is JobStatus.SUCCEEDED and record.iteration == 2
    assert store.output("s1") == "abcdef" and store.commits("s1") == {0: 1, 1: 1}
    due = store.outbox_due(time.time() + 1)
    assert [job_id for job_id, _ in due] == ["s1"]
    number, event = store.claim_callback("s1", "c", hold_s=30, early_s=0)
    assert number == 1 and event
    assert store.settle_callback("s1", "c", event, "delivered")
    master = sentinels.master()[1]
    assert on_node(sentinels, master, store, "s1") == (2, "abcdef")
    replicated(store)
    assert on_node(sentinels, sentinels.replica()[1], store, "s1") == (2, "abcdef")


def test_after_a_failover_commits_land_on_the_new_master(
    sentinels: Sentinels, store: JobStore
) -> None:
    """``SENTINEL FAILOVER`` with the store connected: the next commits go to the new
    master (the old one stays a writable master for seconds until the Sentinels turn it
    into a replica, which discards whatever was written to it meanwhile)."""
    store.create("f1", "{}", "{}", deadline=time.time() + 60)
    assert commit(store, "f1", 0, "one ") is CommitResult.COMMITTED
    replicated(store)
    old = sentinels.master()[1]
    new = sentinels.failover()[1]
    assert new != old
    assert commit(store, "f1", 1, "two ") is CommitResult.COMMITTED
    assert commit(store, "f1", 2, "three") is CommitResult.COMMITTED
    assert on_node(sentinels, new, store, "f1") == (3, "one two three")
    assert store.output("f1") == "one two three"
    assert store.commits("f1") == {0: 1, 1: 1, 2: 1}


def test_after_the_master_is_killed_the_store_goes_on_with_the_replica(
    sentinels: Sentinels, store: JobStore
) -> None:
    """The master SIGKILLed: the Sentinels promote the replica (about 2 s with a 1 s
    down-after). A commit sent at once, tried again while Redis refuses it for now (as a
    worker does), lands there, after the commit made before."""
    store.create("k1", "{}", "{}", deadline=time.time() + 60)
    assert commit(store, "k1", 0, "before ") is CommitResult.COMMITTED
    replicated(store)
    killed = time.monotonic()
    old = sentinels.kill_master()
    refusals: list[str] = []
    while True:
        try:
            result = commit(store, "k1", 1, "after")
            break
        except Exception as exc:
            assert refused_for_now(exc), exc
            refusals.append(type(exc).__name__)
            assert time.monotonic() - killed < 20, refusals
            time.sleep(0.25)
    took = time.monotonic() - killed
    assert result is CommitResult.COMMITTED, result
    new = sentinels.promoted(old)[1]
    assert on_node(sentinels, new, store, "k1") == (2, "before after")
    assert store.commits("k1") == {0: 1, 1: 1}
    print(f"\ncommit after the master was killed: {took:.2f} s, refused {refusals}")
