"""The Redis job store: jobs, their output, leases, and exactly-once commits.

Every write that must be atomic is one Lua script (``workers/lua/``). The output is a
Redis list of chunks of at most ``output_chunk_bytes``, appended per iteration
(``workers/lua/output.lua``: no value grows with the job) and read a part at a time
(``iter_output``, ``iter_text``); no command carries more than ``STAGE_BYTES`` of it (a
larger text is staged first). The job state (which never holds the output) is a hash
field. ``commit`` is a compare-and-set on the iteration number, so a duplicated,
late or concurrent delivery of an iteration never appends twice or skips a fragment.

Retention: every script that ends a job (``commit`` with a final status, ``fail``,
``cancel``) also sets the expiry of all the job's keys (``Keys.job_keys``), ``retention_s``
after it ends, and records it as ``expires_at`` (``workers/lua/retain.lua``). A batch's keys
expire with the last of its jobs. ``retention_s = 0`` keeps everything.
"""

from __future__ import annotations

import codecs
import contextlib
import heapq
import itertools
import json
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import parse_qsl, quote, unquote, urlencode

from redis import Redis, RedisCluster
from redis.cluster import ClusterNode
from redis.commands.core import Script
from redis.exceptions import (
    AskError,
    ClusterDownError,
    NoScriptError,
    RedisError,
    TryAgainError,
)
from redis.sentinel import Sentinel, SentinelConnectionPool

from workers.errors import (
    NotReplicated,
    OldKeyLayout,
    OutputChanged,
    StagingLost,
    refused_for_now,
)
from workers.keys import DEFAULT_PREFIX, LEGACY_KEYS, SHARDS, Keys, shard_of

if TYPE_CHECKING:
    from workers.store_metrics import StoreMetrics

_LUA = Path(__file__).with_name("lua")
_T = TypeVar("_T")

#: How long an ended job (its hash, output, commits) stays in Redis by default: 7 days.
DEFAULT_RETENTION_S = 7 * 24 * 3600.0

#: The scripts that can end a job: ``retain.lua``'s functions are put before them.
_ENDING = frozenset({"commit", "fail", "cancel", "create_failed"})
#: The scripts that create a job: ``existing.lua``'s function is put before them.
_CREATING = frozenset({"create", "create_failed"})


#: The most bytes one chunk of an output holds (``CONTINUUM_OUTPUT_CHUNK_BYTES``). A commit
#: copies the last chunk once, so this bounds a commit's cost as well as every value.
DEFAULT_OUTPUT_CHUNK_BYTES = 256 * 1024
#: The least: a chunk must hold any UTF-8 character (4 bytes), and more is sensible.
MIN_OUTPUT_CHUNK_BYTES = 64
#: The most bytes one read of an output (``iter_output``) fetches.
READ_BYTES = 256 * 1024
#: Entries of the jobs index one listing looks at, at most.
LIST_SCAN = 1000
_LIGHT_FIELDS = (
    "status", "iteration", "created_at", "updated_at", "batch", "summary", "result", "error",
    "expires_at", "callback",
)  # fmt: skip
#: The most bytes of output one command carries. Redis refuses an argument over
#: ``proto-max-bulk-len`` (512 MB by default, 1 MB at the least) by closing the connection,
#: which looks like Redis going away (a retry that never succeeds): a larger text (a
#: repair's replacement, a very large append) is staged in parts of at most this, cut
#: between characters (``stage.lua``), which its commit then takes whole.
STAGE_BYTES = 512 * 1024
#: How long a staged text waits for its commit; each part staged restarts the wait. A
#: worker that dies between its parts and its commit leaves them this long at most.
STAGING_TTL_S = 300.0


#: A script's reply in place of one a cluster's node refused for a slot it does not hold.
_MOVED = object()

#: A Redis Cluster's client or one Redis's (a Sentinel's master is one Redis).
Client = Redis | RedisCluster
#: Entries of each shard's index a listing reads at a time.
LIST_PAGE = 64
#: How often ``wait_events`` looks on a cluster, whose streams it cannot wait on at once.
POLL_S = 0.1


#: Options in ``REDIS_URL``'s query that are the store's, not redis-py's: replicas that
#: must hold new jobs before their submission is answered, and for how long to wait for
#: them (``Durability``); the Sentinels' own login, when they ask for one.
STORE_OPTIONS = ("wait_replicas", "wait_s", "sentinel_username", "sentinel_password")
#: How long ``create_jobs`` waits for replicas to hold new jobs by default.
DEFAULT_WAIT_S = 5.0
#: The longest one ``WAIT``: between two, the store looks for a new master (a failover
#: leaves the old one without the replica it waits for).
REPLICA_ACK_S = 1.0


@dataclass(frozen=True)
class Durability:
    """How many replicas must hold new jobs before ``JobStore.create_jobs`` returns, and
    for how long it waits for them (then ``NotReplicated``). Redis replicates
    asynchronously: a job its master took and lost in a failover before a replica had it
    would be gone although its submission was answered. 0: no waiting."""

    replicas: int = 0
    wait_s: float = DEFAULT_WAIT_S


def split_store_options(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without the store's own query options (``STORE_OPTIONS``), and those."""
    base, mark, query = url.partition("?")
    if not mark:
        return url, {}
    pairs = parse_qsl(query, keep_blank_values=True)
    ours = {key: value for key, value in pairs if key in STORE_OPTIONS}
    rest = [(key, value) for key, value in pairs if key not in STORE_OPTIONS]
    return (f"{base}?{urlencode(rest)}" if rest else base), ours


def _number(options: dict[str, str], name: str, default: float, low: float, high: float) -> float:
    raw = options.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} in the Redis URL is not a number") from None
    if not low <= value <= high:
        raise ValueError(f"{name} in the Redis URL is {value:g}, not in {low:g}-{high:g}")
    return value


def durability_of(url: str) -> Durability:
    """The ``Durability`` a store URL asks for: ``?wait_replicas=N&wait_s=S``. A Sentinel
    store waits for one replica by default (Sentinels exist to fail over, and a failover
    loses what no replica held); others wait for none. ``ValueError`` says what is wrong,
    never the URL."""
    scheme = url.partition("://")[0].lower()
    _, options = split_store_options(url)
    default = 1 if scheme == "redis+sentinel" else 0
    replicas = _number(options, "wait_replicas", default, 0, 16)
    if replicas != int(replicas):
        raise ValueError("wait_replicas in the Redis URL is a whole number")
    wait_s = _number(options, "wait_s", DEFAULT_WAIT_S, 0.1, 300)
    if replicas and scheme == "redis+cluster":
        raise ValueError("wait_replicas is not supported on a redis+cluster:// store yet")
    return Durability(int(replicas), wait_s)


def _nodes(netloc: str, default_port: int) -> tuple[str, str, list[tuple[str, int]]]:
    """(user, password, [(host, port), ...]) of ``user:password@host:port,host:port``."""
    auth, _, hosts = netloc.rpartition("@")
    user, _, password = auth.partition(":")
    nodes = []
    for part in hosts.split(","):
        host, colon, port = part.strip().rpartition(":")
        if not colon:
            host, port = port, str(default_port)
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("a node is not host:port with a port in 1-65535")
        nodes.append((host.strip("[]"), int(port)))
    return unquote(user), unquote(password), nodes


@dataclass(frozen=True)
class ClusterUrl:
    """A ``redis+cluster://`` or ``redis+sentinel://`` URL, parsed."""

    scheme: str
    user: str
    password: str
    nodes: list[tuple[str, int]]
    service: str = ""
    db: int = 0


