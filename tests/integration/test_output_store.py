"""A job's output in chunks on a real Redis: appended and replaced atomically with the
commit, read a part at a time, never cutting a character, past Redis's cap on one value,
and still read (then migrated) in the layout before chunks: one string."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from redis import Redis

import workers.store as store_module
from workers import callbacks
from workers.embedded import EmbeddedRedis
from workers.errors import OutputChanged
from workers.store import JobStatus, JobStore

CHUNK = 64
#: Texts with 2-, 3- and 4-byte characters, so chunk edges fall inside them.
PIECES = ["abc", "é" * 41, "漢字テスト" * 9, "🙂" * 23, "x" * 200, "naïve café\n", "ẞ" * 70]


def started(store: JobStore, job_id: str) -> None:
    store.create(job_id, "{}", "{}", deadline=time.time() + 60)


def commit(
    store: JobStore, job_id: str, iteration: int, append: str, *, replace: bool = False
) -> None:
    store.commit(
        job_id,
        expected_iteration=iteration,
        state="{}",
        append=append,
        replace=replace,
        status=JobStatus.RUNNING,
        deadline=time.time() + 60,
        lease_token="t",
        summary={},
    )


def chunks(store: JobStore, job_id: str) -> list[bytes]:
    return cast(list[bytes], store.redis.lrange(store.keys.output(job_id), 0, -1))


def test_commits_append_in_chunks_that_never_cut_a_character(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Every chunk holds at most the configured bytes and is UTF-8 by itself; their
    concatenation is exactly the text committed; the length is kept (O(1))."""
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=CHUNK)
    started(store, "j")
    for i, piece in enumerate(PIECES * 3):
        commit(store, "j", i, piece)
    want = "".join(PIECES * 3)
    parts = chunks(store, "j")
    assert len(parts) > len(want.encode()) // CHUNK
    assert all(len(p) <= CHUNK for p in parts)
    assert [p.decode("utf-8") for p in parts]  # each one whole characters
    assert b"".join(parts) == want.encode()
    assert store.output("j") == want
    assert store.output_size("j") == len(want.encode())
    record = store.load("j")
    assert record is not None and store.final_output(record) is None  # still running


def test_a_replacement_rewrites_every_chunk(redis_client: Redis, redis_prefix: str) -> None:
    """``replace`` (a repair) drops the old chunks and cuts the new text the same way."""
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=CHUNK)
    started(store, "j")
    commit(store, "j", 0, "".join(PIECES))
    new = "🙂é" * 100
    commit(store, "j", 1, new, replace=True)
    assert store.output("j") == new and store.output_size("j") == len(new.encode())
    assert all(len(p) <= CHUNK for p in chunks(store, "j"))
    commit(store, "j", 2, "", replace=True)
    assert store.output("j") == "" and store.output_size("j") == 0


def test_reads_take_a_range_and_a_number_of_characters(
    redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``iter_output`` yields bytes ``start`` to ``stop`` in parts of ``READ_BYTES``;
    ``iter_text`` decodes across parts and stops after ``chars`` characters."""
    monkeypatch.setattr(store_module, "READ_BYTES", 7)
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=CHUNK)
    started(store, "j")
    for i, piece in enumerate(PIECES):
        commit(store, "j", i, piece)
    data = "".join(PIECES).encode()
    parts = list(store.iter_output("j"))
    assert b"".join(parts) == data and max(len(p) for p in parts) == 7
    assert b"".join(store.iter_output("j", 100, 300)) == data[100:300]
    assert b"".join(store.iter_output("j", 250)) == data[250:]
    text = "".join(PIECES)
    assert "".join(store.iter_text("j", chars=150)) == text[:150]
    assert "".join(store.iter_text("j", chars=0)) == ""
    assert "".join(store.iter_text("j", stop=len(data))) == text
    with pytest.raises(OutputChanged):  # asked for more than there is
        list(store.iter_output("j", stop=len(data) + 1))
    assert list(store.iter_output("missing")) == [] and store.output_size("missing") == 0


def test_a_reader_follows_commits_and_stops_at_a_replacement(
    redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commits that land while a reader is halfway (filling the chunk it reads, pushing
    new ones) only add after what it has read; a replacement makes it raise, as does the
    job's deletion (its retention)."""
    monkeypatch.setattr(store_module, "READ_BYTES", 10)
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=CHUNK)
    started(store, "j")
    commit(store, "j", 0, "a" * 30)
    reader: Iterator[bytes] = store.iter_output("j")
    got = [next(reader), next(reader)]
    for i, piece in enumerate(PIECES, start=1):
        commit(store, "j", i, piece)
    got.extend(reader)
    assert b"".join(got).decode() == "a" * 30 + "".join(PIECES)

    reader = store.iter_output("j")
    next(reader)
    commit(store, "j", len(PIECES) + 1, "other", replace=True)
    with pytest.raises(OutputChanged):
        list(reader)
    reader = store.iter_output("j")
    next(reader)
    redis_client.delete(*store.keys.job_keys("j"))
    with pytest.raises(OutputChanged):
        list(reader)


