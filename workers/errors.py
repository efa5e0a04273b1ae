"""The exceptions of the workers, the API and the CLI, in one tree.

Every one derives from :class:`core.errors.ContinuumError`; one that code also catches by
a built-in base keeps it as a second base (shown in brackets). Expected outcomes (a
refused commit, a callback not yet due) are values, not exceptions::

    ContinuumError                      (core.errors)
    ├── SchemaCostError [ValueError]    (core.errors)
    ├── ProviderError                   a model call produced no reply
    │   ├── TransientError              may succeed later: retried
    │   └── FatalError                  cannot succeed as asked
    │       ├── PrefillUnsupported
    │       └── PreviousResponseNotFound
    ├── ProfileConfigError [ValueError] the profiles file
    ├── UnknownProfile [ValueError]     a job names a profile not configured (at a call)
    ├── SpecRefused [ValueError]        a valid spec this deployment will not run
    │   ├── OverLimit
    │   └── UnconfiguredProfile
    ├── InvalidMessage [ValueError]     a task message the task contract refuses
    ├── AddressRefused [ValueError]     a callback URL this worker may not call
    │   └── CallbackRefused             a callback never sent (also a redirect)
    ├── Unresolved [OSError]            a callback host that did not resolve: retried
    ├── CallbackError [RuntimeError]    a receiver that did not take the callback: retried
    ├── StagingLost [RuntimeError]      a large commit's staged parts are gone
    ├── NotReplicated [RedisError]      new jobs no replica confirmed (answered 503)
    ├── OutputChanged [RuntimeError]    an output replaced or expired while read
    ├── EmbeddedRedisError [RuntimeError]
    │   └── DataDirInUse
    ├── UnsafePasswordFile [RuntimeError]
    ├── NoRedis [RuntimeError]          a command found no Redis (exit status 1)
    │   ├── BadUrl                      an unusable REDIS_URL / broker URL (exit status 2)
    │   └── OldKeyLayout                jobs in the key layout before shards (exit status 2)
    ├── StackError [RuntimeError]       ``continuum up``: a component did not start
    │   └── CrashLoop
    ├── JobFailed [RuntimeError]        a job ended failed in a task
    ├── ApiError                        (``api.errors``) an HTTP error response
    ├── BodyTooLarge [HTTPException]    (``api.middleware``) a request body over the limit
    └── NoToken [RuntimeError]          (``api.auth``) no API token, not local-only
"""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ReadOnlyError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from core.errors import ContinuumError

__all__ = [
    "AddressRefused",
    "BadUrl",
    "CallbackError",
    "CallbackRefused",
    "ContinuumError",
    "CrashLoop",
    "DataDirInUse",
    "EmbeddedRedisError",
    "FatalError",
    "InvalidMessage",
    "NoRedis",
    "NotReplicated",
    "OldKeyLayout",
    "OutputChanged",
    "OverLimit",
    "PrefillUnsupported",
    "PreviousResponseNotFound",
    "ProfileConfigError",
    "ProviderError",
    "SpecRefused",
    "StackError",
    "StagingLost",
    "TransientError",
    "UnconfiguredProfile",
    "UnknownProfile",
    "Unresolved",
    "UnsafePasswordFile",
    "refused_for_now",
]


# -- providers ---------------------------------------------------------------------------
class ProviderError(ContinuumError):
    """Raised when a model call did not produce a reply."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        # Imported here: importing ``workers.providers`` imports this module.
        from workers.providers.redact import redact  # noqa: PLC0415

        # Whoever raises it, the message is scrubbed of the process's secrets.
        super().__init__(redact(message))
        self.status = status


class TransientError(ProviderError):
    """Raised when the call may succeed later (rate limit, server error, timeout)."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class FatalError(ProviderError):
    """Raised when calling again with the same request cannot help."""


class PrefillUnsupported(FatalError):
    """Raised when the model refuses an assistant prefill; call again without one."""


class PreviousResponseNotFound(FatalError):
    """Raised when the provider no longer holds ``previous_response_id``; call again
    without it, with the whole conversation."""


class ProfileConfigError(ContinuumError, ValueError):
    """Raised when the profiles file is missing, not TOML, or names an unknown kind or field."""


class UnknownProfile(ContinuumError, ValueError):
    """Raised when a job names a provider profile that is not configured."""


# -- submitting and task messages --------------------------------------------------------
class SpecRefused(ContinuumError, ValueError):
    """Raised when a valid spec is one this deployment will not run; ``code`` names why
    for the API, and ``field`` the part of the spec it is about."""

    code = "refused"
    field: tuple[str, ...] = ()


