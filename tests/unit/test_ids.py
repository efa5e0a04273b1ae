"""The id rule (``core.ids``) and the key map it makes injective (``workers.keys``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.ids import ID_PATTERN, MAX_ID, check_id, is_id
from workers.keys import Keys, shard_of

IDS = st.from_regex(ID_PATTERN, fullmatch=True)
KEYS = Keys("p:")


def job_keys(job_id: str) -> set[str]:
    return {KEYS.job(job_id), KEYS.output(job_id), KEYS.lease(job_id), KEYS.commits(job_id)}


@given(IDS, IDS)
def test_two_ids_share_no_key(one: str, two: str) -> None:
    if one != two:
        assert not job_keys(one) & job_keys(two)
        assert {KEYS.batch(one), KEYS.batch_meta(one)}.isdisjoint(
            {KEYS.batch(two), KEYS.batch_meta(two)}
        )


@given(IDS)
def test_a_job_key_is_no_batch_key(job_id: str) -> None:
    assert job_keys(job_id).isdisjoint(
        {KEYS.batch(job_id), KEYS.batch_meta(job_id), KEYS.active(shard_of(job_id))}
    )


@pytest.mark.parametrize(
    "bad", ["", "x:commits", "victim:lease", "-x", ".x", "x y", "x/y", "é", "x" * (MAX_ID + 1)]
)
def test_a_bad_id_is_refused_and_no_key_is_built_for_it(bad: str) -> None:
    assert not is_id(bad)
    with pytest.raises(ValueError, match="an id is 1-128 characters"):
        check_id(bad)
    for build in (KEYS.job, KEYS.output, KEYS.lease, KEYS.commits, KEYS.batch, KEYS.batch_meta):
        with pytest.raises(ValueError):
            build(bad)


@pytest.mark.parametrize("good", ["x", "job-1", "b.12", "A_b.c-d", "x" * MAX_ID])
def test_a_good_id_passes(good: str) -> None:
    assert is_id(good) and check_id(good) == good
