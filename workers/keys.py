"""Every Redis key Continuum uses, built in one place.

{prefix}job:{id}            hash: spec, state, status, iteration, timestamps, result
{prefix}job:{id}:out        list: the accumulated output, in chunks of at most
                            ``output_chunk_bytes`` (``workers/lua/output.lua``; a
                            string: the layout before chunks, still read)
{prefix}job:{id}:lease      string with a TTL: the worker running the iteration now
{prefix}job:{id}:commits    hash: iteration -> times committed (1, always; for audits)
{prefix}job:{id}:callback   string with a TTL: the deliverer of the job's callback now
{prefix}staging:{uuid}      list with a TTL: a text too large for one command, staged for
                            one call of ``JobStore.commit``, which takes it whole (or
                            deletes it); its TTL bounds it, whatever becomes of the job
{prefix}active              sorted set: unfinished jobs by the time they are overdue
{prefix}outbox              sorted set: ended jobs whose callback is not delivered yet, by
                            the time its next attempt is due (``workers.callbacks``), as
                            ``{id}:{event id}``: the job that ended, not only its id
{prefix}batch:{id}          set: the jobs of a batch
{prefix}batch:{id}:meta     hash: the batch's size, creation time, jobs ended, expiry
{prefix}bucket:{profile}    hash: a provider's shared token bucket
{prefix}deadletter          list: the latest broker messages no worker could take, newest
                            first, bounded (``workers.deadletter``)

A job's own keys (``Keys.job_keys``: the five ``job:{id}...`` above) expire together,
``retention_s`` after the job ends (``workers.store``); a batch's two keys once all its
jobs have. A new per-job key goes into ``job_keys`` too, or it would outlive its job (a
test holds every ``Keys`` method taking a ``job_id`` to that).

Ids obey ``core.ids`` (no ``:``), so no id names another job's key; a key is never built
for an id that does not (``ValueError``).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.ids import check_id

DEFAULT_PREFIX = "continuum:"


@dataclass(frozen=True)
class Keys:
    prefix: str = DEFAULT_PREFIX

    def job(self, job_id: str) -> str:
        return f"{self.prefix}job:{check_id(job_id)}"

    def output(self, job_id: str) -> str:
        return f"{self.prefix}job:{check_id(job_id)}:out"

    def lease(self, job_id: str) -> str:
        return f"{self.prefix}job:{check_id(job_id)}:lease"

    def commits(self, job_id: str) -> str:
        return f"{self.prefix}job:{check_id(job_id)}:commits"

    def callback_claim(self, job_id: str) -> str:
        return f"{self.prefix}job:{check_id(job_id)}:callback"

    def staging(self, stage_id: str) -> str:
        """Not a job's key: one commit's (a fresh uuid each), gone with it or its TTL."""
        return f"{self.prefix}staging:{check_id(stage_id, 'stage id')}"

    def events(self, job_id: str) -> str:
        """The job's event stream: one entry per commit, and one when it ends
        (``retain.lua``'s ``job_event``; read by ``GET /v1/jobs/{id}/events``)."""
        return f"{self.prefix}job:{check_id(job_id)}:events"

    def job_keys(self, job_id: str) -> tuple[str, ...]:
        """Every key of one job, its hash first and its event stream last: what expires
        when the job is retained."""
        return (
            self.job(job_id),
            self.output(job_id),
            self.lease(job_id),
            self.commits(job_id),
            self.callback_claim(job_id),
            self.events(job_id),
        )

    @property
    def active(self) -> str:
        return f"{self.prefix}active"

    @property
    def metrics(self) -> str:
        """Counters every commit adds to (``commit.lua``): iterations, tokens, cost, merge
        failures, fallbacks, an iteration-time histogram; read by ``GET /metrics``."""
        return f"{self.prefix}metrics"

    @property
    def jobs(self) -> str:
        """Every job's id by its creation time (``GET /v1/jobs``); an expired job's entry
        is dropped when a listing or the watchdog finds its hash gone."""
        return f"{self.prefix}jobs"

    @property
    def outbox(self) -> str:
        return f"{self.prefix}outbox"

    def batch(self, batch_id: str) -> str:
        return f"{self.prefix}batch:{check_id(batch_id, 'batch id')}"

    def batch_meta(self, batch_id: str) -> str:
        return f"{self.prefix}batch:{check_id(batch_id, 'batch id')}:meta"

    def bucket(self, profile: str) -> str:
        return f"{self.prefix}bucket:{profile}"

    @property
    def dead_letters(self) -> str:
        return f"{self.prefix}deadletter"
