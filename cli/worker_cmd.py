"""``continuum worker`` (a Celery worker running iterations) and ``continuum beat`` (the
watchdog that re-enqueues iterations whose worker died)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any

from cli.connect import connect
from workers.embedded import redact_url
from workers.errors import NoRedis

POOLS = ("threads", "prefork", "solo")


def register(commands: Any) -> None:
    w = commands.add_parser(
        "worker",
        help="run a Celery worker that runs job iterations",
        description="Run a Celery worker for Continuum's tasks. Iterations are I/O-bound "
        "(one model call each), so the default pool is threads, many calls in flight per "
        "process. Uses REDIS_URL, else the embedded Redis in ./var/redis (started if none "
        "runs); the queue is on CONTINUUM_BROKER_URL when set (a RabbitMQ, amqp://...). "
        "Scale by starting more workers, here or on other machines.",
    )
    w.add_argument(
        "-c",
        "--concurrency",
        type=int,
        default=int(os.environ.get("CONTINUUM_CONCURRENCY", "16")),
        metavar="N",
        help="iterations in flight in this process (default 16, or CONTINUUM_CONCURRENCY)",
    )
    w.add_argument("--pool", choices=POOLS, default="threads", help="Celery pool (default threads)")
    w.add_argument(
        "-Q",
        "--queues",
        metavar="Q[,Q...]",
        help="queues to consume (default: CONTINUUM_QUEUE, 'continuum', and Celery's default "
        "queue 'celery' unless CONTINUUM_CONSUME_DEFAULT_QUEUE=0); name a provider "
        "profile's queue to run a worker for that provider only",
    )
    w.add_argument("-n", "--hostname", help="Celery node name (default continuum-PID@HOST)")
    w.add_argument("--loglevel", default="INFO", help="log level (default INFO)")
    w.add_argument(
        "--beat",
        action="store_true",
        help="also run the watchdog in this process (handy with a single worker)",
    )
    w.set_defaults(run=run_worker)

    b = commands.add_parser(
        "beat",
        help="run the watchdog that re-enqueues iterations lost with their worker",
        description="Every CONTINUUM_WATCHDOG_INTERVAL_S seconds (default 2), send again the "
        "iteration of every job whose lease expired (its worker died mid-call) or whose "
        "message waited past CONTINUUM_QUEUE_GRACE_S. Running two is harmless: a duplicate "
        "iteration is a no-op.",
    )
    b.add_argument("--loglevel", default="INFO", help="log level (default INFO)")
    b.set_defaults(run=run_beat)


def _start_watchdog(app: Any) -> tuple[threading.Thread, threading.Event]:
    """The watchdog on ``app``'s runtime, sending on ``app``'s broker."""
    from workers.producer import Producer  # noqa: PLC0415
    from workers.watchdog import run_forever  # noqa: PLC0415

    producer = Producer(app)
    stop = threading.Event()
    thread = threading.Thread(
        target=run_forever,
        args=(app.runtime, producer.iteration, stop, producer.callback),
        name="watchdog",
        daemon=True,
    )
    thread.start()
    return thread, stop


def run_worker(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        print("continuum worker: --concurrency must be at least 1", file=sys.stderr)
        return 2
    try:
        with connect("worker", announce=True) as settings:
            from workers.app import make_app  # noqa: PLC0415
            from workers.settings import worker_queues  # noqa: PLC0415

            app = make_app(settings)
            import workers.tasks  # noqa: F401, PLC0415  (registers the tasks)

            app.runtime  # noqa: B018  (builds the store now: an unusable one stops here)
            queues = args.queues or worker_queues(settings)
            argv = [
                "worker",
                f"--pool={args.pool}",
                f"--concurrency={args.concurrency}",
                f"--queues={queues}",
                f"--hostname={args.hostname or f'continuum-{os.getpid()}@%h'}",
                f"--loglevel={args.loglevel}",
                "--without-mingle",
                "--without-gossip",
            ]
            watchdog = _start_watchdog(app) if args.beat else None
            try:
                code = _run_celery_worker(app, argv)
            finally:
                if watchdog is not None:
                    watchdog[1].set()
                    watchdog[0].join(timeout=5)
    except NoRedis as exc:
        print(exc, file=sys.stderr)
        return exc.code
    return code


def _run_celery_worker(app: Any, argv: list[str]) -> int:
    """Run the Celery worker; its exit code, non-zero after an unrecoverable error, so a
    supervisor that restarts failed workers restarts this one.

    ``app.worker_main`` and ``app.start`` drop the code Celery's worker command exits with
    (click hands it back as a return value, which they discard): read it off the worker.
    """
    from celery.signals import celeryd_init  # noqa: PLC0415

    started: list[Any] = []

    def remember(sender: Any = None, instance: Any = None, **_: Any) -> None:
        started.append(instance)

    celeryd_init.connect(remember, weak=False)
    try:
        returned = app.start(argv)
    finally:
        celeryd_init.disconnect(remember)
    codes = [getattr(worker, "exitcode", None) for worker in started] + [returned]
    code = next((c for c in codes if c), 0)
    return code if isinstance(code, int) else 1


def run_beat(args: argparse.Namespace) -> int:
    import logging  # noqa: PLC0415

    logging.basicConfig(
        level=args.loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        with connect("beat", announce=True) as settings:
            from workers.app import make_app  # noqa: PLC0415

            app = make_app(settings)
            app.runtime  # noqa: B018  (builds the store now: an unusable one stops here)
            thread, stop = _start_watchdog(app)
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: stop.set())
            assert settings.redis_url is not None
            print(
                f"continuum beat: watching {redact_url(settings.redis_url)} every "
                f"{settings.watchdog_interval_s:g} s",
                file=sys.stderr,
            )
            while thread.is_alive():
                thread.join(timeout=0.5)
    except NoRedis as exc:
        print(exc, file=sys.stderr)
        return exc.code
    return 0
