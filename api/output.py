"""A job's output as the API shows it: consistent with its state, and presentable.

The output (``job:{id}:out``) and the state (``job:{id}``) change together in one commit,
but are read here in two round trips: the job is read again after its output, and the
pair is kept only when no commit came in between (its iteration did not move).

``present`` closes a partial output the way the engine closes a result: for JSON, the
open strings, arrays and objects are closed (always valid JSON); for CSV, up to the last
complete row; for Markdown, an open code fence is closed; text as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from core import JobState, OutputFormat
from core.formats import STITCHERS
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
    output: str
    state: JobState | None  # None: the job was kept only to say its spec is invalid

    @property
    def format(self) -> OutputFormat | None:
        return None if self.state is None else self.state.format


def snapshot(store: JobStore, job_id: str) -> Snapshot | None:
    """The job and its output as of one commit; None when there is no such job."""
    record = store.load(job_id)
    if record is None:
        return None
    output = store.output(job_id)
    for _ in range(READS):
        again = store.load(job_id)
        if again is None:
            return None
        if again.iteration == record.iteration:
            break
        record, output = again, store.output(job_id)
    try:
        state: JobState | None = JobState.model_validate_json(record.state)
    except ValidationError:
        state = None
    return Snapshot(record, output, state)


def present(snap: Snapshot) -> str | None:
    """The output so far as a result would show it; None when there is nothing yet."""
    result = snap.record.result
    if result is not None and "prefix" in result:  # the job ended with a result
        return snap.output[: int(result["prefix"])] + str(result["suffix"])
    state = snap.state
    if state is None or state.scan is None or state.format is OutputFormat.AUTO:
        return None
    closed = STITCHERS[state.format].close(state.scan)
    if closed is None:
        return None
    prefix, suffix = closed
    text = snap.output[:prefix] + suffix
    return text or None


def media_type(fmt: OutputFormat | None) -> str:
    return MEDIA_TYPES.get(fmt or OutputFormat.TEXT, MEDIA_TYPES[OutputFormat.TEXT])
