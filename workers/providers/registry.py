"""Provider profiles by name, and the adapter for each.

Built-ins, from the environment: ``openai`` and ``openai-responses`` (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``OPENAI_MODEL``), ``anthropic`` (``ANTHROPIC_BASE_URL``,
``ANTHROPIC_API_KEY``, ``ANTHROPIC_MODEL``) and ``sim`` (``CONTINUUM_SIM_URL``, else the
simulator in-process), which exists only when enabled (``CONTINUUM_ENABLE_SIM=1``, or a
``CONTINUUM_SIM_URL``): a deploy never answers jobs with made-up text by default. More
come from a TOML file (``path``, else ``CONTINUUM_PROFILES``)::

    [profiles.local]                 # a new profile: kind is required
    kind = "openai"
    base_url = "http://localhost:8000/v1"
    api_key_env = "LOCAL_LLM_KEY"    # the variable's name, never the key
    model = "qwen2.5-7b-instruct"
    price_input_per_mtok = 0.1

    [profiles.anthropic]             # a built-in: the fields given replace its own
    model = "claude-opus-4-1"

Every ``Profile`` field may be set; a file naming an unknown kind or field fails with a
``ProfileConfigError`` (a ``ValueError``) naming the profile and the field. Built-in
prices come from a small table of list prices (USD per million tokens, an estimate) when
the model is in it; set prices in the file for anything else.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import httpx
from pydantic import ValidationError

from workers.errors import FatalError, ProfileConfigError
from workers.providers.anthropic import AnthropicProvider
from workers.providers.base import Provider
from workers.providers.http import (
    HttpProvider,
)
from workers.providers.openai_chat import OpenAIChatProvider
from workers.providers.openai_responses import OpenAIResponsesProvider
from workers.providers.profiles import Profile

DEFAULT_OPENAI_MODEL: Final = "gpt-4.1-mini"
DEFAULT_ANTHROPIC_MODEL: Final = "claude-sonnet-4-5"
SIM_MODEL: Final = "sim"
SIM_IN_PROCESS_URL: Final = "http://sim.invalid/v1"
#: The variable that enables the ``sim`` profile (the demo, ``continuum run``/``up`` and
#: the tests set it); a production worker leaves it unset.
SIM_SWITCH: Final = "CONTINUUM_ENABLE_SIM"
#: What a job that names no provider is told when there is none to use.
NO_PROVIDER: Final = (
    "no provider configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, name a profile in "
    f"the job's providers, or set {SIM_SWITCH}=1 for the simulated LLM (tests, demos)"
)

# List prices, USD per million input / output tokens; dated ids match by prefix.
PRICES: Final[dict[str, tuple[float, float]]] = {
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4-1": (15.00, 75.00),
}

_ADAPTERS: Final[dict[str, type[HttpProvider]]] = {
    "openai": OpenAIChatProvider,
    "sim": OpenAIChatProvider,
    "openai-responses": OpenAIResponsesProvider,
    "anthropic": AnthropicProvider,
}


def prices(model: str | None) -> dict[str, float]:
    """The table's prices for ``model`` (longest matching prefix), or none."""
    matches = [name for name in PRICES if model and model.startswith(name)]
    if not matches:
        return {}
    price_in, price_out = PRICES[max(matches, key=len)]
    return {"price_input_per_mtok": price_in, "price_output_per_mtok": price_out}


def sim_enabled(env: Mapping[str, str]) -> bool:
    """Whether the ``sim`` built-in exists: enabled by ``CONTINUUM_ENABLE_SIM`` (1, true,
    yes, on) or configured by ``CONTINUUM_SIM_URL``."""
    switch = env.get(SIM_SWITCH, "").strip().lower() in ("1", "true", "yes", "on")
    return switch or bool(env.get("CONTINUUM_SIM_URL"))


def builtin_fields(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    openai_model = env.get("OPENAI_MODEL") or DEFAULT_OPENAI_MODEL
    openai = {
        "base_url": env.get("OPENAI_BASE_URL") or None,
        "api_key_env": "OPENAI_API_KEY",
        "model": openai_model,
        **prices(openai_model),
    }
    anthropic_model = env.get("ANTHROPIC_MODEL") or DEFAULT_ANTHROPIC_MODEL
    fields: dict[str, dict[str, Any]] = {
        "openai": {"kind": "openai", **openai},
        "openai-responses": {"kind": "openai-responses", **openai},
        "anthropic": {
            "kind": "anthropic",
            "base_url": env.get("ANTHROPIC_BASE_URL") or None,
            "api_key_env": "ANTHROPIC_API_KEY",
            "model": anthropic_model,
            **prices(anthropic_model),
        },
    }
    if sim_enabled(env):
        fields["sim"] = {
            "kind": "sim",
            "base_url": env.get("CONTINUUM_SIM_URL") or None,
            "model": SIM_MODEL,
        }
    return fields


def load_profiles(
    env: Mapping[str, str] | None = None, path: Path | None = None
) -> dict[str, Profile]:
    """The built-in profiles, with the file's profiles added and overriding them."""
    env = os.environ if env is None else env
    fields = builtin_fields(env)
    source = path or (Path(env["CONTINUUM_PROFILES"]) if env.get("CONTINUUM_PROFILES") else None)
    if source is not None:
        for name, table in read_file(source).items():
            if "name" in table:
                raise ProfileConfigError(
                    f"{source}: profile {name!r}: field 'name': the table's name is the name"
                )
            fields[name] = {**fields.get(name, {}), **table}
    profiles = {}
    for name, values in fields.items():
        try:
            profiles[name] = Profile(name=name, **values)
        except ValidationError as exc:
            raise ProfileConfigError(describe(source, name, exc)) from None
    return profiles


def read_file(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileConfigError(f"{path}: cannot read the profiles file: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileConfigError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"profiles"})
    if unknown:
        raise ProfileConfigError(f"{path}: unknown table {unknown[0]!r} (only [profiles.NAME])")
    profiles = data.get("profiles", {})
    for name, table in profiles.items():
        if not isinstance(table, dict):
            raise ProfileConfigError(f"{path}: profile {name!r} must be a table [profiles.{name}]")
    return dict(profiles)


def describe(source: Path | None, name: str, exc: ValidationError) -> str:
    where = f"{source}: " if source else ""
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "?"
        what = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
        problems.append(f"field {field!r}: {what}")
    return f"{where}profile {name!r}: " + "; ".join(problems)


def default_providers(env: Mapping[str, str] | None = None) -> list[str]:
    """The profiles a job that names none uses: the first provider with a key, else sim
    when it is enabled, else none (the job fails, saying ``NO_PROVIDER``)."""
    env = os.environ if env is None else env
    if env.get("OPENAI_API_KEY"):
        return ["openai"]
    if env.get("ANTHROPIC_API_KEY"):
        return ["anthropic"]
    return ["sim"] if sim_enabled(env) else []


def make_provider(
    profile: Profile,
    *,
    env: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> Provider:
    """The adapter for ``profile``. The key is read from ``env`` (default ``os.environ``)
    at each call, never kept in the profile. ``sim`` without a ``base_url`` runs the
    simulator in-process."""
    base_url = None
    if profile.kind == "sim" and profile.base_url is None:
        base_url = SIM_IN_PROCESS_URL
        if transport is None:
            try:
                from sim.app import make_transport  # noqa: PLC0415 - optional and lazy
            except ImportError as exc:
                message = f"{profile.name}: the simulator is not installed ({exc})"
                raise FatalError(message) from None
            transport = make_transport()
    return _ADAPTERS[profile.kind](profile, env=env, transport=transport, base_url=base_url)
