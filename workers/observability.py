"""Sentry for workers: errors of Celery tasks, tagged with the job, scrubbed of its text.

``init_sentry(settings)`` turns Sentry on when ``SENTRY_DSN`` is set (the worker calls it
at start): the Celery integration reports every failed task (a job that ended failed, a
poison message) and, with ``CONTINUUM_SENTRY_TRACES_SAMPLE_RATE``, traces tasks.
``tag_iteration`` tags the task's scope with the job id, iteration and provider.

Nothing a job says leaves the process: prompts, messages, outputs and specs are replaced
by ``[Filtered]`` wherever they sit under a key that names them (task arguments, log
extras, breadcrumb data), local variables are never captured, and every other string
passes through ``redact`` so no API key from the environment is ever sent.

Nor does a callback URL's secret part (path, query, user info: ``hide_urls``) reach a log
line, Sentry or a task event: ``quiet_http_logs`` stops httpx logging every request's
URL at INFO, and ``QuietRequest`` (the request class of the tasks that carry a spec)
shows callback URLs by origin in the arguments a worker's task events (hence Flower)
carry.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

import sentry_sdk
from celery.signals import celeryd_init
from celery.utils.saferepr import saferepr
from celery.worker.request import Request
from sentry_sdk.integrations.celery import CeleryIntegration

from core.ids import is_id
from workers.callback_addresses import origin
from workers.providers.redact import redact
from workers.settings import Settings

if TYPE_CHECKING:
    from sentry_sdk._types import Breadcrumb, BreadcrumbHint, Event, Hint

FILTERED: Final = "[Filtered]"
#: Keys whose values are a job's text (or hold it): never sent, whatever their shape.
TEXT_KEYS: Final = frozenset(
    {
        "prompt",
        "messages",
        "content",
        "text",
        "output",
        "spec",
        "specs",
        "state",
        "append",
        "suffix",
    }
)
#: Keys under which the SDK's HTTP integrations put a URL's query and fragment.
URL_PART_KEYS: Final = frozenset({"http.query", "http.fragment", "query_string"})
#: Loggers that print every request's URL (with its query) at INFO.
HTTP_LOGGERS: Final = ("httpx", "httpcore")
_URL = re.compile(r"https?://[^\s'\"<>]+", re.IGNORECASE)


def hide_urls(value: Any) -> Any:
    """``value`` with every http(s) URL in it cut to its origin (``scheme://host:port``):
    a callback URL's path, query or user info may hold the receiver's token."""
    if isinstance(value, str):
        return _URL.sub(lambda m: origin(m.group(0)), value) if "://" in value else value
    if isinstance(value, Mapping):
        return {key: hide_urls(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [hide_urls(item) for item in value]
    return value


def quiet_http_logs() -> None:
    """Log httpx and httpcore from WARNING only: at INFO httpx prints every URL it calls,
    a callback's token included (``HTTP Request: POST <url>``)."""
    for name in HTTP_LOGGERS:
        logger = logging.getLogger(name)
        # Its own level, not the effective one: the root logger's is raised to INFO later.
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)