class OverLimit(SpecRefused):
    """Raised when a spec asks for more than the operator allows (``Settings.limit_*``)."""

    code = "over_limit"


class UnconfiguredProfile(SpecRefused):
    """Raised when a spec names a provider profile this deployment does not configure:
    refused at submission, not at its first iteration."""

    code = "unknown_profile"
    field = ("providers",)


class InvalidMessage(ContinuumError, ValueError):
    """Raised when a task message cannot be validated; the task fails (visibly) and is acked."""


# -- callbacks ---------------------------------------------------------------------------
class AddressRefused(ContinuumError, ValueError):
    """Raised when a callback URL is not one this worker may call (never retried)."""


class CallbackRefused(AddressRefused):
    """Raised when a callback must not be sent at all (a forbidden address, a redirect);
    the delivery is never retried."""


class Unresolved(ContinuumError, OSError):
    """Raised when a callback's host name does not resolve (retried: DNS may recover)."""


class CallbackError(ContinuumError, RuntimeError):
    """Raised when the receiver did not take the callback (an error status, or no answer);
    the delivery is retried."""


# -- the iteration task ------------------------------------------------------------------
class JobFailed(ContinuumError, RuntimeError):
    """Raised when a job ended failed (and was committed so) in the task that ran it, so
    the task shows as failed in Flower and Sentry, with the job's reason."""


# -- the job store -----------------------------------------------------------------------
class StagingLost(ContinuumError, RuntimeError):
    """Raised when the parts a large commit staged are not as it wrote them: they expired
    (``STAGING_TTL_S`` passed between two of its writes) or a part was sent twice (a
    command retried after its reply was lost). Nothing was committed."""


class NotReplicated(ContinuumError, RedisError):
    """Raised when Redis took new jobs but no replica confirmed them in time (the store's
    ``wait_replicas``): a failover now could lose them although they were answered. They
    may exist: submitting them again with the same ids creates nothing twice, and the
    watchdog starts any that exists and was never sent."""


def refused_for_now(exc: Exception) -> bool:
    """Redis refused a write that may succeed later: it is full (``maxmemory`` with
    ``noeviction``), a read-only replica (a failover), a master short of the replicas
    ``min-replicas-to-write`` asks for (a failover too), loading its data, or unreachable;
    or the parts a large commit staged were lost (the next try stages them anew). A
    script's error carries the refusal in its message. An error that can never pass (an
    argument over ``proto-max-bulk-len``: the store stages any large output) is not one."""
    if isinstance(
        exc,
        (OutOfMemoryError, ReadOnlyError, RedisConnectionError, RedisTimeoutError, StagingLost),
    ):
        return True
    text = str(exc)
    return isinstance(exc, ResponseError) and any(
        f"-{code} " in text or text.startswith(f"{code} ")
        for code in ("OOM", "READONLY", "LOADING", "NOREPLICAS")
    )


class OutputChanged(ContinuumError, RuntimeError):
    """Raised when a job's output is replaced (a repair) or deleted (its job expired) while
    it is read: what was read is not a part of it any more."""


# -- the embedded Redis and the CLI ------------------------------------------------------
class EmbeddedRedisError(ContinuumError, RuntimeError):
    """Raised when the embedded server could not be started (or its data directory is in
    use)."""


class DataDirInUse(EmbeddedRedisError):
    """Raised when another embedded server holds the data directory."""


class UnsafePasswordFile(ContinuumError, RuntimeError):
    """Raised when the password file exists but others may read or replace it, or it is
    no regular file of this user's."""


class NoRedis(ContinuumError, RuntimeError):
    """Raised when a command has no Redis to talk to, and none could be started; the
    message says why."""

    #: The command's exit status.
    code = 1


class BadUrl(NoRedis):
    """Raised when ``REDIS_URL`` or ``CONTINUUM_BROKER_URL`` is no URL this deployment can
    use."""

    code = 2


class OldKeyLayout(NoRedis):
    """Raised when Redis holds jobs in the key layout before shards, which this version
    would never find: the old deployment must drain first (docs/operations.md)."""

    code = 2


class StackError(ContinuumError, RuntimeError):
    """Raised when a component of ``continuum up`` did not start; the message names it and
    quotes its log."""


class CrashLoop(StackError):
    """Raised when a component kept dying right after each restart; the message is one
    line."""
