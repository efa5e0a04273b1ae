"""Turning validation errors into one readable line per problem."""

from __future__ import annotations

from pydantic import ValidationError


def describe(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)
    return "; ".join(lines)
