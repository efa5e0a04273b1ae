"""The crash budget and the kept step, one iteration at a time on a real Redis: an attempt
is charged when it takes the lease (so a lost worker, or a failure Redis would not let us
record, still counts), a deferral is not, and a reply whose commit failed is committed by
the next attempt instead of being bought again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError

from core import JobSpec, start
from core.models import OutputFormat
from sim.app import make_transport
from sim.model import SimModel, SimOptions
from tests.integration.test_iteration import PROMPT, make_runtime, submit
from workers.calls import ProviderPool
from workers.embedded import EmbeddedRedis
from workers.iteration import MAX_CRASHES, JobFailed, crash_delay, run_iteration
from workers.providers.profiles import Profile
from workers.runtime import Runtime
from workers.store import CommitResult, JobStatus

MODEL = "sim:format=text,size=3000"


def metered(
    rt: Runtime, sim: SimModel, during_call: Callable[[], None] = lambda: None
) -> list[int]:
    """Serve ``rt``'s model through a transport that counts the calls (and runs
    ``during_call`` inside each); returns the counter, a one-item list."""
    calls = [0]
    inner = make_transport(model=sim)

    def handle(request: httpx.Request) -> httpx.Response:
        calls[0] += 1
        during_call()
        return inner.handle_request(request)

    profile = Profile(name="sim", kind="openai", base_url="http://sim/v1")
    rt.pool = ProviderPool(
        {"sim": profile}, env={}, transports={"sim": httpx.MockTransport(handle)}
    )
    return calls


def test_a_reply_whose_commit_failed_is_committed_later_not_bought_again(
    redis_client: Redis, redis_prefix: str
) -> None:
    """The output key holds a hash: two attempts raise WRONGTYPE at the commit, the first
    keeps its step. The key repaired, the third attempt commits that step without a call."""
    sim = SimModel(SimOptions(seed=4))
    rt = make_runtime(redis_client, redis_prefix, sim)
    calls = metered(rt, sim)
    submit(rt, "kept", MODEL, fmt="text")
    out = rt.store.keys.output("kept")
    redis_client.hset(out, "not", "a string")
    sent: list[tuple[str, int, float, str]] = []
    for attempt in (1, 2):
        with pytest.raises(Exception, match="WRONGTYPE"):
            run_iteration(rt, "kept", 0, lambda *a: sent.append(a))
        assert sent[-1][:3] == ("kept", 0, crash_delay(attempt, cap=300.0))
    assert calls == [1] and rt.store.kept_step("kept", 0) is not None
    redis_client.delete(out)
    result = run_iteration(rt, "kept", 0, lambda *a: sent.append(a))
    assert result["commit"] == "committed" and result["reused_step"] is True
    assert calls == [1] and rt.store.commits("kept") == {0: 1}
    assert rt.store.kept_step("kept", 0) is None and len(rt.store.output("kept")) > 100
    nxt = run_iteration(rt, "kept", 1, lambda *a: None)  # the chain goes on as usual
    assert nxt["commit"] == "committed" and "reused_step" not in nxt and calls == [2]


def test_attempts_lost_with_their_workers_count_and_the_next_one_fails_the_job(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Five attempts took the lease and never finished (their workers were killed): the
    sixth fails the job with the reason and calls no model."""
    sim = SimModel(SimOptions(seed=1))
    rt = make_runtime(redis_client, redis_prefix, sim)
    calls = metered(rt, sim)
    submit(rt, "lost", MODEL, fmt="text")
    for n in range(MAX_CRASHES):
        assert rt.store.start_attempt("lost", 0, f"dead-{n}", 30) == n + 1
        redis_client.delete(rt.store.keys.lease("lost"))  # its lease ran out
    with pytest.raises(JobFailed, match="did not finish in 5 attempts"):
        run_iteration(rt, "lost", 0, lambda *a: None)
    record = rt.store.load("lost")
    assert record is not None and record.status is JobStatus.FAILED
    assert "none recorded" in (record.error or "") and calls == [0]
    assert not redis_client.exists(rt.store.keys.lease("lost"))


def test_deferrals_give_their_charge_back(redis_client: Redis, redis_prefix: str) -> None:
    """Over the provider's rate limit an iteration is deferred again and again: more
    deferrals than the crash budget do not fail the job."""
    sim = SimModel(SimOptions(seed=2))
    rt = make_runtime(redis_client, redis_prefix, sim, rate_limit_per_s=0.2)
    submit(rt, "first", MODEL, fmt="text")
    submit(rt, "waits", MODEL, fmt="text")
    assert run_iteration(rt, "first", 0, lambda *a: None)["commit"] == "committed"
    for _ in range(MAX_CRASHES + 2):
        assert run_iteration(rt, "waits", 0, lambda *a: None)["reason"] == "provider rate limit"
    record = rt.store.load("waits")
    assert record is not None and record.status is JobStatus.QUEUED
    assert redis_client.hget(rt.store.keys.job("waits"), "attempts") == b"0"


