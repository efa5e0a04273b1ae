"""The watchdog (``continuum beat``): re-enqueue iterations that went missing.

A job is overdue when its deadline passed (the lease of a running iteration expired, or
a queued iteration waited longer than ``queue_grace_s``) and nobody holds its lease: a
worker was killed mid-call, or died between a commit and the next enqueue. The watchdog
sends the job's current iteration again; if the lost message turns up after all, the
duplicate is a no-op (the commit is a compare-and-set, the lease admits one runner).

It also watches the callback outbox (``workers.callbacks``): an entry overdue by
``queue_grace_s`` lost its task (a worker killed between the job's end and the POST, or
holding a retry's countdown), so the watchdog sends ``continuum.callback`` for it again,
at most ``OUTBOX_BATCH`` per pass. An entry whose job has expired is dropped, also when a
new job has taken its id since: Redis cannot drop a member of the outbox when a job's
keys expire, and no claim takes an entry that is not its job's (``outbox_claim.lua``).

Each pass reads every shard's indexes (``workers.keys``: 64 sorted sets per index, one
pipeline), settles the batch counts a dead process left undone (``JobStore.settle_batch_ends``)
and trims a few shards of the jobs index.
"""

from __future__ import annotations

import logging
import threading
import time

from core import JobState
from workers.iteration import Enqueue, Notify
from workers.runtime import Runtime
from workers.store import TERMINAL

log = logging.getLogger("continuum.watchdog")

#: Outbox entries sent again per pass, at most (the rest wait for the next pass).
OUTBOX_BATCH = 100


def sweep(rt: Runtime, enqueue: Enqueue, *, now: float | None = None) -> list[str]:
    """One pass: re-enqueue every overdue job; return their ids."""
    store = rt.store
    now = time.time() if now is None else now
    sent = []
    for job_id in store.overdue(now):
        record = store.load(job_id)
        if record is None or record.status in TERMINAL:
            store.deactivate(job_id)
            continue
        store.postpone(job_id, now + rt.settings.queue_grace_s)
        queue = rt.queue_for(JobState.model_validate_json(record.state))
        enqueue(job_id, record.iteration, 0.0, queue)
        log.warning("job %s overdue at iteration %d: sent again", job_id, record.iteration)
        sent.append(job_id)
    return sent


def sweep_outbox(
    rt: Runtime, notify: Notify, *, now: float | None = None, limit: int = OUTBOX_BATCH
) -> list[str]:
    """One pass over the callback outbox: send the callback task again for every entry
    overdue by the queue grace (and postpone it by as much); return their ids."""
    store = rt.store
    now = time.time() if now is None else now
    due = store.outbox_due(now - rt.settings.queue_grace_s, limit)
    sent = []
    for (job_id, event), live in zip(due, store.outbox_live(due), strict=True):
        if not live:  # its retention ran out before its callback was delivered
            store.outbox_drop(job_id, event)
            continue
        store.outbox_postpone(job_id, event, now)
        notify(job_id)
        log.warning("job %s: its callback is overdue: sent again", job_id)
        sent.append(job_id)
    return sent


def run_forever(rt: Runtime, enqueue: Enqueue, stop: threading.Event, notify: Notify) -> None:
    """Sweep the jobs, the callback outbox, the batch counts and the jobs index every
    ``watchdog_interval_s`` until ``stop`` is set; ``enqueue`` and ``notify`` send on the
    broker of the entry point's app (``workers.producer.Producer``)."""
    while not stop.is_set():
        try:
            sweep(rt, enqueue)
            sweep_outbox(rt, notify)
            rt.store.settle_batch_ends(time.time() - rt.settings.queue_grace_s)
            rt.store.prune_jobs_index()  # expired jobs leave the listing's index
        except Exception:  # a Redis hiccup must not end the watchdog
            log.exception("watchdog sweep failed; trying again")
        stop.wait(rt.settings.watchdog_interval_s)
