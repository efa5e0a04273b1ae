"""``continuum api``: the status API (FastAPI on uvicorn)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli.connect import NoRedis, redis_url


def register(commands: Any) -> None:
    p = commands.add_parser(
        "api",
        help="run the status API (submit jobs, follow them, fetch results)",
        description="Serve the status API (OpenAPI at /docs). Uses REDIS_URL, else the "
        "embedded Redis in ./var/redis. Set CONTINUUM_API_TOKEN to require a bearer token.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--log-level", default="info", help="uvicorn log level")
    p.set_defaults(run=run_api)


def run_api(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print("continuum api: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    try:
        with redis_url("api", announce=True):
            import uvicorn  # noqa: PLC0415

            from api.app import create_app  # noqa: PLC0415

            print(f"continuum api: http://{args.host}:{args.port}/docs", flush=True)
            uvicorn.run(create_app(), host=args.host, port=args.port, log_level=args.log_level)
    except NoRedis as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0
