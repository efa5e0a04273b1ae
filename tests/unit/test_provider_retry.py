"""Retrying transient provider errors: the backoff maths, Retry-After parsing, and the
retry loop, with a scripted provider and no network."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from core.models import FinishReason, Message, ProviderResponse
from workers.errors import FatalError, PrefillUnsupported, ProviderError, TransientError
from workers.providers.base import CallRequest, parse_retry_after
from workers.providers.profiles import Profile
from workers.providers.retry import backoff_delay, call_with_retries


class Fixed(random.Random):
    """An rng whose uniform(a, b) is always the given fraction of the way from a to b."""

    def __init__(self, fraction: float) -> None:
        super().__init__(0)
        self.fraction = fraction

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.fraction


@pytest.mark.parametrize(
    ("attempt", "retry_after", "fraction", "expected"),
    [
        (0, None, 1.0, 1.0),  # first retry: up to base
        (1, None, 1.0, 2.0),
        (3, None, 1.0, 8.0),  # doubling
        (3, None, 0.5, 4.0),  # full jitter: anywhere below the ceiling
        (3, None, 0.0, 0.0),
        (6, None, 1.0, 60.0),  # capped (64 > 60)
        (10_000, None, 1.0, 60.0),  # no overflow however many attempts
        (-1, None, 1.0, 1.0),  # a negative attempt counts as the first
        (0, 5.0, 1.0, 5.0),  # Retry-After is a floor...
        (6, 5.0, 1.0, 60.0),  # ...not a ceiling
        (0, 0.0, 0.3, 0.3),
        (0, 120.0, 1.0, 120.0),  # above the cap: kept (the caller gives up)
        (0, float("inf"), 1.0, 1.0),  # nonsense is ignored
        (0, float("nan"), 1.0, 1.0),
    ],
)
def test_backoff_delay_table(
    attempt: int, retry_after: float | None, fraction: float, expected: float
) -> None:
    """Base 1 s, cap 60 s: the ceiling doubles per attempt; Retry-After is a floor."""
    rng = Fixed(fraction)
    delay = backoff_delay(attempt, base=1.0, cap=60.0, retry_after=retry_after, rng=rng)
    assert delay == pytest.approx(expected)


def test_backoff_delay_scales_with_the_base() -> None:
    assert backoff_delay(2, base=0.5, cap=60.0, retry_after=None, rng=Fixed(1.0)) == 2.0


def test_backoff_delay_is_within_bounds_for_a_real_rng() -> None:
    rng = random.Random(7)
    for attempt in range(12):
        ceiling = min(30.0, 0.25 * 2**attempt)
        for _ in range(50):
            assert (
                0
                <= backoff_delay(attempt, base=0.25, cap=30.0, retry_after=None, rng=rng)
                <= ceiling
            )


NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("2", 2.0),
        (" 20 ", 20.0),
        ("1.5", 1.5),  # not RFC, but sent in the wild
        ("-3", 0.0),
        ("Sun, 22 Nov 2026 12:00:30 GMT", 30.0),  # an HTTP date
        ("Sun, 22 Nov 2026 11:59:00 GMT", 0.0),  # already past
        ("soon", None),
        ("inf", None),
        ("nan", None),
    ],
)
def test_parse_retry_after_table(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header, now=NOW) == expected


# -- the loop --------------------------------------------------------------------------------

OK = ProviderResponse(text="done", finish_reason=FinishReason.STOP, provider="p")
REQUEST = CallRequest(messages=[Message(role="user", content="hi")], max_output_tokens=10)


@dataclass
class Scripted:
    """A provider that raises or returns what it is told, in order."""

    outcomes: list[ProviderError | ProviderResponse]
    profile: Profile = field(
        default_factory=lambda: Profile(
            name="p", kind="sim", max_retries=3, backoff_base_s=1.0, backoff_cap_s=10.0
        )
    )
    calls: int = 0

    def complete(self, request: CallRequest) -> ProviderResponse:
        outcome = self.outcomes[self.calls]
        self.calls += 1
        if isinstance(outcome, ProviderError):
            raise outcome
        return outcome

    def close(self) -> None:
        pass


def run(provider: Scripted) -> tuple[ProviderResponse | ProviderError, list[float]]:
    delays: list[float] = []
    try:
        reply = call_with_retries(provider, REQUEST, sleep=delays.append, rng=Fixed(1.0))
        assert isinstance(reply, ProviderResponse)  # without ``deferrals`` nothing is deferred
        result: ProviderResponse | ProviderError = reply
    except ProviderError as exc:
        result = exc
    return result, delays


def test_transient_errors_are_retried_with_growing_delays_until_a_reply() -> None:
    provider = Scripted([TransientError("a"), TransientError("b"), OK])
    assert run(provider) == (OK, [1.0, 2.0])


def test_the_server_asked_delay_is_used() -> None:
    provider = Scripted([TransientError("429", status=429, retry_after=7.0), OK])
    assert run(provider) == (OK, [7.0])


def test_after_max_retries_the_last_error_is_raised() -> None:
    errors = [TransientError(f"e{i}") for i in range(4)]
    result, delays = run(Scripted([*errors, OK]))
    assert result is errors[-1] and delays == [1.0, 2.0, 4.0]


def test_zero_retries_means_one_call() -> None:
    provider = Scripted([TransientError("e"), OK])
    provider.profile = provider.profile.model_copy(update={"max_retries": 0})
    result, delays = run(provider)
    assert isinstance(result, TransientError) and delays == [] and provider.calls == 1


def test_a_wait_beyond_the_cap_gives_up_at_once_keeping_retry_after() -> None:
    """The server wants 120 s, the profile allows 10: no sleep, the error goes up."""
    error = TransientError("429", status=429, retry_after=120.0)
    result, delays = run(Scripted([error, OK]))
    assert result is error and delays == []


@pytest.mark.parametrize("error", [FatalError("401"), PrefillUnsupported("prefill")])
def test_fatal_errors_are_not_retried(error: FatalError) -> None:
    provider = Scripted([error, OK])
    result, delays = run(provider)
    assert result is error and delays == [] and provider.calls == 1


def test_a_reply_with_a_bad_finish_reason_is_returned_not_retried() -> None:
    """Malformed or `error` replies are values the engine decides on (docs/providers.md,
    "Errors, retries, fallbacks")."""
    odd = ProviderResponse(finish_reason=None, error="no finish reason")
    assert run(Scripted([odd, OK])) == (odd, [])
