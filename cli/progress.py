"""Following jobs in Redis until they end: a live rich progress bar per job on a terminal,
one plain line per change otherwise (a log, a pipe, a test).

    from rich.console import Console
    from cli.progress import follow

    records = follow(store, ["job-a", "job-b"], console=Console(stderr=True))

Each bar shows the job's status, iteration, characters and records so far, and a percent
when the model reports one (else the bar pulses). ``follow`` returns once every job has
ended (or ``timeout`` has passed) with the last record read of each job. Ctrl-C raises
``KeyboardInterrupt`` out of ``follow`` after the display is stopped cleanly; the jobs
themselves keep running.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress_bar import ProgressBar
from rich.table import Column

from workers.store import TERMINAL, JobRecord, JobStatus, JobStore

#: ``on_tick(records)`` runs after every poll with the jobs read so far (None: not yet
#: created, e.g. a ``continuum.generate`` task not yet consumed).
OnTick = Callable[[Mapping[str, JobRecord | None]], None]

STATUS_STYLE = {
    "pending": "dim",
    JobStatus.QUEUED.value: "cyan",
    JobStatus.RUNNING.value: "blue",
    JobStatus.SUCCEEDED.value: "green",
    JobStatus.PARTIAL.value: "yellow",
    JobStatus.FAILED.value: "red",
    JobStatus.CANCELLED.value: "magenta",
}


def note(record: JobRecord) -> str:
    """Why a job ended as it did, else its latest warning or fallback ("" when none)."""
    if record.status in TERMINAL and record.status is not JobStatus.SUCCEEDED:
        return str(record.error or (record.result or {}).get("reason") or "")
    summary = record.summary
    fallbacks = summary.get("fallbacks") or []
    if fallbacks:
        f = fallbacks[-1]
        return f"fell back {f.get('from_profile')} -> {f.get('to_profile')}"
    return str(summary.get("last_warning") or "")


def describe_progress(record: JobRecord | None) -> str:
    """The job's progress as one plain line (without its id)."""
    if record is None:
        return "pending (not created yet)"
    s = record.summary
    parts = [record.status.value, f"iteration {record.iteration}", f"{s.get('chars', 0):,} chars"]
    if s.get("records"):
        parts.append(f"{s['records']:,} records")
    if s.get("percent") is not None and record.status not in TERMINAL:
        parts.append(f"{s['percent']}%")
    why = note(record)
    return ", ".join(parts) + (f": {why}" if why else "")


class _StatusBar(BarColumn):
    """A bar coloured by how the job ended (green, yellow, red), pulsing while the
    model reports no percent."""

    def render(self, task: Task) -> ProgressBar:
        bar = super().render(task)
        status = task.fields.get("status", "pending")
        if status in {s.value for s in TERMINAL}:
            bar.finished_style = STATUS_STYLE[status]
            bar.complete_style = STATUS_STYLE[status]
        return bar


#: Below this console width the bars are narrower and the notes are left out.
WIDE = 120


def _columns(width: int) -> list[Any]:
    wide = width >= WIDE
    stats = Column(no_wrap=True, overflow="ellipsis")
    columns: list[Any] = [
        TextColumn("{task.description}", table_column=Column(no_wrap=True)),
        _StatusBar(bar_width=24 if wide else 8),
        TextColumn("{task.fields[percent]:>4}"),
        TextColumn("[{task.fields[style]}]{task.fields[status]:<9}[/]"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[stats]}", table_column=stats),
    ]
    if wide:
        note = Column(no_wrap=True, overflow="ellipsis")
        columns.append(TextColumn("[dim]{task.fields[note]}[/]", table_column=note))
    return columns


def _label(name: str, width: int) -> str:
    """A job's name cut to ``width`` (long ids are recognisable by their start)."""
    return name if len(name) <= width else name[: width - 1] + "…"


def _fields(record: JobRecord | None) -> tuple[float | None, dict[str, Any]]:
    """The bar's completion out of 100 (None: unknown, the bar pulses) and the task
    fields the columns show."""
    if record is None:
        status, iteration, summary = "pending", 0, {}
    else:
        status, iteration, summary = record.status.value, record.iteration, record.summary
    percent = summary.get("percent")
    if record is not None and record.status in TERMINAL:
        percent = None  # what the model last said; the bar shows how the job ended
    records = summary.get("records") or 0
    fields: dict[str, Any] = {
        "status": status,
        "style": STATUS_STYLE.get(status, ""),
        "stats": f"it {iteration} · {summary.get('chars', 0):,} chars"
        + (f" · {records:,} records" if records else ""),
        "percent": f"{percent}%" if percent is not None else "",
        "note": escape(_clip(note(record))) if record is not None else "",
    }
    if record is not None and record.status in TERMINAL:
        return 100.0, fields  # full, coloured by how it ended
    return (None if percent is None else float(percent)), fields


