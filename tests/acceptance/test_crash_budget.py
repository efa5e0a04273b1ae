"""Every failure of an iteration is bounded, through real worker processes on a real Redis:
an iteration that keeps raising after its model call (a real ``WRONGTYPE`` at the commit)
fails its job with the reason after the crash budget, having paid for that reply once;
Redis refusing writes at ``maxmemory`` stops the paid calls, and the job and the worker
go on once there is room again. The model is the simulator on a real HTTP server that
counts the calls it is paid for."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis import Redis, RedisCluster
from redis.exceptions import OutOfMemoryError

from core import JobSpec
from sim.app import create_app, make_transport
from sim.model import SimOptions
from tests.acceptance.procs import Cluster
from workers.calls import ProviderPool
from workers.embedded import EmbeddedRedis
from workers.iteration import MAX_CRASHES
from workers.local import Outcome, run_job
from workers.providers.profiles import Profile

pytestmark = pytest.mark.slow

SEED = 8
LATENCY = 0.3


class Meter:
    """An ASGI app in front of the simulator that counts its chat completions: the calls a
    provider would bill."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/chat/completions"):
            self.calls += 1
        await self.app(scope, receive, send)


@pytest.fixture
def meter(serve: Callable[[Any], str]) -> tuple[str, Meter]:
    """The simulated LLM on a real HTTP server, and the meter counting its calls."""
    m = Meter(create_app(SimOptions(seed=SEED, latency=LATENCY)))
    return serve(m), m


def spec(job_id: str, size: int) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "prompt": f"Write the inventory of the lighthouse ({job_id})",
        "format": "text",
        "providers": ["sim"],
        "model": f"sim:format=text,size={size},overlap=80",
        "max_output_tokens": 250,
        "continuation": {"max_attempts": 200},
    }


def fault_free(raw: dict[str, Any]) -> str:
    """The job run in this process with no fault: what the cluster must give."""
    profile = Profile(name="sim", kind="openai", base_url="http://sim/v1")
    pool = ProviderPool(
        {"sim": profile}, env={}, transports={"sim": make_transport(SimOptions(seed=SEED))}
    )
    result = run_job(JobSpec.model_validate(raw), pool)
    assert result.outcome is Outcome.SUCCEEDED and result.output is not None
    return result.output


