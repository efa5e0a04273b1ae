"""Continuation and repair prompts (``docs/engine.md``, "One iteration").

The first request is the job's conversation after a system message that states the
job's format (``opening_messages``): a model told nothing writes what the prompt suggests,
and a CSV job asked to "List the exhibits" would get prose. Every later request starts
with the same messages. A continuation request adds one user turn that says what was
delivered, shows the structure at the cut (budgeted), asks for the progress marker, and
gives the exact text to repeat. The repeat block is delimited so that a model, or the
simulator, can find it: ``<<<REPEAT`` on its own line, the text, ``REPEAT>>>``.
"""

from __future__ import annotations

import json

from core.budget import render_budgeted
from core.json_scan import JsonScanner
from core.models import JobSpec, Message, OutputFormat
from core.progress import MARKER_TEMPLATE

REPEAT_OPEN = "<<<REPEAT\n"
REPEAT_CLOSE = "\nREPEAT>>>"
CONTEXT_OPEN = "<<<CONTEXT\n"
CONTEXT_CLOSE = "\nCONTEXT>>>"
#: A JSON path longer than this many steps keeps its first and last steps and says how
#: many it leaves out (a path 10,000 levels deep would otherwise fill every prompt and
#: every iteration's metadata); a key longer than _MAX_LABEL characters is shortened.
MAX_PATH_STEPS = 32
_PATH_HEAD = 8
_MAX_LABEL = 256

_WHAT = {
    OutputFormat.JSON: "Continue the JSON document exactly where it was cut. Output only JSON "
    "text: no code fences, no explanations, do not start the document again.",
    OutputFormat.CSV: "Continue the CSV data exactly where it was cut, with the same columns. "
    "Do not repeat the header row. Output only CSV rows: no code fences, no explanations.",
    OutputFormat.MARKDOWN: "Continue the Markdown document exactly where it was cut, keeping "
    "its structure. Output only the document: no explanations, do not start it again.",
    OutputFormat.TEXT: "Continue the text exactly where it was cut. Output only the text: "
    "no explanations, do not start it again.",
}


#: The system message that opens every request of a job with a format (``auto``: none).
#: Each names its own format only, so a reader (a model, the simulator) finds one format.
FORMAT_INSTRUCTIONS = {
    OutputFormat.JSON: "Answer with one JSON document and nothing else: no code fences, "
    "no explanations before or after it.",
    OutputFormat.CSV: "Answer with CSV data and nothing else: a header row, then one record "
    "per line; no code fences, no explanations before or after it.",
    OutputFormat.MARKDOWN: "Answer with a Markdown document and nothing else: no "
    "explanations before or after it.",
    OutputFormat.TEXT: "Answer with plain text and nothing else: no explanations before or "
    "after it.",
}


def opening_messages(spec: JobSpec) -> list[Message]:
    """The first request's messages: the format stated, then the job's conversation."""
    instruction = FORMAT_INSTRUCTIONS.get(spec.output_format)
    stated = [Message(role="system", content=instruction)] if instruction else []
    return [*stated, *spec.conversation()]


