"""The job store on a real Sentinel set-up (a master, a replica, three Sentinels:
``tests/redis_sentinel.py``): it finds the master through the Sentinels, and after a
failover (``SENTINEL FAILOVER``, or the master SIGKILLed) it writes to the new master,
where what was committed before is (replication had caught up: ``WAIT 1``)."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from redis import Redis
from redis.exceptions import RedisError

from tests.integration.test_store_cluster import commit
from tests.redis_sentinel import SERVICE, Sentinels, redis_sentinel
from workers.embedded import EmbeddedRedis
from workers.errors import NotReplicated, refused_for_now
from workers.store import CommitResult, Durability, JobStatus, JobStore, NewJob

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


def exists_on(sentinels: Sentinels, port: int, store: JobStore, ids: list[str]) -> set[str]:
    """Which of ``ids`` one data node holds (its own client, not the store's)."""
    with sentinels.client(("127.0.0.1", port)) as node:
        pipe = node.pipeline(transaction=False)
        for job_id in ids:
            pipe.exists(store.keys.job(job_id))
        return {job_id for job_id, found in zip(ids, pipe.execute(), strict=True) if found}


def test_a_new_job_is_answered_once_the_replica_holds_it(
    sentinels: Sentinels, store: JobStore
) -> None:
    """A Sentinel store waits for one replica by default: when ``create`` returns, the
    replica has the job already (no ``WAIT`` of the test's own)."""
    assert store.durability.replicas == 1
    ids = [f"r{n}" for n in range(50)]
    for job_id in ids:
        assert store.create(job_id, SPEC, STATE, deadline=time.time() + 60)
    assert exists_on(sentinels, sentinels.replica()[1], store, ids) == set(ids)


def test_with_no_replica_to_confirm_a_submission_fails_loudly_and_keeps_the_job(
    sentinels: Sentinels,
) -> None:
    """The replica stopped (SIGSTOP): ``create_jobs`` raises ``NotReplicated`` after
    ``wait_s``, naming the jobs; they exist on the master (the watchdog starts them), and
    submitting them again once the replica is back creates nothing twice."""
    store = JobStore.from_url(sentinels.url + "?wait_s=1", "continuum-test:")
    replica = sentinels.nodes[sentinels.replica()[1]]
    replica.send_signal(signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(NotReplicated, match="jobs p1, p2: 0 of the 1 replica") as refused:
            store.create_jobs(
                [
                    NewJob("p1", SPEC, STATE, time.time() + 60),
                    NewJob("p2", SPEC, STATE, time.time() + 60),
                ]
            )
        took = time.monotonic() - started
        assert 0.9 < took < 5, took
        assert isinstance(refused.value, RedisError)  # the API answers it 503
        assert exists_on(sentinels, sentinels.master()[1], store, ["p1", "p2"]) == {"p1", "p2"}
    finally:
        replica.send_signal(signal.SIGCONT)
    again = store.create_jobs([NewJob("p1", SPEC, STATE, time.time() + 60)])
    assert again == [False]
    store.close()


@pytest.fixture(params=[1, 2], ids=["one replica", "two replicas"])
def failing_over(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sentinels]:
    with redis_sentinel(tmp_path / "failing-over", replicas=request.param) as setup:
        yield setup


def test_jobs_created_through_a_failover_are_none_of_them_lost(failing_over: Sentinels) -> None:
    """Jobs created without a pause while the master fails over: every one whose
    submission was answered is on the new master once the set-up settles (a submission
    may be refused, loudly, never answered and lost). Beside it, for the record, a store
    that waits for no replica (``wait_replicas=0``) does the same.

    With two replicas, the one not promoted still follows the old master for a while and
    acknowledges what it takes, then drops it when it turns to the new one: the store
    waits for every replica the Sentinels see (its first version waited for one, and
    lost thousands of answered jobs so)."""
    sentinels = failing_over
    waits = JobStore.from_url(sentinels.url + "?wait_s=20", "continuum-test:")
    blind = JobStore.from_url(sentinels.url + "?wait_replicas=0", "continuum-test:")
    stop = threading.Event()
    answered: dict[str, list[str]] = {"waits": [], "blind": []}
    refused: dict[str, list[str]] = {"waits": [], "blind": []}

    def submit(name: str, store: JobStore) -> None:
        n = 0
        while not stop.is_set():
            job_id = f"{name}{n}"
            n += 1
            try:
                store.create(job_id, SPEC, STATE, deadline=time.time() + 60)
            except RedisError as exc:
                refused[name].append(f"{type(exc).__name__}")
                time.sleep(0.05)
                continue
            answered[name].append(job_id)
            time.sleep(0.002)

    threads = [
        threading.Thread(target=submit, args=("waits", waits)),
        threading.Thread(target=submit, args=("blind", blind)),
    ]
    for thread in threads:
        thread.start()
    try:
        time.sleep(0.5)
        new = sentinels.failover()[1]
        time.sleep(1.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    sentinels.wait_settled(new)
    kept = {name: exists_on(sentinels, new, waits, ids) for name, ids in answered.items()}
    lost = {name: len(answered[name]) - len(kept[name]) for name in answered}
    print(
        f"\nanswered {len(answered['waits'])} / {len(answered['blind'])}, refused "
        f"{len(refused['waits'])} / {len(refused['blind'])}, lost {lost['waits']} / "
        f"{lost['blind']} (waiting for a replica / not)"
    )
    assert len(answered["waits"]) > 20
    assert kept["waits"] == set(answered["waits"]), sorted(set(answered["waits"]) - kept["waits"])
    waits.close()
    blind.close()


def test_sentinels_that_ask_for_a_password_of_their_own(tmp_path: Path) -> None:
    """``sentinel_password`` in the URL's query is the Sentinels' (the URL's login stays
    the data nodes'): the store finds its master through Sentinels that ask for one."""
    with redis_sentinel(tmp_path / "guarded", password="s3n&tinel") as guarded:
        assert "sentinel_password=s3n%26tinel" in guarded.url
        store = JobStore.from_url(guarded.url, "continuum-test:")
        assert store.create("g1", SPEC, STATE, deadline=time.time() + 60)
        assert exists_on(guarded, guarded.replica()[1], store, ["g1"]) == {"g1"}
        store.close()
        with (  # the Sentinels do ask: without it, no answer
            Redis(port=guarded.sentinel_ports[0], socket_timeout=5) as bare,
            pytest.raises(RedisError, match=r"authenticated|Authentication required"),
        ):
            bare.sentinel_get_master_addr_by_name(SERVICE)


def test_a_master_that_never_took_the_jobs_does_not_confirm_them(
    sentinels: Sentinels, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's client moves to another master between writing the jobs and waiting
    for the replicas (it followed a failover): there the replica acknowledges, but the
    jobs are not there. The wait counts them where it waits, and writes them again."""
    with EmbeddedRedis(tmp_path / "old-master") as old_server:
        client = Redis.from_url(old_server.url)
        store = JobStore(client, "continuum-test:", durability=Durability(1, wait_s=10))
        first, calls = store._create_once, list[list[bool]]()
        master = sentinels.master()

        def create_then_follow(jobs: Sequence[NewJob], batch: str | None) -> list[bool]:
            made = first(jobs, batch)
            calls.append(made)
            if len(calls) == 1:  # what the store's pool does when the Sentinels name another
                pool = client.connection_pool
                pool.connection_kwargs.update(host=master[0], port=master[1], password=None)
                pool.disconnect()
                pool.reset()
            return made

        monkeypatch.setattr(store, "_create_once", create_then_follow)
        assert store.create_jobs([NewJob("moved", SPEC, STATE, time.time() + 60)]) == [True]
        assert len(calls) == 2  # written again, on the master the replica follows
        assert exists_on(sentinels, sentinels.replica()[1], store, ["moved"]) == {"moved"}
        client.close()
