"""The Sentry scrubber (a table of events), how ``init_sentry`` calls the SDK, and the
tags a task gets; no network, and the SDK is never initialised globally."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.integrations.celery import CeleryIntegration
from sentry_sdk.transport import Transport

from workers.observability import FILTERED, init_sentry, scrub, tag_iteration, tag_task
from workers.settings import Settings

PLANTED = "planted-key-0a1b2c3d4e5f"
SHAPED = "sk-" + "A1b2C3d4E5f6G7h8J9k0"  # shaped like a provider key, in no variable
SECRET = "SECRET-PROMPT-7f3a"
SPEC = {"job_id": "j1", "prompt": SECRET, "format": "json", "model": "sim"}


@pytest.fixture(autouse=True)
def planted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    monkeypatch.setenv("MY_LLM_CREDS", "creds-value-not-a-key-name")


CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "generate kwargs: the spec goes, its job id stays",
        {
            "extra": {
                "celery-job": {
                    "task_name": "continuum.generate",
                    "args": [],
                    "kwargs": {"spec": SPEC, "batch": "b1"},
                }
            }
        },
        {
            "extra": {
                "celery-job": {
                    "task_name": "continuum.generate",
                    "args": [],
                    "kwargs": {"spec": FILTERED, "job_id": "j1", "batch": "b1"},
                }
            }
        },
    ),
    (
        "a spec whose job id is not an id (here the prompt) keeps nothing",
        {"kwargs": {"spec": {"job_id": f"{SECRET} with spaces", "prompt": SECRET}}},
        {"kwargs": {"spec": FILTERED}},
    ),
    (
        "submit_batch kwargs: specs go, the batch id stays",
        {"kwargs": {"specs": [SPEC, SPEC], "batch_id": "b2"}},
        {"kwargs": {"specs": FILTERED, "batch_id": "b2"}},
    ),
    (
        "iterate kwargs are kept as they are",
        {"kwargs": {"job_id": "j1", "iteration": 3}},
        {"kwargs": {"job_id": "j1", "iteration": 3}},
    ),
    (
        "breadcrumbs: text under a telling key goes, whatever its shape; messages redacted",
        {
            "breadcrumbs": {
                "values": [
                    {
                        "category": "continuum",
                        "message": f"called with {PLANTED}",
                        "data": {
                            "Prompt": SECRET,
                            "messages": [{"role": "user", "content": SECRET}],
                            "output": {"text": SECRET},
                            "chars": 120,
                        },
                    }
                ]
            }
        },
        {
            "breadcrumbs": {
                "values": [
                    {
                        "category": "continuum",
                        "message": "called with ***",
                        "data": {
                            "Prompt": FILTERED,
                            "messages": FILTERED,
                            "output": FILTERED,
                            "chars": 120,
                        },
                    }
                ]
            }
        },
    ),
    (
        "numbers, booleans and None under a telling key say nothing: kept",
        {"extra": {"suffix": 12, "state": None, "text": True, "append": ""}},
        {"extra": {"suffix": 12, "state": None, "text": True, "append": FILTERED}},
    ),
    (
        "exception values: keys of the environment and key-shaped strings are masked",
        {
            "exception": {
                "values": [{"type": "ProviderError", "value": f"bad key {PLANTED} / {SHAPED}"}]
            }
        },
        {"exception": {"values": [{"type": "ProviderError", "value": "bad key *** / sk-***"}]}},
    ),
    (
        "log entries: the template and its parameters, tags and a job id that is a key",
        {
            "logentry": {"message": "retry %s: %s", "params": [1, f"Bearer {PLANTED}"]},
            "tags": {"job_id": PLANTED},
        },
        {
            "logentry": {"message": "retry %s: %s", "params": [1, "Bearer ***"]},
            "tags": {"job_id": "***"},
        },
    ),
    (
        "a spec's job id is redacted too when it is a key",
        {"kwargs": {"spec": {**SPEC, "job_id": PLANTED}}},
        {"kwargs": {"spec": FILTERED, "job_id": "***"}},
    ),
    (
        "transactions: span descriptions and data",
        {
            "type": "transaction",
            "spans": [{"description": f"GET job:{PLANTED}", "data": {"state": "{...}", "n": 1}}],
        },
        {
            "type": "transaction",
            "spans": [{"description": "GET job:***", "data": {"state": FILTERED, "n": 1}}],
        },
    ),
]


@pytest.mark.parametrize(("event", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_scrub(event: dict[str, Any], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(event)
    assert scrub(event) == expected
    assert event == before  # the input is left alone


def test_scrub_hides_the_key_variables_profiles_name() -> None:
    text = "auth failed with creds-value-not-a-key-name"
    assert scrub(text) == text  # MY_LLM_CREDS is not a telling name on its own
    assert scrub(text, names=["MY_LLM_CREDS"]) == "auth failed with ***"


class Recorded:
    def __init__(self) -> None:
        self.kwargs: dict[str, Any] | None = None

    def __call__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@pytest.fixture
def fake_init(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    recorded = Recorded()
    monkeypatch.setattr(sentry_sdk, "init", recorded)  # the module observability calls
    return recorded


@pytest.mark.parametrize("dsn", [None, "", "  "])
def test_no_dsn_no_sentry(fake_init: Recorded, dsn: str | None) -> None:
    assert init_sentry(Settings(SENTRY_DSN=dsn)) is False
    assert fake_init.kwargs is None


def test_init_sentry_with_a_dsn(fake_init: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SENTRY_DSN", "http://public@127.0.0.1:9/1")
    monkeypatch.setenv("CONTINUUM_SENTRY_TRACES_SAMPLE_RATE", "0.25")
    assert init_sentry(Settings()) is True
    kw = fake_init.kwargs
    assert kw is not None
    assert kw["dsn"] == "http://public@127.0.0.1:9/1"
    assert kw["traces_sample_rate"] == 0.25
    assert [type(i) for i in kw["integrations"]] == [CeleryIntegration]
    assert kw["include_local_variables"] is False
    assert kw["max_request_body_size"] == "never"
    assert not kw.get("send_default_pii")  # PII stays off (the SDK's default)
    event = {"extra": {"celery-job": {"kwargs": {"spec": SPEC}}}, "message": PLANTED}
    scrubbed = {
        "extra": {"celery-job": {"kwargs": {"spec": FILTERED, "job_id": "j1"}}},
        "message": "***",
    }
    assert kw["before_send"](event, {}) == scrubbed
    assert kw["before_send_transaction"](event, {}) == scrubbed
    crumb = {"message": f"prompt: {SHAPED}", "data": {"prompt": SECRET}}
    assert kw["before_breadcrumb"](crumb, {}) == {
        "message": "prompt: sk-***",
        "data": {"prompt": FILTERED},
    }


class Keep(Transport):
    """Keeps the envelopes a client would send."""

    def __init__(self) -> None:
        super().__init__()
        self.envelopes: list[Envelope] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        self.envelopes.append(envelope)


@contextmanager
def captured() -> Iterator[list[dict[str, Any]]]:
    """A Sentry client active in an isolation scope of this block only (no integrations,
    nothing sent); the events it captured are in the list once the block ends."""
    keep = Keep()
    client = sentry_sdk.Client(
        dsn="http://public@127.0.0.1:9/1",
        transport=keep,
        default_integrations=False,
        auto_enabling_integrations=False,
    )
    events: list[dict[str, Any]] = []
    with sentry_sdk.isolation_scope() as scope:
        scope.set_client(client)
        yield events
    client.close()
    events.extend(dict(e.get_event() or {}) for e in keep.envelopes)


def test_tags_are_a_no_op_without_sentry() -> None:
    assert not sentry_sdk.get_client().is_active()
    with sentry_sdk.isolation_scope() as scope:
        tag_iteration("j1", 2, "sim")
        tag_task({"spec": {"job_id": "j1"}})
        assert not scope._tags


def test_tag_iteration() -> None:
    with captured() as events:
        tag_iteration("j1", 2, "sim")
        sentry_sdk.capture_message("failed")
    assert events[0]["tags"] == {"job_id": "j1", "iteration": 2, "provider": "sim"}


@pytest.mark.parametrize(
    ("kwargs", "tags"),
    [
        (
            {"spec": {"job_id": "j1", "prompt": SECRET}, "batch": "b1"},
            {"job_id": "j1", "batch_id": "b1"},
        ),
        ({"job_id": "j1", "iteration": 4}, {"job_id": "j1", "iteration": 4}),
        ({"specs": [SPEC], "batch_id": "b2"}, {"batch_id": "b2"}),
        ({"job_id": f"{SECRET} not an id", "iteration": "4"}, {}),  # poison: nothing odd
        ({"job_id": ["j1"], "iteration": True}, {}),
    ],
)
def test_tag_task(kwargs: dict[str, Any], tags: dict[str, Any]) -> None:
    with captured() as events:
        tag_task(kwargs)
        sentry_sdk.capture_message("failed")
    assert events[0].get("tags", {}) == tags
