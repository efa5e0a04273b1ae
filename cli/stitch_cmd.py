"""``continuum stitch``: merge fragment files offline, exactly as the engine merges replies."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from core import stitch
from core.models import OutputFormat


def register(commands: Any) -> None:
    p = commands.add_parser(
        "stitch",
        help="merge truncated fragment files into one document",
        description="Merge fragment files (in order) into one document and print it. "
        "Exit 0 when every fragment merged, 1 when one could not be (the best valid "
        "result is still printed), 2 on usage errors.",
    )
    p.add_argument(
        "--format",
        "-f",
        required=True,
        choices=[f.value for f in OutputFormat],
        help="format of the fragments (auto: detect from the first one)",
    )
    p.add_argument("files", nargs="+", metavar="FILE", type=Path, help="fragment files, in order")
    p.add_argument(
        "--complete",
        action="store_true",
        help="print the closed, valid JSON (open strings, arrays and objects closed)",
    )
    p.set_defaults(run=run)


def _read(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        print(
            f"continuum stitch: {path}: not UTF-8 ({exc.reason} at byte {exc.start}); "
            "invalid bytes replaced",
            file=sys.stderr,
        )
        return data.decode("utf-8", errors="replace")


#: Exit status when every fragment merged but a seam had two plausible readings.
DOUBTED = 3


def run(args: argparse.Namespace) -> int:
    fragments = []
    for path in args.files:
        try:
            fragments.append(_read(path))
        except OSError as exc:
            print(f"continuum stitch: cannot read {path}: {exc.strerror}", file=sys.stderr)
            return 2
    if args.complete and args.format not in ("json", "auto"):
        print("continuum stitch: --complete applies to JSON only", file=sys.stderr)
        return 2
    result = stitch(fragments, args.format)
    for index in result.failed:
        print(
            f"continuum stitch: fragment {index + 1} ({args.files[index]}) could not be merged",
            file=sys.stderr,
        )
    for warning in result.warnings:
        print(f"continuum stitch: {warning}", file=sys.stderr)
    if args.complete:
        if result.complete is None:
            print("continuum stitch: no valid JSON could be made of the fragments", file=sys.stderr)
            return 1
        sys.stdout.write(result.complete)
    else:
        sys.stdout.write(result.text)
    if not result.ok:
        return 1
    for doubt in result.doubts:
        print(f"continuum stitch: doubt: {doubt}", file=sys.stderr)
    return DOUBTED if result.doubts else 0
