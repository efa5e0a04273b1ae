"""The crash path's pure parts: how long a crashed iteration waits, and which Redis errors
mean "not now" (the commit waits with the reply in hand) rather than "never"."""

from __future__ import annotations

import pytest
from redis.exceptions import (
    BusyLoadingError,
    ConnectionError,
    DataError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
    TimeoutError,
)

from workers.iteration import crash_delay, refused_for_now

SCRIPT = "Error running script (call to f_0123): @user_script:87: @user_script: 87: "


@pytest.mark.parametrize(
    ("attempt", "cap", "delay"),
    [(1, 300.0, 0.5), (2, 300.0, 1.0), (3, 300.0, 2.0), (4, 300.0, 4.0), (4, 3.0, 3.0),
     (10_000, 300.0, 300.0)],
)  # fmt: skip
def test_the_crash_delay_doubles_from_half_a_second_up_to_the_cap(
    attempt: int, cap: float, delay: float
) -> None:
    assert crash_delay(attempt, cap) == delay


@pytest.mark.parametrize(
    ("exc", "for_now"),
    [
        (OutOfMemoryError("command not allowed when used memory > 'maxmemory'."), True),
        (ResponseError(SCRIPT + "-OOM command not allowed when used memory > 'maxmemory'."), True),
        (ReadOnlyError("You can't write against a read only replica."), True),
        (ResponseError(SCRIPT + "-READONLY You can't write against a read only replica."), True),
        (BusyLoadingError("Redis is loading the dataset in memory"), True),
        (ResponseError("NOREPLICAS Not enough good replicas to write."), True),
        (ResponseError(SCRIPT + "-NOREPLICAS Not enough good replicas to write."), True),
        (ConnectionError("Error 111 connecting to 127.0.0.1:6390. Connection refused."), True),
        (TimeoutError("Timeout reading from socket"), True),
        (ResponseError(SCRIPT + "WRONGTYPE Operation against a key holding the wrong kind"), False),
        (ResponseError("string exceeds maximum allowed size (proto-max-bulk-len)"), False),
        (DataError("Invalid input of type: 'dict'"), False),
        (MemoryError(), False),
        (ValueError("-OOM in a message that is no Redis error"), False),
    ],
)
def test_which_errors_mean_redis_refuses_for_now(exc: Exception, for_now: bool) -> None:
    assert refused_for_now(exc) is for_now
