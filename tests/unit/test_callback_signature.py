"""The callback's signature, idempotency headers, body and backoff, with no network."""

from __future__ import annotations

import hashlib
import hmac
import json
import re

import httpx
import pytest

from workers.callback_addresses import AllowList
from workers.callbacks import (
    EVENT_HEADER,
    IDEMPOTENCY_HEADER,
    SIGNATURE_HEADER,
    backoff,
    deliver,
    encode,
    sign,
    verify,
)
from workers.settings import Settings

SECRET = "whsec_test"
BODY = b'{"a":1}'
#: ``printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test``
VECTOR = "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
LOOPBACK = AllowList.parse("127.0.0.1")


def test_the_signature_is_t_and_v1_the_hmac_sha256_of_t_dot_body() -> None:
    """The header's value matches an HMAC computed by another tool (openssl)."""
    assert sign(SECRET, BODY, 1_700_000_000) == VECTOR
    assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", sign("k", b"", 1))


def test_the_documented_receiver_check_accepts_a_signature() -> None:
    """The five lines docs/operations.md gives a receiver, run on a signature."""
    header, body = VECTOR, BODY
    t, v1 = (part.split("=", 1)[1] for part in header.split(","))
    expected = hmac.new(SECRET.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, v1)


@pytest.mark.parametrize(
    ("secret", "body", "header", "now", "ok"),
    [
        (SECRET, BODY, VECTOR, 1_700_000_000, True),
        (SECRET, BODY, VECTOR, 1_700_000_299, True),  # within the tolerance
        (SECRET, BODY, VECTOR, 1_700_000_301, False),  # too old: a replay
        (SECRET, BODY, VECTOR, 1_699_999_699, False),  # from the future
        ("another", BODY, VECTOR, 1_700_000_000, False),
        (SECRET, b'{"a":2}', VECTOR, 1_700_000_000, False),  # the body changed
        (SECRET, BODY, VECTOR.replace("t=1700000000", "t=1700000001"), 1_700_000_000, False),
        (SECRET, BODY, "v1=" + VECTOR.split("v1=")[1], 1_700_000_000, False),  # no t
        (SECRET, BODY, "t=x,v1=00", 1_700_000_000, False),
        (SECRET, BODY, "", 1_700_000_000, False),
    ],
)
def test_verify(secret: str, body: bytes, header: str, now: float, ok: bool) -> None:
    """Only the right secret over the exact body, at most five minutes old, verifies."""
    assert verify(secret, body, header, now=now) is ok


@pytest.mark.parametrize(
    ("attempt", "cap", "wait"),
    [(1, 300, 1), (2, 300, 2), (3, 300, 4), (8, 300, 128), (9, 300, 256), (10, 300, 300),
     (40, 300, 300), (5, 0.5, 0.5), (0, 300, 1)],
)  # fmt: skip
def test_backoff_doubles_up_to_its_cap(attempt: int, cap: float, wait: float) -> None:
    assert backoff(attempt, cap) == wait


def _post(secret: str | None) -> httpx.Request:
    seen: list[httpx.Request] = []

    def receiver(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    deliver(
        "http://127.0.0.1:9/hook?token=x",
        {"event_id": "e1", "job": {"job_id": "j"}, "result": "é"},
        allow=LOOPBACK,
        transport=httpx.MockTransport(receiver),
        headers={EVENT_HEADER: "e1", IDEMPOTENCY_HEADER: "e1"},
        secret=secret,
    )
    [request] = seen
    return request


def test_a_post_is_signed_over_the_exact_bytes_sent() -> None:
    """The receiver can verify the signature on the body it read, and sees the event id."""
    request = _post(SECRET)
    assert verify(SECRET, request.content, request.headers[SIGNATURE_HEADER])
    assert request.headers[IDEMPOTENCY_HEADER] == request.headers[EVENT_HEADER] == "e1"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == {"event_id": "e1", "job": {"job_id": "j"}, "result": "é"}
    assert request.content == encode(json.loads(request.content))


def test_without_a_secret_no_signature_header_is_sent() -> None:
    assert SIGNATURE_HEADER not in _post(None).headers
    assert SIGNATURE_HEADER not in _post("").headers


def test_the_secret_setting_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """``CONTINUUM_CALLBACK_SECRET`` is read, and hidden from the settings' repr."""
    monkeypatch.setenv("CONTINUUM_CALLBACK_SECRET", "s3cr3t-value")
    settings = Settings()
    assert settings.callback_secret is not None
    assert settings.callback_secret.get_secret_value() == "s3cr3t-value"
    assert "s3cr3t-value" not in repr(settings) and "s3cr3t-value" not in str(settings)
    monkeypatch.delenv("CONTINUUM_CALLBACK_SECRET")
    assert Settings().callback_secret is None
