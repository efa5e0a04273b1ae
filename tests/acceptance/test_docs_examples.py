"""Every shell and Python example in README.md and docs/*.md, run as written against the
default stack (issue 14), so that no documented example can rot unnoticed.

The examples are read from the Markdown, never copied here. A fenced block in ``sh``,
``bash``, ``console`` (its ``$ `` lines) or ``python`` is run, unless the comment right
above its fence says why it cannot be: ``<!-- docs-test: skip REASON -->`` (a server that
runs until stopped, Docker, a real provider's key, what CI runs itself). A new example
is therefore run until someone decides otherwise, in the Markdown, with a reason. Blocks
in other languages show data or output and are never run; a language this file does not
know fails ``test_every_block_is_decided``.

A document's blocks run in order in one ``bash`` session under ``set -e`` (a Python block
through the project's interpreter), so a block may use what an earlier one set; any
failing command fails the test, naming the block. Every job the document's examples
create must then end ``succeeded`` (or ``cancelled``: an example cancelled it), unless
``<!-- docs-test: expect JOB_ID STATUS -->`` above the block that creates it says how it
ends: an example whose job ends partial or failed is a broken example.

The stack is ``continuum up`` as a newcomer runs it (a fresh folder, so an embedded Redis
in ``./var/redis``; two workers, the watchdog and the API; the simulated LLM), on a free
port, with a token. The examples reach it through the environment (``CONTINUUM_API_URL``,
``CONTINUUM_API_TOKEN``, ``REDIS_URL``) and the folder they run in (``continuum`` commands
find its embedded Redis there). The test has no provider key: a profiles file points the
``openai`` profile at ``continuum sim``, so the examples that name it run through the
OpenAI adapter against the simulator. ``uv run`` is the real uv (``UV_PROJECT`` names the
repository, ``UV_NO_SYNC`` keeps it from changing the environment under the suite).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from redis import Redis

from tests.acceptance.procs import ROOT
from tests.conftest import free_port
from workers.embedded import running_url
from workers.store import TERMINAL, JobRecord, JobStore

DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
RUN = {"sh", "bash", "console", "python"}
#: Languages of blocks that show something (data, output, configuration): never run.
SHOWN = {"", "json", "toml", "yaml", "text", "http", "csv", "markdown", "md"}
OPEN = re.compile(r"^(?P<fence>`{3,})(?P<lang>[\w+-]*)\s*$")
MARKER = re.compile(r"^<!--\s*docs-test:\s*(?P<what>.*?)\s*-->$")
COMMENT = re.compile(r"^<!--.*-->$")
STATUSES = {"succeeded", "partial", "failed", "cancelled"}
#: How a job an example creates may end when no marker says otherwise.
ENDS = {"succeeded", "cancelled"}
PY_END = "__DOCS_TEST_PYTHON__"
READY_S = 90.0
DOC_TIMEOUT_S = 300.0
JOBS_END_S = 120.0


@dataclass
class Block:
    """One fenced block: where it is, its language and text, and what its markers say."""

    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    skip: str | None = None
    expect: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def read_blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The fenced blocks of a Markdown file, with the ``docs-test`` markers right above
    each (the run of comment lines that ends on the line before its fence)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = OPEN.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence = opening["fence"]
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == fence), len(lines))
        block = Block(
            doc=str(path.relative_to(root)),
            line=i + 1,
            lang=opening["lang"].lower(),
            code="\n".join(lines[i + 1 : end]) + "\n",
        )
        above = i - 1
        while above >= 0 and COMMENT.match(lines[above].strip()):
            marker = MARKER.match(lines[above].strip())
            if marker is not None:
                read_marker(block, marker["what"])
            above -= 1
        found.append(block)
        i = end + 1
    return found


def read_marker(block: Block, what: str) -> None:
    """``skip REASON`` or ``expect JOB_ID STATUS``; anything else is a problem."""
    verb, _, rest = what.partition(" ")
    args = rest.split()
    if verb == "skip" and args:
        block.skip = rest.strip()
    elif verb == "expect" and len(args) == 2 and args[1] in STATUSES:
        block.expect[args[0]] = args[1]
    else:
        block.problems.append(
            f"marker {what!r}: expected 'skip REASON' or 'expect JOB_ID "
            f"{'|'.join(sorted(STATUSES))}'"
        )


def console_commands(code: str) -> str:
    """The commands of a console block: its ``$ `` lines and their ``\\`` continuations."""
    out: list[str] = []
    going_on = False
    for line in code.splitlines():
        if line.startswith("$ ") or going_on:
            out.append(line[2:] if line.startswith("$ ") and not going_on else line)
            going_on = line.endswith("\\")
    return "\n".join(out) + "\n"


def script(blocks: list[Block]) -> str:
    """One bash session running the blocks in order; each announces itself on stderr so a
    failure names its block."""
    parts = ["set -e"]
    for block in blocks:
        parts.append(f"echo '--- docs-test: {block.where}' >&2")
        if block.lang == "python":
            assert PY_END not in block.code, block.where
            interpreter = sys.executable.replace("'", "'\\''")
            parts.append(f"'{interpreter}' - <<'{PY_END}'\n{block.code}{PY_END}")
        elif block.lang == "console":
            parts.append(console_commands(block.code))
        else:
            parts.append(block.code)
    return "\n".join(parts) + "\n"


def runnable(path: Path) -> list[Block]:
    return [b for b in read_blocks(path) if b.lang in RUN and b.skip is None]


# -- every block is decided (fast: no stack) ------------------------------------------


def test_every_block_is_decided() -> None:
    """Each block's language is known, each marker is well-formed and sits above a block
    that would run, and a skip says why: a new example is run, or skipped on purpose."""
    problems = []
    for path in DOCS:
        for block in read_blocks(path):
            problems += [f"{block.where}: {p}" for p in block.problems]
            if block.lang not in RUN | SHOWN:
                problems.append(
                    f"{block.where}: a ```{block.lang} block: add the language to RUN "
                    "(its examples are run) or SHOWN (it shows data) in this test"
                )
            elif block.lang in SHOWN and (block.skip or block.expect):
                problems.append(f"{block.where}: a docs-test marker above a block never run")
            elif block.skip and block.expect:
                problems.append(f"{block.where}: expects jobs of a block that is skipped")
    assert not problems, "\n".join(problems)
    # The examples this test exists for are found (the parser has not gone blind).
    assert len(runnable(ROOT / "README.md")) >= 8
    assert len(runnable(ROOT / "docs" / "api.md")) >= 10


def test_a_marker_and_a_console_block_read_as_documented(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "<!-- docs-test: skip a server -->\n```sh\nserve\n```\n\n"
        "<!-- other -->\n<!-- docs-test: expect job-1 failed -->\n```console\n"
        "$ echo a \\\n  b\nout\n```\n\n<!-- docs-test: expect job-2 done -->\n```json\n{}\n```\n",
        encoding="utf-8",
    )
    skipped, console, shown = read_blocks(doc, root=tmp_path)
    assert skipped.skip == "a server" and skipped.code == "serve\n"
    assert console.expect == {"job-1": "failed"} and console.line == 8
    assert console_commands(console.code) == "echo a \\\n  b\n"
    assert shown.problems and "expected 'skip REASON'" in shown.problems[0]


# -- the examples, run -----------------------------------------------------------------


@dataclass
class DocsStack:
    folder: Path
    env: dict[str, str]
    redis_url: str

    def store(self) -> JobStore:
        return JobStore(Redis.from_url(self.redis_url))

    def job_ids(self) -> set[str]:
        """Every job in the stack's Redis (the ``continuum:{n}job:<id>`` hashes)."""
        redis = Redis.from_url(self.redis_url)
        ids = set()
        for key in redis.scan_iter(match="continuum:{*}job:*", count=1000):
            found = _JOB_KEY.fullmatch(key.decode())
            if found is not None:
                ids.add(found.group(1))
        return ids


