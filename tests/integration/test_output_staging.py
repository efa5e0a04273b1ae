"""Texts too large for one command, on a Redis whose cap on one argument is its least
(``proto-max-bulk-len`` 1 MB; 512 MB by default): a replacement or an append of a few MB
is staged in parts and committed whole, byte for byte; a refused commit (stale, no such
job, raised) leaves neither the text nor its staging; a stage never committed expires."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import cast

import pytest
import redis
from redis import Redis

import workers.store as store_module
from workers.embedded import EmbeddedRedis
from workers.errors import StagingLost
from workers.iteration import refused_for_now
from workers.keys import Keys
from workers.store import CommitResult, JobStatus, JobStore

CHUNK = 4096
#: About 3 MB of 1- to 4-byte characters, so part and chunk edges fall inside them.
BIG = ("a" * 997 + "é漢🙂\n") * 3000
OLD = "the output before, " * 10


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Redis]:
    """A Redis of this module's own that refuses any argument over 1 MB."""
    path = tmp_path_factory.mktemp("capped") / "redis"
    with EmbeddedRedis(path, config={"proto-max-bulk-len": "1mb"}) as server:
        client = Redis.from_url(server.url)
        yield client
        client.close()


@pytest.fixture
def store(capped: Redis, request: pytest.FixtureRequest) -> JobStore:
    prefix = f"{request.node.name[:40]}:"
    s = JobStore(capped, prefix=prefix, output_chunk_bytes=CHUNK)
    s.create("j", "{}", "{}", deadline=time.time() + 60)
    assert commit(s, 0, OLD) is CommitResult.COMMITTED
    return s


def commit(
    store: JobStore,
    iteration: int,
    text: str,
    *,
    replace: bool = False,
    status: JobStatus = JobStatus.RUNNING,
    job_id: str = "j",
) -> CommitResult:
    return store.commit(
        job_id,
        expected_iteration=iteration,
        state="{}",
        append=text,
        replace=replace,
        status=status,
        deadline=None if status is not JobStatus.RUNNING else time.time() + 60,
        lease_token="t",
        summary={},
        retention_s=3600,
    )


def stored(store: JobStore, job_id: str = "j") -> bytes:
    return b"".join(store.iter_output(job_id))


def staging_keys(store: JobStore) -> list[bytes]:
    return list(store.redis.scan_iter(match=f"{store.keys.prefix}{{*}}staging:*"))


def check_chunks(store: JobStore) -> None:
    chunks = cast(list[bytes], store.redis.lrange(store.keys.output("j"), 0, -1))
    assert all(0 < len(chunk) <= CHUNK for chunk in chunks)
    assert all(chunk.decode("utf-8") for chunk in chunks)  # whole characters each


def test_this_redis_refuses_one_argument_of_the_size_staged(capped: Redis) -> None:
    """What a commit of the text in one argument met: Redis closes the connection on it,
    which the worker cannot tell from Redis being away (it tried again until its budget
    ran out). Its protocol error, when it gets through, is final."""
    with pytest.raises(redis.RedisError) as refused:
        capped.set("too-large", BIG.encode()[: 1024 * 1024 + 1])
    assert capped.ping()
    assert isinstance(refused.value, redis.ConnectionError) == refused_for_now(refused.value)
    assert not refused_for_now(redis.ResponseError("Protocol error: invalid bulk length"))


def test_a_replacement_of_megabytes_is_staged_and_committed_whole(store: JobStore) -> None:
    assert len(BIG.encode()) > 2 * 1024 * 1024  # twice the cap on one argument
    assert commit(store, 1, BIG, replace=True) is CommitResult.COMMITTED
    assert stored(store) == BIG.encode()
    assert store.output_version("j") == (len(BIG.encode()), "1")
    check_chunks(store)
    assert store.redis.pttl(store.keys.output("j")) == -1  # not the staging list's TTL
    assert staging_keys(store) == []
    assert commit(store, 2, "🙂 after") is CommitResult.COMMITTED
    assert store.output("j") == BIG + "🙂 after"


def test_an_append_of_megabytes_is_staged_after_the_output(store: JobStore) -> None:
    assert commit(store, 1, BIG) is CommitResult.COMMITTED
    assert commit(store, 2, "é and more") is CommitResult.COMMITTED
    want = (OLD + BIG + "é and more").encode()
    assert stored(store) == want
    assert store.output_version("j") == (len(want), "0")
    check_chunks(store)
    assert staging_keys(store) == []


