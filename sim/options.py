"""What the simulated model writes and how it misbehaves: ``SimOptions``.

Options come from the server (``continuum sim --options``) and, per request, from the
model name: ``sim:format=json,size=30000,fence=0.3`` overrides the server's options for
that request only. Chaos knobs are probabilities drawn once per call.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Format = Literal["json", "csv", "markdown", "text"]
Chance = Annotated[float, Field(ge=0.0, le=1.0)]
Seconds = Annotated[float, Field(ge=0.0)]

#: The chaos knobs that are probabilities, in the order a call draws them.
CHAOS_KNOBS = (
    "rate_limit",
    "server_error",
    "timeout",
    "empty",
    "content_filter",
    "malformed",
    "restart",
    "stall",
    "reindent",
    "fence",
    "prose",
)


class SimOptions(BaseModel):
    """The simulated model's behaviour.

    Document: ``format`` (None: from the prompt's keywords), ``size`` (characters),
    ``seed`` (documents and chaos draws), ``chars_per_token`` (the output limit is
    ``max_tokens`` times this), ``overlap`` (characters of the cut a continuation repeats;
    0: exact continuation), ``marker`` (a progress marker first on continuation replies).

    Chaos, each a probability per call: ``fence`` (a code fence around the reply),
    ``prose`` (a line of prose before it; on a first reply in JSON only, where it can be
    told from the document), ``reindent`` (JSON: the repeated part re-indented with 4
    spaces), ``restart`` (start the document again), ``malformed`` (garbage),
    ``rate_limit`` (429 with ``Retry-After: retry_after`` seconds), ``server_error``
    (500), ``timeout`` (hang ``hang`` seconds before answering), ``content_filter``
    (finish_reason content_filter, partial text), ``empty`` (empty content, finish
    length), ``stall`` (repeat the tail, add nothing, marker unmoved).
    ``latency``: seconds added to every call.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Format | None = None
    size: Annotated[int, Field(gt=0, le=500_000_000)] = 20000
    seed: int = 0
    chars_per_token: Annotated[float, Field(gt=0)] = 4.0
    overlap: Annotated[int, Field(ge=0)] = 200
    marker: bool = True
    fence: Chance = 0.0
    prose: Chance = 0.0
    reindent: Chance = 0.0
    restart: Chance = 0.0
    malformed: Chance = 0.0
    rate_limit: Chance = 0.0
    retry_after: Seconds = 1.0
    server_error: Chance = 0.0
    timeout: Chance = 0.0
    hang: Seconds = 30.0
    content_filter: Chance = 0.0
    empty: Chance = 0.0
    stall: Chance = 0.0
    latency: Seconds = 0.0

    @classmethod
    def parse(cls, text: str, base: SimOptions | None = None) -> SimOptions:
        """Options from ``"key=value,key=value"`` over ``base`` (defaults when None).

        Raises ``ValueError`` naming the key for an unknown key or a bad value.
        """
        base = base or cls()
        updates: dict[str, Any] = {}
        for raw in text.split(","):
            item = raw.strip()
            if not item:
                continue
            key, sep, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key:
                raise ValueError(f"sim option {item!r}: expected key=value")
            if key not in cls.model_fields:
                known = ", ".join(cls.model_fields)
                raise ValueError(f"unknown sim option {key!r} (known: {known})")
            if key == "format" and value.lower() in ("", "auto", "none"):
                updates[key] = None
            else:
                updates[key] = value
        if not updates:
            return base
        try:
            return cls.model_validate({**base.model_dump(), **updates})
        except ValidationError as exc:
            error = exc.errors()[0]
            key = ".".join(str(part) for part in error["loc"])
            raise ValueError(f"sim option {key}={updates.get(key)!r}: {error['msg']}") from None

    def spec(self) -> str:
        """The options that differ from the defaults, as ``parse`` reads them."""
        defaults = SimOptions()
        parts = []
        for key in type(self).model_fields:
            value = getattr(self, key)
            if value != getattr(defaults, key):
                parts.append(f"{key}={'auto' if value is None else value}")
        return ",".join(parts)


def model_options(model: str, base: SimOptions) -> SimOptions:
    """The options a model name asks for: ``sim`` (the server's) or ``sim:k=v,...``.

    Any other model name is served with the server's options.
    """
    name, sep, spec = model.partition(":")
    if sep and name.strip() == "sim":
        return SimOptions.parse(spec, base)
    return base
