"""Worker settings, read from the environment at the edge (never at import)."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from workers.callback_addresses import AllowList
from workers.store import (
    DEFAULT_OUTPUT_CHUNK_BYTES,
    DEFAULT_RETENTION_S,
    MIN_OUTPUT_CHUNK_BYTES,
    durability_of,
    parse_cluster_url,
    split_store_options,
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CONTINUUM_", extra="ignore")

    redis_url: str | None = Field(
        None, validation_alias=AliasChoices("REDIS_URL", "CONTINUUM_REDIS_URL")
    )
    #: The broker (Celery's queues), when it is not the Redis of ``REDIS_URL``: a RabbitMQ
    #: (``amqp://user:password@host:5672/vhost``, quorum queues) or another Redis. Job
    #: state, results and the dead-letter record stay in ``REDIS_URL``'s Redis.
    broker_url: str | None = None
    #: Where Celery keeps task results (what ``continuum.generate`` and
    #: ``continuum.submit_batch`` return to a producer that asks): a plain Redis URL, or
    #: ``disabled``. Default: ``REDIS_URL``'s Redis; required with a Redis Cluster or
    #: Sentinel ``REDIS_URL``, which Celery's Redis result backend cannot use.
    result_backend: str | None = None
    key_prefix: str = "continuum:"
    #: Prefix of Celery's own keys (queues, results) in Redis. Empty by default, so any
    #: Celery producer (or a raw LPUSH) reaches the queue by its plain name.
    broker_prefix: str = ""
    queue: str = "continuum"
    #: Workers that are given no ``--queues`` also consume Celery's default queue
    #: (``celery``), where a producer that names no queue sends (``send_task(...)`` with
    #: Celery's default configuration): such a job runs instead of waiting forever. Turn it
    #: off when the broker is shared with another Celery application that uses ``celery``.
    consume_default_queue: bool = True
    #: An iteration in flight holds a lease this long, renewed every third of it while
    #: the model call runs; a killed worker's iteration is taken over about this late.
    lease_ttl_s: float = Field(default=30.0, gt=0)
    #: How long a queued iteration may wait before the watchdog sends it again.
    queue_grace_s: float = Field(default=60.0, gt=0)
    #: Must stay above the longest model call, or Redis redelivers a running task.
    visibility_timeout_s: float = Field(default=3600.0, gt=0)
    #: Longest countdown for a retry (always well below the visibility timeout).
    max_countdown_s: float = Field(default=300.0, gt=0)
    watchdog_interval_s: float = Field(default=2.0, gt=0)
    #: How long an ended job (its status, output and commits) stays in Redis, counted from
    #: the moment it ends; a batch stays until the last of its jobs goes. 0 keeps them
    #: forever. Applied when the job ends, so a change affects the jobs that end after it.
    retention_s: float = Field(default=DEFAULT_RETENTION_S, ge=0)
    #: Sentry (see ``workers.observability``): off unless a DSN is set.
    sentry_dsn: str | None = Field(
        None, validation_alias=AliasChoices("SENTRY_DSN", "CONTINUUM_SENTRY_DSN")
    )
    sentry_environment: str | None = Field(
        None, validation_alias=AliasChoices("SENTRY_ENVIRONMENT", "CONTINUUM_SENTRY_ENVIRONMENT")
    )
    #: Share of tasks traced (transactions); 0: errors only.
    sentry_traces_sample_rate: float = Field(default=0.0, ge=0, le=1)
    # The most a job may ask for (``workers.submit.over_limits``): a spec above one is
    # refused at submission, naming the setting. Whoever can submit a job chooses these
    # numbers, and each one is paid for in model calls, memory or time.
    limit_max_output_tokens: int = Field(default=200_000, gt=0)
    limit_max_attempts: int = Field(default=10_000, gt=0)
    limit_max_repair_attempts: int = Field(default=10, ge=0)
    limit_max_merge_failures: int = Field(default=1_000, gt=0)
    limit_stall_limit: int = Field(default=1_000, gt=0)
    limit_context_budget_chars: int = Field(default=1_000_000, gt=0)
    limit_overlap_chars: int = Field(default=100_000, gt=0)
    #: Hosts and networks a job's callback may reach although they are not public
    #: (``workers.callback_addresses``): a comma list of host names (``hooks.internal``,
    #: ``*.corp.example``), addresses and CIDRs (``127.0.0.1``, ``10.0.0.0/8``, ``::1``).
    #: Empty: callbacks reach public addresses only (checked after DNS).
    callback_allow: str = ""
    #: Signs every callback (``X-Continuum-Signature``, ``workers.callbacks.sign``) so its
    #: receiver can tell it came from this deployment; a deploy should set it. Unset or
    #: empty: callbacks are sent unsigned. Never logged (a ``SecretStr``).
    callback_secret: SecretStr | None = None
    #: The most bytes one chunk of a job's output holds in Redis (``workers/lua/output.lua``):
    #: the output is a list of chunks, so no Redis value grows with it. Every commit copies
    #: the last chunk once: larger chunks cost more per commit, smaller ones more entries.
    output_chunk_bytes: int = Field(
        default=DEFAULT_OUTPUT_CHUNK_BYTES, ge=MIN_OUTPUT_CHUNK_BYTES, le=64 * 1024 * 1024
    )

    @property
    def broker(self) -> str | None:
        """The broker's URL: ``CONTINUUM_BROKER_URL``, else ``REDIS_URL`` (without the
        store's own options, which Celery and kombu refuse)."""
        return self.broker_url or self.redis_server_url

    @property
    def redis_server_url(self) -> str | None:
        """``REDIS_URL`` without the store's own query options (``STORE_OPTIONS``): the
        URL a client other than the store (Celery's broker, its result backend) uses."""
        return split_store_options(self.redis_url)[0] if self.redis_url else None

    @field_validator("callback_allow")
    @classmethod
    def _allow_list(cls, value: str) -> str:
        AllowList.parse(value)  # a typo stops the worker at start, not every callback
        return value


