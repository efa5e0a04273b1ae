"""What a worker process needs: the store and the providers (``build_runtime``; a worker's
Celery app builds its own once, on first use: ``workers.app.ContinuumApp.runtime``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

from core import JobState
from workers.calls import ProviderPool
from workers.leases import LeaseRenewer
from workers.providers.profiles import Profile
from workers.providers.registry import default_providers, load_profiles
from workers.ratelimit import TokenBucket
from workers.settings import Settings
from workers.store import JobStore


@dataclass
class Runtime:
    settings: Settings
    store: JobStore
    pool: ProviderPool

    bucket: TokenBucket

    @cached_property
    def leases(self) -> LeaseRenewer:
        """Renews the leases of this process's iterations in flight (one thread)."""
        return LeaseRenewer(self.store, self.settings.lease_ttl_s)

    def profile_for(self, state: JobState) -> Profile | None:
        """The profile that serves the job's next call (None: not configured)."""
        names = list(state.spec.providers) or default_providers(self.pool.env)
        if not names:
            return None
        return self.pool.profiles.get(names[min(state.provider_index, len(names) - 1)])

    def queue_for(self, state: JobState) -> str:
        """The Celery queue of the job's next iteration: its serving profile's, if it has
        one (workers scale per provider), else the default queue."""
        profile = self.profile_for(state)
        return (profile.queue if profile is not None else None) or self.settings.queue

    def rate_wait(self, state: JobState) -> float:
        """Take a token for the next call from its profile's shared bucket: 0.0, or the
        seconds to wait (nothing taken) when the profile is over its rate limit."""
        profile = self.profile_for(state)
        if profile is None or profile.rate_limit_per_s is None:
            return 0.0
        return self.bucket.take(profile.name, profile.rate_limit_per_s, profile.rate_limit_burst)


def build_runtime(settings: Settings, redis_url: str) -> Runtime:
    store = JobStore.from_url(
        redis_url,
        settings.key_prefix,
        retention_s=settings.retention_s,
        output_chunk_bytes=settings.output_chunk_bytes,
    )
    store.check_layout()  # jobs of the layout before shards would be lost: refuse
    return Runtime(settings, store, ProviderPool(load_profiles(os.environ)), TokenBucket(store))
