"""The broker transport (``workers/transport.py``) on a real Redis: one redis-py client per
channel, and messages still sent, received and acknowledged through it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kombu.connection import Connection
from kombu.entity import Exchange, Queue
from redis import Redis

from tests.conftest import decoded


@pytest.fixture
def connection(redis_url: str, redis_prefix: str) -> Iterator[Connection]:
    options = {"global_keyprefix": redis_prefix, "visibility_timeout": 3600}
    with Connection(
        redis_url, transport="workers.transport:Transport", transport_options=options
    ) as conn:
        yield conn


def test_a_channel_uses_one_client_until_kombu_drops_its_pool(connection: Connection) -> None:
    """Every operation of a channel (publish, unacked bookkeeping, ack) shares one client,
    instead of building one each; a client of the new pool once kombu drops its pools."""
    channel: Any = connection.default_channel
    with channel.conn_or_acquire() as first, channel.conn_or_acquire() as again:
        assert first is again
    given = object()
    with channel.conn_or_acquire(given) as client:
        assert client is given
    channel._disconnect_pools()
    with channel.conn_or_acquire() as after:
        assert after is not first
        assert after.connection_pool is channel.pool


def test_messages_are_sent_received_and_acknowledged(
    connection: Connection, redis_client: Redis, redis_prefix: str
) -> None:
    """A message published through the shared client is received, held in the unacked
    hash while it is, and gone from it once acknowledged."""
    queue = Queue("t", Exchange("t", type="direct"), routing_key="t")
    with connection.Producer() as producer:
        for n in range(3):
            producer.publish({"n": n}, exchange=queue.exchange, routing_key="t", declare=[queue])
    got: list[Any] = []
    with connection.Consumer(queue, callbacks=[lambda body, message: got.append(message)]):
        while len(got) < 3:
            connection.drain_events(timeout=5)
    assert [m.payload["n"] for m in got] == [0, 1, 2]
    unacked = f"{redis_prefix}unacked"
    assert redis_client.hlen(unacked) >= 1
    for message in got:
        message.ack()
    assert redis_client.hlen(unacked) == 0
    assert decoded(redis_client.type(f"{redis_prefix}t")) in ("none", "list")
