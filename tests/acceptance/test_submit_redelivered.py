"""A submission message delivered twice creates one job (or one batch).

A broker delivers at least once: a worker killed after ``continuum.generate`` created its
job and before the ack sees the message again, and a submission Redis took but no replica
confirmed is sent again (``NotReplicated``). When the message names no job id (or batch
id), the task takes its own task id's for it, so the second delivery finds the job made by
the first instead of making another. Here the same message (same task id) is sent twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from tests.acceptance.procs import Cluster
from workers.store import JobStatus

pytestmark = pytest.mark.slow

SPEC = {
    "prompt": "List the exhibits",
    "format": "text",
    "model": "sim:format=text,size=300",
    "max_output_tokens": 100,
}


def test_a_generate_message_sent_twice_makes_one_job(cluster: Callable[..., Cluster]) -> None:
    c = cluster()
    c.worker()
    task_id = str(uuid.uuid4())
    producer = c.producer()
    for _ in range(2):
        producer.send_task("continuum.generate", kwargs={"spec": SPEC}, queue="q", task_id=task_id)
    job_id = task_id

    record = c.wait_ended([job_id], timeout=60)[job_id]

    assert record.status is JobStatus.SUCCEEDED, record.error
    jobs, _ = c.store().list_jobs(limit=10)
    assert [j.job_id for j in jobs] == [job_id]
    assert c.store().commits(job_id) == dict.fromkeys(range(record.iteration), 1)


def test_a_batch_message_sent_twice_makes_one_batch(cluster: Callable[..., Cluster]) -> None:
    c = cluster()
    c.worker()
    task_id = str(uuid.uuid4())
    producer = c.producer()
    for _ in range(2):
        producer.send_task(
            "continuum.submit_batch", kwargs={"specs": [SPEC, SPEC]}, queue="q", task_id=task_id
        )
    batch_id = task_id
    ids = [f"{batch_id}.0", f"{batch_id}.1"]

    records = c.wait_ended(ids, timeout=60)

    assert all(r.status is JobStatus.SUCCEEDED for r in records.values())
    jobs, _ = c.store().list_jobs(limit=10)
    assert sorted(j.job_id for j in jobs) == ids
