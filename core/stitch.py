"""``stitch(fragments, fmt)``: merge fragments offline with the engine's own mergers."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.extraction import CUT_CHARACTER, drop_model_markup
from core.formats import ScanState, detect, resume_stitcher, start_stitcher
from core.models import OutputFormat
from core.progress import split_marker
from core.seam import AMBIGUOUS, AMBIGUOUS_END, DONE_DROPPED, STOPPED_NOTE
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


def stitch(fragments: list[str], fmt: str) -> StitchResult:
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
    run = _Run(chosen)
    for index, raw in enumerate(fragments):
        run.take(index, raw, last=index == len(fragments) - 1)
    return run.result()


@dataclass
class _Run:
    """The document so far and what was said about each fragment."""

    format: OutputFormat
    text: str = ""
    scan: ScanState | None = None
    warnings: list[str] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)
    done_note: str = ""  # the fragment last dropped as a note that the document was complete
    cut_character: str = ""  # the fragment that ended in a character the server cut in two

    def take(self, index: int, raw: str, *, last: bool) -> None:
        """Merge one fragment, as the engine merges a reply (its state resumed each time)."""
        name = f"fragment {index + 1}"
        whole = len(self.text) <= HEAD_CHARS + TAIL_CHARS
        seen = self.text if whole else self.text[:HEAD_CHARS] + self.text[-TAIL_CHARS:]
        raw, removed, doubts = drop_model_markup(raw, seen)
        self.warnings += [f"{name}: {w}" for w in removed]
        self.doubts += [f"{name}: {w}" for w in doubts]
        fragment, _ = split_marker(raw)
        if self.scan is not None and not fragment.strip():
            # A blank reply carries nothing, even inside a JSON string ("50" + " " + "0m"
            # is "500m"): a model asked to go on that sends only white space has stopped
            # early, and the engine asks again (docs/engine.md, behaviour 11).
            self.warnings.append(f"{name}: skipped a blank reply")
            return
        if self.format is OutputFormat.AUTO:
            self._detect(name, fragment)
        if self.scan is None:
            stitcher, merge = start_stitcher(self.format, fragment)
        else:
            tail, head = self.text[-TAIL_CHARS:], self.text[:HEAD_CHARS]
            stitcher, merge = resume_stitcher(self.scan).merge(tail, fragment, head)
        self.warnings += [f"{name}: {w}" for w in merge.warnings]
        self.doubts += [
            f"{name}: {w}" for w in merge.doubts if not (last and w.startswith(AMBIGUOUS_END))
        ]
        if not merge.ok:
            self.failed.append(index)
            self.warnings.append(f"{name} could not be merged: {merge.error}")
            return
        self.scan = stitcher.scan
        self.text += merge.append
        if last and any(w.startswith(STOPPED_NOTE) for w in merge.warnings):
            # Nothing came after a reply that said it stopped short: the document may
            # not be all there (or the note was the document's own last line).
            self._doubt(name, "the last fragment said it stopped before the end")
        if merge.append.strip() and self.cut_character:
            # The engine asks to go on after the text without the cut character, and a
            # model writes it whole; a reply collected elsewhere may not have.
            self._doubt(name, f"went on after a character cut in two at {self.cut_character}")
        self.cut_character = name if CUT_CHARACTER in removed else ""
        if any(w.startswith(DONE_DROPPED) for w in merge.warnings):
            self.done_note = name
        elif merge.append.strip() and self.done_note:
            # A later reply went on with a document a dropped note called complete: that
            # note may have been the document's own line (in a quoted field, in quotes).
            self._doubt(name, f"went on after {self.done_note} was dropped as a note")
            self.done_note = ""

    def _doubt(self, name: str, text: str) -> None:
        doubt = f"{name}: {AMBIGUOUS}seam: {text}"
        self.warnings.append(doubt)
        self.doubts.append(doubt)

    def _detect(self, name: str, fragment: str) -> None:
        self.format, doubt = detect(fragment)
        self.warnings.append(f"detected format: {self.format.value}")
        if doubt:
            self.warnings.append(f"{name}: {doubt}")
            self.doubts.append(f"{name}: {doubt}")

    def result(self) -> StitchResult:
        if self.cut_character:  # nothing came after it: the character is lost
            self._doubt(self.cut_character, "the text ends in a character cut in two")
            self.cut_character = ""
        text, complete, records = self.text, None, 0
        if self.scan is not None:
            stitcher = resume_stitcher(self.scan)
            records = stitcher.records
            closed = stitcher.close()
            if self.format is OutputFormat.JSON and closed is not None:
                complete = text[: closed[0]] + closed[1]
                if stitcher.complete:  # text after the document is not part of it
                    text = text[: closed[0]]
        fmt = OutputFormat.TEXT if self.format is OutputFormat.AUTO else self.format
        return StitchResult(
            text=text,
            complete=complete,
            ok=not self.failed,
            format=fmt.value,
            warnings=self.warnings,
            failed=self.failed,
            records=records,
            doubts=self.doubts,
        )
