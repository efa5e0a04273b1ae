"""Where a whole worker's CPU goes per hop: py-spy samples a real worker process while it
runs chains, and each sample is put in a phase by the frames on its stack.

    uv run --with py-spy python -m benchmarks.profile_hop [--chains 5] [--hops 200]
        [--rate 250] [--raw DIR]

Two workers on the queue benchmarks' private Redis (``benchmarks/queue_harness.py``), one
thread each, as ``benchmarks/queue_hop.py`` starts them: ``continuum worker`` running
zero-latency iterations (the simulator in-process), and the bare no-op task with
Continuum's Celery settings (``benchmarks/noop_app.py``, task events on). Each runs
``--chains`` chains of ``--hops`` hops under ``py-spy record`` (on-CPU samples only: a
thread waiting on a socket is not sampled). A phase's share of the samples times the
worker's CPU per hop (from /proc) is its cost per hop. Sampling slows the worker a little;
compare shares, and take absolute times from ``bench_queue --only hop``.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from benchmarks.queue_harness import Harness, Worker, isolate_environment
from benchmarks.queue_hop import noop_chain
from benchmarks.queue_jobs import continuum_chain, sized_spec

PROMPT = "Write a long story about the sea."
#: Runs one chain: (seconds, hops).
Chain = Callable[[], tuple[float, int]]

#: Continuum's own code around Celery's in the consumer thread (``workers/transport.py``,
#: ``workers/consumer.py``, ``IterateRequest``): the samples whose innermost frame of
#: Celery, kombu or Continuum is one of Continuum's.
HOOKS = "Continuum's transport, consumer, request hooks"
_OWNERS = ("(workers/", "(celery/", "(kombu/")

#: (phase, substrings of a frame): a sample goes to the first phase of this list one of
#: whose substrings is in one of its frames (anywhere on the stack). Order matters: the
#: specific before the general.
PHASES: list[tuple[str, tuple[str, ...]]] = [
    ("engine: last-word search (core/squares.py glue_known)", ("glue_known (core/squares.py",)),
    ("state JSON: parse", ("model_validate_json", "validate_json")),
    ("state JSON: dump", ("model_dump_json", "to_json (")),
    ("simulator (sim/)", ("(sim/",)),
    ("model call: adapter, httpx", ("(workers/providers/", "(workers/calls.py", "httpx/")),
    ("engine: advance() and the rest of core/", ("(core/",)),
    ("store: commit (Lua)", ("commit (workers/store.py",)),
    ("store: load, lease + attempt (Lua)", ("load_and_start (workers/store.py",)),
    ("store: load (HGETALL)", ("load (workers/store.py",)),
    ("lease renewal thread", ("(workers/leases.py",)),
    ("task events (celery/events)", ("celery/events/", "send_event", "send_sent_event")),
    (
        "enqueue the next task (kombu publish)",
        ("apply_async (", "send_task (", "(workers/producer.py"),
    ),
    ("logging", ("logging/__init__.py", "(celery/utils/log.py", "celery/app/log.py")),
    ("Continuum's task body, other", ("iterate (workers/tasks.py",)),
    (HOOKS, ()),
    ("ack, unacked bookkeeping (kombu redis QoS)", ("basic_ack", "ack (", "_remove_from_indices")),
    (
        "receive a message (kombu redis BRPOP, Hub)",
        ("kombu/transport/redis.py", "kombu/asynchronous/"),
    ),
    ("Celery: task trace, request, strategy", ("celery/app/trace.py", "celery/worker/")),
    ("Celery/kombu, other", ("celery/", "kombu/", "billiard/", "vine/")),
    ("redis-py, other", ("redis/",)),
]


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit("py-spy not found: run with `uv run --with py-spy python -m ...`")
    return found


#: Leaf frames of a thread that waits (py-spy may sample one as running just as it wakes).
IDLE = (
    "Condition.wait (",
    "_worker (concurrent/futures/thread.py",
    "_epoll.poll (",
    "Event.wait (",
)
WAITING = "(waiting: not counted)"


def phase_of(stack: str) -> str:
    if any(n in stack.rsplit(";", 1)[-1] for n in IDLE):
        return WAITING
    for phase, needles in PHASES:
        if phase == HOOKS:
            frames = stack.split(";")[::-1]
            owner = next((f for f in frames if any(o in f for o in _OWNERS)), "")
            if "(workers/" in owner:
                return phase
        elif any(n in stack for n in needles):
            return phase
    return "other (interpreter, threads, stdlib)"


def read_raw(path: Path) -> Counter[str]:
    """py-spy's ``raw`` output: ``frame;frame;... count`` per line."""
    phases: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            phases[phase_of(stack)] += int(count)
    return phases


