"""A job that ended stays ended: a late commit never revives it.

A real worker is paused (SIGSTOP) in the middle of its model call, past its lease; the
job is failed meanwhile; the worker then goes on and tries to commit the iteration it
was running. The commit is refused: the job stays failed, with no output and no commit.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from tests.acceptance.procs import Cluster

pytestmark = pytest.mark.slow

LEASE_TTL_S = 1.0


def wait_for(what: str, check: Callable[[], bool], c: Cluster, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{c.logs()}")
        time.sleep(0.05)


@pytest.mark.parametrize("ended_as", ["failed", "succeeded", "partial"])
def test_a_late_commit_does_not_revive_an_ended_job(
    cluster: Callable[..., Cluster], ended_as: str
) -> None:
    c = cluster(CONTINUUM_LEASE_TTL_S=str(LEASE_TTL_S))  # no watchdog runs: nothing resends
    worker = c.worker(concurrency=1)
    store = c.store()
    job = f"late-{ended_as}"
    c.producer().send_task(
        "continuum.generate",
        kwargs={
            "spec": {
                "job_id": job,
                "prompt": "List the exhibits",
                "format": "text",
                "model": "sim:format=text,size=3000,latency=2",
                "max_output_tokens": 200,
            }
        },
        queue="q",
    )
    lease = store.keys.lease(job)
    wait_for("the iteration's lease", lambda: bool(store.redis.exists(lease)), c)

    os.kill(worker.pid, signal.SIGSTOP)
    try:
        # The job ends while its worker cannot renew the lease (an operator, a poison
        # message, the crash budget): written here as the store's own scripts would.
        store.redis.hset(store.keys.job(job), mapping={"status": ended_as, "error": "by the test"})
        time.sleep(LEASE_TTL_S * 2)
        assert not store.redis.exists(lease)  # the lease ran out while it was paused
    finally:
        os.kill(worker.pid, signal.SIGCONT)
    wait_for("the late commit's answer", lambda: '"commit": "' in c.log(worker), c)
    assert '"commit": "ended"' in c.log(worker), c.log(worker)

    record = store.load(job)
    assert record is not None
    assert record.status.value == ended_as and record.iteration == 0
    assert store.output(job) == ""
    assert store.commits(job) == {}
