"""The ``continuum`` command line.

Exit codes follow the usual convention: 0 success, 1 the work could not be done in full,
2 a usage error (argparse's own code).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cli import (
    api_cmd,
    demo_cmd,
    flower_cmd,
    jobs_cmd,
    run_cmd,
    sim_cmd,
    stitch_cmd,
    submit_cmd,
    up_cmd,
    worker_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="continuum",
        description="Run LLM generations longer than a model's output limit.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run_cmd.register(commands)
    stitch_cmd.register(commands)
    sim_cmd.register(commands)
    worker_cmd.register(commands)
    submit_cmd.register(commands)
    jobs_cmd.register(commands)
    flower_cmd.register(commands)
    api_cmd.register(commands)
    up_cmd.register(commands)
    demo_cmd.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
