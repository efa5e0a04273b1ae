"""kombu's Redis transport, made safe against a message that is not a kombu envelope.

kombu decodes the envelope it pops from the queue inside its event loop; a list item that
is not JSON (anyone can ``LPUSH`` to the queue) raises out of the loop and Celery stops
the worker with "Unrecoverable error" (kombu 5.7). The item is already popped, so a
restarted worker would go on, but one bad push should not take a worker down: here it is
logged and dropped. Selected by ``broker_transport`` in ``workers/app.py``.
"""

from __future__ import annotations

import logging
from typing import Any

from kombu.transport import redis as kombu_redis

log = logging.getLogger("continuum.transport")


class Channel(kombu_redis.Channel):
    def _brpop_read(self, **options: Any) -> bool:
        try:
            return bool(super()._brpop_read(**options))  # type: ignore[no-untyped-call]
        except (ValueError, KeyError, TypeError) as exc:  # JSON/UTF-8 errors are ValueErrors
            log.error("dropped a queue item that is not a Celery message: %r", exc)
            return False


class Transport(kombu_redis.Transport):
    Channel = Channel
