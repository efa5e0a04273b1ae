"""How many messages wait on the broker: the one place that inspects it (``GET /metrics``).

The broker is not the job store (``CONTINUUM_BROKER_URL`` may be another Redis, or
RabbitMQ): on Redis, kombu keeps a queue as one list per priority step and the messages
workers hold unacknowledged in one hash, read here with ``LLEN`` and ``HLEN``; on RabbitMQ,
each queue's ``message_count`` comes from a passive ``queue.declare`` (it creates
nothing), and the unacknowledged count is known to its management API only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from redis import Redis

from workers.settings import is_amqp

#: kombu's Redis transport keeps a queue as one list per priority step: the plain name
#: for priority 0, ``name + SEP + step`` for the others (``kombu.transport.redis``).
PRIORITY_STEPS = (0, 3, 6, 9)
PRIORITY_SEP = "\x06\x16"
#: kombu's hash of the messages delivered to a worker and not acknowledged yet.
UNACKED = "unacked"


@dataclass(frozen=True)
class Depths:
    """Messages waiting per queue (None: the broker could not be reached) and held
    unacknowledged (None: not known on this broker)."""

    waiting: list[int] | None
    unacked: int | None


@dataclass
class BrokerInspector:
    """Reads queue depths on the broker of ``celery`` (a producer app:
    ``workers.app.make_app``), whose Redis keys start with ``prefix``."""

    celery: Any
    prefix: str = ""
    _client: Redis | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return str(self.celery.conf.broker_url)

    def depths(self, queues: Sequence[str]) -> Depths:
        """The messages waiting in each of ``queues`` (every priority) and, on Redis, the
        messages held unacknowledged (every queue of the broker's database)."""
        if is_amqp(self.url):
            return Depths(self._amqp(queues), None)
        return self._redis(queues)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _redis(self, queues: Sequence[str]) -> Depths:
        if self._client is None:
            self._client = Redis.from_url(self.url, socket_connect_timeout=2.0, socket_timeout=10.0)
        pipe = self._client.pipeline(transaction=False)
        for queue in queues:
            for step in PRIORITY_STEPS:
                name = f"{self.prefix}{queue}"
                pipe.llen(f"{name}{PRIORITY_SEP}{step}" if step else name)
        pipe.hlen(f"{self.prefix}{UNACKED}")
        *lengths, unacked = pipe.execute()
        steps = len(PRIORITY_STEPS)
        waiting = [sum(lengths[n * steps : (n + 1) * steps]) for n in range(len(queues))]
        return Depths(waiting, int(unacked))

    def _amqp(self, queues: Sequence[str]) -> list[int] | None:
        """Each queue's ready messages (a queue no worker has declared yet holds 0), or
        None when RabbitMQ cannot be reached."""
        counts = []
        with self.celery.connection_for_read() as conn:
            try:
                conn.ensure_connection(max_retries=1)
                for queue in queues:
                    channel = conn.channel()
                    try:
                        counts.append(int(channel.queue_declare(queue, passive=True).message_count))
                    except conn.channel_errors:  # NOT_FOUND, which closes the channel
                        counts.append(0)
                    else:
                        channel.close()
            except conn.connection_errors:
                return None
        return counts
