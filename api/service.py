"""What the routes use: :class:`Service`, built once per app by ``api.app.create_app``."""

from __future__ import annotations

import os
from typing import Any

from api.errors import ApiError
from api.health import Health
from api.settings import ApiSettings
from workers.broker import BrokerInspector
from workers.calls import ProviderPool
from workers.producer import Producer
from workers.providers.registry import load_profiles
from workers.ratelimit import TokenBucket
from workers.runtime import Runtime
from workers.store import JobRecord, JobStore


class Service:
    """What the routes use: the job store, the runtime that creates jobs, the producer
    and the broker's inspector (``/metrics``)."""

    def __init__(
        self, settings: ApiSettings, store: JobStore, celery: Any, *, owns_store: bool
    ) -> None:
        self.settings = settings
        self.owns_store = owns_store
        self.celery = celery
        self.store = store
        self.broker = BrokerInspector(celery, settings.broker_prefix)
        self.rt = Runtime(
            settings, self.store, ProviderPool(load_profiles(os.environ)), TokenBucket(store)
        )
        self.health = Health(
            store,
            celery,
            cache_s=settings.api_health_cache_s,
            ping_timeout_s=settings.api_ping_timeout_s,
        )

    def close(self) -> None:
        """Release the producer's broker connections (and Redis, when the app owns it)."""
        self.celery.close()
        self.broker.close()
        if self.owns_store:
            self.store.close()

    def enqueue(self, job_id: str, iteration: int, countdown: float, queue: str) -> None:
        """Send ``continuum.iterate`` on the broker as a worker does (with the request's
        trace, when tracing is on: ``workers.tracing``)."""
        Producer(self.celery, trace=True).iteration(job_id, iteration, countdown, queue)

    def record(self, job_id: str) -> JobRecord:
        record = self.store.load(job_id)
        if record is None:
            raise ApiError(404, f"no such job: {job_id}")
        return record
