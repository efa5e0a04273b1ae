"""Continuum's exception base, the engine's exceptions, and how any error is described.

Every exception Continuum defines derives from :class:`ContinuumError`; a class that
code also catches by a built-in base (``ValueError``, ``RuntimeError``, ``OSError``) keeps
it as a second base. The engine's tree (the workers', the API's and the CLI's hang from
the same base: ``workers.errors``)::

    ContinuumError
    └── SchemaCostError (ValueError)

Expected outcomes (a merge that failed, a stalled job) are values, not exceptions.
"""

from __future__ import annotations

__all__ = ["ContinuumError", "SchemaCostError", "describe"]


class ContinuumError(Exception):
    """Raised when Continuum's own code fails: the base of every exception it defines."""


class SchemaCostError(ContinuumError, ValueError):
    """Raised when a schema's references do not resolve, loop, or cost too much."""


def describe(exc: BaseException | None, limit: int | None = None) -> str:
    """``exc`` as ``"ClassName: message"`` (the form every log line, job error and API
    detail uses), at most ``limit`` characters."""
    text = f"{type(exc).__name__}: {exc}"
    return text if limit is None else text[:limit]
