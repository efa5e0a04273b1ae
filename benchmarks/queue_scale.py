"""Throughput as worker processes are added, on a Redis Cluster store and on one Redis.

    uv run python -m benchmarks.queue_scale [--workers 1,2,4,8] [--threads 8] [--jobs 64]
        [--iterations 5] [--latency 0.5]

For each N in ``--workers``: N ``continuum worker`` processes of ``--threads`` threads run
``--jobs`` jobs x ``--iterations`` iterations of the simulated model at ``--latency``
seconds a call (``benchmarks/queue_throughput.py``'s load: submitted first, released at
once), with job state on a 3-master Redis Cluster (``tests/redis_cluster.py``; the queue
and Celery's results on a private Redis) and then on one private Redis (queue and state
together), side by side in one run. The bound is every thread always in a model call (N x
threads / latency iterations per second). The machine is shared: each run reports the CPU
other processes used meanwhile; the cluster's nodes' CPU is reported apart (the harness
counts them as other processes).
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import tempfile
from contextlib import closing
from pathlib import Path

from redis import Redis

from benchmarks.queue_harness import Harness, cpu_seconds, isolate_environment
from benchmarks.queue_measure import Row, ms, print_table
from benchmarks.queue_throughput import continuum_load
from tests.redis_cluster import redis_cluster
from workers.store import parse_cluster_url

CLUSTER = "3-master cluster store"
SINGLE = "one Redis"


def node_pids(cluster_url: str) -> list[int]:
    """The ``redis-server`` processes of the cluster's nodes."""
    pids = []
    for host, port in parse_cluster_url(cluster_url).nodes:
        with Redis(host=host, port=port) as node:
            pids.append(int(node.info("server")["process_id"]))
    return pids


def counts(text: str) -> list[int]:
    return [int(n) for n in text.split(",")]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", type=counts, default=[1, 2, 4, 8], help="e.g. 1,2,4,8")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker")
    parser.add_argument("--jobs", type=int, default=64)
    parser.add_argument("--iterations", type=int, default=5, help="per job")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per model call")
    return parser.parse_args()


def measure(h: Harness, store: str, count: int, args: argparse.Namespace, pids: list[int]) -> Row:
    """One load on ``count`` workers; its row names the store."""
    print(f"\n## {store}", end="", flush=True)
    before = sum(cpu_seconds(p) for p in pids)
    row = continuum_load(
        h, count, args.threads, jobs=args.jobs, iterations=args.iterations, latency=args.latency
    )
    if pids:
        per = (sum(cpu_seconds(p) for p in pids) - before) / (args.jobs * args.iterations)
        print(f"  the cluster's nodes: CPU per iteration {ms(per)} (with the warm-up jobs)")
    return dataclasses.replace(row, case=f"{store}: {row.case}")


def main() -> None:
    args = parse_args()
    # A terminated benchmark cleans up as an interrupted one does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    isolate_environment()
    rows: list[Row] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp,
        redis_cluster(Path(tmp) / "cluster") as cluster_url,
        closing(Harness(Path(tmp) / "on-cluster", store_url=cluster_url)) as on_cluster,
        closing(Harness(Path(tmp) / "single")) as single,
    ):
        pids = node_pids(cluster_url)
        for count in args.workers:
            rows.append(measure(on_cluster, CLUSTER, count, args, pids))
            rows.append(measure(single, SINGLE, count, args, []))
    print_table(rows)


if __name__ == "__main__":
    main()
