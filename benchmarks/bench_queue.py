"""Queue benchmarks: real ``continuum worker`` processes on a private Redis.

    uv run python -m benchmarks.bench_queue [--only hop|size|throughput|memory] [--rounds N]
        [--layouts 4x16,2x64] [--baseline] [--memory-iterations N]

1. hop (``benchmarks/queue_hop.py``): one zero-latency Continuum iteration vs one hop of
   a bare self-chaining no-op Celery task, 200-hop chains. Target: ratio at most 2.
2. size (``benchmarks/queue_size.py``): an iteration hop after 10 MB vs 10 KB
   accumulated, 50 iterations per round. Target: ratio at most 1.5; the
   ``continuum.iterate`` message a worker sends stays small.
3. throughput (``benchmarks/queue_throughput.py``): 1,000 jobs x 5 iterations at 500 ms
   simulated latency reach at least 70% of the in-flight bound; ``--baseline`` runs the
   same load on Celery alone next.
4. memory (``benchmarks/queue_memory.py``): one worker's RSS, sampled every 1,000
   zero-latency iterations over 10,000, under steady traffic, stays flat.

All four share one harness: ``benchmarks/queue_harness.py`` (the private Redis and the
worker processes), ``benchmarks/queue_jobs.py`` (the simulated jobs) and
``benchmarks/queue_measure.py`` (CPU use, per-hop samples, the table). Cases compared are
measured in alternate rounds in one run; medians are reported. The machine is shared: each
test also reports the CPU other processes used meanwhile.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

from benchmarks.queue_harness import Harness, isolate_environment
from benchmarks.queue_hop import bench_hop
from benchmarks.queue_jobs import sized_spec
from benchmarks.queue_measure import Row, print_table
from benchmarks.queue_memory import bench_memory
from benchmarks.queue_size import bench_size
from benchmarks.queue_throughput import bench_throughput

# benchmarks/profile_iteration.py imports sized_spec from here.
__all__ = ["main", "sized_spec"]


def layouts(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        count, _, threads = item.strip().partition("x")
        out.append((int(count), int(threads)))
    return out


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", choices=["hop", "size", "throughput", "memory"])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of hop and size")
    parser.add_argument("--hops", type=int, default=200, help="hops per chain (hop)")
    parser.add_argument("--size-hops", type=int, default=50, help="iterations per round (size)")
    parser.add_argument(
        "--layouts",
        type=layouts,
        default=[(4, 16)],
        help="throughput: workers x threads, comma-separated, e.g. 2x64,4x16 (default 4x16)",
    )
    parser.add_argument("--jobs", type=int, default=1000, help="throughput: jobs")
    parser.add_argument(
        "--iterations", type=int, default=5, help="throughput: iterations per job (default 5)"
    )
    parser.add_argument("--latency", type=float, default=0.5, help="throughput: seconds")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="throughput: also run the same load on Celery alone, for reference",
    )
    parser.add_argument("--memory-iterations", type=int, default=10_000)
    parser.add_argument("--memory-threads", type=int, default=16)
    return parser.parse_args()


def run(h: Harness, args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = []
    if args.only in (None, "hop"):
        rows += bench_hop(h, args.rounds, args.hops)
    if args.only in (None, "size"):
        rows += bench_size(h, args.rounds, args.size_hops)
    if args.only in (None, "throughput"):
        rows += bench_throughput(
            h,
            args.layouts,
            jobs=args.jobs,
            iterations=args.iterations,
            latency=args.latency,
            baseline=args.baseline,
        )
    if args.only in (None, "memory"):
        rows += bench_memory(
            h,
            total=args.memory_iterations,
            per_job=20,
            threads=args.memory_threads,
            in_flight=64,
            every=max(100, args.memory_iterations // 10),
        )
    return rows


def main() -> None:
    args = parse_args()
    # A terminated benchmark cleans up as an interrupted one does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    isolate_environment()
    with tempfile.TemporaryDirectory(prefix="bench-queue-") as tmp:
        h = Harness(Path(tmp))
        try:
            rows = run(h, args)
        finally:
            h.close()
    print_table(rows)


if __name__ == "__main__":
    main()
