"""Provider profiles: which adapter, where, with which key variable, model and prices.

A profile names the *environment variable* that holds its API key, never the key: keys
are read from the environment of the process that makes the call, at call time.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Kind = Literal["openai", "openai-responses", "anthropic", "sim"]
#: See ``Profile.chain_max_tokens`` and docs/providers.md for the figures behind it.
CHAIN_MAX_TOKENS = 2000


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: Kind
    base_url: str | None = Field(None, description="None: the provider's public endpoint.")
    api_key_env: str | None = Field(None, description="Name of the variable holding the key.")
    model: str | None = Field(None, description="Default model when the job names none.")
    price_input_per_mtok: float = Field(0.0, ge=0)
    price_output_per_mtok: float = Field(0.0, ge=0)
    timeout_s: float = Field(600.0, gt=0, description="Read timeout of one call.")
    max_retries: int = Field(4, ge=0, description="Retries of transient errors per call.")
    backoff_base_s: float = Field(1.0, gt=0)
    backoff_cap_s: float = Field(60.0, gt=0)
    prefill: bool = Field(True, description="Use assistant prefill where the adapter can.")
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = Field(
        None,
        description=(
            "Chat Completions only: the request field for the output limit. None: "
            "max_completion_tokens on OpenAI's own endpoint (its newer models refuse "
            "max_tokens), max_tokens elsewhere (what compatible servers all accept)."
        ),
    )
    chain_max_tokens: int = Field(
        CHAIN_MAX_TOKENS,
        ge=0,
        description=(
            "Responses API only: the most tokens a conversation continued with "
            "previous_response_id may hold (the last reply's input plus output tokens, all "
            "billed again as input by the next call). A reply past it is not chained from: "
            "the next call sends the job's bounded continuation prompt and starts a new "
            "chain. 0: never chain."
        ),
    )
    continue_final_message: bool = Field(
        False,
        description=(
            "Chat Completions only: the server accepts vLLM's continue_final_message, so a "
            "prefill is sent as an open assistant message and continued exactly."
        ),
    )
    rate_limit_per_s: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description=(
            "Requests per second for this profile, shared by all workers (a token bucket in "
            "Redis). None: unlimited."
        ),
    )
    rate_limit_burst: int = Field(
        1,
        ge=1,
        description=(
            "Requests the rate limit lets through at once after an idle spell (the bucket's "
            "capacity). Only used with rate_limit_per_s."
        ),
    )
    queue: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$",
        description=(
            "Celery queue for the iterations this profile serves, so workers can be scaled "
            "per provider. None: the default queue."
        ),
    )
