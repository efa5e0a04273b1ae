"""``continuum flower``: Flower, the Celery monitor, on Continuum's app and Redis.

Each iteration shows as a ``continuum.iterate`` task whose arguments are the job id and
the iteration only, and whose result carries the job's progress (iteration, percent,
chars, records, fallbacks, the last warning); a job that ends failed shows as a failed
task with the reason. Flower learns tasks from the workers' events, so it shows what ran
while it was up: start it before the jobs to watch.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from typing import Any

from cli.connect import connect
from workers.errors import NoRedis

DEFAULT_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 5555


def register(commands: Any) -> None:
    f = commands.add_parser(
        "flower",
        help="run Flower, the web monitor of workers and tasks",
        description="Run Flower for Continuum's workers: one continuum.iterate task per "
        "iteration, its result showing the job's progress, failed jobs as failed tasks. "
        "Uses REDIS_URL, else the embedded Redis in ./var/redis, and CONTINUUM_BROKER_URL "
        "when set. Flower can revoke tasks and shut workers down: keep it on loopback, or "
        "set basic auth. Flower's HTTP API (/api/...) answers only with basic auth, or with "
        "FLOWER_UNAUTHENTICATED_API=true.",
    )
    f.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})"
    )
    f.add_argument(
        "--address",
        default=DEFAULT_ADDRESS,
        help=f"address to listen on (default {DEFAULT_ADDRESS})",
    )
    f.add_argument(
        "--basic-auth",
        metavar="USER:PASS[,USER:PASS...]",
        default=os.environ.get("FLOWER_BASIC_AUTH") or None,
        help="require HTTP basic auth, for the pages and the API (default: FLOWER_BASIC_AUTH; "
        "prefer the variable, a command line is visible to other users)",
    )
    f.set_defaults(run=run_flower)


def _url(address: str, port: int) -> str:
    host = address or "0.0.0.0"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


def _loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def flower_argv(args: argparse.Namespace) -> list[str]:
    """The ``celery flower`` arguments (Tornado's ``--name=value`` form)."""
    argv = ["flower", f"--port={args.port}", f"--address={args.address}"]
    if args.basic_auth:
        argv.append(f"--basic_auth={args.basic_auth}")
    return argv


def run_flower(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print("continuum flower: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    if args.basic_auth and any(":" not in pair for pair in args.basic_auth.split(",")):
        print("continuum flower: --basic-auth takes USER:PASS pairs", file=sys.stderr)
        return 2
    try:
        with connect("flower", announce=True) as settings:
            from flower.options import options  # noqa: PLC0415

            from workers.app import make_app  # noqa: PLC0415

            app = make_app(settings)
            import workers.tasks  # noqa: PLC0415  (registers the tasks)

            # The task list names each iteration's job and number (a flowerconfig.py's
            # own format_task, read later, takes precedence).
            options.format_task = workers.tasks.flower_view

            auth = "basic auth" if args.basic_auth else "no auth"
            print(f"continuum flower: {_url(args.address, args.port)} ({auth})", flush=True)
            if not args.basic_auth and not _loopback(args.address):
                print(
                    "continuum flower: warning: listening beyond loopback without auth; "
                    "anyone who reaches it can revoke tasks and stop workers",
                    file=sys.stderr,
                    flush=True,
                )
            # Flower exits its loop on SIGTERM (SystemExit) and Ctrl-C (KeyboardInterrupt)
            # and returns here, so an embedded Redis this process started is stopped.
            code = app.start(flower_argv(args))
            # Flower's event receiver is a daemon thread that outlives its loop: keep it
            # from logging connection errors once an embedded Redis stops below.
            logging.getLogger("flower.events").disabled = True
    except NoRedis as exc:
        print(exc, file=sys.stderr)
        return exc.code
    return int(code or 0)
