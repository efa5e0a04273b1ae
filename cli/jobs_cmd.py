"""``continuum status``, ``result`` and ``cancel``: look at and act on jobs in Redis.

Exit codes: ``status`` 0 when the job (or batch) exists, 1 when it does not; ``result``
0 succeeded, 3 partial (the partial result is written), 1 failed, cancelled, not ended
yet or unknown; ``cancel`` 0 cancelled, 1 unknown or already ended. Each exits 2 when
``REDIS_URL`` or ``CONTINUUM_BROKER_URL`` is no URL it can use.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from cli.connect import connect
from core.ids import check_id
from workers.errors import NoRedis


def register(commands: Any) -> None:
    s = commands.add_parser(
        "status",
        help="show a job's (or a batch's) state and progress",
        description="Show a job's state (queued, running, succeeded, partial, failed, "
        "cancelled), iteration, progress, fallbacks and errors. Uses REDIS_URL, else the "
        "embedded Redis in ./var/redis.",
    )
    s.add_argument("id", metavar="ID", type=an_id, help="job id (or batch id with --batch)")
    s.add_argument("--batch", action="store_true", help="ID is a batch: aggregated progress")
    s.add_argument("--json", action="store_true", help="print JSON (the status API's shape)")
    s.set_defaults(run=run_status)

    r = commands.add_parser(
        "result",
        help="write an ended job's result",
        description="Write the result of an ended job to FILE (or stdout). Exit 0 "
        "succeeded, 3 partial (the partial result is written), 1 otherwise.",
    )
    r.add_argument("id", metavar="ID", type=an_id, help="job id")
    r.add_argument("-o", "--output", metavar="FILE", help="write the result here")
    r.set_defaults(run=run_result)

    c = commands.add_parser(
        "cancel",
        help="cancel a job (or a batch); it stops at its next iteration",
        description="Cancel a job, or every job of a batch with --batch. A job stops at "
        "its next iteration; what it has produced so far is kept.",
    )
    c.add_argument("id", metavar="ID", type=an_id, help="job id (or batch id with --batch)")
    c.add_argument("--batch", action="store_true", help="ID is a batch: cancel all its jobs")
    c.set_defaults(run=run_cancel)


def an_id(value: str) -> str:
    """An argument that must be a job or batch id (``core.ids``): a usage error else."""
    try:
        return check_id(value, "id")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _store(settings: Any) -> Any:
    from workers.store import JobStore  # noqa: PLC0415

    assert settings.redis_url is not None
    return JobStore.from_url(
        settings.redis_url, settings.key_prefix, retention_s=settings.retention_s
    )


def _fail(command: str, message: str) -> int:
    print(f"continuum {command}: {message}", file=sys.stderr)
    return 1


def _no_redis(exc: NoRedis) -> int:
    print(exc, file=sys.stderr)  # it names the command already
    return exc.code


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _print_job(view: dict[str, Any]) -> None:
    p = view["progress"]
    line = f"job {view['job_id']}: {view['status']} (iteration {view['iteration']})"
    print(line)
    parts = [f"{p['chars']:,} chars"]
    if p["records"]:
        parts.append(f"{p['records']:,} records")
    if p["percent"] is not None:
        parts.append(f"{p['percent']}% (as the model reports it)")
    print("  progress: " + ", ".join(parts))
    for f in view["fallbacks"]:
        print(
            f"  fallback: {f['from_profile']} -> {f['to_profile']} at iteration "
            f"{f['iteration']}: {f['reason']}"
        )
    for label in ("reason", "error", "last_warning"):
        if view[label]:
            print(f"  {label.replace('_', ' ')}: {view[label]}")
    if view["batch"]:
        print(f"  batch: {view['batch']}")
    if view.get("callback"):  # pending, delivered, retrying: ..., refused: ..., undeliverable: ...
        print(f"  callback: {view['callback']}")
    times = f"  created {_when(view['created_at'])}, updated {_when(view['updated_at'])}"
    if view["expires_at"] is not None:
        times += f", expires {_when(view['expires_at'])}"
    print(times)


def _print_batch(view: dict[str, Any]) -> None:
    counts = ", ".join(f"{n} {k}" for k, n in view["counts"].items() if n)
    state = "done" if view["done"] else "in progress"
    print(f"batch {view['batch_id']}: {view['ended']}/{view['size']} ended ({state})")
    print(f"  jobs: {counts or 'none yet'}")
    print(f"  {view['iterations']:,} iterations, {view['chars']:,} chars")
    if view["expired"]:
        print(f"  {view['expired']:,} ended jobs already deleted (expired)")
    if view["expires_at"] is not None:
        print(f"  expires {_when(view['expires_at'])}")


def run_status(args: argparse.Namespace) -> int:
    from workers.views import batch_view, job_view  # noqa: PLC0415

    try:
        with connect("status") as settings:
            store = _store(settings)
            if args.batch:
                batch = store.batch_status(args.id)
                if batch is None:
                    return _fail("status", f"no such batch: {args.id}")
                view = batch_view(batch)
                printer = _print_batch
            else:
                record = store.load(args.id)
                if record is None:
                    return _fail("status", f"no such job: {args.id}")
                view = job_view(record, metadata=args.json)
                printer = _print_job
    except NoRedis as exc:
        return _no_redis(exc)
    if args.json:
        print(json.dumps(view, ensure_ascii=False, indent=2))
    else:
        printer(view)
    return 0


def run_result(args: argparse.Namespace) -> int:
    from workers.errors import OutputChanged  # noqa: PLC0415
    from workers.store import JobStatus  # noqa: PLC0415

    try:
        with connect("result") as settings:
            store = _store(settings)
            record = store.load(args.id)
            if record is None:
                return _fail("result", f"no such job: {args.id}")
            parts = store.iter_result(record)
            status = record.status
            if parts is None or status not in {JobStatus.SUCCEEDED, JobStatus.PARTIAL}:
                why = record.error or (record.result or {}).get("reason") or ""
                detail = f": {why}" if why else ""
                if status in {JobStatus.QUEUED, JobStatus.RUNNING}:
                    detail = f" (iteration {record.iteration}); its result is not ready"
                return _fail("result", f"job {args.id} is {status.value}{detail}")
            write_parts(parts, args.output)  # a part at a time: never whole here
    except NoRedis as exc:
        return _no_redis(exc)
    except OutputChanged as exc:
        return _fail("result", str(exc))
    if status is JobStatus.PARTIAL:
        reason = (record.result or {}).get("reason")
        print(f"continuum result: job {args.id} is partial: {reason}", file=sys.stderr)
        return 3
    return 0


def write_parts(parts: Iterator[str], output: str | None) -> None:
    """Write a result's parts to ``output`` (a path) or stdout, one at a time."""
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            for part in parts:
                fh.write(part)
    else:
        for part in parts:
            sys.stdout.write(part)
        sys.stdout.flush()


def run_cancel(args: argparse.Namespace) -> int:
    try:
        with connect("cancel") as settings:
            store = _store(settings)
            if args.batch:
                cancelled, size = store.cancel_batch(args.id)
                if not size:
                    return _fail("cancel", f"no such batch: {args.id}")
                print(f"batch {args.id}: {cancelled} of {size} jobs cancelled")
                return 0
            outcome = store.cancel(args.id)
            record = store.load(args.id)
    except NoRedis as exc:
        return _no_redis(exc)
    if outcome is None or record is None:
        return _fail("cancel", f"no such job: {args.id}")
    if not outcome:
        return _fail("cancel", f"job {args.id} had already ended ({record.status.value})")
    print(f"job {args.id}: cancelled at iteration {record.iteration}")
    return 0
