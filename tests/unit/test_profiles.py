"""Provider profiles: the built-ins from the environment, the TOML file, its errors, the
default choice, the adapter for each kind, and the redaction of keys."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from core.models import FinishReason, Message
from workers.errors import ProfileConfigError, TransientError
from workers.providers import __all__ as public
from workers.providers.anthropic import AnthropicProvider
from workers.providers.base import CallRequest
from workers.providers.openai_chat import OpenAIChatProvider
from workers.providers.openai_responses import OpenAIResponsesProvider
from workers.providers.redact import redact
from workers.providers.registry import (
    SIM_IN_PROCESS_URL,
    SIM_SWITCH,
    default_providers,
    load_profiles,
    make_provider,
    prices,
)

#: An environment with the simulator enabled.
SIM = {SIM_SWITCH: "1"}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profiles.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_built_ins_come_from_the_environment() -> None:
    env = {
        "OPENAI_BASE_URL": "http://localhost:8000/v1",
        "OPENAI_MODEL": "qwen",
        "ANTHROPIC_MODEL": "claude-haiku-4-5-20251001",
        "CONTINUUM_SIM_URL": "http://127.0.0.1:9999/v1",
    }
    profiles = load_profiles(env)
    assert set(profiles) == {"openai", "openai-responses", "anthropic", "sim"}
    openai = profiles["openai"]
    assert (openai.kind, openai.base_url, openai.model) == (
        "openai",
        env["OPENAI_BASE_URL"],
        "qwen",
    )
    assert openai.api_key_env == "OPENAI_API_KEY" and openai.price_input_per_mtok == 0
    assert profiles["openai-responses"].kind == "openai-responses"
    assert profiles["openai-responses"].base_url == env["OPENAI_BASE_URL"]
    anthropic = profiles["anthropic"]
    assert anthropic.base_url is None and anthropic.api_key_env == "ANTHROPIC_API_KEY"
    assert anthropic.price_output_per_mtok == 5.0  # dated id priced by its prefix
    assert profiles["sim"].base_url == env["CONTINUUM_SIM_URL"]
    assert profiles["sim"].api_key_env is None


def test_built_ins_without_environment_use_public_endpoints_and_default_models() -> None:
    profiles = load_profiles({})
    assert profiles["openai"].base_url is None and profiles["openai"].model == "gpt-4.1-mini"
    assert profiles["openai"].price_input_per_mtok == 0.4
    assert "sim" not in profiles  # off unless enabled
    sim = load_profiles(SIM)["sim"]
    assert sim.base_url is None and sim.model == "sim"


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "maybe"])
def test_the_sim_stays_off_unless_enabled(value: str) -> None:
    env = {SIM_SWITCH: value}
    assert "sim" not in load_profiles(env) and default_providers(env) == []


@pytest.mark.parametrize("value", ["1", "true", "YES", " on "])
def test_the_sim_is_enabled_by_the_switch(value: str) -> None:
    env = {SIM_SWITCH: value}
    assert "sim" in load_profiles(env) and default_providers(env) == ["sim"]


def test_a_profile_never_holds_the_key() -> None:
    env = {"OPENAI_API_KEY": "sk-never-in-a-profile-123456"}
    for profile in load_profiles(env).values():
        assert env["OPENAI_API_KEY"] not in profile.model_dump_json()


def test_the_file_adds_profiles_and_overrides_built_ins(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[profiles.local]
kind = "openai"
base_url = "http://localhost:11434/v1"
api_key_env = "LOCAL_KEY"
model = "llama3"
timeout_s = 30
max_tokens_field = "max_tokens"

[profiles.anthropic]
model = "claude-opus-4-1"
prefill = false
""",
    )
    profiles = load_profiles({"ANTHROPIC_BASE_URL": "http://proxy/"}, path)
    local = profiles["local"]
    assert (local.kind, local.model, local.timeout_s, local.api_key_env) == (
        "openai",
        "llama3",
        30.0,
        "LOCAL_KEY",
    )
    anthropic = profiles["anthropic"]
    assert anthropic.model == "claude-opus-4-1" and anthropic.prefill is False
    assert anthropic.base_url == "http://proxy/"  # what the file did not set stays
    assert anthropic.api_key_env == "ANTHROPIC_API_KEY"


