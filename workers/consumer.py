"""Celery's worker consumer, made to dead-letter the task messages it cannot run.

Celery already rejects (acknowledges away) a message with no task name, an unknown task,
a body that does not decode or a refused content type, but logs its body (a job's prompt,
a callback URL) and keeps no record. A body of the wrong shape (``5``, ``{"a": 1}``,
``[1, 2]`` instead of ``[args, kwargs, options]``) raises out of its handler instead.
Here each one is dead-lettered (``workers.deadletter``: logged without its body, recorded
with the reason) and rejected, and the worker goes on. Selected by ``worker_consumer`` in
``workers/app.py``, which also connects the two task signals below: arguments that the
task contract refuses (``InvalidMessage``) or that Celery cannot even pass to the task.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from celery import signals
from celery.exceptions import NotRegistered
from celery.utils.objects import Bunch
from celery.worker.consumer import Consumer as CeleryConsumer
from kombu.exceptions import ContentDisallowed

from core.errors import describe
from workers.deadletter import DeadLetter, Kind, dead_letter
from workers.errors import InvalidMessage
from workers.observability import scrub

__all__ = ["Consumer", "on_task_failure", "on_task_internal_error"]

log = logging.getLogger("continuum.consumer")

#: A worker's task events (received, started, succeeded, failed) wait at most this long
#: and go out together in one message (Celery's ``task.multi``, which Flower reads),
#: instead of one publish each on the event loop's next turn: about 10% of a zero-latency
#: hop's CPU (docs/benchmarks.md, "Where a hop's CPU goes"). Flower sees a task's state
#: this much later at most.
EVENTS_WINDOW_S = 0.05


def _headers(message: Any) -> dict[str, Any]:
    headers = getattr(message, "headers", None)
    return headers if isinstance(headers, dict) else {}


def _letter(message: Any, kind: Kind, reason: str) -> DeadLetter:
    headers = _headers(message)
    info = getattr(message, "delivery_info", None)
    queue = info.get("routing_key") if isinstance(info, dict) else None
    return DeadLetter(
        kind,
        reason,
        raw=getattr(message, "body", None),
        queue=queue,
        task=headers.get("task"),
        message_id=headers.get("id"),
    )


def _kind_of(exc: BaseException) -> Kind:
    return Kind.CONTENT_TYPE if isinstance(exc, ContentDisallowed) else Kind.INVALID_TASK


class Consumer(CeleryConsumer):  # type: ignore[misc]  # Celery is untyped
    #: A flush of the buffered task events is scheduled (``on_send_event_buffered``).
    _events_due = False

    def on_send_event_buffered(self) -> None:
        # Called by the pool's threads too: the event loop schedules the flush itself. Two
        # threads that both find no flush due schedule two, which is harmless; an event
        # buffered once the flag is down schedules the next one, so none waits forever.
        if self.hub is None or self._events_due:
            return
        self._events_due = True
        self.hub.call_soon(self._schedule_events_flush)

    def _schedule_events_flush(self) -> None:
        self.hub.call_later(EVENTS_WINDOW_S, self._flush_due_events)

    def _flush_due_events(self) -> None:
        self._events_due = False
        self._flush_events()

    def _reject(self, message: Any) -> None:
        if not message.acknowledged:
            message.reject_log_error(log, self.connection_errors)

    def on_decode_error(self, message: Any, exc: BaseException) -> None:
        kind = Kind.CONTENT_TYPE if isinstance(exc, ContentDisallowed) else Kind.UNDECODABLE
        dead_letter(_letter(message, kind, f"the body does not decode: {exc}"))
        if not message.acknowledged:
            message.ack()

    def on_unknown_message(self, body: Any, message: Any) -> None:
        reason = "no task name in the headers: not a Celery task message"
        dead_letter(_letter(message, Kind.NOT_A_TASK, reason))
        self._reject(message)
        signals.task_rejected.send(sender=self, message=message, exc=None)

    def on_unknown_task(self, body: Any, message: Any, exc: BaseException) -> None:
        name, task_id = _headers(message).get("task"), _headers(message).get("id")
        dead_letter(_letter(message, Kind.UNKNOWN_TASK, f"no task named {name!r:.200} here"))
        self._reject(message)
        if not isinstance(task_id, str) or not isinstance(name, str):
            return
        # What Celery does for an unknown task: a NotRegistered result for whoever waits on
        # it, and a failed task in Flower. Best effort: the message is gone already.
        try:
            request = Bunch(
                name=name,
                chord=None,
                root_id=_headers(message).get("root_id"),
                correlation_id=message.properties.get("correlation_id"),
                reply_to=message.properties.get("reply_to"),
                errbacks=None,
            )
            self.app.backend.mark_as_failure(task_id, NotRegistered(name), request=request)
            if self.event_dispatcher:
                self.event_dispatcher.send(
                    "task-failed", uuid=task_id, exception=f"NotRegistered({name!r})"
                )
        except self.connection_errors:
            raise
        except Exception:
            log.exception("could not mark the unknown task %.200r as failed", name)
        signals.task_unknown.send(sender=self, message=message, exc=exc, name=name, id=task_id)

    def on_invalid_task(self, body: Any, message: Any, exc: BaseException) -> None:
        reason = describe(exc)
        dead_letter(_letter(message, _kind_of(exc), reason))
        self._reject(message)
        signals.task_rejected.send(sender=self, message=message, exc=exc)

    def create_task_handler(self, *args: Any, **kwargs: Any) -> Any:
        handle = super().create_task_handler(*args, **kwargs)
        connection_errors = self.connection_errors

        def on_task_received(message: Any) -> Any:
            try:
                return handle(message)
            except connection_errors:
                raise
            except Exception as exc:  # a body of the wrong shape, a bad field
                return self.on_invalid_task(None, message, exc)

        return on_task_received


def _arguments(args: Any, kwargs: Any) -> str:
    """A task's arguments for the record, job text filtered out (as for Sentry)."""
    return json.dumps({"args": scrub(args), "kwargs": scrub(kwargs)}, default=repr)


def _queue(sender: Any) -> str | None:
    info = getattr(getattr(sender, "request", None), "delivery_info", None)
    return info.get("routing_key") if isinstance(info, dict) else None


def on_task_failure(
    sender: Any = None,
    task_id: Any = None,
    exception: BaseException | None = None,
    args: Any = None,
    kwargs: Any = None,
    **_: Any,
) -> None:
    """``task_failure``: a message whose arguments the task contract refused."""
    if not isinstance(exception, InvalidMessage):
        return
    name = getattr(sender, "name", None)
    letter = DeadLetter(
        Kind.INVALID_ARGUMENTS,
        str(exception),
        _arguments(args, kwargs),
        _queue(sender),
        name,
        task_id,
    )
    dead_letter(letter)


def on_task_internal_error(
    sender: Any = None,
    task_id: Any = None,
    exception: BaseException | None = None,
    args: Any = None,
    kwargs: Any = None,
    **_: Any,
) -> None:
    """``task_internal_error``: Celery could not run the task at all (e.g. its keyword
    arguments are not a mapping); the message is acknowledged as failed."""
    name = getattr(sender, "name", None)
    reason = describe(exception)
    letter = DeadLetter(
        Kind.INVALID_ARGUMENTS, reason, _arguments(args, kwargs), _queue(sender), name, task_id
    )
    dead_letter(letter)
