"""``continuum api``: the status API (FastAPI on uvicorn)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli.connect import connect
from workers.errors import NoRedis


def register(commands: Any) -> None:
    p = commands.add_parser(
        "api",
        help="run the status API (submit jobs, follow them, fetch results)",
        description="Serve the status API (OpenAPI at /docs). Uses REDIS_URL, else the "
        "embedded Redis in ./var/redis. /v1 needs the bearer token CONTINUUM_API_TOKEN; "
        "without one the API serves only on a loopback address (or with --insecure-local).",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--log-level", default="info", help="uvicorn log level")
    p.add_argument(
        "--insecure-local",
        action="store_true",
        help="serve /v1 without a token even on a non-loopback address (only this machine "
        "can reach it: a container's private network, a firewall); "
        "also CONTINUUM_API_INSECURE_LOCAL=1",
    )
    p.set_defaults(run=run_api)


def run_api(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print("continuum api: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    from api.auth import LOCAL_SETTING, TOKEN_SETTING, is_loopback  # noqa: PLC0415
    from api.settings import api_settings  # noqa: PLC0415

    given = api_settings()
    local = given.api_insecure_local or args.insecure_local
    if given.api_token is None and not (local or is_loopback(args.host)):
        print(
            f"continuum api: refusing to serve /v1 on {args.host} without a token: set "
            f"{TOKEN_SETTING}, bind to loopback (--host 127.0.0.1) or pass --insecure-local",
            file=sys.stderr,
        )
        return 2
    if given.api_token is None and not is_loopback(args.host):
        print(
            f"continuum api: warning: /v1 has no token on {args.host} "
            f"(--insecure-local or {LOCAL_SETTING})",
            file=sys.stderr,
        )
    try:
        with connect("api", announce=True) as found:
            import uvicorn  # noqa: PLC0415

            from api.app import create_app  # noqa: PLC0415

            settings = api_settings(found)  # REDIS_URL may be the embedded Redis's now
            if settings.api_token is None:
                settings = settings.model_copy(update={"api_insecure_local": True})
            print(f"continuum api: http://{args.host}:{args.port}/docs", flush=True)
            uvicorn.run(
                create_app(settings), host=args.host, port=args.port, log_level=args.log_level
            )
    except NoRedis as exc:
        print(exc, file=sys.stderr)
        return exc.code
    return 0
