"""``continuum submit``: create a job in Redis for the workers, and optionally follow it.

Exit codes: without ``--wait`` 0 once the job exists (its id on stdout); with ``--wait``
0 succeeded, 3 partial (the partial result is written), 1 failed or cancelled; 1 when
there is no Redis or the id is taken by a different job; 2 usage errors (the field
named), and an unusable ``REDIS_URL`` or ``CONTINUUM_BROKER_URL``; 130 when Ctrl-C stops
the waiting (the job keeps running).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from cli.connect import connect
from cli.run_cmd import add_spec_options, build_spec
from core.models import describe_errors as describe
from workers.errors import NoRedis

if TYPE_CHECKING:
    from workers.settings import Settings

EXIT_INTERRUPTED = 130


def register(commands: Any) -> None:
    p = commands.add_parser(
        "submit",
        help="submit a job to the workers (and follow it with --wait)",
        description="Create a job in Redis and queue its first iteration for the workers: "
        "a `continuum worker` must be running on the same Redis, or the job waits in the "
        "queue until one starts. Uses REDIS_URL, else the embedded Redis in ./var/redis "
        "(the one a worker started in this directory runs; if none runs, submit starts "
        "it, and a worker started here later finds the job in it). Prints the job id. "
        "With --wait, shows the job's progress on stderr until it ends, then writes the "
        "result to OUT (or stdout) like `continuum result`: exit 0 succeeded, 3 partial, "
        "1 failed or cancelled. Ctrl-C stops waiting (exit 130); the job keeps running. "
        "Exit 2 for invalid options.",
    )
    add_spec_options(p, output_help="with --wait: write the result here (default: stdout)")
    p.add_argument(
        "--job-id",
        metavar="ID",
        help="the job's id (default: a new one); submitting the same id again creates "
        "nothing new, and --wait follows the existing job",
    )
    p.add_argument(
        "--callback-url", metavar="URL", help="POST the result here as JSON when the job ends"
    )
    p.add_argument(
        "--wait", action="store_true", help="follow the job until it ends, then write its result"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress and no notes on stderr")
    p.set_defaults(run=run)


def _say(message: str) -> None:
    print(f"continuum submit: {message}", file=sys.stderr, flush=True)


def _usage(message: str) -> int:
    _say(message)
    return 2


def job_spec(args: argparse.Namespace) -> Any:
    """The spec of ``continuum run``'s options plus the job id and the callback URL;
    raises ValueError/ValidationError/OSError when they are bad."""
    from core import JobSpec  # noqa: PLC0415

    spec = build_spec(args)
    extra = {"job_id": args.job_id, "callback_url": args.callback_url}
    extra = {k: v for k, v in extra.items() if v is not None}
    if not extra:
        return spec
    return JobSpec.model_validate({**spec.model_dump(mode="json", exclude_unset=True), **extra})


def run(args: argparse.Namespace) -> int:
    if args.output is not None and not args.wait:
        return _usage("-o/--output: only with --wait (the result exists once the job ends)")
    try:
        spec = job_spec(args)
    except ValidationError as exc:
        return _usage(describe(exc))
    except (OSError, ValueError) as exc:
        return _usage(str(exc))
    try:
        with connect("submit", announce=not args.quiet) as settings:
            return _submit(args, spec, settings)
    except NoRedis as exc:
        print(exc, file=sys.stderr)
        return exc.code


def _submit(args: argparse.Namespace, spec: Any, settings: Settings) -> int:
    from core import JobSpec  # noqa: PLC0415
    from workers.app import make_app  # noqa: PLC0415
    from workers.errors import NotReplicated, SpecRefused  # noqa: PLC0415
    from workers.producer import Producer  # noqa: PLC0415
    from workers.runtime import build_runtime  # noqa: PLC0415
    from workers.submit import submit_job  # noqa: PLC0415

    assert settings.redis_url is not None
    try:
        rt = build_runtime(settings, settings.redis_url)
    except ValueError as exc:  # CONTINUUM_PROFILES cannot be read
        return _usage(str(exc))
    done = None
    app = make_app(settings)
    try:
        try:
            done = submit_job(rt, spec, Producer(app).iteration)
        except SpecRefused as exc:
            return _usage(str(exc))
        except NotReplicated as exc:
            _say(str(exc))
            return 1
        if not done.created:
            record = rt.store.load(done.job_id)
            if record is not None and _differs(JobSpec, record.spec, spec):
                _say(f"job {done.job_id} exists with a different spec ({record.status.value})")
                return 1
            if not args.quiet:
                what = record.status.value if record is not None else "unknown"
                _say(f"job {done.job_id} exists already ({what}); nothing new was created")
        if not args.wait:
            print(done.job_id, flush=True)
            return 0
        if not args.quiet:
            _say(f"job {done.job_id} {'queued' if done.created else 'followed'}")
        return _wait(args, rt.store, done.job_id)
    except KeyboardInterrupt:
        if done is None:
            _say("interrupted while submitting (submit again with the same --job-id to be sure)")
            return EXIT_INTERRUPTED
        _say(  # the job exists: it goes on without us
            f"stopped waiting; job {done.job_id} keeps running. Follow it with "
            f"`continuum status {done.job_id}`, fetch its result with "
            f"`continuum result {done.job_id}`, stop it with `continuum cancel {done.job_id}`"
        )
        return EXIT_INTERRUPTED
    finally:
        rt.pool.close()
        app.close()


def _differs(model: Any, stored: str, spec: Any) -> bool:
    try:
        return bool(model.model_validate_json(stored) != spec)
    except ValidationError:  # kept as a failed job because its spec was invalid
        return True


def _wait(args: argparse.Namespace, store: Any, job_id: str) -> int:
    from rich.console import Console  # noqa: PLC0415

    from cli.progress import follow  # noqa: PLC0415

    console = None if args.quiet else Console(stderr=True)
    record = follow(store, [job_id], console=console)[job_id]
    return write_result(store, record, args.output)


def write_result(store: Any, record: Any, output: Path | None) -> int:
    """Write an ended job's result as ``continuum result`` does (a part at a time: the
    result is never whole in memory); its exit code."""
    from cli.jobs_cmd import write_parts  # noqa: PLC0415
    from workers.errors import OutputChanged  # noqa: PLC0415
    from workers.store import JobStatus  # noqa: PLC0415

    parts = store.iter_result(record)
    status = record.status
    reason = record.error or (record.result or {}).get("reason") or ""
    if parts is None or status not in {JobStatus.SUCCEEDED, JobStatus.PARTIAL}:
        _say(f"job {record.job_id} {status.value}{f': {reason}' if reason else ''}")
        return 1
    try:
        write_parts(parts, None if output is None else str(output))
    except OutputChanged as exc:  # expired or rewritten while it was read
        _say(str(exc))
        return 1
    if status is JobStatus.PARTIAL:
        _say(f"job {record.job_id} is partial: {reason}")
        return 3
    return 0
