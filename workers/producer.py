"""Sending Continuum's own messages on a Celery app's broker: ``continuum.iterate`` and
``continuum.callback``. A task, the watchdog, the command line and the API all send
through a :class:`Producer` of the app their entry point built (``workers.app.make_app``),
so every message goes to the configured broker, Redis or RabbitMQ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workers.submit import iterate_options
from workers.tracing import trace_headers

ITERATE = "continuum.iterate"
CALLBACK = "continuum.callback"


@dataclass(frozen=True)
class Producer:
    """Sends on ``app``'s broker; callbacks go to ``app``'s default queue.

    ``trace``: carry the current trace in the message headers, where Celery is not
    instrumented (the API; a worker's Celery instrumentation adds them itself).
    """

    app: Any
    trace: bool = False

    def _send(self, name: str, **options: Any) -> None:
        headers = trace_headers() if self.trace else None
        self.app.send_task(name, headers=headers or None, **options)

    def iteration(
        self, job_id: str, iteration: int, countdown: float = 0.0, queue: str = ""
    ) -> None:
        """Send ``continuum.iterate`` (an ``Enqueue``), after ``countdown`` seconds, to
        ``queue`` (default: the app's default queue)."""
        self._send(
            ITERATE,
            **iterate_options(job_id, iteration),
            countdown=countdown or None,
            queue=queue or None,
            ignore_result=True,  # as the task says: its progress is in the store and events
        )

    def callback(self, job_id: str) -> None:
        """Send ``continuum.callback`` for an ended job (a ``Notify``)."""
        self._send(CALLBACK, kwargs={"job_id": job_id}, queue=self.app.conf.task_default_queue)
