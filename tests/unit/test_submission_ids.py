"""The id a submission task gives what it creates when its message names none
(``workers.tasks._message_id``): its task id, so a message delivered twice creates one job;
a task id that is no valid id gives a digest of it, the same every time."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from core.ids import BATCH_ID_PATTERN, is_id
from workers.tasks import _message_id


def task(task_id: str | None) -> SimpleNamespace:
    return SimpleNamespace(request=SimpleNamespace(id=task_id))


def test_a_valid_task_id_is_the_id_as_it_is() -> None:
    """No character dropped: ``order-12`` and ``order1-2`` stay two jobs."""
    assert _message_id(task("order-12")) == "order-12"
    assert _message_id(task("order1-2")) == "order1-2"
    uid = "0b6f1a2c-5d3e-4f70-8a9b-1c2d3e4f5a6b"
    assert _message_id(task(uid)) == uid
    assert _message_id(task(uid), batch=True) == uid


@pytest.mark.parametrize(
    ("task_id", "batch"),
    [("order:12", False), ("-x", False), ("é", False), ("a" * 129, False), ("b" * 123, True)],
)
def test_an_invalid_task_id_gives_the_same_valid_id_every_time(task_id: str, batch: bool) -> None:
    first = _message_id(task(task_id), batch=batch)
    assert first == _message_id(task(task_id), batch=batch)
    assert re.fullmatch(r"t[0-9a-f]{32}", first)
    assert is_id(first) and re.fullmatch(BATCH_ID_PATTERN, first)
    assert first != _message_id(task(task_id + "x"), batch=batch)


def test_a_batch_id_obeys_the_batch_rule() -> None:
    """A 123-128 character task id is a valid job id but too long for a batch's (its
    jobs' ids add ``.<index>``)."""
    long = "c" * 125
    assert _message_id(task(long)) == long
    assert _message_id(task(long), batch=True) != long


def test_no_task_id_gives_a_new_id() -> None:
    assert is_id(_message_id(task(None)))
    assert _message_id(task(None)) != _message_id(task(None))
