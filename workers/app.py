"""The Celery application: JSON only, late acks, prefetch 1, task events on.

``make_app(settings)`` builds it; nothing is read or connected at import. The entry point
(``continuum worker``, ``flower``, ``api``, a test) builds one :class:`Settings` and
passes it down: the app carries it, and the worker's runtime (the store, the providers)
is built from it on first use (:attr:`ContinuumApp.runtime`).

The broker is ``CONTINUUM_BROKER_URL`` (default: ``REDIS_URL``); results stay in
``REDIS_URL``'s Redis, or ``CONTINUUM_RESULT_BACKEND``'s (a plain Redis, or ``disabled``),
which a Redis Cluster or Sentinel ``REDIS_URL`` needs: Celery's Redis result backend
cannot use either. On RabbitMQ (``amqp://``, ``amqps://``) every queue is a quorum
queue on a topic exchange: durable and replicated, a message held by a worker that dies
is delivered again as soon as its connection drops (no visibility timeout), and a
countdown is held by the broker (Celery's native delayed delivery), not by a worker.

A worker turns Sentry on at start when ``SENTRY_DSN`` is set (``celeryd_init``: once, in
the main process, before a prefork pool forks; the SDK restarts its sender in each child).

A message a worker cannot run never stops it: the transport (``workers.transport``, on
Redis) and the consumer (``workers.consumer``, on both brokers) dead-letter it
(``workers.deadletter``) and go on.

``celery -A workers.app worker`` still works: ``workers.app.app`` is built from the
environment when it is first asked for.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from celery import Celery
from celery.signals import celeryd_init, task_failure, task_internal_error, task_prerun

from workers.deadletter import record_to
from workers.observability import init_sentry, tag_task
from workers.runtime import Runtime, build_runtime
from workers.settings import Settings, get_settings, is_amqp, is_cluster_store
from workers.tracing import init_tracing

#: The broker and result backend when no URL is set at all.
FALLBACK_URL = "redis://127.0.0.1:6379/0"


class ContinuumApp(Celery):  # type: ignore[misc]  # celery has no type hints
    """A Celery app that carries the settings it was built from."""

    def __init__(self, *args: Any, settings: Settings | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = settings or get_settings()

    def __reduce_keys__(self) -> dict[str, Any]:
        # Celery rebuilds a pickled app from these keyword arguments.
        return {**super().__reduce_keys__(), "settings": self.settings}

    @cached_property
    def runtime(self) -> Runtime:
        """The store and the providers of this app's settings, built on first use (in a
        prefork pool's child, after the fork)."""
        if not self.settings.redis_url:
            raise RuntimeError("REDIS_URL is not set: start workers with `continuum worker`")
        return build_runtime(self.settings, self.settings.redis_url)


def broker_config(settings: Settings, broker: str) -> dict[str, Any]:
    """The broker's part of the configuration: kombu's Redis transport made safe
    (``workers.transport``) on Redis, quorum queues on RabbitMQ."""
    if is_amqp(broker):
        return {
            "task_default_queue_type": "quorum",
            "task_create_missing_queue_type": "quorum",
            # Native delayed delivery routes a countdown through topic exchanges only.
            "task_default_exchange_type": "topic",
            "task_create_missing_queue_exchange_type": "topic",
            "worker_detect_quorum_queues": True,  # per-consumer prefetch: no global QoS
            "broker_native_delayed_delivery_queue_type": "quorum",
            # A send returns once RabbitMQ has taken the message (replicated).
            "broker_transport_options": {"confirm_publish": True},
        }
    transport: dict[str, object] = {"visibility_timeout": settings.visibility_timeout_s}
    if settings.broker_prefix:
        transport["global_keyprefix"] = settings.broker_prefix
    return {
        "broker_transport": "workers.transport:Transport",
        "broker_transport_options": transport,
    }


def make_app(settings: Settings | None = None, *, broker_url: str | None = None) -> ContinuumApp:
    """The Celery app of ``settings`` (default: read from the environment now), sending to
    ``broker_url`` (default: the settings' broker)."""
    s = settings or get_settings()
    broker = broker_url or s.broker or FALLBACK_URL
    backend = (
        s.result_backend or s.redis_server_url or (broker if not is_amqp(broker) else FALLBACK_URL)
    )
    if is_cluster_store(backend):  # refused at start (url_problems): never a backend
        raise ValueError("a Redis Cluster or Sentinel REDIS_URL needs CONTINUUM_RESULT_BACKEND")
    app = ContinuumApp(
        "continuum", settings=s, broker=broker, backend=backend, include=["workers.tasks"]
    )
    results: dict[str, object] = {"visibility_timeout": s.visibility_timeout_s}
    if s.broker_prefix:
        results["global_keyprefix"] = s.broker_prefix
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
        worker_consumer="workers.consumer:Consumer",
        result_backend_transport_options=results,
        worker_hijack_root_logger=False,
        **broker_config(s, broker),
    )
    return app


def __getattr__(name: str) -> Any:
    """``workers.app.app``: the app of the environment's settings, built when first asked
    for (``celery -A workers.app``, the compose file's health check)."""
    if name == "app":
        app = make_app()
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _start_worker(sender: Any = None, instance: Any = None, **_: Any) -> None:
    found = getattr(getattr(instance, "app", None), "settings", None)
    settings = found if isinstance(found, Settings) else get_settings()
    init_sentry(settings)
    record_to(settings)  # the messages this worker cannot take (``workers.deadletter``)
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
