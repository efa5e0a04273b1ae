"""The status API's settings: the workers' settings (Redis, key prefixes, queue) plus the
API's own, read from the environment at the edge (``create_app``), never at import."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from workers.settings import Settings

MIB = 1024 * 1024


class ApiSettings(Settings):
    """``CONTINUUM_API_*``, on top of everything a worker reads (``workers.settings``)."""

    #: Bearer token every ``/v1/...`` request must present. Unset or empty: the API refuses
    #: to start (``api.auth.NoToken``) unless ``api_insecure_local`` says it is local-only.
    api_token: SecretStr | None = None
    #: Serve ``/v1`` without a token: only this machine can reach the API (``continuum
    #: api`` sets it when bound to loopback or given ``--insecure-local``).
    api_insecure_local: bool = False
    #: Largest request body accepted (checked on Content-Length and on the bytes read).
    api_max_body_bytes: int = Field(default=MIB, gt=0)
    #: How long ``/healthz`` reuses its look at the workers (a Celery ping).
    api_health_cache_s: float = Field(default=5.0, ge=0)
    #: How long the Celery ping waits for the workers' replies.
    api_ping_timeout_s: float = Field(default=0.5, gt=0)
    #: Event streams (``GET /v1/jobs/{id}/events``) one API process serves at once; one
    #: more is answered 503. Each holds a thread of its own while it waits on Redis.
    api_max_streams: int = Field(default=64, gt=0, le=10_000)
    #: How long an event stream waits on Redis before it sends a keep-alive comment.
    api_stream_heartbeat_s: float = Field(default=15.0, gt=0, le=300)

    @field_validator("api_token")
    @classmethod
    def _empty_is_unset(cls, value: SecretStr | None) -> SecretStr | None:
        # Stripped as the header's value is: a token read with a stray newline still works.
        token = value.get_secret_value().strip() if value is not None else ""
        return SecretStr(token) if token else None


def api_settings(settings: Settings | None = None) -> ApiSettings:
    """``settings`` as :class:`ApiSettings`; the API's own fields of a plain ``Settings``
    come from the environment (their defaults when unset)."""
    if isinstance(settings, ApiSettings):
        return settings
    if settings is None:
        return ApiSettings()
    values = settings.model_dump()
    own = ApiSettings()
    return own.model_copy(update=values)
