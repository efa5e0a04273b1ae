"""A job's output as the API shows it: consistent with its state, presentable, streamed.

The output (``job:{id}:out``) and the state (``job:{id}``) change together in one commit,
but are read here in two round trips: the job is read again after its output's length,
and the pair is kept only when no commit came in between (its iteration did not move).
The output itself is then streamed from Redis a part at a time (``JobStore.iter_text``),
never whole in memory: a commit meanwhile only appends after the part shown.

``present`` closes a partial output the way the engine closes a result: for JSON, the
open strings, arrays and objects are closed (always valid JSON); for CSV, up to the last
complete row; for Markdown, an open code fence is closed; text as it is. What it shows is
a prefix of the output and a closing suffix, kept apart so that the prefix is streamed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from core import JobState, OutputFormat
from core.formats import resume_stitcher
from workers.store import JobRecord, JobStore

#: Reads of a job and its output before giving up on a pair no commit separates.
READS = 5

MEDIA_TYPES = {
    OutputFormat.JSON: "application/json",
    OutputFormat.CSV: "text/csv; charset=utf-8",
    OutputFormat.MARKDOWN: "text/markdown; charset=utf-8",
    OutputFormat.TEXT: "text/plain; charset=utf-8",
}


@dataclass(frozen=True)
class Snapshot:
    record: JobRecord
    size: int  # the output's length in bytes as of the record's iteration
    state: JobState | None  # None: the job was kept only to say its spec is invalid
    gen: str = ""  # the output's generation then: a stream refuses any other

    @property
    def format(self) -> OutputFormat | None:
        return None if self.state is None else self.state.format


@dataclass(frozen=True)
class Shown:
    """What a response shows: the output's first ``chars`` characters (all of its first
    ``size`` bytes when None), then ``suffix``."""

    job_id: str
    size: int
    chars: int | None
    suffix: str = ""
    gen: str = ""  # the output's generation the size and suffix belong to


def snapshot(store: JobStore, job_id: str) -> Snapshot | None:
    """The job and its output's length as of one commit; None when there is no such job."""
    record = store.load(job_id)
    if record is None:
        return None
    size, gen = store.output_version(job_id)
    for _ in range(READS):
        again = store.load(job_id)
        if again is None:
            return None
        if again.iteration == record.iteration:
            break
        record = again
        size, gen = store.output_version(job_id)
    try:
        state: JobState | None = JobState.model_validate_json(record.state)
    except ValidationError:
        state = None
    return Snapshot(record, size, state, gen)


def committed(snap: Snapshot) -> Shown | None:
    """The accumulated text exactly as committed; None when there is none yet."""
    return Shown(snap.record.job_id, snap.size, None, gen=snap.gen) if snap.size else None


def present(snap: Snapshot) -> Shown | None:
    """The output so far as a result would show it; None when there is nothing yet."""
    job_id, result = snap.record.job_id, snap.record.result
    if result is not None and "prefix" in result:  # the job ended with a result
        return Shown(job_id, snap.size, int(result["prefix"]), str(result["suffix"]), snap.gen)
    state = snap.state
    if state is None or state.scan is None:
        return None
    closed = resume_stitcher(state.scan).close()
    if closed is None:
        return None
    prefix, suffix = closed
    if not (prefix and snap.size) and not suffix:
        return None
    return Shown(job_id, snap.size, prefix, suffix, snap.gen)


def stream(store: JobStore, shown: Shown) -> Iterator[str]:
    """The text ``shown`` describes, a part at a time."""
    yield from store.iter_text(shown.job_id, stop=shown.size, chars=shown.chars, gen=shown.gen)
    if shown.suffix:
        yield shown.suffix


def encode(parts: Iterator[str]) -> Iterator[bytes]:
    for part in parts:
        yield part.encode("utf-8")


def json_with_text(body: dict[str, Any], field: str, parts: Iterator[str]) -> Iterator[bytes]:
    """``body`` as compact JSON (as ``JSONResponse`` renders it) whose ``field`` is the
    string made of ``parts``, encoded a part at a time: the string is never whole."""
    marker = json.dumps(uuid.uuid4().hex)
    text = json.dumps(
        {**body, field: json.loads(marker)},
        ensure_ascii=False,
        allow_nan=False,
        separators=(",", ":"),
    )
    head, tail = text.split(marker, 1)
    yield (head + '"').encode("utf-8")
    for part in parts:
        yield json.dumps(part, ensure_ascii=False)[1:-1].encode("utf-8")
    yield ('"' + tail).encode("utf-8")


def media_type(fmt: OutputFormat | None) -> str:
    return MEDIA_TYPES.get(fmt or OutputFormat.TEXT, MEDIA_TYPES[OutputFormat.TEXT])
