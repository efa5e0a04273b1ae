"""``continuum sim``: run the simulated OpenAI-compatible model (``docs/sim.md``)."""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any

from sim.options import SimOptions


def register(commands: Any) -> None:
    p = commands.add_parser(
        "sim",
        help="run the simulated LLM (an OpenAI-compatible server, no API key needed)",
        description="Serve a simulated OpenAI-compatible model that writes long, "
        "deterministic documents and continues them when cut. Prints the base URL to "
        "use as OPENAI_BASE_URL. A request's model name 'sim:key=value,...' overrides "
        "the options for that request.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    p.add_argument("--port", type=int, default=8100, help="port (0: any free port)")
    p.add_argument("--seed", type=int, default=None, help="seed of documents and chaos draws")
    p.add_argument(
        "--options",
        default="",
        metavar="K=V,...",
        help="e.g. 'format=json,size=30000,overlap=120,fence=0.3,latency=0.5' "
        f"(keys: {', '.join(SimOptions.model_fields)})",
    )
    p.add_argument("--log-level", default="warning", help="uvicorn log level")
    p.set_defaults(run=run)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run(args: argparse.Namespace) -> int:
    try:
        options = SimOptions.parse(args.options)
        if args.seed is not None:
            options = SimOptions.parse(f"seed={args.seed}", options)
    except ValueError as exc:
        print(f"continuum sim: {exc}", file=sys.stderr)
        return 2
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        print(f"continuum sim: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    import uvicorn  # noqa: PLC0415  (imported when serving, not for every command)

    from sim.app import create_app  # noqa: PLC0415

    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"OPENAI_BASE_URL=http://{host}:{port}/v1", flush=True)
    config = uvicorn.Config(create_app(options), log_level=args.log_level, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0
