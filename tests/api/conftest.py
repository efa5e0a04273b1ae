"""The status API on a real uvicorn and a real Redis, under the test's key prefix.

No worker runs here: a job created through the API stays queued, and its iteration 0 is
the ``continuum.iterate`` message found in the broker list ``{prefix}q``. Tests that need
a job to move run its iterations in this process (``api_support.Stepper``), as a worker
would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from redis import Redis

from api.app import create_app
from sim.model import SimModel, SimOptions
from tests.api.api_support import Stepper, make_settings


@pytest.fixture
def make_api(
    serve: Callable[[Any], str], redis_url: str, redis_prefix: str
) -> Iterator[Callable[..., httpx.Client]]:
    """``make_api(**settings)`` serves a new app; returns an httpx client on it."""
    apps: list[FastAPI] = []
    clients: list[httpx.Client] = []

    def make(**extra: Any) -> httpx.Client:
        app = create_app(make_settings(redis_url, redis_prefix, **extra))
        apps.append(app)
        client = httpx.Client(base_url=serve(app), timeout=15)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
    for app in apps:
        app.state.service.close()


@pytest.fixture
def api(make_api: Callable[..., httpx.Client]) -> httpx.Client:
    return make_api()


@pytest.fixture
def stepper(redis_client: Redis, redis_prefix: str) -> Stepper:
    return Stepper(redis_client, redis_prefix, SimModel(SimOptions(seed=5)))