#: The URL schemes of one Redis (the store, the broker by default, the results).
PLAIN_REDIS_SCHEMES = ("redis", "rediss", "unix")
#: A store spread over a Redis Cluster, or one Redis found through its Sentinels
#: (``workers.store.redis_client``): no broker or result backend runs on these.
CLUSTER_SCHEMES = ("redis+cluster", "redis+sentinel")
#: The URL schemes of the job store (``REDIS_URL``).
REDIS_SCHEMES = PLAIN_REDIS_SCHEMES + CLUSTER_SCHEMES
AMQP_SCHEMES = ("amqp", "amqps")
BROKER_SCHEMES = PLAIN_REDIS_SCHEMES + AMQP_SCHEMES
#: What ``CONTINUUM_RESULT_BACKEND`` takes besides a plain Redis URL: no results kept.
NO_RESULTS = "disabled"


def scheme_of(url: str) -> str:
    """The URL's scheme, lower case ("" when it is no URL)."""
    return url.partition("://")[0].lower() if "://" in url else ""


def is_amqp(url: str) -> bool:
    """Whether ``url`` is a RabbitMQ (AMQP) broker's."""
    return scheme_of(url) in AMQP_SCHEMES


def _listed(schemes: tuple[str, ...]) -> str:
    names = [f"{s}://" for s in schemes]
    return ", ".join(names[:-1]) + " or " + names[-1]


def is_cluster_store(url: str | None) -> bool:
    """Whether ``url`` is a Redis Cluster's or a Sentinel's (the store only)."""
    return bool(url) and scheme_of(url or "") in CLUSTER_SCHEMES


def url_problems(settings: Settings) -> list[str]:
    """What makes the settings' URLs unusable, one line each, naming the setting and never
    the URL (it may hold a password). Empty: all usable (unset ones are not checked)."""
    problems = _scheme_problems(settings)
    if settings.redis_url and scheme_of(settings.redis_url) in REDIS_SCHEMES:
        try:
            durability_of(settings.redis_url)
        except ValueError as exc:
            problems.append(f"REDIS_URL: {exc}")
    if is_cluster_store(settings.redis_url):
        if not settings.broker_url:
            problems.append(
                "REDIS_URL is a Redis Cluster or Sentinel, which cannot be the broker: set "
                "CONTINUUM_BROKER_URL (amqp:// or a plain redis://)"
            )
        if not settings.result_backend:
            problems.append(
                "REDIS_URL is a Redis Cluster or Sentinel, which Celery's result backend "
                "cannot use: set CONTINUUM_RESULT_BACKEND (a plain redis:// URL, or "
                f"{NO_RESULTS!r} when no producer reads task results)"
            )
    return problems


def _scheme_problems(settings: Settings) -> list[str]:
    results = settings.result_backend
    checks = (
        ("REDIS_URL", "a Redis URL", settings.redis_url, REDIS_SCHEMES, "job state lives in Redis"),
        (
            "CONTINUUM_BROKER_URL",
            "a broker URL",
            settings.broker_url,
            BROKER_SCHEMES,
            "a Redis or a RabbitMQ",
        ),
        (
            "CONTINUUM_RESULT_BACKEND",
            "a Redis URL",
            None if results == NO_RESULTS else results,
            PLAIN_REDIS_SCHEMES,
            f"or {NO_RESULTS!r}",
        ),
    )
    problems = []
    for name, kind, url, schemes, why in checks:
        if not url:
            continue
        scheme = scheme_of(url)
        if scheme not in schemes:
            shown = f"not {scheme}://" if scheme else "and this is no URL"
            problems.append(f"{name} must be {kind} ({_listed(schemes)}), {shown}: {why}")
            continue
        if scheme in CLUSTER_SCHEMES:
            try:
                parse_cluster_url(url)
            except ValueError as exc:
                problems.append(f"{name}: {exc}")
            continue
        try:
            urlsplit(url).port  # noqa: B018  (raises on a port that is no number)
        except ValueError:
            problems.append(f"{name} has a port that is not a number in 0-65535")
    return problems


#: Celery's default queue: where ``send_task`` puts a message that names no queue.
CELERY_DEFAULT_QUEUE = "celery"


def worker_queues(settings: Settings) -> str:
    """The queues a worker given no ``--queues`` consumes, comma-separated."""
    queues = [settings.queue]
    if settings.consume_default_queue and settings.queue != CELERY_DEFAULT_QUEUE:
        queues.append(CELERY_DEFAULT_QUEUE)
    return ",".join(queues)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
