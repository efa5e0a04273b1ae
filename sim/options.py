"""What the simulated model writes and how it misbehaves: ``SimOptions``.

Options come from the server (``continuum sim --options``) and, per request, from the
model name: ``sim:format=json,size=30000,fence=0.3`` overrides the server's options for
that request only. Chaos knobs are probabilities drawn once per call.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Format = Literal["json", "csv", "markdown", "text"]
#: The most a request may ask for in its model name (``sim:size=...``): whoever can submit
#: a job chooses those options, so none may exhaust the server's memory or hold a worker
#: for long. The server's own options (``continuum sim --options``) may go further.
REQUEST_LIMITS: dict[str, float] = {
    "size": 20_000_000,
    "overlap": 100_000,
    "hang": 120.0,
    "latency": 120.0,
    "retry_after": 600.0,
}
#: The default document's length: long enough that the documented 500-token jobs
#: (``max_output_tokens`` 500: 2,000 characters a reply, 1,800 new after the 200 repeated)
#: are continued six times, few enough that they finish within the default budget of 10
#: continuations with room for retries (at 20,000 they needed all ten, and ended partial).
DEFAULT_SIZE = 12_000
Chance = Annotated[float, Field(ge=0.0, le=1.0)]
Seconds = Annotated[float, Field(ge=0.0, le=86_400.0)]

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

#: The seam knobs: each makes a continuation reply behave as ``sim.seams`` describes
#: (knob -> behaviour). Drawn, only when one is set, from the call's own generator, so the
#: draws above (and every default run) are unchanged.
SEAM_KNOBS = {
    "seam_exact": "exact",
    "seam_repeat": "repeat",
    "seam_prose_repeat": "prose_repeat",
    "seam_prose_exact": "prose_exact",
    "seam_unit_restart": "unit_restart",
    "seam_reformatted": "reformatted_repeat",
    "seam_whitespace": "whitespace",
    "seam_restart": "restart",
    "seam_syntax_slip": "syntax_slip",
    "seam_blank": "blank",
    "seam_multibyte": "multibyte",
}


class SimOptions(BaseModel):
    """The simulated model's behaviour.

    Document: ``format`` (None: the one the request's system message states, else the
    prompt's keywords), ``size`` (characters, :data:`DEFAULT_SIZE`),
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
    ``latency``: seconds added to every call. ``reasoning``: the reply written as a reasoning
    model served without its reasoning parser writes it (``sim.model.think``): a
    ``<think>`` block first (empty, as Qwen3's with thinking off; only its close, as
    DeepSeek-R1's; now and then left open, the whole reply cut while thinking), an
    end-of-turn token after it; drawn from the call's own generator (other draws unchanged).

    Seams, each a probability per continuation call (``SEAM_KNOBS``; see ``sim.seams``):
    the reply is one a real model sends when asked to continue, built from the target at
    the cut: ``seam_exact`` (no repeat), ``seam_repeat`` (1-300 characters of the
    delivered end), ``seam_prose_repeat`` and ``seam_prose_exact`` (prose and/or a fence
    first; after the last reply a closing fence and a sign-off), ``seam_unit_restart``
    (the word, line, row or string in progress again), ``seam_reformatted`` (JSON: another
    layout), ``seam_whitespace`` (line breaks switched, blanks stripped, a blank line
    dropped or added, an empty line before the closing fence), ``seam_restart`` (the whole
    document again), ``seam_syntax_slip`` (JSON: a trailing comma, single quotes),
    ``seam_blank`` (a white-space reply), ``seam_multibyte`` (a repeat from inside a ZWJ
    sequence, an accent, a flag or CJK). The reply, repeat and wrapper included, holds at
    most the output limit where it can (``sim.seam_chaos``); a restart is cut there.
    Document: ``periodic`` (share of blocks followed by a periodic run: zeros, identical
    rows, identical lines) and ``multibyte`` (share of words turned into emoji sequences,
    flags, accents, CJK).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Format | None = None
    size: Annotated[int, Field(gt=0, le=500_000_000)] = DEFAULT_SIZE
    seed: int = 0
    chars_per_token: Annotated[float, Field(gt=0, le=1_000)] = 4.0
    overlap: Annotated[int, Field(ge=0, le=10_000_000)] = 200
    marker: bool = True
    #: A request saying the last reply could not be used (the engine's retry note) is
    #: answered as a careful model would: the quoted end repeated exactly, then the text
    #: after the cut, nothing wrapped. Chaos that fails a call (malformed, empty, errors)
    #: still applies.
    heed_retry: bool = True
    #: A heeded retry writes the ``<<<CONTINUE>>>`` mark after the quoted end, when asked.
    heed_mark: bool = True
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
    reasoning: Chance = 0.0
    periodic: Chance = 0.0
    multibyte: Chance = 0.0
    seam_exact: Chance = 0.0
    seam_repeat: Chance = 0.0
    seam_prose_repeat: Chance = 0.0
    seam_prose_exact: Chance = 0.0
    seam_unit_restart: Chance = 0.0
    seam_reformatted: Chance = 0.0
    seam_whitespace: Chance = 0.0
    seam_restart: Chance = 0.0
    seam_syntax_slip: Chance = 0.0
    seam_blank: Chance = 0.0
    seam_multibyte: Chance = 0.0

    @property
    def seam_chaos(self) -> bool:
        """Whether a seam knob is set (a continuation is then also located loosely)."""
        return any(getattr(self, knob) > 0 for knob in SEAM_KNOBS)

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
    if not (sep and name.strip() == "sim"):
        return base
    options = SimOptions.parse(spec, base)
    for key, most in REQUEST_LIMITS.items():
        value = getattr(options, key)
        if value > max(most, getattr(base, key)):
            raise ValueError(f"sim option {key}={value!r}: at most {most:g} in a model name")
    return options
