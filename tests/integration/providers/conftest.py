"""Fixtures: one real uvicorn server for the whole session, a fresh fake on it per test.

The server is started with the shared ``serving`` helper (the ``serve`` fixture's own),
once: starting and stopping uvicorn per test costs ~0.25 s, more than the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.conftest import serving
from tests.integration.providers.provider_fakes import (
    AnthropicFake,
    ChatFake,
    F,
    Fake,
    ResponsesFake,
    Served,
    Switchboard,
)

FAKES: dict[str, Callable[[], Fake]] = {
    "openai": ChatFake,
    "openai-responses": ResponsesFake,
    "anthropic": AnthropicFake,
}


@pytest.fixture(scope="session")
def switchboard() -> Iterator[tuple[Switchboard, str]]:
    board = Switchboard()
    with serving(board.app()) as url:
        yield board, url


def install(switchboard: tuple[Switchboard, str], fake: F) -> Iterator[Served[F]]:
    board, url = switchboard
    board.fake = fake
    served = Served(fake, url)
    yield served
    served.close()
    board.fake = None


@pytest.fixture(params=list(FAKES))
def any_provider(
    request: pytest.FixtureRequest, switchboard: tuple[Switchboard, str]
) -> Iterator[Served[Fake]]:
    """Each fake provider in turn: for behaviour every adapter must share."""
    yield from install(switchboard, FAKES[request.param]())


@pytest.fixture
def chat(switchboard: tuple[Switchboard, str]) -> Iterator[Served[ChatFake]]:
    yield from install(switchboard, ChatFake())


@pytest.fixture
def responses(switchboard: tuple[Switchboard, str]) -> Iterator[Served[ResponsesFake]]:
    yield from install(switchboard, ResponsesFake())


@pytest.fixture
def anthropic(switchboard: tuple[Switchboard, str]) -> Iterator[Served[AnthropicFake]]:
    yield from install(switchboard, AnthropicFake())