def test_a_read_spans_chunks_and_stops_where_the_next_commit_writes(
    redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One read takes up to ``READ_BYTES`` across as many chunks as that spans. A read
    that ends at the end of a last chunk with room left stays there: the next commit
    fills that chunk first, and the reader gets those bytes too."""
    monkeypatch.setattr(store_module, "READ_BYTES", 1000)
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=CHUNK)
    started(store, "j")
    commit(store, "j", 0, "a" * 100)  # a chunk full, one with room for 28 bytes
    reader = store.iter_output("j")
    assert next(reader) == b"a" * 100
    for i, piece in enumerate(PIECES * 3, start=1):
        commit(store, "j", i, piece)
    rest = list(reader)
    assert b"".join(rest) == "".join(PIECES * 3).encode()
    assert len(rest[0]) == 1000  # across 16 chunks or more


def test_reads_are_exact_across_chunks_of_every_size(
    redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of several sizes (the chunk size changed between commits): a read of any
    size from any offset gives exactly those bytes."""
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=CHUNK)
    larger = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=16 * CHUNK)
    started(store, "j")
    for i, piece in enumerate(PIECES * 2):
        commit(store if i % 3 else larger, "j", i, piece * 3)
    data = "".join(piece * 3 for piece in PIECES * 2).encode()
    assert len({len(p) for p in chunks(store, "j")}) > 5
    for most in (1, 7, 64, 100, 1500, 100_000):
        monkeypatch.setattr(store_module, "READ_BYTES", most)
        for start in (0, 1, 63, 64, 65, 1000, len(data) - 1):
            assert b"".join(store.iter_output("j", start)) == data[start:], (most, start)
            stop = min(len(data), start + 777)
            assert b"".join(store.iter_output("j", start, stop)) == data[start:stop]


def test_a_long_output_in_small_chunks_reads_in_few_round_trips(
    redis_client: Redis, redis_prefix: str
) -> None:
    """2 MB in 64-byte chunks (32,000 of them) is read in parts of ``READ_BYTES``, each one
    round trip, not one per chunk (that took 3.2 s; this about 0.05 s)."""
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=CHUNK)
    started(store, "long")
    piece = ("a" * 99 + "é漢🙂\n") * 300  # ~32 KB
    for i in range(64):
        commit(store, "long", i, piece)
    size = store.output_size("long")
    assert size > 2_000_000 and len(chunks(store, "long")) > size // CHUNK
    reads = 0
    read = store._read

    def counted(*args: Any) -> list[Any]:
        nonlocal reads
        reads += 1
        return read(*args)

    store._read = counted  # type: ignore[method-assign, assignment]
    began = time.perf_counter()
    assert store.output("long") == piece * 64
    assert time.perf_counter() - began < 5
    assert reads <= size // store_module.READ_BYTES + 2  # the last read finds the end


