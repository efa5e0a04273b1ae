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
from collections.abc import Callable

from workers.store import TERMINAL, JobStore

log = logging.getLogger("continuum.watchdog")

Enqueue = Callable[[str, int, float], None]


def sweep(
    store: JobStore, enqueue: Enqueue, *, grace_s: float, now: float | None = None
) -> list[str]:
    """One pass: re-enqueue every overdue job; return their ids."""
    now = time.time() if now is None else now
    sent = []
    for job_id in store.overdue(now):
        record = store.load(job_id)
        if record is None or record.status in TERMINAL:
            store.redis.zrem(store.keys.active, job_id)
            continue
        store.postpone(job_id, now + grace_s)
        enqueue(job_id, record.iteration, 0.0)
        log.warning("job %s overdue at iteration %d: sent again", job_id, record.iteration)
        sent.append(job_id)
    return sent


def run_forever(
    store: JobStore, enqueue: Enqueue, *, interval_s: float, grace_s: float, stop: threading.Event
) -> None:
    while not stop.is_set():
        try:
            sweep(store, enqueue, grace_s=grace_s)
        except Exception:  # a Redis hiccup must not end the watchdog
            log.exception("watchdog sweep failed; trying again")
        stop.wait(interval_s)
