"""``continuum run``: one whole job in this process, no broker.

Exit codes: 0 complete, 3 a partial (fallback) result, 1 failure, 2 usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core import Decision, Fallback, Finish, JobSpec, JobState, OutputFormat, Retry
from core.models import ContinuationConfig
from core.models import describe_errors as describe

EXIT = {"succeeded": 0, "partial": 3, "failed": 1}


def register(commands: Any) -> None:
    p = commands.add_parser(
        "run",
        help="run one generation job in this process (no broker)",
        description="Run one job to its end in this process: call the model, continue it "
        "where it was cut, merge. Progress goes to stderr, the result to OUT (or stdout), "
        "the continuation metadata as JSON to stderr (or --metadata FILE). Exit 0 complete, "
        "3 partial result, 1 failure, 2 usage error.",
    )
    add_spec_options(p)
    p.add_argument("--metadata", type=Path, metavar="FILE", help="write the metadata here")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    p.set_defaults(run=run)


def add_spec_options(
    p: argparse.ArgumentParser, *, output_help: str = "write the result here"
) -> None:
    """The options :func:`build_spec` reads (shared by ``run`` and ``submit``), and ``-o``."""
    p.add_argument(
        "--provider",
        action="append",
        dest="providers",
        metavar="P",
        help="provider profile, repeat for fallbacks (default: sim unless a key is set)",
    )
    p.add_argument("--model", help="model name (default: the profile's)")
    p.add_argument("--format", required=True, choices=[f.value for f in OutputFormat])
    # The defaults are the job spec's: one place decides them, whichever way a job comes.
    defaults = JobSpec.model_fields
    p.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help=f"output limit of one model call ({defaults['max_output_tokens'].default})",
    )
    p.add_argument(
        "--max-attempts",
        type=int,
        metavar="K",
        help=f"most continuation calls ({ContinuationConfig.model_fields['max_attempts'].default})",
    )
    prompt = p.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", metavar="TEXT")
    prompt.add_argument("--prompt-file", type=Path, metavar="FILE")
    p.add_argument("-o", "--output", type=Path, metavar="OUT", help=output_help)
    p.add_argument(
        "--json-schema",
        type=Path,
        metavar="FILE",
        help="validate the JSON result; still invalid after a repair: failed (exit 1)",
    )
    p.add_argument(
        "--on-invalid",
        choices=["raise_error", "return_partial"],
        help="a result still invalid after the repairs: fail (raise_error, the default) or "
        "end partial (return_partial, exit 3); the result is kept either way",
    )


def _usage(message: str) -> int:
    print(f"continuum run: {message}", file=sys.stderr)
    return 2


def build_spec(args: argparse.Namespace) -> JobSpec:
    """The job spec from the options; raises ValueError/ValidationError when they are bad."""
    prompt = args.prompt
    if args.prompt_file is not None:
        prompt = args.prompt_file.read_text(encoding="utf-8")
    data: dict[str, Any] = {
        "prompt": prompt,
        "format": args.format,
        "providers": args.providers or [],
    }
    if args.max_tokens is not None:
        data["max_output_tokens"] = args.max_tokens
    if args.model:
        data["model"] = args.model
    if args.max_attempts is not None:
        data["continuation"] = {"max_attempts": args.max_attempts}
    if args.json_schema is not None:
        try:
            schema = json.loads(args.json_schema.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{args.json_schema}: not JSON ({exc})") from None
        data["validation"] = {"json_schema": schema}
        if args.on_invalid is not None:
            data["validation"]["on_invalid"] = args.on_invalid
    elif args.on_invalid is not None:
        raise ValueError("--on-invalid needs --json-schema")
    return JobSpec.model_validate(data)


def _progress(state: JobState, decision: Decision) -> None:
    what = type(decision).__name__.lower()
    parts = [
        f"[{state.iteration}] {what:<8}",
        f"+{len(decision.append):,} chars",
        f"total {state.length:,}",
    ]
    if state.metadata.final_record_count:
        parts.append(f"records {state.metadata.final_record_count:,}")
    if state.stall_percent is not None:
        parts.append(f"progress {state.stall_percent}%")
    if isinstance(decision, Retry):
        parts.append(f"({decision.reason})")
    if isinstance(decision, Fallback):
        parts.append(f"({decision.reason})")
    if isinstance(decision, Finish) and decision.replace:
        parts.append("(output replaced by a repaired one)")
    print("  ".join(parts), file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    # Imported here: `continuum stitch` and `--help` need none of the HTTP stack.
    from workers.calls import ProviderPool  # noqa: PLC0415
    from workers.errors import UnknownProfile  # noqa: PLC0415
    from workers.local import Outcome, run_job  # noqa: PLC0415
    from workers.providers.registry import SIM_SWITCH, load_profiles  # noqa: PLC0415

    try:
        spec = build_spec(args)
    except ValidationError as exc:
        return _usage(describe(exc))
    except (OSError, ValueError) as exc:
        return _usage(str(exc))
    # One job on this machine: the simulated LLM serves it when no key is set (and no
    # provider is named), so the command works anywhere; workers leave the sim off.
    os.environ.setdefault(SIM_SWITCH, "1")
    try:
        profiles = load_profiles(os.environ)
    except ValueError as exc:
        return _usage(str(exc))
    pool = ProviderPool(profiles)
    try:
        result = run_job(spec, pool, on_iteration=None if args.quiet else _progress)
    except UnknownProfile as exc:
        return _usage(str(exc))
    finally:
        pool.close()
    metadata = result.state.metadata.model_dump(mode="json")
    metadata["outcome"] = result.outcome.value
    metadata["reason"] = result.reason
    blob = json.dumps(metadata, ensure_ascii=False, indent=2)
    if args.metadata is not None:
        args.metadata.write_text(blob + "\n", encoding="utf-8")
    else:
        print(blob, file=sys.stderr)
    if result.output is not None:
        if args.output is not None:
            args.output.write_text(result.output, encoding="utf-8")
        else:
            sys.stdout.write(result.output)
            sys.stdout.flush()
    if result.outcome is not Outcome.SUCCEEDED:
        print(f"continuum run: {result.outcome.value}: {result.reason}", file=sys.stderr)
    return EXIT[result.outcome.value]
