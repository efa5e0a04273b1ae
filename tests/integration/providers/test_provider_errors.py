"""What every adapter does the same way, run against each fake provider over real HTTP:
replies, cuts, pricing, and how each kind of failure maps onto the error tree."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

import httpx
import pytest

from core import JobSpec
from core.models import ContinuationConfig, FinishReason, OutputFormat, ProviderResponse
from tests.integration.providers.provider_fakes import DOCUMENT, Fake, Served, ask, tokens
from workers.calls import ProviderPool
from workers.errors import FatalError, TransientError
from workers.local import Outcome, run_job
from workers.providers.base import CallRequest
from workers.providers.retry import call_with_retries

Call = Callable[[CallRequest], ProviderResponse]


def retrying(
    served: Served[Fake], env: dict[str, str] | None = None, **changes: Any
) -> tuple[list[float], Call]:
    """The delays slept (recorded, not slept), and a call with retries."""
    delays: list[float] = []
    provider = served.provider(env, **changes)

    def call(request: CallRequest) -> ProviderResponse:
        result = call_with_retries(provider, request, sleep=delays.append, rng=random.Random(0))
        assert isinstance(result, ProviderResponse)  # without ``deferrals`` nothing is deferred
        return result

    return delays, call


def test_a_whole_reply_is_stop_with_usage_cost_and_ids(any_provider: Served[Fake]) -> None:
    """A reply the model finished: its text, `stop`, tokens counted and priced from the profile."""
    reply = any_provider.provider().complete(ask())
    assert reply.text == DOCUMENT
    assert reply.finish_reason is FinishReason.STOP
    assert reply.usage.output_tokens == len(tokens(DOCUMENT))
    assert reply.usage.input_tokens == 3
    assert reply.cost == pytest.approx((3 * 2.0 + reply.usage.output_tokens * 8.0) / 1e6)
    assert reply.provider == f"test-{any_provider.fake.kind}"
    assert reply.model.startswith(any_provider.profile().model or "?")
    assert reply.response_id


def test_a_reply_cut_at_the_limit_is_length(any_provider: Served[Fake]) -> None:
    """The output limit reached: the partial text and `length`, so the engine continues."""
    reply = any_provider.provider().complete(ask(max_output_tokens=20))
    assert reply.text == "".join(tokens(DOCUMENT)[:20])
    assert reply.finish_reason is FinishReason.LENGTH
    assert reply.usage.output_tokens == 20


def test_429_waits_as_long_as_retry_after_says_then_succeeds(any_provider: Served[Fake]) -> None:
    """A rate limit is retried after the server's Retry-After (a floor on the backoff)."""
    any_provider.fake.rate_limited(retry_after="2")
    delays, call = retrying(any_provider)
    assert call(ask()).finish_reason is FinishReason.STOP
    assert delays == [2.0]
    assert len(any_provider.fake.requests) == 2


def test_429_asking_longer_than_the_cap_gives_up_at_once(any_provider: Served[Fake]) -> None:
    """Retry-After beyond the profile's cap: no waiting, the error goes up with its delay."""
    any_provider.fake.rate_limited(retry_after="120")
    delays, call = retrying(any_provider, backoff_cap_s=5.0)
    with pytest.raises(TransientError) as caught:
        call(ask())
    assert caught.value.status == 429 and caught.value.retry_after == 120.0
    assert "429" in str(caught.value) and "rate limit" in str(caught.value).lower()
    assert delays == [] and len(any_provider.fake.requests) == 1


def test_retry_after_ms_is_taken_over_retry_after(any_provider: Served[Fake]) -> None:
    """OpenAI sends both, the seconds rounded up and the exact wait in milliseconds: the
    milliseconds are the wait; an unreadable value leaves Retry-After in charge."""
    any_provider.fake.rate_limited(retry_after="2", retry_after_ms="1250")
    any_provider.fake.rate_limited(retry_after="3", retry_after_ms="soon")
    any_provider.fake.rate_limited(retry_after=None, retry_after_ms="40")
    delays, call = retrying(any_provider, max_retries=3)
    assert call(ask()).finish_reason is FinishReason.STOP
    assert delays == [1.25, 3.0, 0.04]