MAXMEMORY = 16 * 1024 * 1024


@pytest.fixture
def full_redis(tmp_path: Path) -> Iterator[Redis]:
    """A private Redis with ``maxmemory`` and ``noeviction``: writes are refused when full."""
    server = EmbeddedRedis(
        tmp_path / "redis", config={"maxmemory": str(MAXMEMORY), "maxmemory-policy": "noeviction"}
    ).start()
    client = Redis.from_url(server.url)
    try:
        yield client
    finally:
        client.close()
        server.stop()


#: One script appends this much at once: a script whose first write Redis takes may go on
#: past ``maxmemory`` (its writes are atomic), leaving Redis well over it, not just past it.
_FILL = "for _ = 1, tonumber(ARGV[2]) do redis.call('APPEND', KEYS[1], ARGV[1]) end"


def fill(client: Redis, key: str) -> None:
    """Fill Redis to a few megabytes past ``maxmemory``: filled only just past it, a client
    buffer freed meanwhile made room for a commit retried after a refusal (the test
    failed now and then)."""
    chunk = 65536
    client.eval(_FILL, 1, key, b"x" * chunk, (MAXMEMORY + 4 * 1024 * 1024) // chunk)
    with pytest.raises(OutOfMemoryError):
        client.append(key, b"x")


def test_redis_full_after_every_call_pays_for_at_most_the_budget(full_redis: Redis) -> None:
    """At the edge of ``maxmemory``, each attempt gets its lease, pays, and then Redis is
    full until its patience for the commit runs out: nothing the crash path writes is
    taken. The charge taken with each lease still counts: five paid calls at most, then
    the job fails (once Redis takes the write) without a sixth."""
    sim = SimModel(SimOptions(seed=5))
    rt = make_runtime(full_redis, "edge:", sim)
    rt.settings.max_countdown_s = 0.3  # the commit's patience: short here
    calls = metered(rt, sim, during_call=lambda: fill(full_redis, "edge:filler"))
    submit(rt, "edge", MODEL, fmt="text")
    for _ in range(MAX_CRASHES):
        started = time.monotonic()
        with pytest.raises(Exception, match="OOM"):
            run_iteration(rt, "edge", 0, lambda *a: None)
        assert time.monotonic() - started < 3
        full_redis.delete("edge:filler")  # room again, for the next lease
    assert calls == [MAX_CRASHES]
    record = rt.store.load("edge")
    assert record is not None and record.status is JobStatus.QUEUED  # the fail was refused too
    with pytest.raises(JobFailed, match="did not finish in 5 attempts"):
        run_iteration(rt, "edge", 0, lambda *a: None)
    assert calls == [MAX_CRASHES]
    record = rt.store.load("edge")
    assert record is not None and record.status is JobStatus.FAILED


def test_a_commit_refused_for_a_moment_waits_with_the_reply_in_hand(
    full_redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis is full while the reply arrives and has room again half a second later: the
    same attempt commits it; one call, no crash charged."""
    sim = SimModel(SimOptions(seed=6))
    rt = make_runtime(full_redis, "brief:", sim)

    def full_for_a_moment() -> None:
        fill(full_redis, "brief:filler")
        threading.Timer(0.5, lambda: full_redis.delete("brief:filler")).start()

    calls = metered(rt, sim, during_call=full_for_a_moment)
    submit(rt, "brief", MODEL, fmt="text")
    result = run_iteration(rt, "brief", 0, lambda *a: None)
    assert result["commit"] == "committed" and calls == [1]
    assert rt.store.commits("brief") == {0: 1}
    assert "Redis refused the commit of iteration 0" in caplog.text  # it did wait
    assert full_redis.hget(rt.store.keys.job("brief"), "attempts") == b"1"


# -- the crash budget fails only the iteration it was counted for ----------------------------


def late_commit(rt: Runtime, job_id: str) -> None:
    """Iteration 0's commit by an earlier attempt that was paused past its lease, not dead
    (the commit is a compare-and-set on the iteration, not on the lease): the job moves on."""
    record = rt.store.load(job_id)
    assert record is not None
    code = rt.store.commit(
        job_id,
        expected_iteration=0,
        state=record.state,
        append="late",
        replace=False,
        status=JobStatus.RUNNING,
        deadline=time.time() + 60,
        lease_token="paused",
        summary={},
    )
    assert code is CommitResult.COMMITTED


def lost_attempts(rt: Runtime, job_id: str, n: int) -> None:
    for i in range(n):
        assert rt.store.start_attempt(job_id, 0, f"lost-{i}", 30) == i + 1
        rt.store.redis.delete(rt.store.keys.lease(job_id))  # its lease ran out


def test_the_last_crash_does_not_fail_a_job_that_moved_on(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Four attempts at iteration 0 were lost; the fifth, the budget's last, is in its model
    call when an earlier attempt's late commit moves the job to iteration 1; then the call
    raises. The job, at iteration 1, is not failed (it was: the fail took no iteration)."""
    sim = SimModel(SimOptions(seed=1))
    rt = make_runtime(redis_client, redis_prefix, sim)
    submit(rt, "moved", MODEL, fmt="text")
    lost_attempts(rt, "moved", MAX_CRASHES - 1)

    def moved_on_then_raise() -> None:
        late_commit(rt, "moved")
        raise RuntimeError("the call failed")

    metered(rt, sim, during_call=moved_on_then_raise)
    with pytest.raises(RuntimeError, match="the call failed"):
        run_iteration(rt, "moved", 0, lambda *a: None)
    record = rt.store.load("moved")
    assert record is not None and record.error is None
    assert record.status is JobStatus.RUNNING and record.iteration == 1
    assert rt.store.output("moved") == "late"


def test_a_spent_budget_does_not_fail_a_job_that_moved_on(
    redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five attempts at iteration 0 were lost; the sixth finds the budget spent, and an
    earlier attempt's late commit lands just before it fails the job: the job, at
    iteration 1, is not failed, and the sixth attempt ends skipped, calling no model."""
    sim = SimModel(SimOptions(seed=1))
    rt = make_runtime(redis_client, redis_prefix, sim)
    calls = metered(rt, sim)
    submit(rt, "moved", MODEL, fmt="text")
    lost_attempts(rt, "moved", MAX_CRASHES)
    attempt_error = rt.store.attempt_error

    def moved_on_meanwhile(job_id: str) -> str | None:
        late_commit(rt, job_id)
        return attempt_error(job_id)

    monkeypatch.setattr(rt.store, "attempt_error", moved_on_meanwhile)
    result = run_iteration(rt, "moved", 0, lambda *a: None)
    assert "moved on" in str(result["skipped"]) and calls == [0]
    record = rt.store.load("moved")
    assert record is not None and record.error is None
    assert record.status is JobStatus.RUNNING and record.iteration == 1


# -- a commit whose reply was lost ------------------------------------------------------------


def reply_lost_once(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[CommitResult]:
    """The store's first commit lands in Redis, then its reply is lost (the connection
    drops); the worker tries again and finds the iteration committed. Returns what the
    first one wrote (its code), once it ran."""
    commit = rt.store.commit
    landed: list[CommitResult] = []

    def lost(*args: object, **kwargs: object) -> CommitResult:
        code = commit(*args, **kwargs)  # type: ignore[arg-type]
        if landed:
            return code
        landed.append(code)
        raise RedisConnectionError("Connection closed by server.")

    monkeypatch.setattr(rt.store, "commit", lost)
    return landed


def test_a_commit_whose_reply_was_lost_chains_the_next_iteration_at_once(
    redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry of the commit finds it stale, because it was its own: the worker sees its
    step in the job and sends iteration 1 itself (it sent nothing, and the job waited for
    the watchdog, ``queue_grace_s`` later)."""
    sim = SimModel(SimOptions(seed=1))
    rt = make_runtime(redis_client, redis_prefix, sim)
    submit(rt, "lost", MODEL, fmt="text")
    landed = reply_lost_once(rt, monkeypatch)
    sent: list[tuple[str, int, float, str]] = []
    result = run_iteration(rt, "lost", 0, lambda *a: sent.append(a))
    assert landed == [CommitResult.COMMITTED]
    assert result["commit"] == "committed" and sent == [("lost", 1, 0.0, "continuum")]
    assert rt.store.commits("lost") == {0: 1}


def test_a_final_commit_whose_reply_was_lost_sends_the_callback_at_once(
    redis_client: Redis, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for the commit that ends the job: its callback task is sent at once (it
    waited for the watchdog's outbox sweep)."""
    sim = SimModel(SimOptions(seed=1))
    rt = make_runtime(redis_client, redis_prefix, sim)
    spec = JobSpec(
        prompt=PROMPT,
        format=OutputFormat.TEXT,
        model="sim:format=text,size=100",
        providers=["sim"],
        max_output_tokens=300,
        callback_url="http://127.0.0.1:9/hook",
    )
    state = start(spec).model_dump_json()
    rt.store.create("short", spec.model_dump_json(), state, deadline=time.time() + 60)
    landed = reply_lost_once(rt, monkeypatch)
    notified: list[str] = []
    result = run_iteration(rt, "short", 0, lambda *a: None, notified.append)
    assert landed == [CommitResult.COMMITTED] and result["status"] == "succeeded"
    assert result["commit"] == "committed" and notified == ["short"]
