"""`continuum stitch` run as a user runs it: a subprocess, files on disk, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOC = json.dumps({"rows": [{"id": i, "label": f"row {i}"} for i in range(30)]}, indent=2)


def continuum(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("continuum")
    cmd = [exe] if exe else [sys.executable, "-m", "cli.main"]
    return subprocess.run(
        [*cmd, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def write(tmp_path: Path, *parts: str) -> list[str]:
    names = []
    for index, part in enumerate(parts):
        path = tmp_path / f"part{index}.txt"
        path.write_text(part, encoding="utf-8")
        names.append(str(path))
    return names


def test_stitch_json_prints_the_merged_document(tmp_path: Path) -> None:
    """Fragments with overlaps merge into the document; exit 0."""
    files = write(tmp_path, DOC[:300], DOC[250:700], "```json\n" + DOC[650:] + "\n```")
    done = continuum("stitch", "--format", "json", *files, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(DOC)


def test_stitch_complete_closes_an_open_document(tmp_path: Path) -> None:
    """--complete prints valid JSON even when the fragments stop mid-document."""
    files = write(tmp_path, DOC[:300], DOC[280:520])
    done = continuum("stitch", "--format", "json", "--complete", *files, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    value = json.loads(done.stdout)
    assert value["rows"][0] == {"id": 0, "label": "row 0"}
    plain = continuum("stitch", "--format", "json", *files, cwd=tmp_path)
    assert plain.stdout == DOC[:520]


def test_unmergeable_fragment_exits_1_and_is_named(tmp_path: Path) -> None:
    """A fragment that cannot be merged: the best valid result, its name on stderr, exit 1."""
    files = write(tmp_path, DOC[:300], '"nothing": "to do with it"}', DOC[280:])
    done = continuum("stitch", "--format", "json", *files, cwd=tmp_path)
    assert done.returncode == 1
    assert "fragment 2" in done.stderr and "part1.txt" in done.stderr
    assert json.loads(done.stdout) == json.loads(DOC)


@pytest.mark.parametrize(
    ("fmt", "parts", "expected"),
    [
        ("csv", ["id,name\n1,Alice", "2,Bob\n"], "id,name\n1,Alice\n2,Bob\n"),
        (
            "markdown",
            ["# Title\n\nContent", "## Section\nMore\n"],
            "# Title\n\nContent\n## Section\nMore\n",
        ),
        (
            "text",
            ["The quick brown fox jumps", "fox jumps over the lazy dog."],
            "The quick brown fox jumps over the lazy dog.",
        ),
    ],
)
def test_stitch_other_formats(tmp_path: Path, fmt: str, parts: list[str], expected: str) -> None:
    """CSV rows are not glued, Markdown headings not glued, text overlaps spliced once."""
    done = continuum("stitch", "--format", fmt, *write(tmp_path, *parts), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


@pytest.mark.parametrize(
    "args",
    [
        ["stitch"],
        ["stitch", "--format", "yaml", "x.txt"],
        ["stitch", "--format", "json"],
        ["stitch", "--format", "json", "missing.txt"],
        ["stitch", "--format", "csv", "--complete", "x.txt"],
        ["no-such-command"],
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    """Bad arguments, unknown formats and unreadable files are usage errors: exit 2."""
    (tmp_path / "x.txt").write_text("[1]", encoding="utf-8")
    done = continuum(*args, cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr


def test_stitch_says_when_a_seam_could_be_read_two_ways(tmp_path: Path) -> None:
    """Periodic data (every overlap fits): the likelier document is printed, the doubt is
    named on stderr, and the exit status is 3, never a silent 0."""
    files = write(tmp_path, "[0,0,0,0,0,0,0,0,", "0,0,0,0,0]")
    done = continuum("stitch", "--format", "json", *files, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "doubt: fragment 2: ambiguous seam" in done.stderr
    assert json.loads(done.stdout) == [0] * len(json.loads(done.stdout))
