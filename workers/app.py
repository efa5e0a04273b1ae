"""The Celery application: JSON only, late acks, prefetch 1, task events on.

A worker turns Sentry on at start when ``SENTRY_DSN`` is set (``celeryd_init``: once, in
the main process, before a prefork pool forks; the SDK restarts its sender in each child).

A message a worker cannot run never stops it: the transport (``workers.transport``) and
the consumer (``workers.consumer``) dead-letter it (``workers.deadletter``) and go on.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import celeryd_init, task_failure, task_internal_error, task_prerun

from workers.observability import init_sentry, tag_task
from workers.settings import Settings, get_settings
from workers.tracing import init_tracing


def make_app(settings: Settings | None = None, *, broker_url: str | None = None) -> Celery:
    s = settings or get_settings()
    url = broker_url or s.redis_url or "redis://127.0.0.1:6379/0"
    app = Celery("continuum", broker=url, backend=url, include=["workers.tasks"])
    transport: dict[str, object] = {"visibility_timeout": s.visibility_timeout_s}
    if s.broker_prefix:
        transport["global_keyprefix"] = s.broker_prefix
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        worker_prefetch_multiplier=1,
        worker_send_task_events=True,
        task_send_sent_event=True,
        task_track_started=True,
        task_default_queue=s.queue,
        result_expires=24 * 3600,
        broker_connection_retry_on_startup=True,
        broker_transport="workers.transport:Transport",
        worker_consumer="workers.consumer:Consumer",
        broker_transport_options=transport,
        result_backend_transport_options=dict(transport),
        worker_hijack_root_logger=False,
    )
    return app


app = make_app()


def _start_worker(**_: Any) -> None:
    init_sentry(get_settings())
    init_tracing("continuum-worker")
    # Worker-only (the API imports this module too); a prefork pool forks after this.
    from workers.consumer import on_task_failure, on_task_internal_error  # noqa: PLC0415

    task_failure.connect(on_task_failure, weak=False)
    task_internal_error.connect(on_task_internal_error, weak=False)


def _tag_task(kwargs: dict[str, Any] | None = None, **_: Any) -> None:
    # Runs inside the task's own Sentry scope: a poison message is tagged with its job too.
    tag_task(kwargs)


celeryd_init.connect(_start_worker)
task_prerun.connect(_tag_task)
