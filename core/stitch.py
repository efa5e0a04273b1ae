"""``stitch(fragments, fmt)``: merge fragments offline with the engine's own mergers."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.formats import STITCHERS, ScanState, detect
from core.models import OutputFormat
from core.progress import split_marker
from core.seam import AMBIGUOUS_END
from core.state import HEAD_CHARS, TAIL_CHARS


@dataclass(frozen=True)
class StitchResult:
    """The merged document.

    ``text`` is the merged text (for JSON still open, the cut text); ``complete`` the
    closed, valid JSON (None for other formats, or when nothing valid was read); ``ok``
    whether every fragment merged; ``failed`` the 0-based indexes of those that did not;
    ``doubts`` the warnings that name a seam read one way of several plausible ones.
    A result with ``ok`` and no ``doubts`` is the document the fragments mean.
    """

    text: str
    complete: str | None
    ok: bool
    format: str
    warnings: list[str] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    records: int = 0
    doubts: list[str] = field(default_factory=list)


def stitch(fragments: list[str], fmt: str) -> StitchResult:  # noqa: C901  # decision table; split pending (issue 13)
    """Merge ``fragments`` (in order) as the engine would, in format ``fmt``.

    ``fmt`` is one of json, csv, markdown, text, auto; raises ValueError otherwise.
    A fragment that cannot be merged is skipped (as the engine would retry it) and
    reported; the result is always the best valid document of the others. A blank
    fragment after the first is skipped with a warning (the engine retries a blank reply).
    """
    try:
        chosen = OutputFormat(fmt)
    except ValueError:
        names = ", ".join(f.value for f in OutputFormat)
        raise ValueError(f"unknown format {fmt!r}: use one of {names}") from None
    warnings: list[str] = []
    failed: list[int] = []
    doubts: list[str] = []
    acc = ""
    scan: ScanState | None = None
    for index, raw in enumerate(fragments):
        fragment, _ = split_marker(raw)
        if scan is not None and not fragment.strip():
            # A blank reply carries nothing, even inside a JSON string ("50" + " " + "0m"
            # is "500m"): a model asked to go on that sends only white space has stopped
            # early, and the engine asks again (docs/engine.md, behaviour 11).
            warnings.append(f"fragment {index + 1}: skipped a blank reply")
            continue
        if chosen is OutputFormat.AUTO:
            chosen, doubt = detect(fragment)
            warnings.append(f"detected format: {chosen.value}")
            if doubt:
                warnings.append(f"fragment {index + 1}: {doubt}")
                doubts.append(f"fragment {index + 1}: {doubt}")
        stitcher = STITCHERS[chosen]
        if scan is None:
            new, merge = stitcher.start(fragment)
        else:
            new, merge = stitcher.merge(scan, acc[-TAIL_CHARS:], fragment, acc[:HEAD_CHARS])
        warnings += [f"fragment {index + 1}: {w}" for w in merge.warnings]
        last = index == len(fragments) - 1
        doubts += [
            f"fragment {index + 1}: {w}"
            for w in merge.doubts
            if not (last and w.startswith(AMBIGUOUS_END))
        ]
        if not merge.ok:
            failed.append(index)
            warnings.append(f"fragment {index + 1} could not be merged: {merge.error}")
            continue
        scan = new
        acc += merge.append
    if chosen is OutputFormat.AUTO:
        chosen = OutputFormat.TEXT
    stitcher = STITCHERS[chosen]
    complete = None
    records = 0
    if scan is not None:
        records = stitcher.records(scan)
        if chosen is OutputFormat.JSON:
            closed = stitcher.close(scan)
            if closed is not None:
                complete = acc[: closed[0]] + closed[1]
            if stitcher.complete(scan):
                acc = acc[: int(scan["done_at"])]
    return StitchResult(
        text=acc,
        complete=complete,
        ok=not failed,
        format=chosen.value,
        warnings=warnings,
        failed=failed,
        records=records,
        doubts=doubts,
    )
