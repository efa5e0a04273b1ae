"""What models wrap around the document they write: prose before it, code fences around it,
a sign-off after it; and the tests a careful reader applies to tell such lines from content.
"""

from __future__ import annotations

import random

CONTINUE_PROSE = (
    "Continuing:",
    "Continuing",
    "Continuing from where I left off:",
    "Sure! Here is the rest",
    "Sure! Here is the rest:",
    "Sure, here's the rest of the document:",
    "Here's the continuation:",
    "Here's the continuation",
    "Here is the continuation of the document:",
    "Of course. Picking up exactly where the previous part stopped:",
    "Certainly! Continuing from the cut:",
    "Apologies, the previous response was cut off. Here is the remainder:",
    "Okay, continuing the document.",
    "The rest of the document follows.",
)
FIRST_PROSE = (
    "Here is the {what} you asked for:",
    "Sure! Here's the {what}:",
    "Certainly. Below is the complete {what}.",
    "Here is a draft of the {what}",
    "Okay, here's the {what} as requested:",
)
SIGNOFFS = (
    "Let me know if you need anything else!",
    "Let me know if you'd like any changes.",
    "I hope this helps!",
    "That completes the document.",
    "Feel free to ask if you want me to expand any section.",
)
WHAT = {"json": ("JSON", "data"), "csv": ("CSV", "table"), "markdown": ("document", "notes"),
        "text": ("text", "essay")}  # fmt: skip
FENCE_TAGS = {
    "json": ("json", "JSON", ""),
    "csv": ("csv", ""),
    "markdown": ("markdown", "md", ""),
    "text": ("text", "", "plaintext"),
}
_OPENERS = (
    "here is", "here's", "sure", "certainly", "of course", "okay", "ok,", "continuing",
    "below", "the following", "as requested", "note:", "apologies", "the rest", "picking up",
)  # fmt: skip
_SIGNOFF_OPENERS = ("let me know", "i hope", "hope this", "feel free", "that completes", "thank")


def fence(fmt: str, rng: random.Random) -> str:
    return "```" + rng.choice(FENCE_TAGS[fmt])


def prefix(fmt: str, rng: random.Random, fenced: bool | None = None) -> str:
    """What a model writes before continuing: prose, a fence, or both (ends with a newline)."""
    if fenced is None:
        fenced = rng.random() < 0.5
    prose = rng.random() < 0.8 or not fenced
    parts = []
    if prose:
        parts.append(rng.choice(CONTINUE_PROSE) + rng.choice(("\n", "\n", "\n\n")))
    if fenced:
        parts.append(fence(fmt, rng) + "\n")
    return "".join(parts)


def suffix(content: str, rng: random.Random, fenced: bool, blank_before: bool = False) -> str:
    """What a model writes after the end of the document: a closing fence (when it opened
    one, usually), a sign-off, or nothing. ``blank_before``: an empty line before the fence.
    """
    lead = "" if content.endswith("\n") else "\n"
    if blank_before:
        lead += "\n"
    signoff = rng.choice(SIGNOFFS) if rng.random() < 0.5 else ""
    if fenced and rng.random() < 0.85:
        out = lead + "```"
        if signoff:
            return out + "\n\n" + signoff
        return out + rng.choice(("", "\n"))
    return lead + "\n" + signoff if signoff else ""


def first_prefix(fmt: str, rng: random.Random, prose: bool = False) -> str:
    """The wrapper of a first reply: prose and a fence, prose alone, or (unless ``prose``
    is required) a fence alone."""
    what = rng.choice(WHAT[fmt])
    line = rng.choice(FIRST_PROSE).format(what=what)
    roll = rng.random()
    if roll < 0.25 and not prose:
        return fence(fmt, rng) + "\n"
    if roll < 0.5:
        return line + rng.choice(("\n", "\n\n"))
    return line + rng.choice(("\n", "\n\n")) + fence(fmt, rng) + "\n"


def preamble_like(line: str) -> bool:
    """Whether a careful reader could take ``line`` for an assistant's preamble."""
    s = line.strip().lower()
    return bool(s) and s.startswith(_OPENERS) and len(s.split()) <= 14


def signoff_like(line: str) -> bool:
    s = line.strip().lower()
    return bool(s) and s.startswith(_SIGNOFF_OPENERS) and len(s.split()) <= 14


def fence_line(line: str) -> bool:
    return line.strip().startswith(("```", "~~~"))