def parse_cluster_url(url: str) -> ClusterUrl:
    """``redis+cluster://[user:password@]host:port[,host:port...]`` or
    ``redis+sentinel://[user:password@]host:port[,host:port...]/service[/db]``.
    ``ValueError`` says what is wrong, never the URL (it may hold a password)."""
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    netloc, _, path = rest.partition("?")[0].partition("/")
    sentinel = scheme == "redis+sentinel"
    user, password, nodes = _nodes(netloc, 26379 if sentinel else 6379)
    service, _, db = path.strip("/").partition("/")
    if sentinel and not service:
        raise ValueError("a redis+sentinel:// URL names its service: host:port/service[/db]")
    if not sentinel and service:
        raise ValueError("a redis+cluster:// URL has no path (a cluster has one database)")
    if db and not db.isdigit():
        raise ValueError("the database of a redis+sentinel:// URL is a number")
    return ClusterUrl(scheme, user, password, nodes, service, int(db or 0))


#: How often a store on Sentinels asks them which node is the master. After a failover
#: the old master takes writes until the Sentinels make it a replica (about 10 s), which
#: then drops them: a client must leave it as soon as the Sentinels name another.
SENTINEL_CHECK_S = 0.25


class _MasterPool(SentinelConnectionPool):
    """redis-py's pool of the Sentinels' master, which asks them for the master only when
    it opens a connection, so its open connections stay on a former master after a
    failover (and a commit sent there is lost). This one asks at most every
    ``SENTINEL_CHECK_S`` before handing out a connection: when the master has changed,
    its idle connections close (and reconnect to the new one), and those in use close
    when given back. Sentinels that do not answer leave the connections as they are."""

    def reset(self) -> None:
        """Also run in a forked child (redis-py resets a pool there): a lock held by
        another thread at the fork would never be released in the child."""
        super().reset()  # type: ignore[no-untyped-call]  # redis-py: untyped
        self._asked = -math.inf
        self._asking = threading.Lock()

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        now = time.monotonic()
        if now - self._asked >= SENTINEL_CHECK_S and self._asking.acquire(blocking=False):
            try:
                self._asked = now
                self.get_master_address()  # type: ignore[no-untyped-call]  # redis-py: untyped
            except RedisError:
                pass  # no Sentinel answers, or none names a master (a failover under way)
            finally:
                self._asking.release()
        return super().get_connection(*args, **kwargs)


def redis_client(url: str, **client: Any) -> Client:
    """The client of ``url`` (``client``: redis-py's options, e.g. ``socket_timeout``):
    ``redis+cluster://`` a ``RedisCluster`` on those startup nodes, ``redis+sentinel://``
    the master of the service the Sentinels name (found again after a failover), any
    other a ``Redis``. Nothing is connected until the first command."""
    url, options = split_store_options(url)
    if url.partition("://")[0].lower() not in ("redis+cluster", "redis+sentinel"):
        return Redis.from_url(url, **client)
    parsed = parse_cluster_url(url)
    login: dict[str, Any] = {
        "username": parsed.user or None,
        "password": parsed.password or None,
    }
    if parsed.scheme == "redis+cluster":
        node: Any = ClusterNode  # redis-py's cluster and sentinel classes have no hints
        startup = [node(host, port) for host, port in parsed.nodes]
        return RedisCluster(startup_nodes=startup, **login, **client)
    sentinel: Any = Sentinel
    own = {
        "username": options.get("sentinel_username") or None,
        "password": options.get("sentinel_password") or None,
    }
    sentinel_kwargs = {**client, **{key: value for key, value in own.items() if value}}
    sentinels = sentinel(parsed.nodes, sentinel_kwargs=sentinel_kwargs, **client)
    master: Redis = sentinels.master_for(
        parsed.service, connection_pool_class=_MasterPool, db=parsed.db, **login
    )
    return master


def _unless_refused(action: Callable[[], _T], refused: _T) -> _T:
    """``action()``, or ``refused`` when Redis refuses it for now (``refused_for_now``)."""
    try:
        return action()
    except RedisError as exc:
        if not refused_for_now(exc):
            raise
        return refused


def _script(name: str) -> str:
    text = (_LUA / f"{name}.lua").read_text()
    if name in _CREATING:
        text = (_LUA / "existing.lua").read_text() + text
    return (_LUA / "retain.lua").read_text() + text if name in _ENDING else text


def _output_script(name: str, chunk_bytes: int) -> str:
    """The script ``name`` with ``output.lua``'s functions and their chunk size before it."""
    if chunk_bytes < MIN_OUTPUT_CHUNK_BYTES:
        raise ValueError(f"an output chunk holds at least {MIN_OUTPUT_CHUNK_BYTES} bytes")
    output = (_LUA / "output.lua").read_text()
    return f"local CHUNK = {int(chunk_bytes)}\n{output}{_script(name)}"


def _parts(data: bytes) -> Iterator[memoryview]:
    """``data`` (UTF-8) in parts of at most ``STAGE_BYTES``, each ending between two
    characters, so that each part is cut into chunks as the whole text would be."""
    view, i = memoryview(data), 0
    while i < len(data):
        j = min(len(data), i + STAGE_BYTES)
        while j < len(data) and data[j] & 0xC0 == 0x80:  # byte j continues a character
            j -= 1
        yield view[i:j]
        i = j


def _to_stage(text: str) -> bytes | None:
    """``text`` in UTF-8 when it is over ``STAGE_BYTES`` (it is staged), else None: it goes
    in the commit itself (encoded here only when it may be that large)."""
    if len(text) <= STAGE_BYTES // 4:
        return None
    data = text.encode()
    return data if len(data) > STAGE_BYTES else None


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL = frozenset(
    {JobStatus.SUCCEEDED, JobStatus.PARTIAL, JobStatus.FAILED, JobStatus.CANCELLED}
)


class CommitResult(StrEnum):
    COMMITTED = "committed"
    STALE = "stale"  # another delivery committed this iteration already
    CANCELLED = "cancelled"
    MISSING = "missing"
    ENDED = "ended"  # the job succeeded, ended partial or failed meanwhile: nothing changed


_COMMIT_CODES = {
    1: CommitResult.COMMITTED,
    0: CommitResult.STALE,
    -1: CommitResult.MISSING,
    -2: CommitResult.CANCELLED,
    -3: CommitResult.ENDED,
}


@dataclass(frozen=True)
class NewJob:
    """A job to create (``JobStore.create_jobs``): its spec and first state (JSON) and
    when the watchdog first looks at it; or, with ``error``, a submission kept as a job
    created failed that says what is wrong with it (``spec``: what was sent)."""

    job_id: str
    spec: str
    state: str = "{}"
    deadline: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class JobEvent:
    """One entry of a job's event stream: its stream id, the iteration a commit reached
    (None for an end outside a commit), the status then, the commit's summary (progress,
    decision, fallbacks, last warning, reason) and the error of a job failed outside one."""

    id: str
    job_id: str
    iteration: int | None
    status: JobStatus
    summary: dict[str, Any]
    error: str | None


def _record(job_id: str, f: dict[str, str]) -> JobRecord | None:
    """A job from its hash's fields (None: no job, or a late field written after the job
    expired); a spec or state not read is ``""``."""
    if "status" not in f:
        return None
    summary, result = f.get("summary"), f.get("result")
    return JobRecord(
        job_id=job_id,
        status=JobStatus(f["status"]),
        iteration=int(f["iteration"]),
        spec=f.get("spec", ""),
        state=f.get("state", ""),
        created_at=float(f["created_at"]),
        updated_at=float(f["updated_at"]),
        batch=f.get("batch") or None,
        summary=json.loads(summary) if summary else {},
        result=json.loads(result) if result else None,
        error=_text(f.get("error")),
        deferrals=int(f.get(f"deferrals:{f['iteration']}", 0)),
        expires_at=_time(f.get("expires_at")),
        callback=f.get("callback"),
    )


def _streams(found: Any) -> list[tuple[Any, list[Any]]]:
    """XREAD's answer as (stream, entries) pairs, in RESP2's list or RESP3's map."""
    if isinstance(found, dict):
        return list(found.items())
    return [(key, entries) for key, entries in found or []]


