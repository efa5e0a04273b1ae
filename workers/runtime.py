"""What a worker process needs, built once on first use: the store and the providers."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from redis import Redis

from core import JobState
from workers.calls import ProviderPool
from workers.providers.registry import default_providers, load_profiles
from workers.settings import Settings, get_settings
from workers.store import JobStore


@dataclass
class Runtime:
    settings: Settings
    store: JobStore
    pool: ProviderPool

    def queue_for(self, state: JobState) -> str:
        """The Celery queue of the job's next iteration: its serving profile's, if it has
        one (workers scale per provider), else the default queue."""
        names = list(state.spec.providers) or default_providers(self.pool.env)
        if not names:
            return self.settings.queue
        profile = self.pool.profiles.get(names[min(state.provider_index, len(names) - 1)])
        return (profile.queue if profile is not None else None) or self.settings.queue


def build_runtime(settings: Settings, redis_url: str) -> Runtime:
    store = JobStore(Redis.from_url(redis_url), prefix=settings.key_prefix)
    return Runtime(settings, store, ProviderPool(load_profiles(os.environ)))


@lru_cache(maxsize=1)
def runtime() -> Runtime:
    settings = get_settings()
    if not settings.redis_url:
        raise RuntimeError("REDIS_URL is not set: start workers with `continuum worker`")
    return build_runtime(settings, settings.redis_url)
