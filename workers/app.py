"""The Celery application: JSON only, late acks, prefetch 1, task events on."""

from __future__ import annotations

from celery import Celery

from workers.settings import Settings, get_settings


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
        broker_transport_options=transport,
        result_backend_transport_options=dict(transport),
        worker_hijack_root_logger=False,
    )
    return app


app = make_app()
