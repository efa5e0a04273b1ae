"""Cleaning what a model wrapped around its payload.

Models add things that are not the document: a byte-order mark, NUL characters, lone
surrogates from a broken encoder, a code fence around the payload, a line of prose before
it, a progress marker. Every removal is reported as a warning, never done silently.
"""

from __future__ import annotations

import re

_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")
# Possessive quantifiers: a long run of blanks is never split between two of them.
_FENCE_LINE = re.compile(r"[ \t]*+(```|~~~)[ \t]*+([A-Za-z0-9_+-]*+)[ \t]*+\r?\n")
_FENCE_ANYWHERE = re.compile(r"(```|~~~)[ \t]*+[A-Za-z0-9_+-]*+[ \t]*+\r?\n")
# First line that starts like a JSON container: where a payload begins after prose.
_JSON_LINE_START = re.compile(r"^[ \t]*[\[{]", re.MULTILINE)


def clean_text(text: str) -> tuple[str, list[str]]:
    """Drop a leading byte-order mark, NUL characters and lone surrogates.

    A BOM elsewhere is content (U+FEFF inside a string is legal); NUL characters and lone
    surrogates never are (JSON forbids the first raw, UTF-8 cannot encode the second).
    """
    warnings = []
    if text.startswith("\ufeff"):
        text = text[1:]
        warnings.append("removed a byte-order mark")
    if not _BAD_CHARS.search(text):
        return text, warnings
    nuls = text.count("\x00")
    if nuls:
        warnings.append(f"removed {nuls} NUL character{'s' if nuls > 1 else ''}")
    surrogates = len(text) - nuls - len(_BAD_CHARS.sub("", text))
    if surrogates:
        warnings.append(f"removed {surrogates} invalid surrogate character(s)")
    return _BAD_CHARS.sub("", text), warnings


def strip_wrapper_fence(text: str) -> tuple[str, list[str]]:
    """Remove a code fence that wraps the whole payload (its closer may be missing)."""
    m = _FENCE_LINE.match(text)
    if m is None:
        return text, []
    body = text[m.end() :]
    warnings = [f"removed a code fence ({m.group(1)}{m.group(2)})"]
    end = len(body.rstrip())
    if body.endswith(m.group(1), 0, end):  # the last line closes the fence, blanks aside
        start = end - len(m.group(1))
        line = body.rfind("\n", 0, start) + 1
        if not body[line:start].strip(" \t"):
            body = body[: line - 1 if line and body[line - 1] == "\n" else line]
            body = body[:-1] if body.endswith("\r") else body
    return body, warnings


def find_json_start(text: str) -> tuple[int, list[str]]:
    """Offset where a first JSON fragment's payload starts, skipping prose and fences.

    A payload that starts at once (after whitespace) starts there. Otherwise the first
    code fence or the first line that opens an object or array marks the start.
    """
    stripped = len(text) - len(text.lstrip())
    if stripped < len(text) and text[stripped] in '[{"-0123456789tfn':
        head = text[stripped:]
        if head[0] in '[{"-0123456789' or head.startswith(("true", "false", "null")):
            return stripped, []
    fence = _FENCE_ANYWHERE.search(text)
    line = _JSON_LINE_START.search(text)
    if fence is not None and (line is None or fence.start() < line.start()):
        prose = text[: fence.start()].strip()
        what = f"prose and a code fence: {prose!r:.80}" if prose else "a code fence"
        return fence.end(), [f"removed {what} before the JSON"]
    if line is not None:
        start = line.start()
        return start, [f"removed prose before the JSON: {text[:start].strip()!r:.80}"]
    return stripped, []
