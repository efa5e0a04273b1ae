"""One iteration per step on a real Redis: a chain of steps gives the exact document,
and duplicated, late or concurrent deliveries commit each iteration exactly once."""

from __future__ import annotations

import json
import threading
import time
from collections import deque

import httpx
import pytest
from redis import Redis

from core import JobSpec, start
from core.models import ContinuationConfig, OutputFormat
from sim.app import make_transport
from sim.model import SimModel, SimOptions
from workers.calls import ProviderPool
from workers.iteration import MAX_CRASHES, MAX_DEFERRALS, JobFailed, run_iteration
from workers.providers.profiles import Profile
from workers.ratelimit import TokenBucket
from workers.runtime import Runtime
from workers.settings import Settings
from workers.store import JobStatus, JobStore

PROMPT = "List the exhibits of the museum"


def make_runtime(client: Redis, prefix: str, sim: SimModel, **profile: object) -> Runtime:
    sim_profile = Profile.model_validate(
        {"name": "sim", "kind": "openai", "base_url": "http://sim/v1", **profile}
    )
    pool = ProviderPool({"sim": sim_profile}, env={}, transports={"sim": make_transport(model=sim)})
    settings = Settings(lease_ttl_s=5, queue_grace_s=5)
    store = JobStore(client, prefix=prefix)
    return Runtime(settings, store, pool, TokenBucket(store))


def submit(rt: Runtime, job_id: str, model: str, fmt: str = "json") -> None:
    spec = JobSpec(
        prompt=PROMPT,
        format=OutputFormat(fmt),
        model=model,
        providers=["sim"],
        max_output_tokens=300,
        continuation=ContinuationConfig(max_attempts=100),
    )
    rt.store.create(
        job_id, spec.model_dump_json(), start(spec).model_dump_json(), deadline=time.time() + 60
    )


def drain(rt: Runtime, job_id: str, queue: deque[tuple[str, int, float]]) -> int:
    """Run queued iterations until the chain ends; return how many ran."""
    steps = 0
    while queue:
        jid, iteration, _ = queue.popleft()
        run_iteration(rt, jid, iteration, lambda j, i, c, q: queue.append((j, i, c)))
        steps += 1
    return steps