def leaves(path: Path, top: int) -> list[tuple[str, int]]:
    own: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            own[stack.split(";")[-1]] += int(count)
    return own.most_common(top)


def sample(
    worker: Worker, rate: int, out: Path, run: Chain, chains: int, *, gil: bool
) -> tuple[float, int]:
    """Run ``chains`` chains under py-spy; (worker CPU seconds, hops)."""
    argv = [py_spy(), "record", "--pid", str(worker.pid), "--rate", str(rate)]
    argv += ["--format", "raw", "--output", str(out), "--threads", *(["--gil"] if gil else [])]
    spy = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # py-spy attaches
    cpu0, hops = worker.cpu(), 0
    for _ in range(chains):
        hops += run()[1]
    cpu = worker.cpu() - cpu0
    spy.send_signal(signal.SIGINT)
    spy.wait(30)
    return cpu, hops


def report(name: str, path: Path, cpu: float, hops: int, top: int) -> None:
    phases = read_raw(path)
    waiting = phases.pop(WAITING, 0)
    total = sum(phases.values())
    per_hop = cpu / hops
    print(f"\n== {name}: {hops} hops, worker CPU {per_hop * 1000:.2f} ms per hop")
    print(f"  {total} samples (and {waiting} of waiting threads, not counted)")
    print(f"  {'phase':<55} {'ms/hop':>7} {'share':>6}")
    for phase, n in phases.most_common():
        print(f"  {phase:<55} {n / total * per_hop * 1000:7.2f} {n / total:6.1%}")
    print("  hottest leaf frames:")
    for frame, n in leaves(path, top + len(IDLE)):
        if any(i in frame for i in IDLE):
            continue
        print(f"    {n / total:6.1%}  {frame[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chains", type=int, default=5, help="chains per worker")
    parser.add_argument("--hops", type=int, default=200, help="hops per chain")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw stacks in this folder")
    parser.add_argument("--top", type=int, default=15, help="leaf frames to print")
    parser.add_argument(
        "--gil", action="store_true", help="sample only the thread holding the GIL (py-spy --gil)"
    )
    args = parser.parse_args()
    py_spy()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    isolate_environment()
    with tempfile.TemporaryDirectory(prefix="profile-hop-") as tmp:
        out = args.raw or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        h = Harness(Path(tmp))
        try:
            spec = sized_spec(PROMPT, args.hops)
            cont = h.continuum("hop", 1)
            noop = h.noop("noop-full", "bench-noop-full", events=True)
            cont.wait_ready()
            noop.wait_ready()
            runs: dict[str, tuple[Worker, Chain]] = {
                "Continuum iteration": (cont, lambda: continuum_chain(h, spec, args.hops)),
                "no-op task, Continuum's Celery settings": (
                    noop,
                    lambda: noop_chain(h, "bench-noop-full", args.hops),
                ),
            }
            for _worker, run in runs.values():
                run()  # warm-up
            for n, (name, (worker, run)) in enumerate(runs.items()):
                path = out / f"{n}-{worker.name}.txt"
                cpu, hops = sample(worker, args.rate, path, run, args.chains, gil=args.gil)
                report(name, path, cpu, hops, args.top)
        finally:
            h.close()


if __name__ == "__main__":
    main()
