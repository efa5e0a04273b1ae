"""Helpers of the status API tests: settings under the test's prefix, the broker list's
messages, and ``Stepper`` (a job's iterations run in this process, as a worker would)."""

from __future__ import annotations

import base64
import json
from typing import Any

from redis import Redis

from api.settings import ApiSettings
from sim.app import make_transport
from sim.model import SimModel
from workers.calls import ProviderPool
from workers.iteration import run_iteration
from workers.providers.profiles import Profile
from workers.ratelimit import TokenBucket
from workers.runtime import Runtime
from workers.store import JobStore

QUEUE = "q"


def make_settings(redis_url: str, prefix: str, **extra: Any) -> ApiSettings:
    values: dict[str, Any] = {
        "REDIS_URL": redis_url,
        "key_prefix": prefix,
        "broker_prefix": prefix,
        "queue": QUEUE,
        "api_token": None,
        "api_insecure_local": True,  # the tests' servers listen on loopback
        **extra,
    }
    return ApiSettings(**values)


def queued(client: Redis, prefix: str, queue: str = QUEUE) -> list[dict[str, Any]]:
    """The Celery messages waiting in the broker list, oldest first: task and kwargs."""
    out = []
    for raw in reversed(client.lrange(f"{prefix}{queue}", 0, -1)):
        message = json.loads(raw)
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        _, kwargs, _ = json.loads(body)
        out.append({"task": message["headers"]["task"], "kwargs": kwargs})
    return out


class Stepper:
    """Runs a job's iterations in this process (a worker's work, one call at a time)
    against the in-process simulator."""

    def __init__(self, client: Redis, prefix: str, sim: SimModel) -> None:
        profile = Profile(name="sim", kind="openai", base_url="http://sim/v1")
        pool = ProviderPool({"sim": profile}, env={}, transports={"sim": make_transport(model=sim)})
        settings = make_settings("redis://unused", prefix)
        store = JobStore(client, prefix=prefix)
        self.rt = Runtime(settings, store, pool, TokenBucket(store))
        self.next: dict[str, int] = {}

    def step(self, job_id: str) -> dict[str, Any]:
        """Run the job's next iteration; returns the iteration's result."""
        iteration = self.next.get(job_id, 0)
        sent: list[int] = []
        result = run_iteration(self.rt, job_id, iteration, lambda _j, i, _c, _q: sent.append(i))
        self.next[job_id] = sent[-1] if sent else iteration + 1
        return result