def test_every_reply_and_error_names_the_providers_request_id(
    any_provider: Served[Fake],
) -> None:
    """The id of the request from the provider's header (OpenAI's x-request-id,
    Anthropic's request-id): on the reply, and at the end of an error's message."""
    fake = any_provider.fake
    provider = any_provider.provider()
    reply = provider.complete(ask())
    assert reply.request_id == fake.requests[-1].request_id
    assert reply.request_id and reply.request_id.startswith("req_")
    fake.server_error(500)
    with pytest.raises(TransientError) as caught:
        provider.complete(ask())
    assert str(caught.value).endswith(f" (request {fake.requests[-1].request_id})")
    assert fake.requests[-1].request_id != reply.request_id


def test_the_user_agent_names_continuum_and_its_version(any_provider: Served[Fake]) -> None:
    any_provider.provider().complete(ask())
    version = metadata.version("continuum")
    agent = f"continuum/{version} python-httpx/{httpx.__version__}"
    assert any_provider.fake.requests[-1].user_agent == agent


def test_each_iterations_request_id_is_in_the_jobs_metadata(any_provider: Served[Fake]) -> None:
    """A whole job: ``served_by`` holds, per call, the id the provider gave it."""
    chosen = any_provider.profile()
    pool = ProviderPool({chosen.name: chosen}, env={})
    spec = JobSpec(
        prompt="Write the words.",
        format=OutputFormat.TEXT,
        providers=[chosen.name],
        max_output_tokens=12,
        continuation=ContinuationConfig(max_attempts=30, overlap_chars=20),
    )
    try:
        result = run_job(spec, pool, sleep=lambda _: None)
    finally:
        pool.close()
    assert result.outcome is Outcome.SUCCEEDED and result.output == DOCUMENT
    served = result.state.metadata.served_by
    assert len(served) == len(any_provider.fake.requests) > 3
    assert [s.request_id for s in served] == [r.request_id for r in any_provider.fake.requests]
    assert result.state.metadata.model_dump()["served_by"][0]["request_id"].startswith("req_")


def test_a_server_error_then_success_is_retried_with_backoff(any_provider: Served[Fake]) -> None:
    """A 500 is transient: one backoff (within base * 2**0), then the reply."""
    any_provider.fake.server_error(500)
    delays, call = retrying(any_provider)
    assert call(ask()).text == DOCUMENT
    assert len(delays) == 1 and 0 <= delays[0] <= 0.01


def test_transient_errors_past_max_retries_raise_the_last(any_provider: Served[Fake]) -> None:
    """Three 503s with two retries allowed: three calls, two waits, then the error."""
    for _ in range(3):
        any_provider.fake.server_error(503)
    delays, call = retrying(any_provider, max_retries=2)
    with pytest.raises(TransientError) as caught:
        call(ask())
    assert caught.value.status == 503
    assert len(delays) == 2 and len(any_provider.fake.requests) == 3


def test_a_body_cut_short_is_transient_and_retried(any_provider: Served[Fake]) -> None:
    """A 200 whose JSON stops mid-way (truncated under load) is retried, not fatal."""
    any_provider.fake.raw('{"id": "x", "object": "chat.compl')
    with pytest.raises(TransientError, match="cut short"):
        any_provider.provider().complete(ask())
    any_provider.fake.raw("")
    delays, call = retrying(any_provider)
    assert call(ask()).text == DOCUMENT
    assert len(delays) == 1


def test_a_body_that_is_not_json_is_fatal(any_provider: Served[Fake]) -> None:
    """An HTML page (a wrong base_url, a captive proxy) says so, and is not retried."""
    any_provider.fake.raw("<html><body>Welcome to nginx!</body></html>", "text/html")
    delays, call = retrying(any_provider)
    with pytest.raises(FatalError, match=r"not JSON \(text/html.*base_url"):
        call(ask())
    assert delays == []


