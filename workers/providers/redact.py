"""Keep API keys out of every message that leaves an adapter.

``redact(text, env)`` replaces the value of every key variable found in ``text`` with
``***``. Key variables are the well-known ones, every variable whose name says it holds a
secret (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``) and any names passed in
(a profile's ``api_key_env`` may be called anything). Error messages are also scrubbed of
strings shaped like provider keys (``sk-…``), whichever variable they came from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Final

MASK: Final = "***"
KEY_VARIABLES: Final = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
# Shorter values are not keys; replacing them would garble every message.
MIN_SECRET_LENGTH: Final = 6

_SECRET_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_KEY_SHAPE = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")


def secret_values(env: Mapping[str, str], names: Iterable[str | None] = ()) -> list[str]:
    """The values to hide, longest first (so a key containing another is hidden whole)."""
    wanted = {name for name in names if name} | set(KEY_VARIABLES)
    wanted |= {name for name in env if _SECRET_NAME.search(name)}
    values = {env[name] for name in wanted if len(env.get(name) or "") >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact(
    text: str,
    env: Mapping[str, str] | None = None,
    *,
    names: Iterable[str | None] = (),
    key_shapes: bool = True,
) -> str:
    """``text`` with every configured secret value (and, with ``key_shapes``, anything
    shaped like a provider key) replaced by ``***``. ``env`` defaults to ``os.environ``.

    Model output is redacted with ``key_shapes=False``: a generated document may
    legitimately contain example keys; only the real values must never pass.
    """
    for value in secret_values(os.environ if env is None else env, names):
        if value in text:
            text = text.replace(value, MASK)
    if key_shapes:
        text = _KEY_SHAPE.sub("sk-" + MASK, text)
    return text
