"""``continuum up``: the whole stack in one command, until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any

from cli.stack import RESTART_LIMIT, RESTART_WINDOW_S, Stack, Supervisor
from workers.errors import StackError


def register(commands: Any) -> None:
    p = commands.add_parser(
        "up",
        help="run the whole stack here: Redis, workers, watchdog, API and Flower",
        description="Start Redis (embedded in ./var/redis unless REDIS_URL is set), N "
        "workers, the watchdog, the status API and Flower, print one line per component "
        "with its URL, and run until Ctrl-C, which stops everything. A component that dies "
        "is restarted, with a growing delay while it keeps dying; one that dies again after "
        f"{RESTART_LIMIT} restarts within {RESTART_WINDOW_S:g} s stops everything (exit 1). "
        "Logs go to var/log. Jobs use the simulated LLM unless a provider key is configured.",
    )
    p.add_argument("--workers", type=int, default=2, metavar="N", help="worker processes (2)")
    p.add_argument(
        "--concurrency", type=int, default=16, metavar="C", help="iterations in flight per worker"
    )
    p.add_argument("--port", type=int, default=8000, metavar="P", help="API port (8000)")
    p.add_argument("--flower-port", type=int, default=5555, metavar="F", help="Flower port")
    p.add_argument("--no-flower", action="store_true", help="do not start Flower")
    p.set_defaults(run=run_up)


class _Stop(Exception):
    pass


def _raise_stop(*_: object) -> None:
    raise _Stop


def run_up(args: argparse.Namespace) -> int:
    if args.workers < 1 or args.concurrency < 1:
        print("continuum up: --workers and --concurrency must be at least 1", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _raise_stop)
    print("continuum up: starting (logs in var/log)", flush=True)
    # A local stack (loopback): the simulated LLM serves jobs that name no provider when
    # no key is set. A deploy runs `continuum worker`, where the sim is off unless enabled.
    from workers.providers.registry import SIM_SWITCH  # noqa: PLC0415 - httpx, adapters

    os.environ.setdefault(SIM_SWITCH, "1")
    stack = Stack()
    try:
        stack.redis()
        for _ in range(args.workers):
            stack.worker(args.concurrency)
        stack.beat()
        stack.api(args.port)
        if not args.no_flower:
            stack.flower(args.flower_port)
        print("continuum up: ready; Ctrl-C stops everything", flush=True)
        supervisor = Supervisor(stack)
        while True:
            supervisor.check()
            time.sleep(0.5)
    except StackError as exc:
        print(f"continuum up: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Stop):
        print("\ncontinuum up: stopping", flush=True)
    finally:
        stack.stop()
    print("continuum up: stopped", flush=True)
    return 0
