"""The ``cluster`` fixture: real worker processes on a real Redis (see ``procs.py``), and
on a RabbitMQ broker when asked (``broker``); and ``cluster_api``: the status API on the
cluster's Redis prefix and queue."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from api.app import create_app
from api.settings import ApiSettings
from tests.acceptance.procs import Cluster
from tests.rabbitmq import delete_queues, queue_name, require_rabbitmq


@pytest.fixture(params=["redis", "rabbitmq"])
def broker(request: pytest.FixtureRequest) -> str | None:
    """The broker of a test run on both: None (the store's Redis) or a RabbitMQ's URL
    (skipped when none is reachable)."""
    return None if request.param == "redis" else require_rabbitmq()


@pytest.fixture
def cluster(redis_url: str, redis_prefix: str, tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    """``cluster(sim_url=..., **env)`` makes a :class:`Cluster`; its processes are killed
    at teardown. Recovery settings are short so tests run in seconds."""
    made: list[Cluster] = []

    def make(
        sim_url: str | None = None,
        url: str | None = None,
        broker_url: str | None = None,
        **env: str,
    ) -> Cluster:
        """On ``broker_url`` (a RabbitMQ's), the cluster's queue is one of its own, the
        default ``celery`` queue is left alone, and both are deleted at teardown."""
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CONTINUUM_", "OPENAI_", "ANTHROPIC_", "SENTRY_"))
        }
        base.update(
            REDIS_URL=url or redis_url,
            CONTINUUM_KEY_PREFIX=redis_prefix,
            CONTINUUM_BROKER_PREFIX=redis_prefix,
            CONTINUUM_QUEUE="q",
            CONTINUUM_LEASE_TTL_S="2",
            CONTINUUM_QUEUE_GRACE_S="5",
            CONTINUUM_WATCHDOG_INTERVAL_S="0.25",
            PYTHONUNBUFFERED="1",
            CONTINUUM_ENABLE_SIM="1",
        )
        if sim_url is not None:
            base["CONTINUUM_SIM_URL"] = f"{sim_url}/v1"
        if broker_url is not None:
            base.update(
                CONTINUUM_BROKER_URL=broker_url,
                CONTINUUM_QUEUE=queue_name(),
                CONTINUUM_CONSUME_DEFAULT_QUEUE="0",
            )
        base.update(env)
        log_dir = tmp_path / f"cluster{len(made)}"
        log_dir.mkdir()
        c = Cluster(url or redis_url, redis_prefix, log_dir, base, broker_url=broker_url)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()
        if c.broker_url is not None:
            delete_queues(c.broker_url, c.queue)


@pytest.fixture
def cluster_api(
    serve: Callable[[Any], str], redis_url: str, redis_prefix: str
) -> Iterator[Callable[..., httpx.Client]]:
    """``cluster_api(token=None, **settings)`` serves the API (a real uvicorn) on the
    cluster's Redis prefix and queue; its client sends ``token`` as the bearer token
    (None: a local-only API without one). Closed at teardown."""
    made: list[tuple[Any, httpx.Client]] = []

    def make(token: str | None = None, **settings: Any) -> httpx.Client:
        app = create_app(
            ApiSettings(
                REDIS_URL=redis_url,
                key_prefix=redis_prefix,
                broker_prefix=redis_prefix,
                queue="q",
                api_token=None if token is None else SecretStr(token),
                api_insecure_local=token is None,
                **settings,
            )
        )
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        client = httpx.Client(base_url=serve(app), timeout=30, headers=headers)
        made.append((app, client))
        return client

    yield make
    for app, client in made:
        client.close()
        app.state.service.close()
