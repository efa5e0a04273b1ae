"""Job and batch ids: the one rule every entry point (the job spec, the task contract, the
API's paths, the CLI) and the store's key map use.

An id is 1-128 characters of ASCII letters, digits, ``_``, ``.`` and ``-``, starting with a
letter or a digit. It never holds ``:``, the separator of the store's keys
(``<prefix>job:<id>``, ``<prefix>job:<id>:out``, ...), so no id can name another job's key:
the key layout is injective. A batch id is at most ``MAX_BATCH_ID`` characters, so that
the ids of its jobs (``<batch id>.<index>``) obey the rule too.
"""

from __future__ import annotations

import re
from typing import Final, TypeGuard

#: Longest id.
MAX_ID: Final = 128
#: Longest batch id: room for ``.<index>`` of a batch's largest index (``MAX_BATCH_JOBS``).
MAX_BATCH_JOBS: Final = 10_000
MAX_BATCH_ID: Final = MAX_ID - len(f".{MAX_BATCH_JOBS}")


def _pattern(longest: int) -> str:
    return rf"^[A-Za-z0-9][A-Za-z0-9_.-]{{0,{longest - 1}}}$"


ID_PATTERN: Final = _pattern(MAX_ID)
BATCH_ID_PATTERN: Final = _pattern(MAX_BATCH_ID)
#: What a refusal says the rule is.
ID_RULE: Final = (
    f"1-{MAX_ID} characters of letters, digits, '_', '.' and '-', starting with a letter or a digit"
)
_ID: Final = re.compile(ID_PATTERN)


def is_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a valid job id (a string obeying the rule)."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def check_id(value: str, what: str = "job id") -> str:
    """``value`` when it is a valid id; else a ``ValueError`` that names the rule."""
    if not is_id(value):
        raise ValueError(f"invalid {what} {value[: MAX_ID + 8]!r}: an id is {ID_RULE}")
    return value
