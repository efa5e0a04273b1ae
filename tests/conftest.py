"""Shared fixtures: real servers on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run an ASGI app on a real uvicorn server in a thread; yield its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def serve() -> Iterator[Callable[[Any], str]]:
    """``serve(app)`` starts a real uvicorn server for the test; returns its base URL."""
    stack: list[Any] = []

    def start(app: Any) -> str:
        ctx = serving(app)
        url = ctx.__enter__()
        stack.append(ctx)
        return url

    yield start
    for ctx in reversed(stack):
        ctx.__exit__(None, None, None)