def _clip(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _ended(records: Mapping[str, JobRecord | None]) -> bool:
    return all(r is not None and r.status in TERMINAL for r in records.values())


def follow(
    store: JobStore,
    job_ids: Sequence[str],
    *,
    console: Console | None,
    poll_s: float = 0.2,
    timeout: float | None = None,
    on_tick: OnTick | None = None,
    labels: Mapping[str, str] | None = None,
    live: bool | None = None,
) -> dict[str, JobRecord]:
    """Follow ``store`` until every job in ``job_ids`` has ended; return their records.

    Between two looks it waits on the jobs' event streams (``JobStore.wait_events``): a
    commit anywhere wakes it at once; with no news it looks again after ``poll_s``.

    ``console``: where the progress goes (``Console(stderr=True)`` keeps stdout for
    results); None shows nothing. ``live``: rich bars (default: when the console is an
    interactive terminal) or one plain line per change of a job. ``labels``: what to show
    for a job instead of its id (a format, a provider). ``timeout`` (seconds): return
    anyway once it has passed; callers then find jobs whose status is not terminal, and
    jobs never created missing from the result. A job id that does not exist yet is
    waited for (shown as pending).
    """
    ids = list(dict.fromkeys(job_ids))
    names = {j: (labels or {}).get(j, j) for j in ids}
    if live is None:
        live = console is not None and console.is_terminal and not console.is_dumb_terminal
    deadline = None if timeout is None else time.monotonic() + timeout
    watch = _Watch(store, ids, poll_s=poll_s, deadline=deadline, on_tick=on_tick)
    if console is not None and live:
        _show_bars(watch, names, console)
    else:
        _show_lines(watch, names, console)
    return {j: r for j, r in watch.records.items() if r is not None}


class _Watch:
    """The jobs followed: their last records and how far their event streams were read."""

    def __init__(
        self,
        store: JobStore,
        ids: list[str],
        *,
        poll_s: float,
        deadline: float | None,
        on_tick: OnTick | None,
    ) -> None:
        self.store = store
        self.ids = ids
        self.poll_s = poll_s
        self.deadline = deadline
        self.on_tick = on_tick
        self.records: dict[str, JobRecord | None] = dict.fromkeys(ids)
        self.cursors = dict.fromkeys(ids, "0-0")  # the event read up to, per job

    def pause(self) -> None:
        """Wait for news of a job that has not ended, ``poll_s`` at most."""
        records = self.records
        waiting = {j: c for j, c in self.cursors.items() if not _ended({j: records[j]})}
        self.cursors.update(self.store.wait_events(waiting, round(self.poll_s * 1000)))

    def poll(self) -> bool:
        """Read every job once; True when all have ended or the time is up."""
        records = self.records
        for job_id in self.ids:
            record = records[job_id]
            if record is None or record.status not in TERMINAL:
                records[job_id] = self.store.load(job_id)
        if self.on_tick is not None:
            self.on_tick(records)
        deadline = self.deadline
        return _ended(records) or (deadline is not None and time.monotonic() >= deadline)


def _show_bars(watch: _Watch, names: Mapping[str, str], console: Console) -> None:
    """Follow ``watch`` with a live rich bar per job until it is done."""
    cut = 32 if console.width >= WIDE else 14
    shown = {j: _label(n, cut) for j, n in names.items()}
    pad = max((len(n) for n in shown.values()), default=0)
    with Progress(*_columns(console.width), console=console, refresh_per_second=8) as bars:
        tasks: dict[str, TaskID] = {
            j: bars.add_task(escape(shown[j].ljust(pad)), total=None, **_fields(None)[1])
            for j in watch.ids
        }
        while True:
            done = watch.poll()
            for job_id, task in tasks.items():
                _update_bar(bars, task, watch.records[job_id])
            if done:
                bars.refresh()
                break
            watch.pause()


def _update_bar(bars: Progress, task: TaskID, record: JobRecord | None) -> None:
    completed, fields = _fields(record)
    if completed is None:  # the last percent known stays shown
        bars.update(task, **fields)
    else:
        bars.update(task, total=100, completed=completed, **fields)
    if record is not None and record.status in TERMINAL:
        bars.stop_task(task)  # its elapsed time stops with it


def _show_lines(watch: _Watch, names: Mapping[str, str], console: Console | None) -> None:
    """Follow ``watch`` until it is done, printing a plain line per change of a job
    (nothing without a console)."""
    last: dict[str, str] = {}
    while True:
        done = watch.poll()
        if console is not None:
            for job_id in watch.ids:
                line = describe_progress(watch.records[job_id])
                if last.get(job_id) != line:
                    last[job_id] = line
                    console.print(
                        f"{names[job_id]}: {line}",
                        markup=False,
                        highlight=False,
                        soft_wrap=True,
                    )
        if done:
            break
        watch.pause()