def test_json_of_the_wrong_shape_is_fatal(any_provider: Served[Fake]) -> None:
    """JSON that is not this provider's reply (another API behind the URL) is fatal."""
    any_provider.fake.json({"object": "list", "data": []})
    with pytest.raises(FatalError, match="malformed reply"):
        any_provider.provider().complete(ask())


def test_a_reply_slower_than_the_timeout_is_transient(any_provider: Served[Fake]) -> None:
    """The read timeout is the profile's: past it, a TransientError (retry may help)."""
    any_provider.fake.slow(0.8)
    started = time.monotonic()
    with pytest.raises(TransientError, match=r"no reply within 0.2 s"):
        any_provider.provider(timeout_s=0.2).complete(ask())
    assert time.monotonic() - started < 0.7


def test_a_refused_connection_is_transient(any_provider: Served[Fake]) -> None:
    """Nothing listening: a connection error, transient."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(TransientError, match="connection failed"):
        any_provider.provider(base_url=f"http://127.0.0.1:{port}/v1").complete(ask())


def test_a_wrong_key_is_fatal_with_status_and_the_providers_message(
    any_provider: Served[Fake],
) -> None:
    """401: fatal, not retried; the message has the status and what the provider said."""
    fake = any_provider.fake
    fake.key = "the-right-key-0123456789"
    delays, call = retrying(any_provider, {fake.key_env: "a-wrong-key-9876543210"})
    with pytest.raises(FatalError) as caught:
        call(ask())
    assert caught.value.status == 401
    assert "HTTP 401" in str(caught.value)
    assert "api key" in str(caught.value).lower() or "x-api-key" in str(caught.value)
    assert delays == [] and len(fake.requests) == 1


def test_a_bad_request_is_fatal_and_not_retried(any_provider: Served[Fake]) -> None:
    """400: the request itself is wrong; calling again cannot help."""
    any_provider.fake.bad_request()
    delays, call = retrying(any_provider)
    with pytest.raises(FatalError) as caught:
        call(ask())
    assert caught.value.status == 400 and "HTTP 400" in str(caught.value)
    assert "model" in str(caught.value) or "max_tokens" in str(caught.value)
    assert delays == []


def test_the_key_goes_where_the_provider_wants_it(any_provider: Served[Fake]) -> None:
    """Bearer for OpenAI, x-api-key (and anthropic-version) for Anthropic; read at call time."""
    fake = any_provider.fake
    fake.key = "sk-test-key-for-headers-0001"
    env = {fake.key_env: fake.key}
    provider = any_provider.provider(env=env)
    assert provider.complete(ask()).finish_reason is FinishReason.STOP
    headers = fake.requests[-1].headers
    if fake.kind == "anthropic":
        assert headers["x-api-key"] == fake.key
        assert headers["anthropic-version"] == "2023-06-01"
        assert "authorization" not in headers
    else:
        assert headers["authorization"] == f"Bearer {fake.key}"
    env[fake.key_env] = fake.key = "sk-test-key-rotated-0002"
    assert provider.complete(ask()).finish_reason is FinishReason.STOP


def test_no_key_configured_sends_no_credentials_to_a_custom_endpoint(
    any_provider: Served[Fake],
) -> None:
    """A local compatible server needs no key: none is sent, and the call works."""
    assert any_provider.provider(env={}).complete(ask()).text == DOCUMENT
    headers = any_provider.fake.requests[-1].headers
    assert "authorization" not in headers and "x-api-key" not in headers


def test_a_missing_key_for_the_public_endpoint_fails_before_any_call(
    any_provider: Served[Fake],
) -> None:
    """The provider's own endpoint without a key: fatal at once, naming the variable."""
    provider = any_provider.provider(env={}, base_url=None)
    with pytest.raises(FatalError, match=f"{any_provider.fake.key_env} is not set"):
        provider.complete(ask())


def test_no_model_anywhere_is_fatal(any_provider: Served[Fake]) -> None:
    """Neither the job nor the profile names a model: a clear fatal error, no call."""
    with pytest.raises(FatalError, match="no model"):
        any_provider.provider(model=None).complete(ask())
    assert any_provider.fake.requests == []
