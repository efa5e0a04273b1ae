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

from api.auth import AuthFirstRoute, BearerAuth
from workers.broker import BrokerInspector
from workers.iteration import SECONDS_BUCKETS
from workers.providers.profiles import Profile
from workers.settings import CELERY_DEFAULT_QUEUE, Settings
from workers.store import JobStatus, JobStore
from workers.store_metrics import JobTotals


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


def queues_of(settings: Settings, profiles: Iterable[Profile]) -> list[str]:
    """The queues Continuum's messages go to: the default one, Celery's default one when
    workers consume it, and every profile's own."""
    found = {settings.queue, *(p.queue for p in profiles if p.queue)}
    if settings.consume_default_queue:
        found.add(CELERY_DEFAULT_QUEUE)
    return sorted(found)


@dataclass(eq=False)  # the registry keys its collectors by identity
class StoreCollector:
    """Reads the metrics from the store and the broker when collected, reusing an answer
    ``cache_s`` old."""

    store: JobStore
    broker: BrokerInspector
    queues: Sequence[str]
    limits: MetricsSettings
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
        yield from _jobs(self.store.metrics.jobs(self.limits.max_jobs))
        yield from counters(self.store.counters())
        yield _gauge(
            "continuum_metrics_read_seconds",
            "Seconds this scrape took to read Redis (answers are reused for "
            "CONTINUUM_METRICS_CACHE_S).",
            time.perf_counter() - started,
        )

    def _broker(self) -> Iterator[Metric]:
        overdue, outbox = self.store.metrics.backlogs(time.time())
        waiting = GaugeMetricFamily(
            "continuum_queue_messages",
            "Messages waiting in a broker queue (every priority), not yet taken by a worker.",
            labels=["queue"],
        )
        # No samples while RabbitMQ cannot be reached: the store's metrics still are.
        depths = self.broker.depths(self.queues)
        for queue, count in zip(self.queues, depths.waiting or [], strict=False):
            waiting.add_metric([queue], count)
        yield waiting
        if depths.unacked is not None:
            yield _gauge(
                "continuum_broker_unacked_messages",
                "Messages workers have taken and not acknowledged yet: iterations running, or "
                "held until their countdown (every queue of the broker's database; Redis "
                "brokers only).",
                depths.unacked,
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


def counters(values: dict[str, float]) -> Iterator[Metric]:
    """The commit-time counters (``Keys.metrics``, ``JobStore.counters``): totals since
    the store began, which only grow (``rate()`` applies), and the histogram of an
    iteration's time (its model call and merge)."""
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
    store: JobStore,
    broker: BrokerInspector,
    settings: Settings,
    profiles: Iterable[Profile],
    auth: BearerAuth | None,
) -> APIRouter:
    """``GET /metrics``, behind ``auth`` unless ``CONTINUUM_METRICS_PUBLIC`` is set; the
    queues counted are those of ``settings`` and of the provider ``profiles``, read on
    ``broker``."""
    limits = MetricsSettings()
    registry = CollectorRegistry(auto_describe=False)
    queues = queues_of(settings, profiles)
    registry.register(StoreCollector(store, broker, queues, limits))
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