def _event(job_id: str, entry: Any) -> JobEvent:
    event_id, raw = entry
    f = {_s(k): _s(v) for k, v in raw.items()}
    try:
        summary = json.loads(f.get("summary") or "{}")
    except ValueError:
        summary = {}
    iteration = f.get("iteration")
    return JobEvent(
        id=_s(event_id),
        job_id=job_id,
        iteration=int(iteration) if iteration else None,
        status=JobStatus(f["status"]),
        summary=summary if isinstance(summary, dict) else {},
        error=f.get("error"),
    )


@dataclass(frozen=True)
class JobRecord:
    """A job as stored."""

    job_id: str
    status: JobStatus
    iteration: int
    spec: str
    state: str
    created_at: float
    updated_at: float
    batch: str | None
    summary: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    #: Provider retries of the current iteration sent again with a countdown so far.
    deferrals: int = 0
    #: When the job's keys expire (Unix time): None until it ends, or when kept forever.
    expires_at: float | None = None
    #: Where its callback stands (``workers.callbacks``): None when it asked for none or
    #: has not ended; pending, delivered, retrying, refused or undeliverable, with why.
    callback: str | None = None


@dataclass(frozen=True)
class BatchStatus:
    """A batch's aggregated progress: jobs by status, iterations and characters so far."""

    batch_id: str
    size: int
    jobs: list[str]
    counts: dict[str, int]
    ended: int
    done: bool
    iterations: int
    chars: int
    created_at: float | None
    #: When the batch's record expires (Unix time): None until every job has ended, or
    #: when kept forever.
    expires_at: float | None = None
    #: Jobs of the batch whose records have expired (counted as ended).
    expired: int = 0


