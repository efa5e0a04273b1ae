"""A planted API key never leaves an adapter: not in an exception, not in a reply, not in a
log record, whatever way the call fails, even when the server repeats the key it got."""

from __future__ import annotations

import logging
import random
import socket
import traceback
import uuid
from collections.abc import Callable

import pytest

from core.models import ProviderResponse
from tests.integration.providers.provider_fakes import Fake, Served, ask, chat_completion
from workers.errors import ProviderError
from workers.providers.registry import make_provider
from workers.providers.retry import call_with_retries

# Not shaped like a provider key, so only its value can give it away.
PLANTED = f"planted-{uuid.uuid4().hex}"
FRAGMENTS = {PLANTED[i : i + 12] for i in range(len(PLANTED) - 11)}


def leaks(text: str) -> bool:
    """Whether the key, or any 12 characters of it, is in ``text``."""
    return any(fragment in text for fragment in FRAGMENTS)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_planted_key_appears_in_no_error_reply_or_log(
    any_provider: Served[Fake],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = any_provider.fake
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(name, PLANTED)
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "continuum"):
        caplog.set_level(logging.DEBUG, logger=name)
    fake.echo_key = True
    # The key read from os.environ at call time (env=None), as in a worker.
    provider = make_provider(any_provider.profile(timeout_s=0.15, max_retries=1))
    any_provider.made.append(provider)  # type: ignore[arg-type]
    dead = make_provider(any_provider.profile(base_url=f"http://127.0.0.1:{closed_port()}/v1"))
    any_provider.made.append(dead)  # type: ignore[arg-type]

    failures: list[BaseException] = []
    replies: list[ProviderResponse] = []

    def attempt(script: list[str]) -> None:
        steps: dict[str, Callable[[], None]] = {
            "rate": lambda: fake.rate_limited("0"),
            "500": lambda: fake.server_error(500),
            "400": fake.bad_request,
            # the key straddling the point where long messages are shortened
            "long": lambda: fake.fail(400, "x" * 470),
            "cut": lambda: fake.raw('{"id": "x'),
            "html": lambda: fake.raw(f"<html>{PLANTED}</html>", "text/html"),
            "slow": lambda: fake.slow(0.5),
            "echo": lambda: fake.json(
                chat_completion("c1", PLANTED, f"you sent {PLANTED}", "stop")
            ),
        }
        for step in script:
            steps[step]()
        try:
            reply = call_with_retries(provider, ask(), sleep=lambda s: None, rng=random.Random(0))
            assert isinstance(reply, ProviderResponse)  # without ``deferrals`` nothing is deferred
            replies.append(reply)
        except ProviderError as exc:
            failures.append(exc)

    fake.key = "the-right-key-0123456789"  # ours is wrong: 401, the server repeats ours
    attempt([])
    fake.key = None
    for script in (
        ["rate", "rate"],
        ["500", "500"],
        ["400"],
        ["long"],
        ["cut", "cut"],
        ["html"],
        ["slow", "slow"],
    ):
        attempt(script)
    if fake.kind == "openai":
        attempt(["echo"])  # a reply whose model name and text repeat the key
    try:
        dead.complete(ask())
    except ProviderError as exc:
        failures.append(exc)

    assert all(
        r.headers.get("authorization", "").endswith(PLANTED)
        or r.headers.get("x-api-key") == PLANTED
        for r in fake.requests
    )
    assert len(failures) == 9
    for failure in failures:
        text = "".join(traceback.format_exception(failure)) + repr(failure)
        assert not leaks(text), text
        assert "***" in text or "401" not in str(failure)
    for reply in replies:
        assert not leaks(reply.model_dump_json())
    assert caplog.records
    for record in caplog.records:
        assert not leaks(record.getMessage())
        assert not leaks(str(record.__dict__))