def test_the_file_sets_rate_limits_and_queues(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[profiles.openai]
rate_limit_per_s = 2.5
rate_limit_burst = 4
queue = "llm.openai"

[profiles.local]
kind = "openai"
rate_limit_per_s = 1
""",
    )
    profiles = load_profiles({}, path)
    openai = profiles["openai"]
    assert (openai.rate_limit_per_s, openai.rate_limit_burst, openai.queue) == (
        2.5,
        4,
        "llm.openai",
    )
    local = profiles["local"]
    assert (local.rate_limit_per_s, local.rate_limit_burst, local.queue) == (1.0, 1, None)
    anthropic = profiles["anthropic"]  # unlimited, on the default queue
    assert (anthropic.rate_limit_per_s, anthropic.rate_limit_burst, anthropic.queue) == (
        None,
        1,
        None,
    )


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("rate_limit_per_s = 0", "rate_limit_per_s"),
        ("rate_limit_per_s = -1.5", "rate_limit_per_s"),
        ("rate_limit_per_s = inf", "rate_limit_per_s"),
        ('rate_limit_per_s = "fast"', "rate_limit_per_s"),
        ("rate_limit_burst = 0", "rate_limit_burst"),
        ("rate_limit_burst = 1.5", "rate_limit_burst"),
        ('queue = "bad queue"', "queue"),
        ('queue = ""', "queue"),
        ('queue = "-leading-dash"', "queue"),
        (f'queue = "{"q" * 129}"', "queue"),
    ],
)
def test_bad_rate_limits_and_queues_are_refused(tmp_path: Path, line: str, field: str) -> None:
    path = write(tmp_path, f"[profiles.openai]\n{line}\n")
    with pytest.raises(ProfileConfigError, match=rf"profile 'openai': field '{field}'"):
        load_profiles({}, path)


def test_the_file_is_found_through_continuum_profiles(tmp_path: Path) -> None:
    path = write(tmp_path, '[profiles.x]\nkind = "sim"\n')
    assert "x" in load_profiles({"CONTINUUM_PROFILES": str(path)})
    other = tmp_path / "other.toml"
    other.write_text('[profiles.y]\nkind = "sim"\n', encoding="utf-8")
    assert "y" in load_profiles({"CONTINUUM_PROFILES": "/nonexistent"}, other)  # path wins


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[profiles.p]\nkind = "gemini"\n', r"profile 'p': field 'kind': Input should be"),
        ('[profiles.p]\nkind = "openai"\nmodle = "x"\n', r"profile 'p': field 'modle': unknown"),
        ("[profiles.p]\nmodel = 'x'\n", r"profile 'p': field 'kind': Field required"),
        ("[profiles.openai]\ntimeout_s = -1\n", r"profile 'openai': field 'timeout_s'"),
        ('[profiles.p]\nkind = "sim"\nname = "q"\n', r"profile 'p': field 'name'"),
        ('[profile.p]\nkind = "sim"\n', r"unknown table 'profile'"),
        ("[profiles]\np = 3\n", r"profile 'p' must be a table"),
        ("[profiles.p\n", r"not valid TOML"),
    ],
)
def test_a_bad_file_fails_naming_the_profile_and_field(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ProfileConfigError, match=expected) as caught:
        load_profiles({}, path)
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_missing_file_fails_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(ProfileConfigError, match="cannot read the profiles file"):
        load_profiles({"CONTINUUM_PROFILES": str(tmp_path / "nope.toml")})


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, ["openai"]),
        ({"ANTHROPIC_API_KEY": "k"}, ["anthropic"]),
        ({"OPENAI_API_KEY": "", SIM_SWITCH: "1"}, ["sim"]),
        ({"CONTINUUM_SIM_URL": "http://127.0.0.1:9/v1"}, ["sim"]),
        ({"OPENAI_API_KEY": ""}, []),
        ({}, []),
    ],
)
def test_default_providers(env: dict[str, str], expected: list[str]) -> None:
    assert default_providers(env) == expected


@pytest.mark.parametrize(
    ("name", "adapter"),
    [
        ("openai", OpenAIChatProvider),
        ("openai-responses", OpenAIResponsesProvider),
        ("anthropic", AnthropicProvider),
        ("sim", OpenAIChatProvider),
    ],
)
def test_each_kind_gets_its_adapter(name: str, adapter: type) -> None:
    provider = make_provider(load_profiles(SIM)[name], env={})
    try:
        assert type(provider) is adapter and provider.profile.name == name
    finally:
        provider.close()


def test_sim_without_a_url_runs_the_simulator_in_process() -> None:
    """No server, no key: the simulator's transport answers a real Chat Completions call."""
    provider = make_provider(load_profiles(SIM)["sim"], env={})
    try:
        assert isinstance(provider, OpenAIChatProvider)
        assert provider.base_url == SIM_IN_PROCESS_URL
        reply = provider.complete(
            CallRequest(
                messages=[Message(role="user", content="Write a short text.")],
                max_output_tokens=50,
                model="sim:format=text,size=100",
            )
        )
    finally:
        provider.close()
    assert reply.text and reply.finish_reason in (FinishReason.STOP, FinishReason.LENGTH)
    assert reply.provider == "sim"


def test_a_given_transport_is_used_for_sim_too() -> None:
    urls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        urls.append(str(request.url))
        return httpx.Response(500, json={"error": {"message": "x", "type": "server_error"}})

    provider = make_provider(
        load_profiles(SIM)["sim"], env={}, transport=httpx.MockTransport(handle)
    )
    try:
        with pytest.raises(TransientError, match="HTTP 500"):
            provider.complete(CallRequest(messages=[], max_output_tokens=1))
    finally:
        provider.close()
    assert urls == [f"{SIM_IN_PROCESS_URL}/chat/completions"]


def test_prices_match_the_longest_known_prefix() -> None:
    assert prices("gpt-4.1-mini-2025-04-14") == {
        "price_input_per_mtok": 0.4,
        "price_output_per_mtok": 1.6,
    }
    assert prices("gpt-4.1") == {"price_input_per_mtok": 2.0, "price_output_per_mtok": 8.0}
    assert prices("my-own-model") == {} and prices(None) == {}


# -- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "env", "names", "expected"),
    [
        ("key sk-live-abcdef", {"OPENAI_API_KEY": "sk-live-abcdef"}, (), "key ***"),
        ("x=s3cr3t-value y", {"MY_SERVICE_TOKEN": "s3cr3t-value"}, (), "x=*** y"),
        ("x=custom-secret-1", {"LLM_CRED": "custom-secret-1"}, ("LLM_CRED",), "x=***"),
        ("x=custom-secret-1", {"LLM_CRED": "custom-secret-1"}, (), "x=custom-secret-1"),
        ("short abc", {"OPENAI_API_KEY": "abc"}, (), "short abc"),  # too short to be a key
        ("PATH=/usr/bin", {"PATH": "/usr/bin"}, (), "PATH=/usr/bin"),  # not a secret
        ("a abcdef123456 b", {"A_KEY": "abcdef", "B_KEY": "abcdef123456"}, (), "a *** b"),
        ("Bearer sk-proj-0123456789abcdefXYZ", {}, (), "Bearer sk-***"),  # key-shaped
        ("see sk-1 and task-list", {}, (), "see sk-1 and task-list"),
    ],
)
def test_redact_table(
    text: str, env: dict[str, str], names: tuple[str, ...], expected: str
) -> None:
    assert redact(text, env, names=names) == expected


def test_redact_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "planted-anthropic-key")
    assert redact("got planted-anthropic-key") == "got ***"


def test_model_output_keeps_key_shaped_examples() -> None:
    text = "export OPENAI_API_KEY=sk-example0123456789abcd"
    assert redact(text, {}, key_shapes=False) == text


def test_the_public_surface_is_fixed() -> None:
    assert sorted(public) == [
        "CallRequest",
        "FatalError",
        "PrefillUnsupported",
        "PreviousResponseNotFound",
        "Profile",
        "ProfileConfigError",
        "Provider",
        "ProviderError",
        "TransientError",
        "backoff_delay",
        "call_with_retries",
        "default_providers",
        "load_profiles",
        "make_provider",
        "redact",
        "uses_prefill",
    ]