def overlap_context(tail: str, size: int, element_start: int | None = None) -> str:
    """The end of the cut text the model is asked to repeat.

    About ``size`` characters, reaching back to the start of the cut element when that is
    not far (``element_start`` is an offset into ``tail``), and starting at a line start
    when one is near, so the repeat begins somewhere a model would begin.
    """
    if len(tail) <= size:
        return tail
    start = len(tail) - size
    if element_start is not None and len(tail) - 3 * size <= element_start < start:
        start = element_start
    newline = tail.find("\n", start, start + size // 3)
    if newline >= 0:
        start = newline + 1
    return tail[start:]


def json_path(scan: JsonScanner) -> str:
    """Where the cut is, as a JSONPath-like string: ``$.items[41].name``.

    Past :data:`MAX_PATH_STEPS` steps, the first few and the last ones are kept and the
    others counted: ``$[0][0]…(9968 more)…[0][0]``.
    """
    frames = scan.frames
    steps: list[str | int | None] = [frame.label for frame in frames[1:]]
    if frames:
        top = frames[-1]
        if top.kind == "[":
            steps.append(top.count)
        elif top.key is not None:
            steps.append(top.key)
    if len(steps) <= MAX_PATH_STEPS:
        return "$" + "".join(map(_path_step, steps))
    head = steps[:_PATH_HEAD]
    tail = steps[len(steps) - (MAX_PATH_STEPS - _PATH_HEAD) :]
    left_out = len(steps) - MAX_PATH_STEPS
    return (
        "$"
        + "".join(map(_path_step, head))
        + f"…({left_out} more)…"
        + "".join(map(_path_step, tail))
    )


def _path_step(label: str | int | None) -> str:
    if isinstance(label, int):
        return f"[{label}]"
    text = str(label)
    return "." + (text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…")


def json_window(scan: JsonScanner, tail: str) -> str:
    """A cut JSON text for the budgeted context, when only the tail is at hand.

    The containers opened before the tail are re-opened from the scanner's path (their
    keys are known), then the tail continues from the start of the innermost one's
    current member, so the renderer sees the path to the root and the cut's neighbours.
    """
    tail_start = scan.length - len(tail)
    if tail_start <= 0:
        return tail
    frames = scan.frames
    outer = [i for i, f in enumerate(frames) if f.open_at < tail_start]
    if not outer:
        return tail
    k = outer[-1]
    parts: list[str] = []
    for i in range(k + 1):
        if i > 0 and frames[i - 1].kind == "{":
            parts.append(json.dumps(frames[i].label) + ": ")
        parts.append(frames[i].kind)
    frame = frames[k]
    # Start at a recent member boundary of that container, to show the cut's siblings.
    resume = next((a for a in (frame.far, frame.near, frame.safe) if a >= tail_start), None)
    if resume is not None:
        rest = tail[resume - tail_start :].lstrip()
        return "".join(parts) + rest.removeprefix(",").lstrip()
    if k + 1 < len(frames):
        child = frames[k + 1]
        if frame.kind == "{":
            parts.append(json.dumps(child.label) + ": ")
        return "".join(parts) + tail[child.open_at - tail_start :]
    return "".join(parts)


def json_prompt_context(scan: JsonScanner, tail: str, budget: int) -> str:
    """The budgeted hierarchy context (``docs/engine.md``, "JSON"); the cut text if
    rendering fails."""
    window = json_window(scan, tail)
    try:
        return render_budgeted(window, budget)
    except ValueError:
        return window[max(0, len(window) - budget) :]  # budget 0: nothing, not all


def continuation_messages(
    spec: JobSpec,
    fmt: OutputFormat,
    *,
    overlap: str,
    context: str,
    delivered: str,
) -> list[Message]:
    """The next request: the original conversation plus the continuation instructions."""
    lines = [
        "Your previous answer was cut off by the output limit.",
        _WHAT.get(fmt, _WHAT[OutputFormat.TEXT]),
        "",
        f"Delivered so far: {delivered}.",
    ]
    if context:
        lines += ["", "The document around the cut:", CONTEXT_OPEN + context + CONTEXT_CLOSE]
    lines += [
        "",
        f"Start your answer with the line {MARKER_TEMPLATE}, where NN is your estimate of how "
        "much of the whole document (in percent) was delivered before this answer.",
        "Then repeat exactly the text between the REPEAT markers below and continue right "
        "after its end:",
        REPEAT_OPEN + overlap + REPEAT_CLOSE,
    ]
    return [*opening_messages(spec), Message(role="user", content="\n".join(lines))]


#: The shortest end of the delivered text a retry asks the model to repeat; longer when that
#: end occurs earlier in the text too (periodic rows, zeros), so that the repeat anchors the
#: cut where the document says the same thing many times.
RETRY_QUOTE_CHARS = 120
#: How a retry's note to the model starts (``retry_messages``).
RETRY_NOTE = "\n\nYour previous reply could not be used: "
#: What a retry asks the model to write between the repeated end and the new text
#: (``retry_messages``): where the reply has it right after an exact copy of the end, the
#: new text starts there, however periodic the document (``core.engine``, "marked").
CONTINUE_MARK = "<<<CONTINUE>>>"


def retry_anchor(tail: str, most: int) -> str:
    """The shortest end of ``tail`` (``RETRY_QUOTE_CHARS`` at least, doubling) found
    nowhere earlier in it, or its last ``most`` characters when no such end fits."""
    most = max(1, min(most, len(tail)))
    size = min(RETRY_QUOTE_CHARS, most)
    while True:
        quote = tail[-size:]
        if size >= most or tail.find(quote) == len(tail) - size:
            return quote
        size = min(2 * size, most)


#: How a retry's note asks for ``CONTINUE_MARK``: right before its REPEAT block.
MARK_ASKED = (
    f"then write {CONTINUE_MARK} and continue right after its end (no space or line break "
    "after the mark unless the document has one there):\n"
)


def asks_mark(turn: str, quote: str | None = None) -> bool:
    """Whether a request's last turn is a retry note that asks for ``CONTINUE_MARK``: it
    ends with the request, then the REPEAT block (holding ``quote``, the end the note
    quotes, when given: the engine knows it, so that text quoted from the document, which
    might hold the note's words, cannot make it so)."""
    if quote is not None:
        return turn.endswith(f"{MARK_ASKED}{REPEAT_OPEN}{quote}{REPEAT_CLOSE}")
    at = turn.rfind(REPEAT_OPEN)
    return at >= 0 and turn.endswith(REPEAT_CLOSE) and turn[:at].endswith(MARK_ASKED)


def retry_messages(
    messages: list[Message], problem: str, tail: str, most: int = 2000
) -> list[Message]:
    """The same request, told what went wrong with the last reply (docs/engine.md).

    A retry never resends the identical request: a deterministic model would fail the same
    way again. The last user turn gets the problem and an end of the delivered text to
    repeat exactly (``retry_anchor``, at most ``most`` characters), one that occurs nowhere
    earlier in it: a reply that repeats it joins at one place only. Where the text is too
    periodic for any end that short to be unique, ``CONTINUE_MARK`` after the repeat says
    where the new text starts (asked for unless the text holds the mark itself).
    """
    quote = retry_anchor(tail, most) if tail else ""
    then = "then continue right after its end:\n" if CONTINUE_MARK in tail else MARK_ASKED
    note = (
        f"{RETRY_NOTE}{problem}. "
        "This time write no preamble, no code fence and no remark. After the progress line, "
        "repeat exactly the text between the REPEAT markers below (the end of what was "
        f"delivered), {then}"
        f"{REPEAT_OPEN}{quote}{REPEAT_CLOSE}"
        if quote
        else f"{RETRY_NOTE}{problem}. Output only the document."
    )
    out = list(messages)
    if out and out[-1].role == "user":
        # One note at a time: a second retry replaces the first one's note.
        asked = out[-1].content.split(RETRY_NOTE, 1)[0]
        if asked.strip():
            out[-1] = Message(role="user", content=asked + note)
            return out
        out.pop()
    out.append(Message(role="user", content=note.strip()))
    return out


def repair_messages(spec: JobSpec, output: str, error: str) -> list[Message]:
    """The one-shot repair: the failed output and its exact error fed back
    (docs/engine.md, "Validation and repair")."""
    return [
        *opening_messages(spec),
        Message(role="assistant", content=output),
        Message(
            role="user",
            content=f"Your previous output had an error: {error}\n"
            "Please fix the JSON and try again. Output ONLY the corrected JSON.",
        ),
    ]
