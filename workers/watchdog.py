"""The watchdog (``continuum beat``): re-enqueue iterations that went missing.

A job is overdue when its deadline passed (the lease of a running iteration expired, or
a queued iteration waited longer than ``queue_grace_s``) and nobody holds its lease: a
worker was killed mid-call, or died between a commit and the next enqueue. The watchdog
sends the job's current iteration again; if the lost message turns up after all, the
duplicate is a no-op (the commit is a compare-and-set, the lease admits one runner).
"""

from __future__ import annotations

import logging
import threading
import time

from core import JobState
from workers.iteration import Enqueue
from workers.runtime import Runtime
from workers.store import TERMINAL

log = logging.getLogger("continuum.watchdog")


def sweep(rt: Runtime, enqueue: Enqueue, *, now: float | None = None) -> list[str]:
    """One pass: re-enqueue every overdue job; return their ids."""
    store = rt.store
    now = time.time() if now is None else now
    sent = []
    for job_id in store.overdue(now):
        record = store.load(job_id)
        if record is None or record.status in TERMINAL:
            store.redis.zrem(store.keys.active, job_id)
            continue
        store.postpone(job_id, now + rt.settings.queue_grace_s)
        queue = rt.queue_for(JobState.model_validate_json(record.state))
        enqueue(job_id, record.iteration, 0.0, queue)
        log.warning("job %s overdue at iteration %d: sent again", job_id, record.iteration)
        sent.append(job_id)
    return sent


def run_forever(rt: Runtime, enqueue: Enqueue, stop: threading.Event) -> None:
    """Sweep every ``watchdog_interval_s`` until ``stop`` is set."""
    while not stop.is_set():
        try:
            sweep(rt, enqueue)
        except Exception:  # a Redis hiccup must not end the watchdog
            log.exception("watchdog sweep failed; trying again")
        stop.wait(rt.settings.watchdog_interval_s)
