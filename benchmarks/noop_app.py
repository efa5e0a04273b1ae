"""A bare Celery app for the queue benchmarks (``benchmarks/queue_hop.py`` and
``queue_throughput.py``). ``bench.noop(n, key)`` sends itself again with ``n - 1`` until
0, then writes the time into Redis at ``key``;
``bench.sleep_chain(n, key, seconds)`` does the same after sleeping (a model call that does
nothing), and at the end appends the time to the list at ``key``.

It has the reliability settings of ``workers/app.py`` (JSON only, late acks, reject on a
lost worker, prefetch 1) and ignores results, as ``continuum.iterate`` does. With
``BENCH_NOOP_EVENTS=1`` it also sends task events (on in Continuum's app, for Flower):
the issue's bare task, so a hop of this chain is what Celery and Redis cost alone under
the settings Continuum must run with; without, the share of the events shows.

Started by the benchmark (``Harness.noop`` in ``benchmarks/queue_harness.py``) as a worker
subprocess::

    REDIS_URL=redis://127.0.0.1:PORT/0 BENCH_NOOP_QUEUE=noop \\
        python -m celery -A benchmarks.noop_app worker --pool=threads --concurrency=1 -Q noop
"""

from __future__ import annotations

import os
import time
from functools import lru_cache

from celery import Celery
from redis import Redis

URL = os.environ.get("REDIS_URL", "")
if not URL:
    raise RuntimeError("benchmarks.noop_app: set REDIS_URL (the benchmark's private Redis)")
QUEUE = os.environ.get("BENCH_NOOP_QUEUE", "noop")
EVENTS = os.environ.get("BENCH_NOOP_EVENTS", "") == "1"

app = Celery("bench-noop", broker=URL, backend=None, set_as_current=True)
app.conf.update(
    # The reliability settings of workers/app.py.
    task_serializer="json",
    accept_content=["json"],
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    task_acks_on_failure_or_timeout=True,
    worker_prefetch_multiplier=1,
    broker_transport_options={"visibility_timeout": 3600.0},
    task_default_queue=QUEUE,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    task_ignore_result=True,
    # Task events, as workers/app.py sends them (Flower reads every task from them).
    worker_send_task_events=EVENTS,
    task_send_sent_event=EVENTS,
)


@lru_cache(maxsize=1)
def _redis() -> Redis:
    return Redis.from_url(URL)


@app.task(name="bench.noop")
def noop(n: int, key: str) -> int:
    if n > 0:
        noop.apply_async((n - 1, key))
    else:
        _redis().set(key, repr(time.time()), ex=3600)
    return n


@app.task(name="bench.sleep_chain")
def sleep_chain(n: int, key: str, seconds: float) -> int:
    time.sleep(seconds)
    if n > 1:
        sleep_chain.apply_async((n - 1, key, seconds))
    else:
        _redis().rpush(key, repr(time.time()))
    return n
