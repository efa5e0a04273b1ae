"""The status API: submit jobs and batches, follow them, read their output, cancel them.

``create_app(settings, redis=...)`` builds the app; nothing is read or connected at import.
Jobs are created exactly as the ``continuum.generate`` task creates them
(``workers.submit``), and their iteration 0 is sent as the same ``continuum.iterate``
message a worker sends, to the queue of the job's provider profile. The routes are one
router per resource: ``api.jobs``, ``api.batches``, ``api.listing``, ``api.events``,
``api.metrics``. See ``docs/api.md``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse

from api.auth import BearerAuth, NoToken
from api.batches import batches_router
from api.docs_assets import DESCRIPTION, install_docs
from api.errors import install
from api.events import events_router
from api.jobs import jobs_router
from api.listing import listing_router
from api.metrics import metrics_router
from api.middleware import BodyLimit
from api.models import Health as HealthReport
from api.routing import v1_router
from api.service import Service
from api.settings import api_settings
from workers.app import make_app
from workers.settings import Settings, url_problems
from workers.store import JobStore
from workers.tracing import init_tracing, trace_app

if TYPE_CHECKING:
    from redis import Redis

VERSION = "1"


def _routes(svc: Service, auth: BearerAuth | None) -> list[APIRouter]:
    """The ``/v1`` routers, one per resource; each route depends on ``auth`` (none:
    local-only, no token)."""
    s = svc.settings
    reads = v1_router(auth)  # routes with no body: the auth they inherit is enough
    reads.include_router(listing_router(svc.store))
    reads.include_router(
        events_router(
            svc.store, max_streams=s.api_max_streams, heartbeat_s=s.api_stream_heartbeat_s
        )
    )
    return [jobs_router(svc, auth), batches_router(svc, auth), reads]


def create_app(settings: Settings | None = None, *, redis: Redis | None = None) -> FastAPI:
    """The status API on ``settings`` (default: read from the environment now) and
    ``redis`` (default: a client on ``settings.redis_url``, closed at shutdown).

    Raises :class:`api.auth.NoToken` without ``api_token`` unless ``api_insecure_local``,
    and ``ValueError`` (naming the setting, not the URL) when ``REDIS_URL`` or
    ``CONTINUUM_BROKER_URL`` is no URL it can use. Messages go to the broker
    (``CONTINUUM_BROKER_URL``, default ``REDIS_URL``).
    """
    s = api_settings(settings)
    problems = url_problems(s)
    if problems:
        raise ValueError("; ".join(problems))
    token = s.api_token.get_secret_value() if s.api_token is not None else None
    if not token and not s.api_insecure_local:
        raise NoToken
    if redis is not None:
        store = JobStore(redis, prefix=s.key_prefix, retention_s=s.retention_s)
    elif s.redis_url:
        store = JobStore.from_url(
            s.redis_url,
            s.key_prefix,
            retention_s=s.retention_s,
            socket_connect_timeout=2.0,
            socket_timeout=10.0,
            health_check_interval=30,
        )
    else:
        raise RuntimeError("REDIS_URL is not set: the status API needs Redis")
    celery = make_app(s, broker_url=s.broker or store.server_url())
    # A producer only: no result backend, so sending a task subscribes to nothing.
    celery.conf.result_backend = "disabled"
    svc = Service(s, store, celery, owns_store=redis is None)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        svc.close()

    app = FastAPI(
        title="Continuum status API",
        version=VERSION,
        summary="Submit long LLM generations, follow them, read their output.",
        description=DESCRIPTION,
        docs_url=None,  # served from this machine: install_docs
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.service = svc
    install(app)
    install_docs(app)
    auth = BearerAuth(token) if token else None
    for router in _routes(svc, auth):
        app.include_router(router)
    app.include_router(
        metrics_router(svc.store, svc.broker, s, svc.rt.pool.profiles.values(), auth)
    )

    @app.get(
        "/healthz",
        response_model=None,
        summary="Health: Redis reachable, workers seen",
        responses={
            200: {"model": HealthReport, "description": "Redis is up (workers: see the body)."},
            503: {"model": HealthReport, "description": "Redis is unreachable."},
        },
    )
    def healthz() -> JSONResponse:
        """Whether Redis answers (503 when it does not) and which workers answered a ping
        (reused for `CONTINUUM_API_HEALTH_CACHE_S`). Needs no token."""
        ok, report = svc.health.check()
        return JSONResponse(report, status_code=200 if ok else 503)

    app.add_middleware(BodyLimit, max_bytes=s.api_max_body_bytes)
    init_tracing("continuum-api", celery=False)  # its sends carry trace_headers()
    trace_app(app)
    return app
