"""Schemathesis fuzzes every operation of the OpenAPI document against the live API (a
real uvicorn on a real Redis): valid and invalid inputs, never a server error, and every
response as the document describes it (status codes, content types, bodies).

The document comes from an app built without connecting anywhere (``create_app`` does
not connect); the requests go to the test's own app, served on the test's Redis prefix.
(``schemathesis.pytest.from_fixture`` would do both at once, but its lazy loader does not
run on pytest 9.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import Case
from schemathesis.checks import CheckFunction
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from api.app import create_app
from tests.api.api_support import make_settings

_app = create_app(make_settings("redis://127.0.0.1:1/0", "continuum-test:schema:"))
schema = schemathesis.openapi.from_dict(_app.openapi())
_app.state.service.close()


@pytest.fixture
def live(make_api: Callable[..., httpx.Client]) -> str:
    return str(make_api().base_url)


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,  # one live app per operation, on purpose
    ],
)
def test_no_server_error_and_responses_match_the_schema(case: Case[Any], live: str) -> None:
    # JobSpec has rules JSON Schema cannot say (exactly one of prompt or messages, a
    # user message among the messages, ...): schema-valid data may be refused with 422.
    # A batch of up to 10,000 invalid specs is 10,000 failed jobs (created 500 at a time,
    # about 1 s here): 30 s leaves room for a loaded machine.
    response = case.call(base_url=live, timeout=30)
    excluded: list[CheckFunction] = [positive_data_acceptance]
    if response.status_code == 413:
        # A body over the API's size limit is refused before it is parsed: a rejection of
        # invalid data too (schemathesis' list of rejecting codes leaves 413 out).
        assert response.json()["error"] == "payload_too_large", response.text
        excluded.append(negative_data_rejection)
    case.validate_response(response, excluded_checks=excluded)