class QuietRequest(Request):  # type: ignore[misc]  # celery has no type hints
    """A task request whose arguments, as the worker's task events show them (Flower
    lists them), name callback URLs by origin only. For the tasks that take a spec."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        try:
            shown = saferepr(hide_urls(self._request_dict["kwargs"]), maxlen=1024)
        except Exception:  # a poison message: its own repr, cut to origins
            shown = hide_urls(str(self.kwargsrepr or ""))
        self._kwargsrepr = self._request_dict["kwargsrepr"] = shown
        self._argsrepr = self._request_dict["argsrepr"] = hide_urls(str(self.argsrepr or ""))


def scrub(value: Any, names: Iterable[str] = ()) -> Any:
    """``value`` (an event or any part of it) with job text filtered and keys redacted.

    A value under a key of ``TEXT_KEYS`` becomes ``[Filtered]`` (numbers, booleans and
    None are kept: they say nothing); a spec's ``job_id`` is kept beside it. Every other
    string goes through ``redact`` (the key variables of the environment, plus ``names``,
    and anything shaped like a provider key).
    """
    names = tuple(names)
    if isinstance(value, str):
        return hide_urls(redact(value, names=names))
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and key.lower() in URL_PART_KEYS and _is_text(item):
                out[key] = FILTERED
            elif isinstance(key, str) and key.lower() in TEXT_KEYS and _is_text(item):
                out[key] = FILTERED
                job_id = item.get("job_id") if isinstance(item, Mapping) else None
                if "job_id" not in value and is_id(job_id):
                    out["job_id"] = redact(job_id, names=names)
            else:
                out[key] = scrub(item, names)
        return out
    if isinstance(value, list | tuple):
        return [scrub(item, names) for item in value]
    return value


def _is_text(value: Any) -> bool:
    return value is not None and not isinstance(value, bool | int | float)


def _key_names() -> tuple[str, ...]:
    """The key variables the configured profiles name (any name, not only ``*_KEY``)."""
    from workers.providers.registry import load_profiles  # noqa: PLC0415  (httpx, adapters)

    try:
        profiles = load_profiles(os.environ)
    except (OSError, ValueError):
        return ()  # the worker reports a broken profiles file itself
    return tuple(p.api_key_env for p in profiles.values() if p.api_key_env)


def init_sentry(settings: Settings) -> bool:
    """Initialise Sentry when a DSN is configured; True if it now reports."""
    dsn = (settings.sentry_dsn or "").strip()
    if not dsn:
        return False
    names = _key_names()

    def before_send(event: Event, hint: Hint) -> Event | None:
        return cast("Event", scrub(event, names))

    def before_breadcrumb(crumb: Breadcrumb, hint: BreadcrumbHint) -> Breadcrumb | None:
        return cast("Breadcrumb", scrub(crumb, names))

    # PII stays off: ``send_default_pii`` is left unset (False; setting it explicitly is
    # deprecated in recent SDKs), so the Celery integration sends task arguments as
    # "[Filtered]" and the default event scrubber stays on. ``scrub`` is the second line.
    sentry_sdk.init(
        dsn=dsn,
        environment=settings.sentry_environment or None,
        integrations=[CeleryIntegration()],
        include_local_variables=False,  # locals hold prompts and outputs
        max_request_body_size="never",
        traces_sample_rate=settings.sentry_traces_sample_rate or None,
        before_send=before_send,
        before_send_transaction=before_send,
        before_breadcrumb=before_breadcrumb,
    )
    return True


def tag_iteration(job_id: str, iteration: int, provider: str | None) -> None:
    """Tag the current task's events with its job, iteration and provider (no-op without
    Sentry). The Celery integration gives every task its own isolation scope."""
    if not sentry_sdk.get_client().is_active():
        return
    scope = sentry_sdk.get_isolation_scope()
    scope.set_tag("job_id", job_id)
    scope.set_tag("iteration", iteration)
    if provider:
        scope.set_tag("provider", provider)


def tag_task(kwargs: Mapping[str, Any] | None) -> None:
    """Tag a task's events with the job (or batch) its arguments name, before they are
    validated: only well-formed ids are used, so a poison message tags nothing odd."""
    if not kwargs or not sentry_sdk.get_client().is_active():
        return
    spec = kwargs.get("spec")
    candidates = {
        "job_id": kwargs.get("job_id", spec.get("job_id") if isinstance(spec, Mapping) else None),
        "batch_id": kwargs.get("batch_id", kwargs.get("batch")),
    }
    scope = sentry_sdk.get_isolation_scope()
    for tag, value in candidates.items():
        if is_id(value):  # the ids the task contract accepts (``core.ids``): safe to show
            scope.set_tag(tag, value)
    iteration = kwargs.get("iteration")
    if isinstance(iteration, int) and not isinstance(iteration, bool):
        scope.set_tag("iteration", iteration)


# A worker quiets httpx before it runs a task (``celeryd_init``: in the main process,
# before a prefork pool forks), whatever logging the worker was started with.
celeryd_init.connect(lambda **_: quiet_http_logs(), weak=False)


__all__ = [
    "FILTERED",
    "TEXT_KEYS",
    "QuietRequest",
    "hide_urls",
    "init_sentry",
    "quiet_http_logs",
    "scrub",
    "tag_iteration",
    "tag_task",
]