def test_the_layout_before_chunks_is_read_then_cut_into_chunks(
    redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job written by an older version (its output one string) reads the same; its next
    commit cuts the string into chunks, and a reader halfway through it goes on."""
    monkeypatch.setattr(store_module, "READ_BYTES", 10)
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=CHUNK)
    started(store, "old")
    old = "".join(PIECES)
    redis_client.set(store.keys.output("old"), old.encode())
    assert store.output("old") == old and store.output_size("old") == len(old.encode())
    assert "".join(store.iter_text("old", chars=20)) == old[:20]
    reader = store.iter_output("old")
    first = next(reader)
    commit(store, "old", 0, "🙂 and more")
    assert redis_client.type(store.keys.output("old")) == b"list"
    assert all(len(p) <= CHUNK for p in chunks(store, "old"))
    assert (first + b"".join(reader)).decode() == old + "🙂 and more"
    assert store.output("old") == old + "🙂 and more"
    assert store.output_size("old") == len((old + "🙂 and more").encode())


def test_an_output_past_the_cap_on_one_value(tmp_path: Path) -> None:
    """With Redis's cap on one value set to its least (1 MB, ``proto-max-bulk-len``; 512 MB
    by default), a single string cannot pass it, and a job's output of 2.5 MB in 64 KiB
    chunks does: the output is bounded by the store, not by one value."""
    with EmbeddedRedis(tmp_path / "redis", config={"proto-max-bulk-len": "1mb"}) as server:
        client = Redis.from_url(server.url)
        try:
            client.set("single", b"x" * 1000_000)
            with pytest.raises(redis.ResponseError, match="maximum allowed size"):
                client.append("single", b"x" * 100_000)
            store = JobStore(client, prefix="cap:", output_chunk_bytes=64 * 1024)
            started(store, "big")
            piece = ("a" * 999 + "é漢🙂\n") * 40  # ~40 KB
            for i in range(64):
                commit(store, "big", i, piece)
            size = len(piece.encode()) * 64
            assert size > 2_500_000
            assert store.output_size("big") == size
            assert max(len(p) for p in chunks(store, "big")) <= 64 * 1024
            assert store.output("big") == piece * 64
        finally:
            client.close()


def test_the_chunk_size_has_a_floor(redis_client: Redis, redis_prefix: str) -> None:
    with pytest.raises(ValueError, match="at least"):
        JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=3)


def test_a_callback_leaves_out_a_result_over_its_cap(
    redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The callback body embeds a result up to ``MAX_RESULT_BYTES`` of output; a larger
    one is left out, the body saying its size and where to fetch it."""
    monkeypatch.setattr(callbacks, "MAX_RESULT_BYTES", 100)
    store = JobStore(redis_client, prefix=redis_prefix, output_chunk_bytes=CHUNK)
    for job_id, text in (("small", "é" * 50), ("large", "é" * 51)):
        started(store, job_id)
        store.commit(
            job_id,
            expected_iteration=0,
            state="{}",
            append=text,
            replace=False,
            status=JobStatus.SUCCEEDED,
            deadline=None,
            lease_token="t",
            summary={},
            result={"outcome": "succeeded", "reason": None, "prefix": len(text), "suffix": ""},
        )
    small, large = store.load("small"), store.load("large")
    assert small is not None and large is not None
    assert callbacks.payload(store, small)["result"] == "é" * 50
    body = callbacks.payload(store, large, "ev")
    assert body["result"] is None and body["event_id"] == "ev"
    assert body["result_omitted"] == {"bytes": 102, "path": "/v1/jobs/large/result"}


def test_a_stream_refuses_an_output_replaced_after_its_snapshot(
    redis_client: Redis, redis_prefix: str
) -> None:
    """What /output shows (a size and a suffix) belongs to one generation of the output: a
    replacement between the snapshot and the first read is refused, never served as a mix
    of the old length and the new text."""
    from api.output import committed, snapshot, stream  # noqa: PLC0415

    store = JobStore(redis_client, prefix=redis_prefix)
    started(store, "snap")
    commit(store, "snap", 0, "a" * 100)
    snap = snapshot(store, "snap")
    assert snap is not None and snap.size == 100
    shown = committed(snap)
    assert shown is not None
    commit(store, "snap", 1, "b" * 100, replace=True)  # a repair rewrites the output
    with pytest.raises(OutputChanged):
        "".join(stream(store, shown))
    fresh = committed(snapshot(store, "snap") or snap)
    assert fresh is not None and "".join(stream(store, fresh)) == "b" * 100
