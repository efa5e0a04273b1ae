"""What ``GET /metrics`` reads from the job store, at a bounded cost (``JobStore.metrics``).

The jobs Redis holds are found with ``SCAN`` (on every master of a cluster; at most
``most`` job hashes, and ``KEYS_PER_JOB`` times as many keys walked) and their small
fields (``status``, ``iteration``, ``summary``) read in pipelines of ``BATCH``; the
backlogs, summed over the shards (``workers.keys``), are one pipeline.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from redis import Redis, RedisCluster

from workers.keys import SHARDS, Keys
from workers.store import JobStatus

if TYPE_CHECKING:
    from workers.store import Client

#: Keys asked of each ``SCAN`` call; a scrape walks at most ``KEYS_PER_JOB`` keys per job
#: hash it may read (a job has up to six keys, and the database holds Celery's too).
SCAN_COUNT = 1000
KEYS_PER_JOB = 10
#: Job hashes read per pipeline.
BATCH = 1000


@dataclass
class JobTotals:
    """The jobs of one scrape, by status."""

    jobs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JobStatus, 0))
    iterations: dict[str, int] = field(default_factory=lambda: dict.fromkeys(JobStatus, 0))
    fallbacks: int = 0
    read: int = 0
    complete: bool = True

    def add(self, status: Any, iteration: Any, summary: Any) -> None:
        """Count one job hash (``HMGET``'s bytes, or str from a client that decodes); one
        gone meanwhile has no status and is not counted."""
        name = _bytes(status).decode() if status is not None else None
        if name not in self.jobs:
            return
        self.jobs[name] += 1
        self.iterations[name] += int(iteration or 0)
        if summary:
            self.fallbacks += len(json.loads(summary).get("fallbacks") or ())


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def _glob_escape(text: str) -> str:
    """``text`` as a literal in a ``SCAN MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


@dataclass(frozen=True)
class StoreMetrics:
    """The store's reads for the metrics (its client and key map)."""

    redis: Client
    keys: Keys

    def _servers(self) -> list[Redis]:
        """One client per server holding jobs: each master of a cluster, else the one."""
        if isinstance(self.redis, RedisCluster):
            primaries = self.redis.get_primaries()  # type: ignore[no-untyped-call]
            return [node.redis_connection for node in primaries]
        return [self.redis]

    def job_hashes(self, most: int) -> tuple[list[bytes], bool]:
        """The keys of at most ``most`` job hashes (``{prefix}{n}job:{id}``, not the job's
        other keys), and whether they are all of them."""
        # ``{`` and ``}`` are no glob characters: ``{*}`` matches any shard's tag.
        pattern = _glob_escape(self.keys.prefix) + "{*}job:*"
        found: set[bytes] = set()  # SCAN may return a key twice
        walked = 0
        servers = self._servers()
        for server in servers:
            cursor = 0
            while True:
                cursor, batch = server.scan(cursor, match=pattern, count=SCAN_COUNT)
                walked += SCAN_COUNT
                found.update(k for k in map(_bytes, batch) if b":" not in k.rpartition(b"}")[2][4:])
                last = cursor == 0 and server is servers[-1]
                if last and len(found) <= most:
                    return sorted(found), True
                if len(found) >= most:
                    return sorted(found)[:most], False
                if cursor == 0:
                    break  # the next server
                if walked >= most * KEYS_PER_JOB:
                    return sorted(found)[:most], False
        return sorted(found), True  # no server

    def jobs(self, most: int) -> JobTotals:
        """Every job hash's ``status``, ``iteration`` and ``summary``, summed (bounded)."""
        names, complete = self.job_hashes(most)
        totals = JobTotals(read=len(names), complete=complete)
        for start in range(0, len(names), BATCH):
            pipe = self.redis.pipeline(transaction=False)
            for name in names[start : start + BATCH]:
                pipe.hmget(name, ["status", "iteration", "summary"])
            for status, iteration, summary in pipe.execute():
                totals.add(status, iteration, summary)
        return totals

    def backlogs(self, now: float | None = None) -> tuple[int, int]:
        """(Unfinished jobs past their deadline, callbacks not delivered yet)."""
        now = time.time() if now is None else now
        pipe = self.redis.pipeline(transaction=False)
        for shard in range(SHARDS):
            pipe.zcount(self.keys.active(shard), "-inf", now)
            pipe.zcard(self.keys.outbox(shard))
        counts = [int(n) for n in pipe.execute()]
        return sum(counts[0::2]), sum(counts[1::2])