def wait_for(what: str, check: Callable[[], bool], c: Cluster, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{c.logs()}")
        time.sleep(0.02)


def submit(c: Cluster, raw: dict[str, Any]) -> None:
    c.producer().send_task("continuum.generate", kwargs={"spec": raw}, queue="q")


def iteration_of(c: Cluster, job_id: str) -> int:
    record = c.store().load(job_id)
    return -1 if record is None else record.iteration


@pytest.mark.parametrize("broken", ["before it starts", "while it runs"])
def test_a_commit_that_keeps_failing_pays_once_and_fails_the_job(
    cluster: Callable[..., Cluster], meter: tuple[str, Meter], broken: str
) -> None:
    """The job's output key is made a hash, so every commit raises ``WRONGTYPE``: the reply
    that could not be committed is kept and offered again, never bought again; after
    ``MAX_CRASHES`` attempts the job fails naming the error, and nothing runs after."""
    url, m = meter
    c = cluster(url)
    c.beat()
    c.worker(concurrency=2)
    store = c.store()
    out = store.keys.output("wrongtype")

    def break_output() -> None:
        pipe = store.redis.pipeline(transaction=True)  # no commit lands in between
        pipe.delete(out)
        pipe.hset(out, "not", "a string")
        pipe.execute()

    if broken == "before it starts":
        break_output()
    submit(c, spec("wrongtype", 40_000))
    if broken == "while it runs":
        wait_for("two commits", lambda: iteration_of(c, "wrongtype") >= 2, c)
        break_output()

    started = time.monotonic()
    record = c.wait_ended(["wrongtype"], timeout=45)["wrongtype"]
    assert record.status.value == "failed", c.logs()
    assert record.error is not None and "WRONGTYPE" in record.error, record.error
    assert f"raised {MAX_CRASHES} times" in record.error, record.error
    assert time.monotonic() - started < 30  # the retries back off, briefly
    committed = record.iteration
    assert store.commits("wrongtype") == dict.fromkeys(range(committed), 1)
    # One paid call per committed iteration, and one for the reply no commit could take.
    assert m.calls == committed + 1, (m.calls, committed)
    time.sleep(1.5)
    assert m.calls == committed + 1  # the failed job costs nothing more
    assert not store.redis.hexists(store.keys.job("wrongtype"), "kept_step")


MAXMEMORY = 32 * 1024 * 1024
OOM_WINDOW_S = 4.0


@pytest.fixture
def small_redis(tmp_path: Path) -> Iterator[str]:
    """A private Redis of ``MAXMEMORY`` that refuses writes when full (noeviction)."""
    config = {"maxmemory": str(MAXMEMORY), "maxmemory-policy": "noeviction"}
    with EmbeddedRedis(tmp_path / "small-redis", config=config) as server:
        yield server.url


def fill(client: Redis | RedisCluster, key: str, chunk: int = 256 * 1024) -> None:
    """Append to ``key`` until Redis is past ``maxmemory`` (a query counts while Redis
    reads it, so one huge SET would be refused instead)."""
    for _ in range(2 * MAXMEMORY // chunk):
        try:
            client.append(key, b"x" * chunk)
        except OutOfMemoryError:
            return
    raise AssertionError("Redis never refused a write: is maxmemory set?")


def test_redis_at_maxmemory_stops_the_paid_calls_and_the_worker_goes_on(
    cluster: Callable[..., Cluster], meter: tuple[str, Meter], small_redis: str
) -> None:
    """A private Redis with ``maxmemory`` and ``noeviction`` is filled past its limit while
    a model call is in flight: the reply cannot be committed (nor kept), and no iteration
    calls the model while Redis refuses writes. Once there is room again the job resumes
    and succeeds with the fault-free output (that one reply bought twice, at most), and
    the same single worker serves the next job."""
    url, m = meter
    c = cluster(url, url=small_redis)
    c.beat()
    worker = c.worker(concurrency=1)
    store = c.store()
    first = spec("filled", 30_000)
    submit(c, first)
    lease = store.keys.lease("filled")
    wait_for(
        "a model call in flight after two commits",
        lambda: iteration_of(c, "filled") >= 2 and bool(store.redis.exists(lease)),
        c,
    )
    filler = f"{c.prefix}filler"
    fill(store.redis, filler)
    with pytest.raises(OutOfMemoryError):
        store.redis.set(f"{c.prefix}probe", "x")
    at_fill = m.calls
    time.sleep(OOM_WINDOW_S)
    assert m.calls - at_fill == 0, "a model call while Redis refused every write"
    during = store.load("filled")
    assert during is not None and during.status.value == "running"

    store.redis.delete(filler)  # an operator makes room (DEL works at maxmemory)
    record = c.wait_ended(["filled"], timeout=60)["filled"]
    assert record.status.value == "succeeded", (record, c.logs())
    assert store.final_output(record) == fault_free(first)
    assert store.commits("filled") == dict.fromkeys(range(record.iteration), 1)
    assert m.calls == record.iteration, "a reply was bought twice"

    before = m.calls
    second = spec("after", 6000)
    submit(c, second)
    after = c.wait_ended(["after"], timeout=30)["after"]
    assert after.status.value == "succeeded" and worker.poll() is None
    assert store.final_output(after) == fault_free(second)
    assert m.calls - before == after.iteration


def test_a_task_that_ends_while_redis_is_full_does_not_stop_its_worker(
    cluster: Callable[..., Cluster], meter: tuple[str, Meter], small_redis: str
) -> None:
    """With a short ``max_countdown_s`` the iteration gives up waiting for room and its task
    ends while Redis is still full: the ack (a ZREM and an HDEL, which Redis allows at
    maxmemory, but not inside MULTI) must not stop the worker. Once there is room the
    watchdog sends the iteration again and the job ends exact."""
    url, m = meter
    c = cluster(url, url=small_redis, CONTINUUM_MAX_COUNTDOWN_S="0.5")
    beat = c.beat()
    worker = c.worker(concurrency=1)
    store = c.store()
    job = spec("full-at-ack", 20_000)
    submit(c, job)
    lease = store.keys.lease("full-at-ack")
    wait_for(
        "a model call in flight",
        lambda: iteration_of(c, "full-at-ack") >= 1 and bool(store.redis.exists(lease)),
        c,
    )
    filler = f"{c.prefix}filler"
    fill(store.redis, filler)
    time.sleep(OOM_WINDOW_S)
    assert worker.poll() is None, f"the worker stopped while Redis was full\n{c.logs()}"
    assert beat.poll() is None, f"the watchdog stopped while Redis was full\n{c.logs()}"

    store.redis.delete(filler)
    record = c.wait_ended(["full-at-ack"], timeout=60)["full-at-ack"]
    assert record.status.value == "succeeded", (record, c.logs())
    assert store.final_output(record) == fault_free(job)
    assert worker.poll() is None
    # The reply no commit could take, nor keep, was bought again: once at most.
    assert m.calls <= record.iteration + 1, (m.calls, record.iteration)
