"""OpenTelemetry traces, off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

With an endpoint, ``init_tracing`` (a worker at start, the status API when it is built)
exports spans over OTLP/HTTP and instruments Celery (a span per task sent and per task
run, the trace carried in the message's headers), httpx (a span per model and callback
call, its URL shown by origin only) and, in the API, FastAPI (a span per request). Each
iteration is sent from inside the run of the one before it (or from the submit), so a
job's iterations form one trace, rooted at its ``POST /v1/jobs`` or its
``continuum.generate``. An iteration the watchdog sends again starts a trace of its own:
nothing of the lost one's is left to continue.

Without an endpoint nothing here imports OpenTelemetry's SDK, and every function is a
no-op. The standard ``OTEL_*`` variables apply (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_BSP_*``...).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from workers.callback_addresses import origin

ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"

_lock = threading.Lock()
_started = False


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether an OTLP endpoint is configured."""
    return bool((os.environ if env is None else env).get(ENDPOINT, "").strip())


def init_tracing(service: str, *, celery: bool = True) -> bool:
    """Export spans (as ``service`` unless ``OTEL_SERVICE_NAME`` names it) and instrument
    httpx, and Celery unless ``celery`` is False; once per process. False, and nothing
    done, without an endpoint."""
    global _started  # noqa: PLW0603  (one tracer provider per process)
    if not enabled():
        return False
    with _lock:
        if not _started:
            _start(service, celery=celery)
            _started = True
    return True


def _start(service: str, *, celery: bool) -> None:
    # Imported here: a process without an endpoint never loads the SDK.
    from opentelemetry import trace  # noqa: PLC0415
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
        OTLPSpanExporter,
    )
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor  # noqa: PLC0415
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource  # noqa: PLC0415
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415

    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: service}
    provider = TracerProvider(resource=Resource.create(named))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    HTTPXClientInstrumentor().instrument(request_hook=_origin_only)
    if celery:
        from opentelemetry.instrumentation.celery import CeleryInstrumentor  # noqa: PLC0415

        CeleryInstrumentor().instrument()  # type: ignore[no-untyped-call]


def _origin_only(span: Any, request: Any) -> None:
    """An httpx span names its URL by origin only, as the logs do: a callback URL's path
    and query may hold its receiver's token (``workers.callback_addresses.origin``)."""
    shown = origin(request.url)
    span.set_attribute("http.url", shown)
    span.set_attribute("url.full", shown)


def trace_app(app: Any) -> None:
    """A span per request of the FastAPI ``app`` (tracing on only)."""
    if not enabled():
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor  # noqa: PLC0415

    FastAPIInstrumentor.instrument_app(app)


def trace_headers() -> dict[str, str]:
    """The current trace as message headers (``traceparent``...), for a message sent where
    Celery is not instrumented: empty with tracing off or outside any span."""
    if not enabled():
        return {}
    from opentelemetry.propagate import inject  # noqa: PLC0415

    headers: dict[str, str] = {}
    inject(headers)
    return headers
