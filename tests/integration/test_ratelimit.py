"""The shared token bucket on a real Redis: burst then rate, exact waits, independence,
no over-grant and no lost refill under concurrency, expiry, and argument checks."""

from __future__ import annotations

import threading
import time

import pytest
from redis import Redis

from workers.ratelimit import TokenBucket
from workers.store import JobStore


def bucket_for(client: Redis, prefix: str) -> TokenBucket:
    return TokenBucket(JobStore(client, prefix=prefix))


def test_a_fresh_bucket_grants_its_burst_then_asks_to_wait(
    redis_client: Redis, redis_prefix: str
) -> None:
    bucket = bucket_for(redis_client, redis_prefix)
    assert [bucket.take("p", 10.0, burst=3) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = bucket.take("p", 10.0, burst=3)
    assert 0.05 < wait <= 0.1  # one token at 10/s, less what refilled during the takes


def test_after_the_returned_wait_a_token_is_granted(redis_client: Redis, redis_prefix: str) -> None:
    bucket = bucket_for(redis_client, redis_prefix)
    assert bucket.take("p", 20.0) == 0.0
    wait = bucket.take("p", 20.0)
    assert 0 < wait <= 0.05 + 0.005  # exact to the millisecond, not a coarse guess
    time.sleep(wait)
    assert bucket.take("p", 20.0) == 0.0
    assert bucket.take("p", 20.0) > 0  # and only one


def test_a_refused_take_takes_nothing(redis_client: Redis, redis_prefix: str) -> None:
    bucket = bucket_for(redis_client, redis_prefix)
    assert bucket.take("p", 10.0, burst=4, cost=4) == 0.0
    first = bucket.take("p", 10.0, burst=4, cost=2)
    second = bucket.take("p", 10.0, burst=4, cost=2)
    assert 0.15 < second <= first <= 0.2  # the refused take did not spend the refill


def test_profiles_are_independent(redis_client: Redis, redis_prefix: str) -> None:
    bucket = bucket_for(redis_client, redis_prefix)
    assert bucket.take("a", 1.0) == 0.0
    assert bucket.take("a", 1.0) > 0.9
    assert bucket.take("b", 1.0) == 0.0  # a's empty bucket is not b's
    other = bucket_for(redis_client, redis_prefix + "other:")
    assert other.take("a", 1.0) == 0.0  # nor another prefix's


def test_the_bucket_expires_when_idle(redis_client: Redis, redis_prefix: str) -> None:
    bucket = bucket_for(redis_client, redis_prefix)
    bucket.take("p", 4.0, burst=2)
    ttl_ms = redis_client.pttl(bucket.store.keys.bucket("p"))
    assert 1500 < ttl_ms <= 2000  # 2 x burst / rate + 1 s
    fields = redis_client.hgetall(bucket.store.keys.bucket("p"))
    assert set(fields) == {b"tokens", b"ts"}
    assert float(fields[b"tokens"]) == pytest.approx(1.0, abs=0.05)


def test_many_workers_share_one_bucket(redis_url: str, redis_prefix: str) -> None:
    """8 threads with their own connections take as fast as they can for ~1 s: never more
    than burst + rate x elapsed (+1 for rounding), and most of it (no refill lost)."""
    rate, burst, threads, duration = 50.0, 5, 8, 1.0
    granted = [0] * threads
    barrier = threading.Barrier(threads + 1)
    stop = threading.Event()
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        client = Redis.from_url(redis_url)
        try:
            bucket = bucket_for(client, redis_prefix)
            barrier.wait()
            while not stop.is_set():
                wait = bucket.take("shared", rate, burst=burst)
                if wait == 0:
                    granted[index] += 1
                else:
                    time.sleep(min(wait, 0.002))  # keep hammering, but let others in
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            client.close()

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    started = time.monotonic()
    time.sleep(duration)
    stop.set()
    for thread in pool:
        thread.join(timeout=10)
    elapsed = time.monotonic() - started
    assert not errors
    total = sum(granted)
    assert total <= burst + rate * elapsed + 1
    assert total >= 0.8 * (burst + rate * duration)
    assert sum(1 for n in granted if n) > 1  # really shared, not one thread's bucket


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("p", 0.0), "rate_per_s must be a finite number > 0"),
        (("p", -1.0), "rate_per_s must be a finite number > 0"),
        (("p", float("inf")), "rate_per_s must be a finite number > 0"),
        (("p", float("nan")), "rate_per_s must be a finite number > 0"),
        (("p", "5"), "rate_per_s must be a number"),
        (("p", 1.0, 0), "burst must be an integer >= 1"),
        (("p", 1.0, 2.5), "burst must be an integer >= 1"),
        (("p", 1.0, 2, 0), r"cost must be an integer from 1 to burst \(2\)"),
        (("p", 1.0, 2, 3), r"cost must be an integer from 1 to burst \(2\)"),
        (("", 1.0), "profile must be a non-empty name"),
    ],
)
def test_bad_arguments_are_refused(
    redis_client: Redis, redis_prefix: str, args: tuple[object, ...], message: str
) -> None:
    bucket = bucket_for(redis_client, redis_prefix)
    with pytest.raises(ValueError, match=message):
        bucket.take(*args)  # type: ignore[arg-type]
    assert not redis_client.keys(f"{redis_prefix}*")  # refused before touching Redis
