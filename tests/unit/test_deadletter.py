"""The dead-letter record (``workers.deadletter``) masks secrets in linear time: a message
anyone can write to the broker must not stall a worker's consumer loop (a 200 KB one once
blocked it for ~82 s), nor leak the start of a secret the masking window cuts off."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from workers import deadletter
from workers.deadletter import (
    NAME_MAX_CHARS,
    RAW_MAX_CHARS,
    REASON_MAX_CHARS,
    DeadLetter,
    Kind,
    _masked,
    entry,
)

pytestmark = pytest.mark.security

# Text on which the old patterns backtracked: each start position scanned the rest.
ADVERSARIAL = {
    "a.": "a." * 100_000,
    "scheme-like": "a-+." * 50_000,
    "schemes": "x://" * 50_000,
    "schemes-userinfo": "a@a://" * 30_000,
    "schemes-query": "x://a?" * 30_000,
    "no-slash": "ab:/" * 50_000 + "@",
    "key-like": "sk-" * 60_000,
    "words": "xa" * 100_000,
}


def timed(call: Any) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_masking_is_linear_even_on_a_whole_message(text: str) -> None:
    """The patterns themselves: 200 KB in well under a second (was minutes)."""
    assert timed(lambda: _masked(text)) < 0.5


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_a_record_is_built_in_milliseconds(text: str) -> None:
    """Every field of the record (raw, reason, queue, task, id) is cut before it is
    masked: 200 KB in each costs well under 0.1 s (was ~90 s for "a." * 32768)."""
    letter = DeadLetter(Kind.NOT_JSON, text, text, text, text, text)
    took = timed(lambda: entry(letter, now=0.0))
    assert took < 0.1, f"{took:.3f} s"
    record = entry(letter, now=0.0)
    assert record["size"] == len(text)
    assert 0 < len(record["raw"]) <= RAW_MAX_CHARS
    assert 0 < len(record["reason"]) <= REASON_MAX_CHARS
    for field in ("task", "queue", "id"):
        assert 0 < len(record[field]) <= NAME_MAX_CHARS
    if not any(mark in text for mark in ("?", "@", "sk-")):  # nothing to mask: kept as is
        assert record["raw"] == text[:RAW_MAX_CHARS]


def test_bytes_are_decoded_only_as_far_as_kept() -> None:
    raw = b"\xff" + b"z" * 50_000_000  # a 50 MB queue item that is not JSON
    took = timed(lambda: entry(DeadLetter(Kind.NOT_JSON, "r", raw=raw), now=0.0))
    record = entry(DeadLetter(Kind.NOT_JSON, "r", raw=raw), now=0.0)
    assert took < 0.1
    assert record["size"] == len(raw)
    assert record["raw"] == "\ufffd" + "z" * (RAW_MAX_CHARS - 1)


def test_urls_keys_and_env_secrets_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLBACK_TOKEN", "env-secret-4f1d2c")
    text = (
        "redis://:hunter2-pw@10.0.0.1:6390/0 https://hooks.example/done?token=abc#frag "
        "key sk-ABCDEFGHIJKLMNOPQRSTUV env env-secret-4f1d2c "
        "https://a.example/redirect://b.example/p?next=secret-q"
    )
    record = entry(DeadLetter(Kind.NOT_JSON, text, raw=text, task=text), now=0.0)
    for field in ("raw", "reason", "task"):
        shown = record[field]
        assert "redis://***@10.0.0.1" in shown
        assert "https://hooks.example/done?***#frag" in shown
        assert "sk-***" in shown
        for secret in ("hunter2-pw", "token=abc", "ABCDEFGHIJKLMNOP", "env-secret", "secret-q"):
            assert secret not in shown, (field, shown)


@pytest.mark.parametrize("shrink", [False, True], ids=["plain", "after-keys"])
@pytest.mark.parametrize("at", [RAW_MAX_CHARS - 10, RAW_MAX_CHARS + 500, RAW_MAX_CHARS + 511])
def test_a_secret_cut_by_the_masking_window_does_not_show(
    monkeypatch: pytest.MonkeyPatch, at: int, shrink: bool
) -> None:
    """A secret that starts within what is kept, or that masking earlier in the text pulls
    into it (40 provider keys masked: ~700 characters shorter), is masked or cut away,
    never shown in part."""
    secret = "s3cr3t-" + "v" * 60
    monkeypatch.setenv("SOME_API_KEY", secret)
    head = " ".join(f"sk-{i:020d}" for i in range(40)) + " " if shrink else ""
    text = head + "p" * (at - len(head)) + secret + "q" * 10_000
    assert text.index(secret) == at
    record = entry(DeadLetter(Kind.NOT_JSON, "r", raw=text), now=0.0)
    assert len(record["raw"]) == RAW_MAX_CHARS
    assert "s3cr3t" not in record["raw"], record["raw"][-100:]
    if at < RAW_MAX_CHARS or shrink:
        assert "***" in record["raw"][-800:]  # it was there, masked


def test_a_task_name_nested_deep_is_recorded() -> None:
    """A non-string task name or id (any JSON a sender put there) is shown shallow: one
    nested as deep as decoding allows does not make the record fail."""
    deep: Any = "x"
    for _ in range(50_000):
        deep = [deep]
    record = entry(DeadLetter(Kind.NOT_A_TASK, "r", task=deep, message_id={"a": deep}), 0.0)
    assert record["task"].startswith("[[[") and len(record["task"]) < 50
    json.dumps(record)


def test_the_scan_bounds_are_small() -> None:
    """What masking looks at stays a few KB whatever arrives."""
    assert deadletter._SCAN_MARGIN == 512
    assert RAW_MAX_CHARS + deadletter._SCAN_MAX_MARGIN < 8 * 1024