def test_chained_iterations_build_the_exact_document(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Each step is one model call, one merge, one commit; the chain ends with the target."""
    sim = SimModel(SimOptions(seed=3))
    rt = make_runtime(redis_client, redis_prefix, sim)
    model = "sim:format=json,size=6000,fence=0.3,prose=0.3"
    submit(rt, "job1", model)
    steps = drain(rt, "job1", deque([("job1", 0, 0.0)]))
    record = rt.store.load("job1")
    assert record is not None and record.status is JobStatus.SUCCEEDED
    assert record.result is not None and steps == record.iteration >= 4
    output = rt.store.output("job1")
    final = output[: record.result["prefix"]] + record.result["suffix"]
    target = sim.target_for({"prompt": PROMPT, "model": model})
    assert json.loads(final) == json.loads(target)
    assert set(rt.store.commits("job1").values()) == {1}


def test_duplicate_and_late_deliveries_are_no_ops(redis_client: Redis, redis_prefix: str) -> None:
    """Every message delivered twice (at once and again at the end): each iteration is
    still committed once, and the output is the same as without duplicates."""
    sim = SimModel(SimOptions(seed=5))
    rt = make_runtime(redis_client, redis_prefix, sim)
    model = "sim:format=text,size=5000"
    submit(rt, "dup", model, fmt="text")
    seen: list[tuple[str, int, float]] = []
    queue: deque[tuple[str, int, float]] = deque([("dup", 0, 0.0)])
    while queue:
        job, iteration, _ = queue.popleft()
        seen.append((job, iteration, 0.0))
        first = run_iteration(rt, job, iteration, lambda j, i, c, q: queue.append((j, i, c)))
        again = run_iteration(rt, job, iteration, lambda j, i, c, q: queue.append((j, i, c)))
        assert "commit" in first and "skipped" in again
    for job, iteration, _ in seen:  # late redeliveries of every message
        assert "skipped" in run_iteration(rt, job, iteration, lambda *a: None)
    assert rt.store.output("dup") == sim.target_for({"prompt": PROMPT, "model": model})
    assert set(rt.store.commits("dup").values()) == {1}


def test_concurrent_deliveries_commit_once(redis_client: Redis, redis_prefix: str) -> None:
    """The same iteration run by four threads at once: one runs it, the others skip."""
    sim = SimModel(SimOptions(seed=7, latency=0.2))
    rt = make_runtime(redis_client, redis_prefix, sim)
    submit(rt, "race", "sim:format=text,size=3000", fmt="text")
    results: list[dict[str, object]] = []
    nexts: list[int] = []

    def worker() -> None:
        results.append(run_iteration(rt, "race", 0, lambda j, i, c, q: nexts.append(i)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum("commit" in r for r in results) == 1
    assert nexts == [1]
    assert rt.store.commits("race") == {0: 1}


def test_cancelled_job_stops_at_its_next_iteration(redis_client: Redis, redis_prefix: str) -> None:
    sim = SimModel(SimOptions(seed=1))
    rt = make_runtime(redis_client, redis_prefix, sim)
    submit(rt, "c", "sim:format=text,size=5000", fmt="text")
    nexts: list[int] = []
    run_iteration(rt, "c", 0, lambda j, i, c, q: nexts.append(i))
    rt.store.cancel("c")
    result = run_iteration(rt, "c", nexts[0], lambda j, i, c, q: nexts.append(i))
    assert "cancelled" in str(result["skipped"]) and nexts == [1]


def test_over_the_rate_limit_an_iteration_is_deferred_not_run(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Two jobs on a profile limited to 2 calls/s, burst 1: the second job's iteration is
    sent again with a countdown of about 0.5 s, holding no slot, and committed nothing."""
    rt = make_runtime(
        redis_client,
        redis_prefix,
        SimModel(SimOptions(seed=2)),
        rate_limit_per_s=2.0,
        queue="sim-q",
    )
    submit(rt, "r1", "sim:format=text,size=3000", fmt="text")
    submit(rt, "r2", "sim:format=text,size=3000", fmt="text")
    sent: list[tuple[str, int, float, str]] = []
    first = run_iteration(rt, "r1", 0, lambda j, i, c, q: sent.append((j, i, c, q)))
    second = run_iteration(rt, "r2", 0, lambda j, i, c, q: sent.append((j, i, c, q)))
    assert first["commit"] == "committed" and "deferred_s" not in first
    assert second["reason"] == "provider rate limit" and 0.3 < second["deferred_s"] <= 0.5
    assert sent[0] == ("r1", 1, 0.0, "sim-q")
    job, iteration, countdown, queue = sent[1]
    assert (job, iteration, queue) == ("r2", 0, "sim-q") and countdown == second["deferred_s"]
    assert rt.store.commits("r2") == {} and rt.store.load("r2").iteration == 0  # type: ignore[union-attr]
    time.sleep(countdown)
    again = run_iteration(rt, "r2", 0, lambda j, i, c, q: sent.append((j, i, c, q)))
    assert again["commit"] == "committed"


def test_a_job_naming_an_unknown_profile_fails_with_the_reason(
    redis_client: Redis, redis_prefix: str
) -> None:
    rt = make_runtime(redis_client, redis_prefix, SimModel(SimOptions(seed=1)))
    spec = JobSpec(
        prompt=PROMPT, format=OutputFormat.TEXT, providers=["nope"], max_output_tokens=100
    )
    rt.store.create(
        "u", spec.model_dump_json(), start(spec).model_dump_json(), deadline=time.time() + 60
    )
    with pytest.raises(JobFailed, match="unknown provider profile"):
        run_iteration(rt, "u", 0, lambda *a: None)
    record = rt.store.load("u")
    assert record is not None and record.status is JobStatus.FAILED
    assert record.error is not None and "nope" in record.error and "known: sim" in record.error


def test_an_iteration_that_keeps_raising_fails_its_job(
    redis_client: Redis, redis_prefix: str
) -> None:
    """A bug below the engine raises every time: the task fails each time (the watchdog
    would send it again), and after MAX_CRASHES the job fails instead of looping."""

    def broken(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("a bug in a transport")

    profile = Profile(name="sim", kind="openai", base_url="http://sim/v1")
    pool = ProviderPool({"sim": profile}, env={}, transports={"sim": httpx.MockTransport(broken)})
    rt = make_runtime(redis_client, redis_prefix, SimModel(SimOptions(seed=1)))
    rt.pool = pool
    submit(rt, "bug", "sim:format=text", fmt="text")
    for attempt in range(1, MAX_CRASHES + 1):
        with pytest.raises(RuntimeError, match="a bug in a transport"):
            run_iteration(rt, "bug", 0, lambda *a: None)
        record = rt.store.load("bug")
        assert record is not None
        assert record.status is (JobStatus.FAILED if attempt == MAX_CRASHES else JobStatus.QUEUED)
    assert record is not None
    assert record.error is not None and "raised 5 times" in record.error


def test_a_long_provider_retry_is_deferred_not_slept(
    redis_client: Redis, redis_prefix: str
) -> None:
    """429 with Retry-After: 30 s: the iteration is sent again with a 30 s countdown at
    once (no slot held), up to MAX_DEFERRALS times; then the provider counts as failed for
    that call and the engine's own policy takes over."""
    rt = make_runtime(redis_client, redis_prefix, SimModel(SimOptions(seed=1)))
    submit(rt, "slow", "sim:format=text,size=3000,rate_limit=1,retry_after=30", fmt="text")
    sent: list[tuple[str, int, float, str]] = []
    for _ in range(MAX_DEFERRALS):
        started = time.monotonic()
        result = run_iteration(rt, "slow", 0, lambda *a: sent.append(a))
        assert time.monotonic() - started < 1.0
        assert result["reason"] == "provider retry" and result["deferred_s"] == 30.0
    assert [s[:3] for s in sent] == [("slow", 0, 30.0)] * MAX_DEFERRALS
    assert rt.store.commits("slow") == {}
    last = run_iteration(rt, "slow", 0, lambda *a: sent.append(a))
    assert last["commit"] == "committed" and last["decision"] == "retry"
    assert "deferred retries" in str(rt.store.load("slow").summary)  # type: ignore[union-attr]


def test_an_unreadable_stored_state_fails_the_job_at_once(
    redis_client: Redis, redis_prefix: str
) -> None:
    rt = make_runtime(redis_client, redis_prefix, SimModel(SimOptions(seed=1)))
    submit(rt, "garbled", "sim:format=text", fmt="text")
    rt.store.redis.hset(rt.store.keys.job("garbled"), "state", '{"spec": 3}')
    with pytest.raises(JobFailed, match="unreadable"):
        run_iteration(rt, "garbled", 0, lambda *a: None)
    record = rt.store.load("garbled")
    assert record is not None and record.status is JobStatus.FAILED
    assert record.error is not None and "stored state is unreadable" in record.error


def test_a_model_call_longer_than_the_lease_keeps_it(
    redis_client: Redis, redis_prefix: str
) -> None:
    """Lease TTL 0.6 s, a call of 1.5 s: the lease is renewed while the call runs, so a
    second delivery a second later still finds it held and skips; one commit."""
    rt = make_runtime(redis_client, redis_prefix, SimModel(SimOptions(seed=3, latency=1.5)))
    rt.settings.lease_ttl_s = 0.6
    submit(rt, "long", "sim:format=text,size=3000", fmt="text")
    results: list[dict[str, object]] = []
    first = threading.Thread(
        target=lambda: results.append(run_iteration(rt, "long", 0, lambda *a: None))
    )
    first.start()
    time.sleep(1.0)
    second = run_iteration(rt, "long", 0, lambda *a: None)
    first.join()
    assert second["skipped"] == "this iteration is running elsewhere"
    assert results[0]["commit"] == "committed" and rt.store.commits("long") == {0: 1}
    assert rt.leases.held() == []


def test_a_retry_sends_the_model_another_request(redis_client: Redis, redis_prefix: str) -> None:
    """A reply that cannot be merged is asked again, and what goes over the wire is not the
    identical request (a deterministic model would fail the same way): the last user turn
    says what went wrong and quotes the text to continue after."""
    answers = ['{"items": [1, 2, 3, ', '"\\x: this is not a continuation ]]}', "4, 5]}"]
    bodies: list[dict[str, object]] = []

    def scripted(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        text = answers[len(bodies) - 1]
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop" if text.endswith("}") and len(bodies) == 3 else "length",
        }
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        return httpx.Response(200, json={"id": "x", "choices": [choice], "usage": usage})

    profile = Profile(name="sim", kind="openai", base_url="http://sim/v1")
    rt = make_runtime(redis_client, redis_prefix, SimModel(SimOptions(seed=1)))
    rt.pool = ProviderPool(
        {"sim": profile}, env={}, transports={"sim": httpx.MockTransport(scripted)}
    )
    submit(rt, "asked-again", "scripted")
    queue: deque[tuple[str, int, float]] = deque([("asked-again", 0, 0.0)])
    drain(rt, "asked-again", queue)
    assert len(bodies) == 3
    second, third = (b["messages"] for b in bodies[1:])
    assert isinstance(second, list) and isinstance(third, list)
    assert third != second
    note = str(third[-1]["content"])[len(str(second[-1]["content"])) :]
    assert "could not be used" in note and '{"items": [1, 2, 3, ' in note
    assert rt.store.output("asked-again") == '{"items": [1, 2, 3, 4, 5]}'
