"""A real RabbitMQ for the tests that run on it: ``CONTINUUM_TEST_RABBITMQ_URL``, else the
one on 127.0.0.1:5672 (guest/guest, vhost ``/``).

The vhost may be shared: a test uses queues named for it alone (:func:`queue_name`) and
deletes only those (:func:`delete_queues`), never another's. Celery's own exchanges
(``celeryev``, the pidbox ones, the ``celery_delayed_*`` levels of native delayed
delivery) are shared by every Celery application on the vhost and left alone.
"""

from __future__ import annotations

import os
import uuid

import pytest
from kombu.connection import Connection

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672//"


def rabbitmq_url() -> str:
    return os.environ.get("CONTINUUM_TEST_RABBITMQ_URL", "").strip() or DEFAULT_URL


def reachable(url: str) -> bool:
    try:
        with Connection(url, connect_timeout=2) as conn:
            conn.ensure_connection(max_retries=1)
    except Exception:
        return False
    return True


def require_rabbitmq() -> str:
    """The RabbitMQ's URL; the test is skipped, saying why, when none answers."""
    url = rabbitmq_url()
    if not reachable(url):
        pytest.skip(
            "no RabbitMQ reachable at CONTINUUM_TEST_RABBITMQ_URL or 127.0.0.1:5672 "
            "(guest/guest): the RabbitMQ variant needs one"
        )
    return url


def queue_name(prefix: str = "continuum-test") -> str:
    """A queue name no one else uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def delete_queues(url: str, *names: str) -> None:
    """Delete the named queues and their exchanges (Celery names each after its queue)."""
    with Connection(url, connect_timeout=5) as conn:
        for name in names:
            for delete in ("queue_delete", "exchange_delete"):
                channel = conn.channel()
                try:
                    getattr(channel, delete)(name)
                except conn.channel_errors:
                    pass  # never declared
                finally:
                    channel.close()


def depth(url: str, name: str) -> int:
    """The messages ready in queue ``name`` (0 when it does not exist)."""
    with Connection(url, connect_timeout=5) as conn:
        channel = conn.channel()
        try:
            return int(channel.queue_declare(name, passive=True).message_count)
        except conn.channel_errors:
            return 0
