"""The whole stack on one machine: Redis (embedded unless ``REDIS_URL``), workers, the
watchdog, the status API and Flower, each a child process with its log in ``var/log``.

Used by ``continuum up`` and ``continuum demo``. Children run in their own process group
(a Ctrl-C reaches this process only), so the stack stops them in order: workers and the
rest with SIGTERM (SIGKILL after a grace period), then the embedded Redis last. A
``Supervisor`` restarts a child that dies, with backoff, and gives up on a crash loop.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from workers.embedded import EmbeddedRedis, redact_url, resolve_redis_url
from workers.errors import CrashLoop, StackError

CONTINUUM = [sys.executable, "-m", "cli.main"]
READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0
# A child that dies is started again after 0.5 s, then 1, 2, 4, 8 s while it keeps dying;
# one that dies again after RESTART_LIMIT restarts within RESTART_WINDOW_S is crash-looping.
RESTART_LIMIT = 5
RESTART_WINDOW_S = 60.0
RESTART_BACKOFF_S = 0.5
RESTART_BACKOFF_CAP_S = 8.0

Say = Callable[[str], None]


@dataclass
class Component:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    args: list[str]
    extra: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class Stack:
    """Start components with ``redis()``, ``worker()``, ``beat()``, ``api()``, ``flower()``;
    ``stop()`` ends them all (also on exceptions, as a context manager)."""

    root: Path = field(default_factory=Path.cwd)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    say: Say = field(default=lambda line: print(line, flush=True))
    components: list[Component] = field(default_factory=list)
    redis_url: str | None = None
    _server: EmbeddedRedis | None = None
    _workers: int = 0

    @property
    def log_dir(self) -> Path:
        path = self.root / "var" / "log"
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- components --------------------------------------------------------------------
    def redis(self) -> str:
        given = bool(self.env.get("REDIS_URL", "").strip())
        url, server = resolve_redis_url(self.env, data_dir=self.root / "var" / "redis")
        self._server, self.redis_url = server, url
        self.env["REDIS_URL"] = url
        if server is not None:
            how = f"embedded, AOF in {server.data_dir}"
        else:
            how = "REDIS_URL" if given else "embedded, started by another continuum process"
        self.say(f"  redis    {redact_url(url)}  ({how})")
        return url

    def _spawn(
        self, name: str, args: list[str], extra: Mapping[str, str] | None = None
    ) -> Component:
        log = self.log_dir / f"{name}.log"
        component = Component(name, self._popen(log, args, extra or {}), log, args, extra or {})
        self.components.append(component)
        return component

    def _popen(
        self, log: Path, args: list[str], extra: Mapping[str, str]
    ) -> subprocess.Popen[bytes]:
        with log.open("ab") as fh:
            return subprocess.Popen(
                [*CONTINUUM, *args],
                env={**self.env, **extra},
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def restart(self, component: Component) -> None:
        """Start a dead component again, as it was started, appending to its log (a line
        there marks the restart). It is not waited for: a supervisor must not block."""
        with component.log.open("a") as fh:
            fh.write(f"--- {_exit(component.proc.returncode)}; restarted by the supervisor ---\n")
        component.proc = self._popen(component.log, component.args, component.extra)

    def _wait_for(self, component: Component, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not ready():
            if component.proc.poll() is not None:
                raise StackError(
                    f"{component.name} exited with code {component.proc.returncode}; "
                    f"its log ({component.log}):\n{component.tail()}"
                )
            if time.monotonic() > deadline:
                raise StackError(
                    f"{component.name} not ready after {READY_TIMEOUT_S:.0f} s; "
                    f"its log ({component.log}):\n{component.tail()}"
                )
            time.sleep(0.1)

    def _log_says(self, component: Component, needle: str, offset: int) -> Callable[[], bool]:
        def ready() -> bool:
            try:
                with component.log.open("rb") as fh:
                    fh.seek(offset)
                    return needle.encode() in fh.read()
            except OSError:
                return False

        return ready

    def _offset(self, name: str) -> int:
        log = self.log_dir / f"{name}.log"
        return log.stat().st_size if log.exists() else 0

    def worker(self, concurrency: int = 16) -> Component:
        self._workers += 1
        name = f"worker-{self._workers}"
        offset = self._offset(name)
        c = self._spawn(name, ["worker", f"--concurrency={concurrency}", "--loglevel=INFO"])
        self._wait_for(c, self._log_says(c, " ready.", offset))
        self.say(f"  {name:<8} ready, {concurrency} iterations in flight (pid {c.proc.pid})")
        return c

    def beat(self) -> Component:
        offset = self._offset("beat")
        c = self._spawn("beat", ["beat"])
        self._wait_for(c, self._log_says(c, "continuum beat: watching", offset))
        self.say(f"  beat     watchdog running (pid {c.proc.pid})")
        return c

    def api(self, port: int, host: str = "127.0.0.1") -> Component:
        c = self._spawn("api", ["api", f"--host={host}", f"--port={port}"])
        c.url = f"http://{host}:{port}"
        self._wait_for(c, lambda: _http_ok(f"{c.url}/healthz"))
        self.say(f"  api      {c.url}/docs")
        return c

    def flower(self, port: int, host: str = "127.0.0.1") -> Component:
        c = self._spawn("flower", ["flower", f"--port={port}", f"--address={host}"])
        c.url = f"http://{host}:{port}/"
        self._wait_for(c, lambda: _http_ok(c.url or ""))
        self.say(f"  flower   {c.url}")
        return c

    # -- lifecycle ---------------------------------------------------------------------
    def kill(self, component: Component) -> None:
        """SIGKILL, as a crash would (a ``Supervisor`` then restarts it)."""
        if component.proc.poll() is None:
            component.proc.send_signal(signal.SIGKILL)
        component.proc.wait()

    def stop(self) -> None:
        # A second Ctrl-C (or the one a wrapper such as `uv run` forwards) must not cut
        # the shutdown short and leave children or Redis behind. Ignored only while it
        # runs: a process that goes on (a test) must not pass SIG_IGN to its next children.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            self._stop_all()
        finally:
            signal.signal(signal.SIGINT, previous)

    def _stop_all(self) -> None:
        for c in self.components:
            if c.proc.poll() is None:
                c.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for c in self.components:
            try:
                c.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                c.proc.kill()
                c.proc.wait()
        self.components.clear()
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Supervisor:
    """Restarts the stack's components that die, as a process manager would; call
    ``check()`` every fraction of a second.

    A dead component is started again after a backoff that doubles with each restart in
    the last ``window_s`` seconds (``backoff_s`` up to ``backoff_cap_s``), so a component
    that dies at once is not restarted in a tight loop. One that dies again after ``limit``
    restarts within ``window_s`` is crash-looping: ``check()`` raises ``CrashLoop`` (one
    line: which component, how it died, its log) and the caller stops the stack.
    Each exit and restart is said (``stack.say``) and marked in the component's log.
    """

    stack: Stack
    limit: int = RESTART_LIMIT
    window_s: float = RESTART_WINDOW_S
    backoff_s: float = RESTART_BACKOFF_S
    backoff_cap_s: float = RESTART_BACKOFF_CAP_S
    clock: Callable[[], float] = time.monotonic
    _restarts: dict[str, deque[float]] = field(default_factory=dict)
    _due: dict[str, float] = field(default_factory=dict)

    def check(self) -> None:
        now = self.clock()
        for c in self.stack.components:
            if c.name not in self._due and c.proc.poll() is not None:
                self._schedule(c, now)
        for c in self.stack.components:
            due = self._due.get(c.name)
            if due is not None and due <= now:
                del self._due[c.name]
                self.stack.restart(c)
                self._restarts[c.name].append(now)
                self.stack.say(f"  {c.name:<8} restarted (pid {c.proc.pid})")

    def _schedule(self, c: Component, now: float) -> None:
        recent = self._restarts.setdefault(c.name, deque())
        while recent and now - recent[0] > self.window_s:
            recent.popleft()
        code = _exit(c.proc.returncode)
        if len(recent) >= self.limit:
            raise CrashLoop(
                f"{c.name} died again after {len(recent)} restarts within {self.window_s:g} s "
                f"({code}); giving up, see {c.log}"
            )
        delay = min(self.backoff_cap_s, self.backoff_s * 2.0 ** len(recent))
        self._due[c.name] = now + delay
        self.stack.say(f"  {c.name:<8} {code}; restarting it in {delay:g} s (log: {c.log})")


def _exit(code: int | None) -> str:
    """``exited with code 1``, ``killed by SIGKILL``."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exited with code {code}"


def _http_ok(url: str) -> bool:
    import httpx  # noqa: PLC0415

    try:
        return httpx.get(url, timeout=1.0).status_code < 500
    except httpx.HTTPError:
        return False
