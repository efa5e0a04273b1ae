"""``GET /metrics``: Prometheus metrics of the deployment, read from Redis at scrape time.

The API runs apart from the workers, so it counts nothing itself: every number is read
from what Redis holds when Prometheus scrapes, by a custom collector (``StoreCollector``)
whose cost is bounded and whose answer is reused for ``CONTINUUM_METRICS_CACHE_S``:

- the broker: the messages waiting in each queue Continuum uses (on Redis, ``LLEN`` of the
  queue's list at each priority, as kombu counts it; on RabbitMQ, the ``message_count`` of
  a passive ``queue.declare``) and, on Redis only, the messages workers hold
  unacknowledged (RabbitMQ tells that to its management API only);
- the store: the jobs past their watchdog deadline (``active``) and the callbacks not yet
  delivered (``outbox``);
- the jobs Redis holds (running, or ended within the retention): by status, with their
  committed iterations and provider fallbacks, from the small fields of each job's hash
  (``status``, ``iteration``, ``summary``), found with ``SCAN`` and read in pipelines. At
  most ``CONTINUUM_METRICS_MAX_JOBS`` hashes are read per scrape (and ten times as many
  keys walked); ``continuum_metrics_jobs_complete`` says whether the cap cut the count.

These job numbers are gauges, not counters: they fall when ended jobs expire.
- the counters every commit adds to, in the same script (``Keys.metrics``, one
  ``HGETALL``): iterations, input and output tokens, estimated cost, merge failures,
  provider fallbacks, and a histogram of an iteration's time (its model call and merge).
  A step is counted by the commit that lands, once: a retried or stale commit adds
  nothing. These only grow (``rate()`` applies); they start at the upgrade that added them.

The route requires the API's bearer token, like ``/v1``, unless
``CONTINUUM_METRICS_PUBLIC=1``: a scraper on a private network may then read it without.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request, Response, Security
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from redis import Redis

from api.auth import AuthFirstRoute, BearerAuth
from workers.iteration import SECONDS_BUCKETS
from workers.keys import Keys
from workers.providers.profiles import Profile
from workers.settings import CELERY_DEFAULT_QUEUE, Settings, is_amqp
from workers.store import JobStatus

#: kombu's Redis transport keeps a queue as one list per priority step: the plain name
#: for priority 0, ``name + SEP + step`` for the others (``kombu.transport.redis``).
PRIORITY_STEPS = (0, 3, 6, 9)
PRIORITY_SEP = "\x06\x16"
#: kombu's hash of the messages delivered to a worker and not acknowledged yet.
UNACKED = "unacked"
#: Keys asked of each ``SCAN`` call; a scrape walks at most ``KEYS_PER_JOB`` keys per job
#: hash it may read (a job has up to five keys, and the database holds Celery's too).
SCAN_COUNT = 1000
KEYS_PER_JOB = 10
#: Job hashes read per pipeline.
BATCH = 1000


class MetricsSettings(BaseSettings):
    """``CONTINUUM_METRICS_*``, read when the app is built."""

    model_config = SettingsConfigDict(env_prefix="CONTINUUM_METRICS_", extra="ignore")

    #: Serve ``/metrics`` without the bearer token (a scraper on a private network).
    public: bool = False
    #: The most job hashes one scrape reads.
    max_jobs: int = Field(default=100_000, gt=0, le=10_000_000)
    #: How long a scrape's answer is reused (several scrapers, or API processes, share a
    #: Redis); 0 reads Redis on every scrape.
    cache_s: float = Field(default=10.0, ge=0, le=3600)


@dataclass
class JobTotals:
    """The jobs of one scrape, by status."""

    jobs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JobStatus, 0))
    iterations: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JobStatus, 0))
    fallbacks: int = 0
    read: int = 0
    complete: bool = True

    def add(self, status: Any, iteration: Any, summary: Any) -> None:
        """Count one job hash (``HMGET``'s bytes, or str from a client that decodes); one
        gone meanwhile has no status and is not counted."""
        name = _bytes(status).decode() if status is not None else None
        if name not in self.jobs:
            return
        self.jobs[name] += 1
        self.iterations[name] += int(iteration or 0)
        if summary:
            self.fallbacks += len(json.loads(summary).get("fallbacks") or ())


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def _glob_escape(text: str) -> str:
    """``text`` as a literal in a ``SCAN MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def job_hashes(redis: Redis, keys: Keys, most: int) -> tuple[list[bytes], bool]:
    """The keys of at most ``most`` job hashes (``{prefix}job:{id}``, not the job's other
    keys), and whether they are all of them."""
    head = len(keys.job("x").encode()) - 1
    pattern = _glob_escape(keys.job("x")[:-1]) + "*"
    found: set[bytes] = set()  # SCAN may return a key twice
    cursor, walked = 0, 0
    while True:
        cursor, batch = redis.scan(cursor, match=pattern, count=SCAN_COUNT)
        walked += SCAN_COUNT
        found.update(k for k in map(_bytes, batch) if b":" not in k[head:])
        if cursor == 0 and len(found) <= most:
            return sorted(found), True
        if len(found) >= most or walked >= most * KEYS_PER_JOB:
            return sorted(found)[:most], False


def read_jobs(redis: Redis, keys: Keys, most: int) -> JobTotals:
    """Every job hash's ``status``, ``iteration`` and ``summary``, summed (bounded)."""
    names, complete = job_hashes(redis, keys, most)
    totals = JobTotals(read=len(names), complete=complete)
    for start in range(0, len(names), BATCH):
        pipe = redis.pipeline(transaction=False)
        for name in names[start : start + BATCH]:
            pipe.hmget(name, ["status", "iteration", "summary"])
        for status, iteration, summary in pipe.execute():
            totals.add(status, iteration, summary)
    return totals


def queues_of(settings: Settings, profiles: Iterable[Profile]) -> list[str]:
    """The queues Continuum's messages go to: the default one, Celery's default one when
    workers consume it, and every profile's own."""
    found = {settings.queue, *(p.queue for p in profiles if p.queue)}
    if settings.consume_default_queue:
        found.add(CELERY_DEFAULT_QUEUE)
    return sorted(found)


@dataclass(eq=False)  # the registry keys its collectors by identity
class StoreCollector:
    """Reads the metrics from Redis when collected, reusing an answer ``cache_s`` old."""

    redis: Redis
    settings: Settings
    queues: Sequence[str]
    limits: MetricsSettings
    #: The broker, when it is not ``redis``: a Redis client, or a Celery app on RabbitMQ.
    broker: Any = None
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _cached: list[Metric] | None = None
    _at: float = float("-inf")

    def collect(self) -> Iterable[Metric]:
        with self._lock:  # one scrape reads Redis; one arriving meanwhile reuses its answer
            if self._cached is None or self.clock() - self._at >= self.limits.cache_s:
                self._cached = list(self._read())
                self._at = self.clock()
            return list(self._cached)

    def _read(self) -> Iterator[Metric]:
        started = time.perf_counter()
        yield from self._broker()
        totals = read_jobs(self.redis, Keys(self.settings.key_prefix), self.limits.max_jobs)
        yield from _jobs(totals)
        yield from counters(self.redis.hgetall(Keys(self.settings.key_prefix).metrics))
        yield _gauge(
            "continuum_metrics_read_seconds",
            "Seconds this scrape took to read Redis (answers are reused for "
            "CONTINUUM_METRICS_CACHE_S).",
            time.perf_counter() - started,
        )

    def _broker(self) -> Iterator[Metric]:
        keys, now = Keys(self.settings.key_prefix), time.time()
        pipe = self.redis.pipeline(transaction=False)
        pipe.zcount(keys.active, "-inf", now)
        pipe.zcard(keys.outbox)
        overdue, outbox = pipe.execute()
        waiting = GaugeMetricFamily(
            "continuum_queue_messages",
            "Messages waiting in a broker queue (every priority), not yet taken by a worker.",
            labels=["queue"],
        )
        if is_amqp(self.settings.broker or ""):
            # No samples while RabbitMQ cannot be reached: the store's metrics still are.
            counts = amqp_depths(self.broker, self.queues) or []
            for queue, count in zip(self.queues, counts, strict=False):
                waiting.add_metric([queue], count)
            yield waiting
        else:
            lengths, unacked = redis_depths(
                self.broker or self.redis, self.settings.broker_prefix, self.queues
            )
            for queue, count in zip(self.queues, lengths, strict=True):
                waiting.add_metric([queue], count)
            yield waiting
            yield _gauge(
                "continuum_broker_unacked_messages",
                "Messages workers have taken and not acknowledged yet: iterations running, or "
                "held until their countdown (every queue of the broker's database; Redis "
                "brokers only).",
                unacked,
            )
        yield _gauge(
            "continuum_jobs_overdue",
            "Unfinished jobs past their deadline: the watchdog sends their iteration again.",
            overdue,
        )
        yield _gauge(
            "continuum_callbacks_pending",
            "Ended jobs whose callback is not delivered yet (the outbox).",
            outbox,
        )


def redis_depths(broker: Redis, prefix: str, queues: Sequence[str]) -> tuple[list[int], int]:
    """The messages waiting in each of ``queues`` on a Redis broker (every priority), and
    the messages held unacknowledged (kombu's ``unacked`` hash)."""
    pipe = broker.pipeline(transaction=False)
    for queue in queues:
        for step in PRIORITY_STEPS:
            pipe.llen(f"{prefix}{queue}{PRIORITY_SEP}{step}" if step else f"{prefix}{queue}")
    pipe.hlen(f"{prefix}{UNACKED}")
    *lengths, unacked = pipe.execute()
    steps = len(PRIORITY_STEPS)
    return [sum(lengths[n * steps : (n + 1) * steps]) for n in range(len(queues))], unacked


def amqp_depths(celery: Any, queues: Sequence[str]) -> list[int] | None:
    """The messages ready in each of ``queues`` on RabbitMQ (a passive ``queue.declare``:
    it creates nothing; a queue no worker has declared yet holds 0), or None when
    RabbitMQ cannot be reached. ``celery``: an app on the broker (``workers.app.make_app``)."""
    counts = []
    with celery.connection_for_read() as conn:
        try:
            conn.ensure_connection(max_retries=1)
            for queue in queues:
                channel = conn.channel()
                try:
                    counts.append(int(channel.queue_declare(queue, passive=True).message_count))
                except conn.channel_errors:  # NOT_FOUND, which closes the channel
                    counts.append(0)
                else:
                    channel.close()
        except conn.connection_errors:
            return None
    return counts


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _jobs(totals: JobTotals) -> Iterator[Metric]:
    jobs = GaugeMetricFamily(
        "continuum_jobs",
        "Jobs held in Redis (unfinished, or ended within the retention), by status; falls "
        "when ended jobs expire.",
        labels=["status"],
    )
    iterations = GaugeMetricFamily(
        "continuum_job_iterations",
        "Iterations committed by the jobs held in Redis, by the job's status.",
        labels=["status"],
    )
    for status in JobStatus:
        jobs.add_metric([status.value], totals.jobs[status])
        iterations.add_metric([status.value], totals.iterations[status])
    yield jobs
    yield iterations
    yield _gauge(
        "continuum_job_provider_fallbacks",
        "Provider fallbacks (a profile failed for good, the next one served) of the jobs "
        "held in Redis.",
        totals.fallbacks,
    )
    yield _gauge(
        "continuum_metrics_jobs_read",
        "Job hashes this scrape read (at most CONTINUUM_METRICS_MAX_JOBS).",
        totals.read,
    )
    yield _gauge(
        "continuum_metrics_jobs_complete",
        "1 when the job metrics count every job held; 0 when CONTINUUM_METRICS_MAX_JOBS "
        "cut them short.",
        int(totals.complete),
    )


#: The counters every commit adds to (``commit.lua``'s ``count``): name, help, field.
COUNTERS = (
    ("continuum_iterations", "Iterations committed.", "iterations"),
    ("continuum_input_tokens", "Input tokens of the committed model calls.", "input_tokens"),
    ("continuum_output_tokens", "Output tokens of the committed model calls.", "output_tokens"),
    (
        "continuum_cost_estimate_usd",
        "Estimated cost of the committed model calls, in US dollars (profile prices).",
        "cost",
    ),
    (
        "continuum_merge_failures",
        "Committed replies that could not be merged (asked again).",
        "merge_failures",
    ),
    (
        "continuum_provider_fallbacks",
        "Provider fallbacks (a profile failed for good, the next one served).",
        "fallbacks",
    ),
)


def counters(raw: dict[Any, Any]) -> Iterator[Metric]:
    """The commit-time counters (``Keys.metrics``): totals since the store began, which
    only grow (``rate()`` applies), and the histogram of an iteration's time (its model
    call and merge)."""
    values = {_bytes(k).decode(): float(_bytes(v).decode()) for k, v in raw.items()}
    for name, doc, key in COUNTERS:
        yield CounterMetricFamily(name, doc, value=values.get(key, 0.0))
    buckets, total = [], 0.0
    for bound in (*(repr(b) for b in SECONDS_BUCKETS), "+Inf"):
        total += values.get(f"seconds_le:{bound}", 0.0)
        buckets.append((bound, total))
    yield HistogramMetricFamily(
        "continuum_iteration_seconds",
        "Time of a committed iteration's model call and merge (provider retries included).",
        buckets=buckets,
        sum_value=values.get("seconds_sum", 0.0),
    )


def metrics_router(
    redis: Redis,
    settings: Settings,
    profiles: Iterable[Profile],
    auth: BearerAuth | None,
    broker: Any = None,
) -> APIRouter:
    """``GET /metrics``, behind ``auth`` unless ``CONTINUUM_METRICS_PUBLIC`` is set; the
    queues counted are those of ``settings`` and of the provider ``profiles``, on
    ``broker`` when it is not ``redis`` (a Redis client, or a Celery app on RabbitMQ)."""
    limits = MetricsSettings()
    registry = CollectorRegistry(auto_describe=False)
    queues = queues_of(settings, profiles)
    registry.register(StoreCollector(redis, settings, queues, limits, broker))
    guarded = auth is not None and not limits.public
    router = APIRouter(dependencies=[Security(auth)] if guarded else [], route_class=AuthFirstRoute)
    responses: dict[int | str, dict[str, Any]] = {
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
        503: {"description": "Redis is unreachable."},
    }
    if guarded:
        responses[401] = {"description": "No valid bearer token."}

    @router.get(
        "/metrics",
        response_class=Response,
        summary="Prometheus metrics",
        responses=responses,
    )
    def metrics(request: Request) -> Response:
        """Jobs by status, their iterations and fallbacks, queue depths, unacknowledged
        messages, overdue jobs and pending callbacks, read from Redis (Prometheus text
        format, or OpenMetrics when asked). Needs the bearer token unless
        `CONTINUUM_METRICS_PUBLIC=1`."""
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encode(registry), media_type=content_type)

    return router
