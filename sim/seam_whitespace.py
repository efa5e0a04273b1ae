"""Replies that differ from the document in white space at the seam: line breaks switched
(CRLF for LF or back), trailing blanks stripped or a blank line dropped or added in the
repeat, an empty line before the closing fence."""

from __future__ import annotations

import random

from sim import seam_wrappers
from sim.seam_reply import Fix, Reply, repeat_length


def _line_breaks(text: str, to_crlf: bool, base: int) -> tuple[str, list[Fix]]:
    """``text`` in the other convention, and fixes (offset by ``base``) that read it back."""
    out: list[str] = []
    fixes: list[Fix] = []
    i, size = 0, base
    while i < len(text):
        if to_crlf and text[i] == "\n" and (i == 0 or text[i - 1] != "\r"):
            fixes.append((size, size + 2, "\n"))
            out.append("\r\n")
        elif not to_crlf and text.startswith("\r\n", i):
            fixes.append((size, size + 1, "\r\n"))
            out.append("\n")
            i += 1
        else:
            out.append(text[i])
        size += len(out[-1])
        i += 1
    return "".join(out), fixes


def whitespace_reply(doc: str, cut: int, end: int, fmt: str, rng: random.Random) -> Reply:
    new = doc[cut:end]
    tail = doc[max(0, cut - 300) : cut]
    variants = ["fence_blank"] if end == len(doc) else []
    if "\n" in doc[:cut] and fmt != "json":
        variants += ["line_breaks", "line_breaks"]
    stripped = [i for i in range(len(tail)) if tail[i] == "\n" and tail[i - 1 : i] in (" ", "\t")]
    if stripped:
        variants.append("strip_trailing")
    if "\n\n" in tail[1:]:
        variants.append("blank_dropped")
    if "\n" in tail.strip("\r\n"):
        variants.append("blank_added")
    variant = rng.choice(variants or ["fence_blank"])
    if variant == "fence_blank":
        pre = seam_wrappers.prefix(fmt, rng, fenced=True)
        lead = "" if new.endswith("\n") else "\n"
        suf = lead + "\n```" + rng.choice(("", "\n", "\n\nLet me know if you need anything else!"))
        return Reply(pre + new + suf, end, pre, suf, variant="blank line before the fence")
    if variant == "line_breaks":
        to_crlf = "\r\n" not in doc
        k = repeat_length(doc, cut, rng) if rng.random() < 0.7 else 0
        if doc[cut - k - 1 : cut - k + 1] == "\r\n":
            k -= 1
        rep, fixes_a = _line_breaks(doc[cut - k : cut], to_crlf, 0)
        body, fixes_b = _line_breaks(new, to_crlf, len(rep))
        fixes = tuple(fixes_a + fixes_b)
        name = "CRLF" if to_crlf else "LF"
        return Reply(rep + body, end, overlap=len(rep), fixes=fixes, variant=f"{name}, repeat {k}")
    if variant == "strip_trailing":
        at = rng.choice(stripped)
        start = tail.rfind("\n", 0, at - 1) + 1
        rep = tail[start:]
        lines = rep.split("\n")
        rep = "\n".join([ln.rstrip(" \t") for ln in lines[:-1]] + lines[-1:])
        return Reply(rep + new, end, overlap=len(rep), variant="repeat, trailing blanks stripped")
    if variant == "blank_dropped":
        at = tail.index("\n\n", 1)
        start = rng.randint(0, at)
        rep = tail[start:at] + tail[at + 1 :]
        return Reply(rep + new, end, overlap=len(rep), variant="repeat, blank line dropped")
    inner = tail.strip("\r\n")
    at = tail.index(inner) + inner.index("\n")
    brk = "\n"
    if tail[at - 1] == "\r":
        at, brk = at - 1, "\r\n"
    start = rng.randint(0, at)
    rep = tail[start:at] + brk + tail[at:]
    return Reply(rep + new, end, overlap=len(rep), variant="repeat, blank line added")