def test_a_staged_append_to_the_layout_before_chunks(store: JobStore) -> None:
    """An output still one string (written by an older version) is cut into chunks, then
    the staged ones follow it."""
    store.redis.set(store.keys.output("j"), OLD.encode())
    assert commit(store, 1, BIG) is CommitResult.COMMITTED
    assert stored(store) == (OLD + BIG).encode()
    assert store.output_size("j") == len((OLD + BIG).encode())
    check_chunks(store)


def test_a_staged_ending_expires_with_its_job(store: JobStore) -> None:
    """The output taken from the staging list gets the job's retention, not its TTL."""
    assert commit(store, 1, BIG, replace=True, status=JobStatus.SUCCEEDED) is (
        CommitResult.COMMITTED
    )
    assert 3590_000 < store.redis.pttl(store.keys.output("j")) <= 3600_000
    assert stored(store) == BIG.encode()


def test_a_refused_commit_leaves_the_output_and_no_staging(store: JobStore) -> None:
    """Stale (the iteration was committed), no such job, or raised in the script (the
    output is of another type): nothing changes and the staged text is deleted."""
    assert commit(store, 0, BIG, replace=True) is CommitResult.STALE
    assert commit(store, 0, BIG, job_id="missing") is CommitResult.MISSING
    assert stored(store) == OLD.encode() and store.output_version("j")[1] == "0"
    assert staging_keys(store) == []
    store.redis.hset(store.keys.output("other"), "not", "a list")
    store.create("other", "{}", "{}", deadline=time.time() + 60)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        commit(store, 0, BIG, job_id="other")
    assert staging_keys(store) == []
    record = store.load("other")
    assert record is not None and record.iteration == 0


def test_a_stage_never_committed_expires(store: JobStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies after staging leaves its parts for ``STAGING_TTL_S`` at most;
    a commit that comes after they expired commits nothing (``StagingLost``)."""
    monkeypatch.setattr(store_module, "STAGING_TTL_S", 0.3)
    key = store.keys.staging(0, "crashed")
    store._stage(key, BIG.encode())
    assert store.redis.llen(key) > len(BIG.encode()) // CHUNK
    assert 0 < store.redis.pttl(key) <= 300
    time.sleep(0.5)
    assert not store.redis.exists(key)

    stage = store._stage

    def stalled(staging: str, data: bytes) -> str:
        mark = stage(staging, data)
        time.sleep(0.5)  # the worker stalls past the TTL before its commit
        return mark

    monkeypatch.setattr(store, "_stage", stalled)
    with pytest.raises(StagingLost):
        commit(store, 1, BIG, replace=True)
    assert stored(store) == OLD.encode()
    record = store.load("j")
    assert record is not None and record.iteration == 1
    assert staging_keys(store) == []
    assert refused_for_now(StagingLost("lost"))  # the worker's next try stages it anew


def test_a_part_sent_twice_is_not_staged_twice(store: JobStore) -> None:
    """A part resent (its reply was lost) finds the list past the mark it expects: it
    writes nothing, and the commit raises rather than commit the text with it twice."""
    key = store.keys.staging(0, "twice")
    ttl = 60_000
    mark = store._stage_part(keys=[key], args=["é" * 100, ttl, "0:0"])
    assert store._stage_part(keys=[key], args=["é" * 100, ttl, "0:0"]) == b""
    assert b"".join(cast(list[bytes], store.redis.lrange(key, 0, -1))) == ("é" * 100).encode()
    assert store._stage_part(keys=[key], args=["🙂", ttl, mark]) not in (b"", mark)
    store.redis.delete(key)


def test_parts_end_between_characters() -> None:
    """Each staged part is at most ``STAGE_BYTES`` and UTF-8 by itself, so it is cut into
    chunks as the whole text would be."""
    data = BIG.encode()
    parts = list(store_module._parts(data))
    assert b"".join(parts) == data
    assert all(len(p) <= store_module.STAGE_BYTES for p in parts)
    assert all(bytes(p).decode("utf-8") for p in parts)
    assert store_module._to_stage("x" * store_module.STAGE_BYTES) is None
    assert store_module._to_stage("é" * store_module.STAGE_BYTES) is not None


def test_a_staging_key_is_named_by_its_commit() -> None:
    """A staging key is one commit's, named by a fresh id, never a job's, in its job's
    shard (the slot of the job's keys, which its commit takes it into)."""
    assert Keys("p:").staging(7, "abc") == "p:{7}staging:abc"
    with pytest.raises(ValueError):
        Keys("p:").staging(7, "a:b")
