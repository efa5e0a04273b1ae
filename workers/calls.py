"""One model call for a job: pick the profile, retry transient errors, fall back.

This is the I/O half of an iteration (the engine is the other half). The job names an
ordered list of provider profiles; the one at ``state.provider_index`` serves. Transient
errors are retried with backoff by ``call_with_retries``; when a profile fails for good
(a fatal error, or transient errors past its retries) the next profile serves and the
switch is recorded as a fallback. When the last one fails, the engine receives an
``error`` reply and applies its own policy (retry with backoff, then fall back).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import overload

import httpx

from core.models import FinishReason, ProviderResponse
from core.policy import Defer
from core.state import JobState, ProviderSwitch
from workers.errors import (
    FatalError,
    PrefillUnsupported,
    PreviousResponseNotFound,
    ProviderError,
    UnknownProfile,
)
from workers.providers.base import CallRequest, Provider
from workers.providers.profiles import Profile
from workers.providers.registry import NO_PROVIDER, default_providers, make_provider
from workers.providers.retry import call_with_retries


class ProviderPool:
    """Adapters by profile name, created on first use and reused (one HTTP client each)."""

    def __init__(
        self,
        profiles: Mapping[str, Profile],
        *,
        env: Mapping[str, str] | None = None,
        transports: Mapping[str, httpx.BaseTransport] | None = None,
    ) -> None:
        self.profiles = dict(profiles)
        self.env = env
        self.transports = dict(transports or {})
        self._providers: dict[str, Provider] = {}

    def names_for(self, state: JobState) -> list[str]:
        """The job's profiles, or the default ones; refuses names not configured."""
        names = list(state.spec.providers) or default_providers(self.env)
        if not names:
            raise UnknownProfile(NO_PROVIDER)
        unknown = [n for n in names if n not in self.profiles]
        if unknown:
            known = ", ".join(sorted(self.profiles))
            raise UnknownProfile(
                f"unknown provider profile(s) {', '.join(unknown)}; known: {known}"
            )
        return names

    def get(self, name: str) -> Provider:
        if name not in self._providers:
            self._providers[name] = make_provider(
                self.profiles[name], env=self.env, transport=self.transports.get(name)
            )
        return self._providers[name]

    def close(self) -> None:
        for provider in self._providers.values():
            provider.close()
        self._providers.clear()


@overload
def call_model(
    state: JobState,
    pool: ProviderPool,
    *,
    sleep: Callable[[float], None] = ...,
    rng: random.Random | None = ...,
    deferrals: None = ...,
) -> tuple[JobState, ProviderResponse]: ...
@overload
def call_model(
    state: JobState,
    pool: ProviderPool,
    *,
    sleep: Callable[[float], None] = ...,
    rng: random.Random | None = ...,
    deferrals: int,
) -> tuple[JobState, ProviderResponse | Defer]: ...
def call_model(
    state: JobState,
    pool: ProviderPool,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    deferrals: int | None = None,
) -> tuple[JobState, ProviderResponse | Defer]:
    """Make the call ``state.messages`` asks for; return the updated state and the reply.
    With ``deferrals`` (a worker's), a provider wait too long to sleep in a worker slot
    comes back as a ``Defer`` instead of a reply (``core.policy.provider_wait``)."""
    s = state.clone()
    names = pool.names_for(s)
    s.provider_index = min(s.provider_index, len(names) - 1)
    while True:
        name = names[s.provider_index]
        provider = pool.get(name)
        continuing = s.phase == "generate" and s.iteration > 0
        request = CallRequest(
            messages=s.messages,
            max_output_tokens=s.spec.max_output_tokens,
            model=s.spec.model,
            prefill=s.overlap if continuing and s.prefill and s.overlap else None,
            previous_response_id=s.response_id if continuing else None,
        )
        try:
            return s, call_with_retries(
                provider, request, sleep=sleep, rng=rng, deferrals=deferrals
            )
        except PrefillUnsupported as exc:
            # The model (or the server's chat template) cannot continue an open assistant
            # message: the same profile is called again at once with the plain
            # continuation turn (repeat + overlap merging), and for the rest of the job.
            s.prefill = False
            s.metadata.warn(f"{_named(name, exc)}; continuing without assistant prefill")
        except PreviousResponseNotFound as exc:
            # The provider forgot the conversation (expired, or another account): the
            # continuation prompt carries the context, so go on without the id.
            s.response_id = None
            s.metadata.warn(f"{_named(name, exc)}; continuing without previous_response_id")
        except ProviderError as exc:
            if s.provider_index + 1 >= len(names):
                return s, ProviderResponse(
                    finish_reason=FinishReason.ERROR,
                    error=str(exc),
                    permanent=isinstance(exc, FatalError),
                    provider=name,
                )
            nxt = names[s.provider_index + 1]
            s.metadata.provider_fallbacks.append(
                ProviderSwitch(
                    iteration=s.iteration + 1, from_profile=name, to_profile=nxt, reason=str(exc)
                )
            )
            s.metadata.warn(f"provider {name} failed for good ({exc}); {nxt} serves from now on")
            s.provider_index += 1
            s.response_id = None


def _named(name: str, exc: Exception) -> str:
    """The error's message, led by the profile's name once (adapters already put it)."""
    said = str(exc)
    return said if said.startswith(f"{name}: ") else f"{name}: {said}"