#: A job's hash under the default prefix and its shard's hash tag (not its ``:out`` etc.).
_JOB_KEY = re.compile(r"continuum:\{\d+\}job:([^:]+)")


def _wait_for_line(log: Path, needle: str, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + READY_S
    while True:
        text = log.read_text(errors="replace") if log.exists() else ""
        if needle in text:
            return text
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no {needle!r} (exit {proc.poll()}):\n{text[-3000:]}")
        time.sleep(0.1)


def _uv() -> str:
    """The uv binary: the one running the suite (``UV``), else the one on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        pytest.fail("the docs' examples run `uv run ...`: install uv (pip install uv)")
    return found


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocsStack]:
    folder = tmp_path_factory.mktemp("docs-examples")
    logs = tmp_path_factory.mktemp("docs-logs")
    drop = ("REDIS_URL", "CONTINUUM_", "OPENAI_", "ANTHROPIC_", "SENTRY_", "UV_")
    base = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k != "UV"}
    base["PYTHONPATH"] = str(ROOT)
    procs: list[subprocess.Popen[bytes]] = []

    def start(
        name: str, args: list[str], env: dict[str, str]
    ) -> tuple[subprocess.Popen[bytes], Path]:
        log = logs / f"{name}.log"
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                [sys.executable, "-m", "cli.main", *args],
                cwd=folder,
                env=env,
                stdout=fh,
                stderr=subprocess.STDOUT,
            )
        procs.append(proc)
        return proc, log

    try:
        sim, sim_log = start("sim", ["sim", "--port", "0"], base)
        sim_url = re.search(r"OPENAI_BASE_URL=(\S+)", _wait_for_line(sim_log, "/v1", sim))
        assert sim_url is not None
        profiles = folder.parent / f"{folder.name}-profiles.toml"
        profiles.write_text(
            "# The examples' `openai` profile: the simulator, through the OpenAI adapter.\n"
            f'[profiles.openai]\nbase_url = "{sim_url[1]}"\napi_key_env = "DOCS_TEST_SIM_KEY"\n',
            encoding="utf-8",
        )
        token = secrets.token_hex(16)
        env = {
            **base,
            "CONTINUUM_API_TOKEN": token,
            "CONTINUUM_PROFILES": str(profiles),
            "DOCS_TEST_SIM_KEY": "the simulator reads no key",
        }
        port = free_port()
        up, up_log = start("up", ["up", "--workers", "2", "--port", str(port), "--no-flower"], env)
        _wait_for_line(up_log, "ready; Ctrl-C stops everything", up)
        redis_url = running_url(folder / "var" / "redis")
        assert redis_url is not None
        bin_dir = logs / "bin"
        bin_dir.mkdir()
        (bin_dir / "uv").symlink_to(_uv())
        examples_env = {
            **env,
            "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            "UV_PROJECT": str(ROOT),
            "UV_NO_SYNC": "1",
            "CONTINUUM_API_URL": f"http://127.0.0.1:{port}",
            "REDIS_URL": redis_url,
        }
        yield DocsStack(folder, examples_env, redis_url)
        up.send_signal(signal.SIGINT)
        up.wait(timeout=60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)


def _failed_block(stderr: str) -> str:
    started = re.findall(r"^--- docs-test: (\S+)$", stderr, re.MULTILINE)
    return started[-1] if started else "before the first block"


@pytest.mark.slow
@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_examples_run_and_their_jobs_end_as_documented(stack: DocsStack, path: Path) -> None:
    blocks = runnable(path)
    if shutil.which("curl") is None:
        pytest.fail("the docs' examples use curl: install it")
    before = stack.job_ids()
    done = subprocess.run(
        ["bash", "-c", script(blocks)],
        cwd=stack.folder,
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=DOC_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, (
        f"{path.name}: the example at {_failed_block(done.stderr)} failed "
        f"(exit {done.returncode}):\n--- stdout\n{done.stdout[-3000:]}\n"
        f"--- stderr\n{done.stderr[-3000:]}"
    )
    expected = {job: status for b in blocks for job, status in b.expect.items()}
    created = stack.job_ids() - before
    assert set(expected) <= created, f"expected jobs not created: {set(expected) - created}"
    store = stack.store()
    deadline = time.monotonic() + JOBS_END_S
    ended: dict[str, JobRecord] = {}
    while len(ended) < len(created):
        for job in created - set(ended):
            record = store.load(job)
            if record is not None and record.status in TERMINAL:
                ended[job] = record
        running = sorted(created - set(ended))
        assert not running or time.monotonic() < deadline, f"jobs still running: {running}"
        time.sleep(0.2)
    allowed = {job: {expected[job]} if job in expected else ENDS for job in ended}
    wrong = {
        job: f"{record.status.value}: {record.error or (record.result or {}).get('reason')}"
        for job, record in ended.items()
        if record.status.value not in allowed[job]
    }
    assert not wrong, f"{path.name}: jobs that did not end as documented: {wrong}"
