"""Every Redis key Continuum uses, built in one place.

The keys are laid out for Redis Cluster as well as one Redis: every key a Lua script
touches lies in one hash slot. Jobs are spread over ``SHARDS`` fixed shards (a job's
shard: ``shard_of(id)``, CRC-32 of its id), and every key of a shard carries the shard's
hash tag ``{n}``: a job's keys and its shard's indexes (``active``, ``jobs``, ``outbox``,
``metrics``, ``batch_ends``) share one slot, so each script stays one atomic write. A
cluster spreads the shards over its masters (64 slots: 22/21/21 on three).

{prefix}{n}job:{id}         hash: spec, state, status, iteration, timestamps, result
{prefix}{n}job:{id}:out     list: the accumulated output, in chunks of at most
                            ``output_chunk_bytes`` (``workers/lua/output.lua``; a
                            string: the layout before chunks, still read)
{prefix}{n}job:{id}:lease   string with a TTL: the worker running the iteration now
{prefix}{n}job:{id}:commits hash: iteration -> times committed (1, always; for audits)
{prefix}{n}job:{id}:callback string with a TTL: the deliverer of the job's callback now
{prefix}{n}job:{id}:events  stream: one entry per commit, and one when the job ends
{prefix}{n}staging:{uuid}   list with a TTL: a text too large for one command, staged for
                            one call of ``JobStore.commit`` (in its job's shard), which
                            takes it whole (or deletes it); its TTL bounds it
{prefix}{n}active           sorted set: the shard's unfinished jobs by when they are overdue
{prefix}{n}jobs             sorted set: the shard's jobs by creation time (listings merge
                            the shards)
{prefix}{n}outbox           sorted set: the shard's ended jobs whose callback is not
                            delivered yet, by when its next attempt is due
                            (``workers.callbacks``), as ``{id}:{event id}``
{prefix}{n}metrics          hash: counters the shard's commits add to (readers sum them)
{prefix}{n}batch_ends       sorted set: the shard's jobs of a batch that ended, by when,
                            until their batch has counted them (``batch_end.lua``)
{prefix}{batch:{id}}        set: the jobs of a batch (the batch's own slot)
{prefix}{batch:{id}}:meta   hash: the batch's size, creation time, expiry
{prefix}{batch:{id}}:ended  set: the batch's jobs that have ended
{prefix}bucket:{profile}    hash: a provider's shared token bucket
{prefix}deadletter          list: the latest broker messages no worker could take, newest
                            first, bounded (``workers.deadletter``)

A job's own keys (``Keys.job_keys``: the six ``job:{id}...`` above) expire together,
``retention_s`` after the job ends (``workers.store``); a batch's three keys once all its
jobs have. A new per-job key goes into ``job_keys`` too, or it would outlive its job (a
test holds every ``Keys`` method taking a ``job_id`` to that).

Ids obey ``core.ids`` (no ``:``, no braces), so no id names another job's key or moves a
key's hash tag; a key is never built for an id that does not (``ValueError``). A prefix
holds no braces either: the first ``{...}`` of a key is its tag.

The layout before shards (``{prefix}job:{id}``, one ``{prefix}active``, ...) is not
migrated: ``JobStore.check_layout`` finds it (``LEGACY_KEYS``) and a worker refuses to
start on it (operations.md, "Beyond one machine": drain first).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from core.ids import check_id

DEFAULT_PREFIX = "continuum:"

#: Fixed for good: a job's keys are found from its id through it, so changing it would
#: lose every job stored before.
SHARDS = 64

#: The shared keys of the layout before shards: one of them present means keys to move.
LEGACY_KEYS = ("active", "jobs", "outbox", "metrics")


def shard_of(job_id: str) -> int:
    """The shard that holds the job's keys."""
    return zlib.crc32(check_id(job_id).encode()) % SHARDS


@dataclass(frozen=True)
class Keys:
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if "{" in self.prefix or "}" in self.prefix:
            raise ValueError("a key prefix holds no '{' or '}': they would move the hash tag")

    def _tag(self, shard: int) -> str:
        if not 0 <= shard < SHARDS:
            raise ValueError(f"no shard {shard}: shards are 0-{SHARDS - 1}")
        return f"{self.prefix}{{{shard}}}"

    def _job_base(self, job_id: str) -> str:
        return f"{self._tag(shard_of(job_id))}job:{job_id}"

    def job(self, job_id: str) -> str:
        return self._job_base(job_id)

    def output(self, job_id: str) -> str:
        return f"{self._job_base(job_id)}:out"

    def lease(self, job_id: str) -> str:
        return f"{self._job_base(job_id)}:lease"

    def commits(self, job_id: str) -> str:
        return f"{self._job_base(job_id)}:commits"

    def callback_claim(self, job_id: str) -> str:
        return f"{self._job_base(job_id)}:callback"

    def events(self, job_id: str) -> str:
        """The job's event stream: one entry per commit, and one when it ends
        (``retain.lua``'s ``job_event``; read by ``GET /v1/jobs/{id}/events``)."""
        return f"{self._job_base(job_id)}:events"

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

    def staging(self, shard: int, stage_id: str) -> str:
        """Not a job's key: one commit's (a fresh uuid each) in its job's shard, gone with
        it or its TTL."""
        return f"{self._tag(shard)}staging:{check_id(stage_id, 'stage id')}"

    # -- a shard's indexes (the slot of its jobs) ---------------------------------------
    def active(self, shard: int) -> str:
        return f"{self._tag(shard)}active"

    def metrics(self, shard: int) -> str:
        """Counters the shard's commits add to (``commit.lua``): iterations, tokens, cost,
        merge failures, fallbacks, an iteration-time histogram; ``GET /metrics`` sums them."""
        return f"{self._tag(shard)}metrics"

    def jobs(self, shard: int) -> str:
        """The shard's job ids by creation time (``GET /v1/jobs`` merges the shards); an
        expired job's entry is dropped when a listing or the watchdog finds its hash gone."""
        return f"{self._tag(shard)}jobs"

    def outbox(self, shard: int) -> str:
        return f"{self._tag(shard)}outbox"

    def batch_ends(self, shard: int) -> str:
        """Jobs of a batch that ended (by when), until ``batch_end.lua`` counted them."""
        return f"{self._tag(shard)}batch_ends"

    # -- a batch (its own slot) -----------------------------------------------------------
    def batch(self, batch_id: str) -> str:
        return f"{self.prefix}{{batch:{check_id(batch_id, 'batch id')}}}"

    def batch_meta(self, batch_id: str) -> str:
        return f"{self.batch(batch_id)}:meta"

    def batch_ended(self, batch_id: str) -> str:
        return f"{self.batch(batch_id)}:ended"

    def bucket(self, profile: str) -> str:
        return f"{self.prefix}bucket:{profile}"

    @property
    def dead_letters(self) -> str:
        return f"{self.prefix}deadletter"

    @property
    def replicated(self) -> str:
        """A mark the store writes after new jobs, then waits for replicas to hold
        (``WAIT``): Redis replicates in order, so they then hold the jobs too."""
        return f"{self.prefix}replicated"

    def legacy(self, name: str) -> str:
        """A key of the layout before shards (``JobStore.check_layout`` looks for them)."""
        return f"{self.prefix}{name}"
