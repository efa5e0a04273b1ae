"""``continuum demo``: the whole stack, a batch of long jobs, a worker killed mid-way.

On a fresh machine with nothing configured: start an embedded Redis (unless
``REDIS_URL``), two workers and the watchdog; submit a batch of long jobs in every format
to the simulated LLM with chaos (code fences, prose, repeated overlaps, restarts, 500s,
429s) and, for half of them, a first provider that is down so they fall back; SIGKILL a
worker in the middle (the stack's supervisor restarts it, as under ``continuum up``);
follow every job with a progress bar; end with a table comparing each result with the
simulator's target. Exit 0 only when all are exact.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FORMATS = ("json", "csv", "markdown", "text")
CHAOS = "fence=0.2,prose=0.2,overlap=80,restart=0.1,server_error=0.05,rate_limit=0.05"
PROFILES = """\
# Written by `continuum demo`: a provider that is down, so jobs fall back to sim.
[profiles.down]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "CONTINUUM_DEMO_NO_KEY"
max_retries = 0
timeout_s = 2.0
"""


def register(commands: Any) -> None:
    p = commands.add_parser(
        "demo",
        help="run the whole stack on a batch of long jobs, killing a worker mid-way",
        description="Start Redis (embedded unless REDIS_URL), two workers and the watchdog; "
        "submit a batch of long jobs in every format to the simulated LLM with chaos; "
        "SIGKILL a worker mid-way (it is restarted); show progress; end with a table of "
        "results compared with the simulator's target. Exit 0 only when every job is exact.",
    )
    p.add_argument("--jobs-per-format", type=int, default=2, metavar="N", help="(2)")
    p.add_argument("--size", type=int, default=30_000, help="characters per document")
    p.add_argument("--latency", type=float, default=0.3, help="seconds per model call")
    p.add_argument("--no-kill", action="store_true", help="do not kill a worker")
    p.set_defaults(run=run_demo)


def _specs(run: str, per_format: int, size: int, latency: float) -> list[dict[str, Any]]:
    specs = []
    for fmt in FORMATS:
        for i in range(per_format):
            model = f"sim:format={fmt},size={size},latency={latency:g},{CHAOS}"
            specs.append(
                {
                    "job_id": f"demo-{run}-{fmt}-{i}",
                    "prompt": f"Write the {fmt} catalogue of archive room {i + 1}",
                    "format": fmt,
                    "providers": ["down", "sim"] if i % 2 else ["sim"],
                    "model": model,
                    "max_output_tokens": 400,
                    # The chaos restarts the document on 1 call in 10, far more often than
                    # a real model: 3 restarts in a row (the default budget) would end ~1
                    # demo in 10 partial; 8 in a row happens about once in 10^8 calls.
                    "continuation": {"max_attempts": 200, "max_merge_failures": 8},
                }
            )
    return specs


def run_demo(args: argparse.Namespace) -> int:
    if args.jobs_per_format < 1 or args.size < 1000 or args.latency < 0:
        print("continuum demo: bad sizes (jobs >= 1, size >= 1000, latency >= 0)", file=sys.stderr)
        return 2
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    from cli.stack import Stack, Supervisor  # noqa: PLC0415
    from workers.errors import StackError  # noqa: PLC0415

    console = Console(stderr=False)
    root = Path.cwd()
    demo_dir = root / "var" / "demo"
    demo_dir.mkdir(parents=True, exist_ok=True)
    (demo_dir / "profiles.toml").write_text(PROFILES, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(
        CONTINUUM_PROFILES=str(demo_dir / "profiles.toml"),
        CONTINUUM_ENABLE_SIM="1",  # the demo's model is the simulator
        CONTINUUM_LEASE_TTL_S="4",  # a killed worker's iterations come back in ~4 s
        CONTINUUM_QUEUE_GRACE_S="30",
        CONTINUUM_WATCHDOG_INTERVAL_S="0.5",
    )
    run = uuid.uuid4().hex[:6]
    specs = _specs(run, args.jobs_per_format, args.size, args.latency)
    started = time.monotonic()
    console.print(f"[bold]continuum demo[/]: {len(specs)} jobs, stack starting (logs in var/log)")
    stack = Stack(root=root, env=env, say=console.print)
    try:
        stack.redis()
        first = stack.worker(8)
        stack.worker(8)
        stack.beat()
        os.environ.update(stack.env)  # this process submits and follows with the same settings
        records, killed = _run_batch(args, Supervisor(stack), first, specs, console)
    except StackError as exc:
        console.print(f"continuum demo: {exc}", markup=False)
        return 1
    except KeyboardInterrupt:
        console.print("continuum demo: interrupted")
        return 130
    finally:
        stack.stop()

    from sim.model import SimModel, SimOptions  # noqa: PLC0415

    sim = SimModel(SimOptions())
    elapsed = time.monotonic() - started
    table = Table(title=f"continuum demo {run}: {elapsed:.0f} s; {killed}")
    for column in ("job", "format", "status", "iterations", "fallbacks", "chars", "exact"):
        table.add_column(column, justify="right" if column in {"iterations", "chars"} else "left")
    exact_all = True
    for spec in specs:
        job_id = spec["job_id"]
        record, text = records.get(job_id, (None, None))
        target = sim.target_for({"prompt": spec["prompt"], "model": spec["model"]})
        exact = text == target
        exact_all &= exact
        fallbacks = record.summary.get("fallbacks", []) if record else []
        table.add_row(
            job_id.removeprefix(f"demo-{run}-"),
            spec["format"],
            record.status.value if record else "missing",
            str(record.iteration if record else 0),
            ", ".join(f"{f['from_profile']}->{f['to_profile']}" for f in fallbacks) or "-",
            f"{len(text or ''):,}",
            "[green]yes[/]" if exact else "[red]NO[/]",
        )
    console.print(table)
    if not exact_all:
        console.print("[red]continuum demo: some results differ from the target[/]")
        return 1
    console.print("[green]continuum demo: every job is exact[/]")
    return 0


def _run_batch(
    args: argparse.Namespace,
    supervisor: Any,
    victim: Any,
    specs: list[dict[str, Any]],
    console: Any,
) -> tuple[dict[str, tuple[Any, str | None]], str]:
    """Submit the batch, follow it, kill ``victim`` mid-way (the supervisor, checked at
    every poll, restarts it); the records and outputs."""
    from cli.progress import follow  # noqa: PLC0415
    from workers.app import make_app  # noqa: PLC0415
    from workers.producer import Producer  # noqa: PLC0415
    from workers.runtime import build_runtime  # noqa: PLC0415
    from workers.settings import get_settings  # noqa: PLC0415
    from workers.submit import submit_batch  # noqa: PLC0415

    get_settings.cache_clear()
    settings = get_settings()
    assert settings.redis_url is not None
    rt = build_runtime(settings, settings.redis_url)
    batch_id, _ = submit_batch(rt, specs, Producer(make_app(settings)).iteration)
    ids = [s["job_id"] for s in specs]
    console.print(f"  batch    {batch_id}: {len(ids)} jobs submitted")
    killed = "no worker killed" if args.no_kill else ""
    expected = len(ids) * args.size / (4 * 400)  # iterations, at ~4 characters a token

    def tick(records: Mapping[str, Any]) -> None:
        nonlocal killed
        supervisor.check()
        if killed:
            return
        done = sum(r.iteration for r in records.values() if r is not None)
        if done >= 0.4 * expected:  # well under way
            supervisor.stack.kill(victim)
            killed = f"{victim.name} killed with SIGKILL at {done} iterations, then restarted"
            console.print(f"  [yellow]{killed}[/]")

    labels = {s["job_id"]: f"{s['format']:<8} {s['job_id'][-1]}" for s in specs}
    records = follow(rt.store, ids, console=console, labels=labels, on_tick=tick, timeout=600)
    return {j: (r, rt.store.final_output(r)) for j, r in records.items()}, killed
