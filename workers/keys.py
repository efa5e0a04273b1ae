"""Every Redis key Continuum uses, built in one place.

{prefix}job:{id}            hash: spec, state, status, iteration, timestamps, result
{prefix}job:{id}:out        string: the accumulated output (appended per iteration)
{prefix}job:{id}:lease      string with a TTL: the worker running the iteration now
{prefix}job:{id}:commits    hash: iteration -> times committed (1, always; for audits)
{prefix}active              sorted set: unfinished jobs by the time they are overdue
{prefix}batch:{id}          set: the jobs of a batch
{prefix}batch:{id}:meta     hash: the batch's size and creation time
{prefix}bucket:{profile}    hash: a provider's shared token bucket
{prefix}deadletter          list: the latest broker messages no worker could take, newest
                            first, bounded (``workers.deadletter``)

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

    @property
    def active(self) -> str:
        return f"{self.prefix}active"

    def batch(self, batch_id: str) -> str:
        return f"{self.prefix}batch:{check_id(batch_id, 'batch id')}"

    def batch_meta(self, batch_id: str) -> str:
        return f"{self.prefix}batch:{check_id(batch_id, 'batch id')}:meta"

    def bucket(self, profile: str) -> str:
        return f"{self.prefix}bucket:{profile}"

    @property
    def dead_letters(self) -> str:
        return f"{self.prefix}deadletter"
