"""The ``cluster`` fixture: real worker processes on a real Redis (see ``procs.py``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from procs import Cluster


@pytest.fixture
def cluster(redis_url: str, redis_prefix: str, tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    """``cluster(sim_url=..., **env)`` makes a :class:`Cluster`; its processes are killed
    at teardown. Recovery settings are short so tests run in seconds."""
    made: list[Cluster] = []

    def make(sim_url: str | None = None, url: str | None = None, **env: str) -> Cluster:
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
        base.update(env)
        log_dir = tmp_path / f"cluster{len(made)}"
        log_dir.mkdir()
        c = Cluster(url or redis_url, redis_prefix, log_dir, base)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()