def _s(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _text(value: bytes | str | None) -> str | None:
    return None if value is None else _s(value)


def _time(value: str | None) -> float | None:
    return float(value) if value else None


class JobStore:
    """All of Continuum's Redis reads and writes (with the readers it owns: the metrics,
    ``workers.store_metrics``)."""

    def __init__(
        self,
        redis: Client,
        prefix: str = DEFAULT_PREFIX,
        *,
        retention_s: float = DEFAULT_RETENTION_S,
        output_chunk_bytes: int = DEFAULT_OUTPUT_CHUNK_BYTES,
        durability: Durability = Durability(),
    ) -> None:
        self.redis = redis
        self.keys = Keys(prefix)
        #: How long an ended job's keys stay (seconds; 0: forever).
        self.retention_s = retention_s
        #: Replicas that must hold new jobs before ``create_jobs`` returns.
        self.durability = durability
        if durability.replicas and isinstance(redis, RedisCluster):
            raise ValueError("waiting for replicas is not supported on a Redis Cluster yet")
        self._create = redis.register_script(_script("create"))
        self._create_failed = redis.register_script(_script("create_failed"))
        self._commit = redis.register_script(_output_script("commit", output_chunk_bytes))
        self._stage_part = redis.register_script(_output_script("stage", output_chunk_bytes))
        self._read_output = redis.register_script(_script("read_output"))
        self._acquire = redis.register_script(_script("acquire"))
        self._renew = redis.register_script(_script("renew"))
        self._release = redis.register_script(_script("release"))
        self._cancel = redis.register_script(_script("cancel"))
        self._fail = redis.register_script(_script("fail"))
        self._attempt = redis.register_script(_script("attempt"))
        self._touch = redis.register_script(_script("touch"))
        self._batch_end = redis.register_script(_script("batch_end"))

    @classmethod
    def from_url(
        cls,
        url: str,
        prefix: str = DEFAULT_PREFIX,
        *,
        retention_s: float = DEFAULT_RETENTION_S,
        output_chunk_bytes: int = DEFAULT_OUTPUT_CHUNK_BYTES,
        **client: Any,
    ) -> JobStore:
        """A store on a new client of ``url`` (``client``: redis-py's options, e.g.
        ``socket_timeout``); nothing is connected until the first command."""
        return cls(
            redis_client(url, **client),
            prefix,
            retention_s=retention_s,
            output_chunk_bytes=output_chunk_bytes,
            durability=durability_of(url),
        )

    # -- the connection ----------------------------------------------------------------
    @property
    def is_cluster(self) -> bool:
        """Whether the store is spread over a Redis Cluster (a command names keys of one
        slot only)."""
        return isinstance(self.redis, RedisCluster)

    def ping(self) -> None:
        """Raise ``RedisError`` unless Redis answers."""
        self.redis.ping()

    def close(self) -> None:
        """Release the client's connections."""
        self.redis.close()

    def server_url(self) -> str:
        """A URL that reaches the server this store talks to (its password included: keep
        it out of logs), for a client built elsewhere (a Celery producer)."""
        if isinstance(self.redis, RedisCluster):
            raise ValueError("a Redis Cluster has no one server URL: set the broker's own")
        kw = self.redis.connection_pool.connection_kwargs
        db = int(kw.get("db", 0) or 0)
        if kw.get("path"):
            return f"unix://{kw['path']}?db={db}"
        user, password = kw.get("username"), kw.get("password")
        auth = ""
        if password:
            auth = f"{quote(str(user or ''), safe='')}:{quote(str(password), safe='')}@"
        host, port = kw.get("host", "localhost"), kw.get("port", 6379)
        return f"redis://{auth}{host}:{port}/{db}"

    def check_layout(self) -> None:
        """Raise ``OldKeyLayout`` when Redis holds work of the key layout before shards,
        which this store would never find: unfinished jobs (``active``), undelivered
        callbacks (``outbox``), or a retained job still listed (``jobs``: its newest entry's
        hash). A deploy of this version drains first (operations.md, "Beyond one machine").
        Left-overs with no work in them (the old counters, an index of expired jobs) do not
        stop it. A cluster never held them (that layout could not run on one)."""
        if self.is_cluster:
            return
        old = [self.keys.legacy(name) for name in LEGACY_KEYS if name in ("active", "outbox")]
        found = self.redis.zrevrange(self.keys.legacy("jobs"), 0, 0)  # members, no scores
        newest = [_s(m) for m in found if isinstance(m, bytes | str)]
        retained = bool(newest) and bool(self.redis.exists(self.keys.legacy(f"job:{newest[0]}")))
        if retained or self.redis.exists(*old):
            raise OldKeyLayout(
                f"Redis holds jobs in the key layout before shards (under "
                f"{self.keys.prefix!r}): let the old deployment finish its jobs and "
                "delete or keep them elsewhere, or use another CONTINUUM_KEY_PREFIX"
            )

    @cached_property
    def metrics(self) -> StoreMetrics:
        """What ``GET /metrics`` reads: the jobs held, the counters, the backlogs."""
        from workers.store_metrics import StoreMetrics  # noqa: PLC0415  (it imports this module)

        return StoreMetrics(self.redis, self.keys)

    def _retain(
        self, job_id: str, now: float, retention_s: float | None
    ) -> tuple[list[str], list[Any]]:
        """``retain.lua``'s keys and arguments for a job that may end now (all in its
        shard). The event id is kept only by the script that ends the job (its callback's
        idempotency key)."""
        keep = self.retention_s if retention_s is None else retention_s
        ms = max(1, round(keep * 1000)) if keep > 0 else 0
        keys, shard = list(self.keys.job_keys(job_id)), shard_of(job_id)
        event = uuid.uuid4().hex
        return [*keys, self.keys.outbox(shard), self.keys.batch_ends(shard)], [
            ms,
            now + keep if ms else "",
            len(keys),
            now,
            event,
            job_id,
        ]

    # -- a batch's count of its ended jobs (``batch_end.lua``) ------------------------------
    # The script that ends a job of a batch notes it in its shard's ``batch_ends``; the
    # batch (another slot) counts it next, and the note goes. A process that dies between
    # leaves the note, which the watchdog settles (``settle_batch_ends``): the count is a
    # set of ended jobs, so a job counted twice counts once.
    def _count_batch_end(self, job_id: str) -> None:
        name, expires_at = self.redis.hmget(self.keys.job(job_id), ["batch", "expires_at"])
        batch = _text(name)
        if not batch:
            return  # retain.lua notes the jobs of a batch only: nothing to count or drop
        self._join_batch(batch, [], {job_id: _text(expires_at) or ""})

    def _join_batch(self, batch: str, join: list[str], ended: dict[str, str]) -> None:
        """Add ``join`` to the batch's set and count ``ended`` (job id: its expiry, "" when
        kept forever) in one script, then drop their notes (a pipeline)."""
        if not join and not ended:
            return
        now, counts = time.time(), list[Any]()
        for job_id, at in ended.items():
            ms = max(1, round((float(at) - now) * 1000)) if at else 0
            counts += [job_id, ms, at]
        k = self.keys
        self._batch_end(
            keys=[k.batch(batch), k.batch_meta(batch), k.batch_ended(batch)],
            args=[len(join), *join, *counts],
        )
        if len(ended) == 1:
            (job_id,) = ended
            self.redis.zrem(k.batch_ends(shard_of(job_id)), job_id)
            return
        by_shard: dict[int, list[str]] = {}
        for job_id in ended:
            by_shard.setdefault(shard_of(job_id), []).append(job_id)
        pipe = self.redis.pipeline(transaction=False)
        for shard, ids in by_shard.items():
            pipe.zrem(k.batch_ends(shard), *ids)
        pipe.execute()

    def settle_batch_ends(self, before: float, limit: int = 100) -> list[str]:
        """Count in their batches the ended jobs noted before ``before`` and not counted
        yet (their process died between the two writes); return their ids."""
        found = self._each_shard(
            lambda pipe, n: pipe.zrangebyscore(
                self.keys.batch_ends(n), "-inf", before, start=0, num=limit
            )
        )
        ids = [_s(m) for members in found for m in members][:limit]
        for job_id in ids:
            self._count_batch_end(job_id)
        return ids

    def _each_shard(self, command: Any) -> list[Any]:
        """``command(pipe, shard)`` for every shard, in one pipeline (across a cluster's
        nodes); the answers by shard."""
        pipe = self.redis.pipeline(transaction=False)
        for shard in range(SHARDS):
            command(pipe, shard)
        return list(pipe.execute())

    # -- jobs --------------------------------------------------------------------------
    def create(
        self, job_id: str, spec: str, state: str, *, deadline: float, batch: str | None = None
    ) -> bool:
        """Create the job unless it exists; True when this call created it."""
        return self.create_jobs([NewJob(job_id, spec, state, deadline)], batch=batch)[0]

    def create_jobs(self, jobs: Sequence[NewJob], *, batch: str | None = None) -> list[bool]:
        """Create each job unless its id exists (a failed one, ``NewJob.error``, ends in
        the same script); whether each was created now. A constant number of round trips
        whatever the number of jobs: one pipeline of their scripts (each in its job's
        slot), then the batch's join and count (its own slot), then one pipeline dropping
        the notes of the jobs that ended (``_join_batch``).

        With ``durability.replicas``, it returns only once that many replicas (and on
        Sentinels every replica they see up) hold the jobs (``_until_replicated``), or
        raises ``NotReplicated``."""
        created = self._create_once(jobs, batch)
        if not self.durability.replicas:
            return created
        try:
            return self._until_replicated(jobs, lambda: self._create_once(jobs, batch), created)
        except NotReplicated as exc:
            ids = [job.job_id for job in jobs]
            named = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            raise NotReplicated(f"jobs {named}: {exc}") from None

    def _until_replicated(
        self, jobs: Sequence[NewJob], again: Callable[[], list[bool]], created: list[bool]
    ) -> list[bool]:
        """Wait until the replicas hold the jobs (``_replicated``, a ``WAIT`` of at most
        ``REPLICA_ACK_S`` at a time). A master that does not get them may have lost a
        replica to a failover, and what it took since will be dropped; a master that does
        not hold the jobs is a new one (the store followed a failover between the writes
        and the wait). Either way the jobs are written again (``again``: idempotent; a job
        created by either try was created) once the store has looked for the master
        again, until ``durability.wait_s`` has passed: then ``NotReplicated``."""
        keys = sorted({self.keys.job(job.job_id) for job in jobs})
        wait_s = self.durability.wait_s
        give_up = time.monotonic() + wait_s
        while True:
            want = max(self.durability.replicas, self._replicas_seen())
            remaining = max(0.01, min(give_up - time.monotonic(), REPLICA_ACK_S))
            held, acked = _unless_refused(partial(self._replicated, keys, want, remaining), (0, 0))
            if held == len(keys) and acked >= want:
                return created
            if time.monotonic() >= give_up:
                raise NotReplicated(
                    f"{acked} of the {want} replica(s) waited for confirmed them within "
                    f"{wait_s:g} s: they may exist, and submitting them again with the same "
                    "ids creates nothing twice"
                )
            time.sleep(SENTINEL_CHECK_S)  # the Sentinels' master may have changed meanwhile
            made = _unless_refused(again, [False] * len(created))
            created = [a or b for a, b in zip(created, made, strict=True)]

    def _replicas_seen(self) -> int:
        """How many replicas the Sentinels see up (not ``s_down``/``o_down``) for the
        master, 0 on a store without Sentinels or when none answers. Waiting for each of
        them, not just for ``durability.replicas``: in a failover the Sentinels promote
        one replica while the old master still takes writes, and another replica that
        still follows it can acknowledge them, then drops them when it turns to the new
        master (measured: thousands of jobs answered and lost with two replicas)."""
        pool = getattr(self.redis, "connection_pool", None)  # a cluster has none
        if not isinstance(pool, SentinelConnectionPool):
            return 0
        sentinels: Any = pool.sentinel_manager  # redis-py: untyped
        return len(sentinels.discover_slaves(pool.service_name))

    def _replicated(self, keys: list[str], want: int, timeout_s: float) -> tuple[int, int]:
        """How many of ``keys`` the server holds, then how many replicas hold everything
        it took up to now, waiting up to ``timeout_s`` for ``want``: the keys counted, a
        mark written and ``WAIT`` sent in one pipeline, so on one server (Redis replicates
        one stream in order, so a replica holding the mark holds what came before it)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(*keys)
        pipe.set(self.keys.replicated, repr(time.time()), px=60_000)
        pipe.wait(want, max(1, round(timeout_s * 1000)))
        held, _, acked = pipe.execute()
        return int(held), int(acked)

    def _create_once(self, jobs: Sequence[NewJob], batch: str | None) -> list[bool]:
        k, now = self.keys, time.time()
        calls: list[tuple[Script, list[str], list[Any]]] = []
        for job in jobs:
            shard = shard_of(job.job_id)
            if job.error is None:
                keys = [k.job(job.job_id), k.active(shard), k.jobs(shard)]
                args = [job.job_id, job.spec, job.state, now, job.deadline, batch or ""]
                calls.append((self._create, keys, args))
                continue
            retain_keys, retain_args = self._retain(job.job_id, now, None)
            keys = [k.job(job.job_id), k.jobs(shard), *retain_keys]
            args = [job.job_id, job.spec, now, batch or "", job.error, *retain_args]
            calls.append((self._create_failed, keys, args))
        replies = self._run_scripts(calls)
        created = [int(reply[0]) == 1 for reply in replies]
        if batch:
            # The batch's set is another slot: joined after its jobs exist, and joined again
            # (and their ends counted again) by a submission made again: a process that
            # died between leaves them out till then, or till the watchdog counts the ends.
            join, ended = [], {}
            for job, reply in zip(jobs, replies, strict=True):
                their_batch, status, expires_at = (_s(part) for part in reply[1:])
                if their_batch != batch:
                    continue  # not this batch's job: a job of that id existed already
                join.append(job.job_id)
                if status in TERMINAL:
                    ended[job.job_id] = expires_at
            self._join_batch(batch, join, ended)
        return created

    def _run_scripts(self, calls: list[tuple[Script, list[str], list[Any]]]) -> list[Any]:
        """Each ``(script, keys, args)`` pipelined: one round trip per Redis (a cluster's
        pipeline refuses scripts, so each master gets its own); the replies in order."""
        if not isinstance(self.redis, RedisCluster):
            return self._pipeline_scripts(self.redis, calls)
        cluster: Any = self.redis  # redis-py's cluster has no hints
        by_node: dict[str, list[int]] = {}
        nodes = {}
        for i, (_, keys, _) in enumerate(calls):
            node = cluster.get_node_from_key(keys[0])
            nodes[node.name] = node
            by_node.setdefault(node.name, []).append(i)
        replies: list[Any] = [None] * len(calls)
        for name, indexes in by_node.items():
            client = cluster.get_redis_connection(nodes[name])
            found = self._pipeline_scripts(client, [calls[i] for i in indexes], moved=True)
            for i, reply in zip(indexes, found, strict=True):
                # Refused for a slot that moved meanwhile: one at a time, the cluster
                # client following the redirection (each script is idempotent).
                replies[i] = calls[i][0](calls[i][1], calls[i][2]) if reply is _MOVED else reply
        return replies

    def _pipeline_scripts(
        self, client: Redis, calls: list[tuple[Script, list[str], list[Any]]], moved: bool = False
    ) -> list[Any]:
        """The calls in one pipeline on ``client``. A script that this Redis does not hold
        (new, or restarted since) is loaded and the calls it refused are sent again.
        ``moved``: a call refused because its slot is elsewhere replies ``_MOVED``."""
        replies: list[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        for first in (True, False):
            pipe = client.pipeline(transaction=False)
            for i in todo:
                script, keys, args = calls[i]
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            refused = []
            for i, reply in zip(todo, pipe.execute(raise_on_error=False), strict=True):
                if first and isinstance(reply, NoScriptError):
                    refused.append(i)
                elif moved and isinstance(reply, AskError | TryAgainError | ClusterDownError):
                    replies[i] = _MOVED
                elif isinstance(reply, Exception):
                    raise reply
                else:
                    replies[i] = reply
            if not refused:
                break
            for script in {calls[i][0] for i in refused}:
                client.script_load(script.script)
            todo = refused
        return replies

    def load(self, job_id: str) -> JobRecord | None:
        raw = self.redis.hgetall(self.keys.job(job_id))
        return _record(job_id, {_s(key): _s(value) for key, value in raw.items()})

    # -- the output (``workers/lua/output.lua``) ----------------------------------------
    def output(self, job_id: str) -> str:
        """The whole output in memory, for small outputs: stream others (``iter_text``)."""
        return "".join(self.iter_text(job_id))

    def output_size(self, job_id: str) -> int:
        """The output's length in bytes (UTF-8); 0 when there is no such job."""
        return self.output_version(job_id)[0]

    def output_version(self, job_id: str) -> tuple[int, str]:
        """The output's length in bytes and its generation (``output_gen``, bumped by each
        replacement), read at once: give the generation to ``iter_output`` so that a read
        refuses an output replaced since."""
        found = self._read(job_id, 0, 0, 0, "")
        return int(found[2]), _s(found[1])

    def _read(self, job_id: str, chunk: int, offset: int, most: int, gen: str) -> list[Any]:
        k = self.keys
        found = self._read_output(
            keys=[k.job(job_id), k.output(job_id)], args=[chunk, offset, most, gen]
        )
        return list(found)

    def iter_output(
        self, job_id: str, start: int = 0, stop: int | None = None, gen: str = ""
    ) -> Iterator[bytes]:
        """The output's bytes ``start`` to ``stop`` (the end when None), read from Redis a
        part at a time (``READ_BYTES``), each part once. Commits that append meanwhile are
        read too when ``stop`` is None; a replacement or an expiry meanwhile raises
        ``OutputChanged``, as does an output that ends before ``stop`` (or no such job,
        with a ``stop``). No such job and no ``stop``: no bytes. ``gen``: the generation
        the caller saw (``output_version``); a read of any other raises ``OutputChanged``."""
        chunk, offset, read = 0, start, 0
        while stop is None or start + read < stop:
            most = READ_BYTES if stop is None else min(READ_BYTES, stop - start - read)
            code, now, _, chunk, offset, data = self._read(job_id, chunk, offset, most, gen)
            if int(code) == -1 and not gen and stop is None:
                return
            if int(code) != 1:
                raise OutputChanged(f"the output of job {job_id} was replaced or deleted")
            gen = _s(now)
            if not data:
                if stop is None:
                    return
                raise OutputChanged(f"the output of job {job_id} ends before byte {stop}")
            read += len(data)
            yield bytes(data)

    def iter_text(
        self, job_id: str, *, stop: int | None = None, chars: int | None = None, gen: str = ""
    ) -> Iterator[str]:
        """The output as text, a part at a time (``iter_output`` up to byte ``stop``),
        never cutting a character; at most ``chars`` characters when given."""
        if chars == 0:
            return
        decoder = codecs.getincrementaldecoder("utf-8")()
        left = chars
        for data in self.iter_output(job_id, stop=stop, gen=gen):
            text = decoder.decode(data)
            if left is not None:
                if len(text) >= left:
                    yield text[:left]
                    return
                left -= len(text)
            if text:
                yield text
        decoder.decode(b"", final=True)  # a cut character raises here

    def commit(
        self,
        job_id: str,
        *,
        expected_iteration: int,
        state: str,
        append: str,
        replace: bool,
        status: JobStatus,
        deadline: float | None,
        lease_token: str,
        summary: dict[str, Any],
        result: dict[str, Any] | None = None,
        retention_s: float | None = None,
        counts: dict[str, Any] | None = None,
    ) -> CommitResult:
        """Commit iteration ``expected_iteration`` (append and state at once) exactly once.
        A final ``status`` also sets the job's expiry, ``retention_s`` (default: the
        store's) from now. A text over ``STAGE_BYTES`` is staged first (``_stage``), in a
        list of this call's own that the commit takes whole, or deletes when it refuses.
        ``counts``: what the step adds to the deployment's counters (``Keys.metrics``),
        added only by the commit that lands."""
        k, shard = self.keys, shard_of(job_id)
        now = time.time()
        retain_keys, retain_args = self._retain(job_id, now, retention_s)
        staging, data = k.staging(shard, uuid.uuid4().hex), _to_stage(append)
        try:
            mark = "" if data is None else self._stage(staging, data)
            code = self._commit(
                keys=[
                    k.job(job_id),
                    k.output(job_id),
                    k.lease(job_id),
                    k.commits(job_id),
                    k.active(shard),
                    staging,
                    k.metrics(shard),
                    *retain_keys,
                ],
                args=[
                    job_id,
                    expected_iteration,
                    state,
                    append if data is None else "",
                    "1" if replace else "0",
                    status.value,
                    now,
                    "" if deadline is None else deadline,
                    lease_token,
                    json.dumps(summary),
                    "" if result is None else json.dumps(result),
                    mark,
                    "" if data is None else len(data),
                    "" if counts is None else json.dumps(counts),
                    *retain_args,
                ],
            )
        except Exception:
            if data is not None:
                self._unstage(staging)
            raise
        if int(code) == -4:
            raise StagingLost(f"the staged output of job {job_id} expired before its commit")
        if int(code) == 1 and status in TERMINAL:
            self._count_batch_end(job_id)
        return _COMMIT_CODES[int(code)]

    def _stage(self, staging: str, data: bytes) -> str:
        """Write ``data`` to the list ``staging`` as chunks, a part at a time, each part
        extending its TTL (``STAGING_TTL_S``) and checking the list is as the part before
        left it (``stage.lua``); the mark the last part left, for the commit to check."""
        ttl, mark = round(STAGING_TTL_S * 1000), "0:0"
        for n, part in enumerate(_parts(data)):
            mark = _s(self._stage_part(keys=[staging], args=[part, ttl, mark]))
            if not mark:
                raise StagingLost(f"a staged output expired or was written twice at part {n}")
        return mark

    def _unstage(self, staging: str) -> None:
        """Delete what a commit that raised staged, at once rather than at its expiry: a
        commit that Redis refuses for now (full) is tried again, each time staged anew."""
        with contextlib.suppress(RedisError):
            self.redis.delete(staging)

    def commits(self, job_id: str) -> dict[int, int]:
        """How many times each iteration was committed (for audits: always 1)."""
        raw = self.redis.hgetall(self.keys.commits(job_id))
        return {int(k): int(v) for k, v in raw.items()}

    def cancel(self, job_id: str) -> bool | None:
        """Cancel; None when there is no such job, False when it had already ended."""
        k, now = self.keys, time.time()
        retain_keys, retain_args = self._retain(job_id, now, None)
        code = int(
            self._cancel(
                keys=[k.job(job_id), k.active(shard_of(job_id)), *retain_keys],
                args=[job_id, now, *retain_args],
            )
        )
        if code == 1:
            self._count_batch_end(job_id)
        return None if code < 0 else bool(code)

    def fail(self, job_id: str, error: str) -> bool:
        """End a job as failed with ``error``, unless it has ended (its first reason stays)."""
        k, now = self.keys, time.time()
        retain_keys, retain_args = self._retain(job_id, now, None)
        code = self._fail(
            keys=[k.job(job_id), k.active(shard_of(job_id)), *retain_keys],
            args=[job_id, now, error, *retain_args],
        )
        if int(code) == 1:
            self._count_batch_end(job_id)
        return int(code) == 1

    def final_output(self, record: JobRecord) -> str | None:
        """The result of an ended job (its output with the closing suffix), else None; in
        memory: stream a large one (``iter_result``)."""
        parts = self.iter_result(record)
        return None if parts is None else "".join(parts)

    def iter_result(self, record: JobRecord) -> Iterator[str] | None:
        """The result of an ended job a part at a time (its output up to the result's
        ``prefix`` characters, then the closing ``suffix``, kept apart in the result),
        else None."""
        if record.result is None or "prefix" not in record.result:
            return None
        prefix, suffix = int(record.result["prefix"]), str(record.result["suffix"])
        return self._result_parts(record.job_id, prefix, suffix)

    def _result_parts(self, job_id: str, prefix: int, suffix: str) -> Iterator[str]:
        yield from self.iter_text(job_id, chars=prefix)
        if suffix:
            yield suffix

    # -- batches -----------------------------------------------------------------------
    def create_batch(self, batch_id: str, size: int) -> bool:
        """Record a batch of ``size`` jobs; False when the id is taken (idempotent)."""
        key = self.keys.batch_meta(batch_id)
        created = bool(self.redis.hsetnx(key, "size", size))
        if created:
            self.redis.hset(key, "created_at", time.time())
        return created

    # -- the jobs index (``Keys.jobs``) ----------------------------------------------------
    def list_jobs(
        self,
        *,
        limit: int,
        cursor: tuple[float, str] | None = None,
        statuses: frozenset[JobStatus] = frozenset(),
        batch: str | None = None,
        since: float | None = None,
        scan: int = LIST_SCAN,
    ) -> tuple[list[JobRecord], tuple[float, str] | None]:
        """Jobs newest first, after ``cursor`` (the creation time and id of the last one
        seen), that match the filters; at most ``limit``, and at most ``scan`` entries of
        the index looked at (the cost of a call is bounded however rare the matches).
        Returns them (without spec and state) and the cursor to go on from (None: no more).
        Entries of expired jobs met on the way are dropped from the index."""
        top, after = cursor if cursor is not None else (math.inf, None)
        low = "-inf" if since is None else since
        high: float | str = "+inf" if top == math.inf else top
        entries = list(itertools.islice(self._index(high, low, scan + 1), scan + 1))
        out: list[JobRecord] = []
        last: tuple[float, str] | None = None
        looked = 0
        for job_id, score in entries:
            if after is not None and score == top and job_id >= after:
                continue  # seen on an earlier page (equal times come in reverse id order)
            if looked == scan or len(out) == limit:
                return out, last
            looked += 1
            last = (score, job_id)
            record = self._light(job_id)
            if record is None:
                self.redis.zrem(self.keys.jobs(shard_of(job_id)), job_id)
            elif (not statuses or record.status in statuses) and (
                batch is None or record.batch == batch
            ):
                out.append(record)
        # A full read may have spent part of itself on entries seen already (equal times).
        return out, (last if len(entries) == scan + 1 else None)

    def _index(self, high: float | str, low: float | str, most: int) -> Iterator[tuple[str, float]]:
        """The jobs index's entries from ``high`` down to ``low`` (creation times), newest
        first and equal times in reverse id order, as one sorted set would give them: the
        shards' entries merged, each shard read a page at a time as the merge needs it."""
        page = max(1, min(LIST_PAGE, most))
        firsts = self._each_shard(
            lambda pipe, n: pipe.zrevrangebyscore(
                self.keys.jobs(n), high, low, start=0, num=page, withscores=True
            )
        )

        def shard(n: int, first: list[Any]) -> Iterator[tuple[str, float]]:
            entries, start = first, 0
            while True:
                yield from ((_s(m), float(score)) for m, score in entries)
                if len(entries) < page:
                    return
                start += page
                entries = self.redis.zrevrangebyscore(
                    self.keys.jobs(n), high, low, start=start, num=page, withscores=True
                )

        shards = [shard(n, first) for n, first in enumerate(firsts)]
        return heapq.merge(*shards, key=lambda e: (e[1], e[0]), reverse=True)

    def _light(self, job_id: str) -> JobRecord | None:
        """The job without its spec and state (the two large fields): what lists show."""
        values = self.redis.hmget(self.keys.job(job_id), _LIGHT_FIELDS)
        found = zip(_LIGHT_FIELDS, values, strict=True)
        return _record(job_id, {name: _s(v) for name, v in found if v is not None})

    def prune_jobs_index(self, most: int = 256) -> int:
        """Drop the oldest entries of the index whose job has expired (about ``most`` looked
        at, the oldest few of each shard): the watchdog calls it each sweep, so the index
        never outgrows the jobs Redis holds. Returns how many were dropped."""
        per = max(1, most // SHARDS)
        found = self._each_shard(lambda pipe, n: pipe.zrange(self.keys.jobs(n), 0, per - 1))
        oldest = [_s(m) for members in found for m in members]
        if not oldest:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for job_id in oldest:
            pipe.exists(self.keys.job(job_id))
        gone = [j for j, alive in zip(oldest, pipe.execute(), strict=True) if not alive]
        pipe = self.redis.pipeline(transaction=False)
        for job_id in gone:
            pipe.zrem(self.keys.jobs(shard_of(job_id)), job_id)
        pipe.execute()
        return len(gone)

    # -- events (``retain.lua``'s ``job_event``) ------------------------------------------
    def events(
        self, job_id: str, after: str = "0-0", *, count: int = 100, block_ms: int | None = None
    ) -> list[JobEvent]:
        """The job's events after the stream id ``after`` (oldest first, at most
        ``count``), waiting up to ``block_ms`` for one when there is none yet (None: no
        wait). One per commit, and one when the job ends otherwise (failed, cancelled)."""
        streams: dict[Any, Any] = {self.keys.events(job_id): after}
        found = _streams(self.redis.xread(streams, count=count, block=block_ms))
        return [_event(job_id, entry) for _, entries in found for entry in entries]

    def wait_events(self, cursors: dict[str, str], block_ms: int) -> dict[str, str]:
        """Wait up to ``block_ms`` for an event of any of the jobs (job id: the stream id
        read up to); the jobs that have news, with their newest event's id."""
        if not cursors:
            return {}
        by_key = {self.keys.events(job): job for job in cursors}
        if not self.is_cluster:
            streams: dict[Any, Any] = {self.keys.events(j): after for j, after in cursors.items()}
            found = _streams(self.redis.xread(streams, block=max(1, block_ms)))
            return {by_key[_s(key)]: _s(entries[-1][0]) for key, entries in found if entries}
        # One XREAD names streams of one slot: a shard's; the shards are polled, not waited on.
        groups: dict[int, dict[Any, Any]] = {}
        for job, after in cursors.items():
            groups.setdefault(shard_of(job), {})[self.keys.events(job)] = after
        deadline = time.monotonic() + block_ms / 1000
        while True:
            pipe = self.redis.pipeline(transaction=False)
            for streams in groups.values():
                pipe.xread(streams, count=1000)
            news = {
                by_key[_s(key)]: _s(entries[-1][0])
                for found in pipe.execute()
                for key, entries in _streams(found)
                if entries
            }
            if news or time.monotonic() >= deadline:
                return news
            time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))

    def counters(self) -> dict[str, float]:
        """The deployment's counters (``Keys.metrics``), each as a number."""
        total: dict[str, float] = {}
        for raw in self._each_shard(lambda pipe, n: pipe.hgetall(self.keys.metrics(n))):
            for name, value in raw.items():
                total[_s(name)] = total.get(_s(name), 0.0) + float(_s(value))
        return total

    def batch_jobs(self, batch_id: str) -> list[str]:
        return sorted(_s(m) for m in self.redis.smembers(self.keys.batch(batch_id)))

    def cancel_batch(self, batch_id: str) -> tuple[int, int]:
        """Cancel every unfinished job of the batch; (how many were cancelled, batch size)."""
        jobs = self.batch_jobs(batch_id)
        return sum(bool(self.cancel(job_id)) for job_id in jobs), len(jobs)

    def batch_status(self, batch_id: str) -> BatchStatus | None:
        """Aggregated progress of a batch, or None when there is no such batch."""
        meta = {_s(k): _s(v) for k, v in self.redis.hgetall(self.keys.batch_meta(batch_id)).items()}
        jobs = self.batch_jobs(batch_id)
        if not meta and not jobs:
            return None
        pipe = self.redis.pipeline(transaction=False)
        for job_id in jobs:
            pipe.hmget(self.keys.job(job_id), ["status", "iteration", "summary"])
        counts = dict.fromkeys((s.value for s in JobStatus), 0)
        iterations = chars = expired = 0
        for status, iteration, summary in pipe.execute():
            if status is None:  # created with the batch, so it ended and expired since
                expired += 1
                continue
            counts[_s(status)] += 1
            iterations += int(iteration or 0)
            chars += int(json.loads(summary).get("chars", 0)) if summary else 0
        size = int(meta.get("size", len(jobs)))
        ended = sum(counts[s.value] for s in TERMINAL) + expired
        return BatchStatus(
            batch_id=batch_id,
            size=size,
            jobs=jobs,
            counts=counts,
            ended=ended,
            done=ended >= size,
            iterations=iterations,
            chars=chars,
            created_at=float(meta["created_at"]) if "created_at" in meta else None,
            expires_at=_time(meta.get("expires_at")),
            expired=expired,
        )

    # -- leases and the watchdog -------------------------------------------------------
    def acquire_lease(self, job_id: str, token: str, ttl_s: float) -> bool:
        """Take the job's lease if nobody holds it (an iteration in flight holds it)."""
        k = self.keys
        code = self._acquire(
            keys=[k.lease(job_id), k.active(shard_of(job_id))],
            args=[token, int(ttl_s * 1000), job_id, time.time() + ttl_s],
        )
        return bool(code)

    def renew_lease(self, job_id: str, token: str, ttl_s: float) -> bool:
        k = self.keys
        deadline = time.time() + ttl_s
        code = self._renew(
            keys=[k.lease(job_id), k.active(shard_of(job_id))],
            args=[token, int(ttl_s * 1000), job_id, deadline],
        )
        return bool(code)

    def release_lease(self, job_id: str, token: str) -> None:
        self._release(keys=[self.keys.lease(job_id)], args=[token])

    def overdue(self, now: float, limit: int = 500) -> list[str]:
        """Unfinished jobs past their deadline whose iteration nobody holds."""
        found = self._each_shard(
            lambda pipe, n: pipe.zrangebyscore(
                self.keys.active(n), "-inf", now, start=0, num=limit, withscores=True
            )
        )
        by_time = sorted((float(at), _s(m)) for members in found for m, at in members)
        ids = [job_id for _, job_id in by_time[:limit]]
        if not ids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for job_id in ids:
            pipe.exists(self.keys.lease(job_id))
        held = pipe.execute()
        return [job_id for job_id, h in zip(ids, held, strict=True) if not h]

    def postpone(self, job_id: str, deadline: float) -> None:
        self.redis.zadd(self.keys.active(shard_of(job_id)), {job_id: deadline}, xx=True)

    def deactivate(self, job_id: str) -> None:
        """Stop watching the job (it ended, or is gone): the watchdog never sends it again."""
        self.redis.zrem(self.keys.active(shard_of(job_id)), job_id)

    # -- attempts: the crash budget and the kept step ------------------------------------
    # Fields of the job hash (they expire with it): ``attempt_iteration`` and ``attempts``
    # (attempts at that iteration that took the lease and did not end cleanly),
    # ``attempt_error`` (the last one's exception) and ``kept_step`` ("N:" + a step of
    # iteration N that was paid for but not committed).
    def start_attempt(self, job_id: str, iteration: int, token: str, ttl_s: float) -> int:
        """Take the job's lease for ``iteration`` and charge the attempt, in one write: the
        attempts at this iteration so far (this one included); 0 when someone else holds
        the lease; -1 when the job is not at ``iteration``."""
        k = self.keys
        return int(
            self._attempt(
                keys=[k.lease(job_id), k.active(shard_of(job_id)), k.job(job_id)],
                args=[token, int(ttl_s * 1000), job_id, time.time() + ttl_s, iteration],
            )
        )

    @cached_property
    def _load_attempt(self) -> Script:
        attempt = (_LUA / "attempt.lua").read_text()
        body = (_LUA / "load_attempt.lua").read_text()
        return self.redis.register_script(f"local function attempt()\n{attempt}\nend\n{body}")

    def load_and_start(
        self, job_id: str, iteration: int, token: str, ttl_s: float
    ) -> tuple[JobRecord | None, int]:
        """``load`` and then ``start_attempt`` in one round trip: the job (None: no such
        job) and the attempt's code, -1 too when the job has ended (no lease taken)."""
        k = self.keys
        code, flat = self._load_attempt(
            keys=[k.lease(job_id), k.active(shard_of(job_id)), k.job(job_id)],
            args=[token, int(ttl_s * 1000), job_id, time.time() + ttl_s, iteration],
        )
        fields = {_s(flat[i]): _s(flat[i + 1]) for i in range(0, len(flat), 2)}
        return _record(job_id, fields), int(code)

    def refund_attempt(self, job_id: str) -> None:
        """Give back the charge of the current iteration's attempt that ended cleanly
        without a commit (a deferral)."""
        self._touch(keys=[self.keys.job(job_id)], args=["incr", "attempts", -1])

    def count_deferral(self, job_id: str, iteration: int) -> None:
        """Count a deferral of ``iteration`` (a provider retry sent again later)."""
        self._touch(keys=[self.keys.job(job_id)], args=["incr", f"deferrals:{iteration}", 1])

    def record_crash(self, job_id: str, iteration: int, error: str, step: str | None) -> None:
        """Note the exception an attempt at ``iteration`` raised and, when it had paid for
        a reply it could not commit, keep that step for the next attempt."""
        if step is None:
            self.set_fields(job_id, attempt_error=error)
        else:
            self.set_fields(job_id, attempt_error=error, kept_step=f"{iteration}:{step}")

    @cached_property
    def _fail_at(self) -> Script:
        parts = ("retain", "at_iteration", "fail")  # fail.lua behind the guard
        return self.redis.register_script("".join((_LUA / f"{n}.lua").read_text() for n in parts))

    def fail_attempt(self, job_id: str, iteration: int, error: str) -> bool:
        """End the job as failed with ``error`` because the attempts at ``iteration`` spent
        its crash budget, only if it is still at ``iteration`` (``at_iteration.lua``): a
        stale attempt never fails a job that has moved on. False when it has (or is gone);
        True when it failed now, or had ended already."""
        k, now = self.keys, time.time()
        retain_keys, retain_args = self._retain(job_id, now, None)
        code = self._fail_at(
            keys=[k.job(job_id), k.active(shard_of(job_id)), *retain_keys],
            args=[job_id, now, error, *retain_args, iteration],
        )
        if int(code) == 1:
            self._count_batch_end(job_id)
        return int(code) >= 0

    def set_fields(self, job_id: str, **fields: str) -> None:
        """Write fields of the job's hash, only while the job exists (``touch.lua``)."""
        args = [part for pair in fields.items() for part in pair]
        self._touch(keys=[self.keys.job(job_id)], args=["set", *args])

    def attempt_error(self, job_id: str) -> str | None:
        return _text(self.redis.hget(self.keys.job(job_id), "attempt_error"))

    def kept_step(self, job_id: str, iteration: int) -> str | None:
        """The step kept for ``iteration`` by an attempt that could not commit it."""
        kept = _text(self.redis.hget(self.keys.job(job_id), "kept_step"))
        if kept is None:
            return None
        at, _, step = kept.partition(":")
        return step if at == str(iteration) else None

    def drop_kept_step(self, job_id: str) -> None:
        self.redis.hdel(self.keys.job(job_id), "kept_step")

    # -- the callback outbox (``workers.callbacks``) --------------------------------------
    # An ended job that asked for a callback is in the outbox, scored by when its next
    # attempt is due, from the script that ends it until its delivery settles. Its entry
    # is ``<job id>:<event id>`` (``outbox_claim.lua``): the job that wrote it, not just its
    # id, which a producer may reuse once the job expired. Fields of its hash: ``callback``
    # (where it stands), ``callback_event`` (the event id) and ``callback_attempts``.
    @cached_property
    def _claim_callback(self) -> Script:
        return self.redis.register_script(_script("outbox_claim"))

    @cached_property
    def _settle_callback(self) -> Script:
        return self.redis.register_script(_script("outbox_settle"))

    def claim_callback(
        self, job_id: str, token: str, *, hold_s: float, early_s: float
    ) -> tuple[int, str]:
        """Take the delivery of the job's callback for ``hold_s`` seconds (at most until the
        job expires) if it is due (or due within ``early_s``) and nobody holds it: the
        attempt's number (1, 2, ...) and the event it delivers. Else (code, ""): 0 when
        another deliverer holds it, -1 when the job has no entry (delivered, settled, never
        asked for, not ended), -2 when it is not due yet, -3 when the job is gone."""
        k = self.keys
        number, event = self._claim_callback(
            keys=[k.outbox(shard_of(job_id)), k.job(job_id), k.callback_claim(job_id)],
            args=[job_id, token, int(hold_s * 1000), time.time(), early_s],
        )
        return int(number), _s(event)

    def settle_callback(
        self, job_id: str, token: str, event: str, outcome: str, *, retry_at: float | None = None
    ) -> bool:
        """Record the ``outcome`` of an attempt at ``event`` in the job (if it is still the
        job of that event) and either take the entry out of the outbox or, with
        ``retry_at``, make it due then; release the claim. Only while ``token`` holds the
        claim: False, and nothing changed, when it ran out meanwhile."""
        k = self.keys
        settled = self._settle_callback(
            keys=[k.outbox(shard_of(job_id)), k.job(job_id), k.callback_claim(job_id)],
            args=[job_id, token, event, outcome[:500], "" if retry_at is None else retry_at],
        )
        return bool(settled)

    @cached_property
    def _callback_sent(self) -> Script:
        return self.redis.register_script(_script("callback_sent"))

    @cached_property
    def _adopt_callback(self) -> Script:
        return self.redis.register_script(_script("outbox_adopt"))

    def claim_callback_send(self, job_id: str) -> bool:
        """True for the first caller only, while the job exists (``callback_sent.lua``):
        that one sends the callback task."""
        return bool(self._callback_sent(keys=[self.keys.job(job_id)]))

    def adopt_callback(self, job_id: str) -> bool:
        """Put the job in the outbox, due now, with a new event id, unless it is gone or has
        an event already (``outbox_adopt.lua``: a job that ended before the outbox
        existed). True when it was adopted now."""
        adopted = self._adopt_callback(
            keys=[self.keys.job(job_id), self.keys.outbox(shard_of(job_id))],
            args=[job_id, uuid.uuid4().hex, time.time()],
        )
        return bool(adopted)

    def callback_event(self, job_id: str) -> str | None:
        """The id of the event the job's callback reports (stable across attempts)."""
        return _text(self.redis.hget(self.keys.job(job_id), "callback_event"))

    def outbox_due(self, before: float, limit: int = 100) -> list[tuple[str, str]]:
        """Entries due at ``before`` or earlier, the longest overdue first: (job id, event
        id; "" in an entry written before entries named their event)."""
        found = self._each_shard(
            lambda pipe, n: pipe.zrangebyscore(
                self.keys.outbox(n), "-inf", before, start=0, num=limit, withscores=True
            )
        )
        by_time = sorted((float(at), _s(m)) for members in found for m, at in members)
        return [_parse_entry(member) for _, member in by_time[:limit]]

    def outbox_live(self, entries: list[tuple[str, str]]) -> list[bool]:
        """Whether each entry is still its job's: it expired (its id maybe reused) if not."""
        pipe = self.redis.pipeline(transaction=False)
        for job_id, _ in entries:
            pipe.hget(self.keys.job(job_id), "callback_event")
        found = [_text(event) for event in pipe.execute()]
        pairs = zip(entries, found, strict=True)
        return [now is not None and event in ("", now) for (_, event), now in pairs]

    def outbox_postpone(self, job_id: str, event: str, at: float) -> None:
        self.redis.zadd(self.keys.outbox(shard_of(job_id)), {_entry(job_id, event): at}, xx=True)

    def outbox_drop(self, job_id: str, event: str) -> None:
        self.redis.zrem(self.keys.outbox(shard_of(job_id)), _entry(job_id, event))

    # -- rate limits (``workers.ratelimit``) and dead letters (``workers.deadletter``) -----
    @cached_property
    def _take(self) -> Script:
        return self.redis.register_script(_script("bucket"))

    def take_tokens(self, profile: str, rate_per_s: float, burst: int, cost: int) -> int:
        """Take ``cost`` tokens from ``profile``'s bucket on Redis's clock (``bucket.lua``):
        0, or the milliseconds until they are available (nothing taken then)."""
        args: list[str | int] = [repr(float(rate_per_s)), burst, cost]
        return int(self._take(keys=[self.keys.bucket(profile)], args=args))

    def put_dead_letter(self, record: dict[str, Any], most: int) -> None:
        """Add ``record`` to the dead letters, newest first, keeping the ``most`` latest."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.lpush(self.keys.dead_letters, json.dumps(record, separators=(",", ":")))
        pipe.ltrim(self.keys.dead_letters, 0, most - 1)
        pipe.execute()

    def dead_letters(self, count: int = 100) -> list[dict[str, Any]]:
        """The latest ``count`` dead letters, newest first."""
        raw = self.redis.lrange(self.keys.dead_letters, 0, max(0, count - 1))
        return [json.loads(item) for item in cast(list[bytes], raw)]


def _entry(job_id: str, event: str) -> str:
    """An outbox member (``outbox_claim.lua``); the bare id when written before events."""
    return f"{job_id}:{event}" if event else job_id


def _parse_entry(member: str) -> tuple[str, str]:
    job_id, _, event = member.partition(":")
    return job_id, event
