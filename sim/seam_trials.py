"""Seam-corpus trials: a true document, the fragments a model would send for it, the right
merged text, and whether that is the only right reading; and how a merge result is judged.

``make_trial(fmt, behaviours, rng)`` cuts a fresh document into a first reply and one reply
per behaviour (a ``blank`` reply carries nothing; a content reply always follows it; the last
reply reaches the end of the document). ``classify(trial, text, ok, doubts, fmt)`` sorts a
merge result: exact (ok, no doubt, right text), flagged (not ok, or doubts: honest whatever
the text) or silent (ok, no doubt, wrong text). Pure, stdlib only.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sim import seam_documents, seam_json, seam_wrappers
from sim.seam_cuts import pick_cut
from sim.seam_truth import csv_fields, label_detection, label_first, label_seam, valid
from sim.seams import BEHAVIOURS, Behaviour, Reply, applies, continue_reply

FORMATS = ("json", "csv", "markdown", "text")
Kind = Literal["exact", "flagged", "silent"]


@dataclass(frozen=True)
class Trial:
    fmt: str  # what ``stitch`` is asked for ("auto" for a detection trial)
    true_fmt: str
    fragments: tuple[str, ...]
    expected: str
    accepted: tuple[str, ...]  # ``expected`` and the JSON readings equal to it up to white space
    unambiguous: bool
    reasons: tuple[str, ...]
    behaviours: tuple[str, ...]
    variants: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    kind: Kind
    right: bool


def _cut_kind(behaviour: str, rng: random.Random) -> str | None:
    if behaviour == "multibyte":
        return "multibyte"
    if behaviour == "syntax_slip" and rng.random() < 0.35:
        return "number"
    if behaviour == "whitespace" and rng.random() < 0.3:
        return "line"
    if behaviour == "prose_exact" and rng.random() < 0.4:
        return rng.choice(("line", "indent"))
    return None


def _document(
    fmt: str, behaviours: Sequence[str], rng: random.Random
) -> tuple[str, tuple[int, int] | None]:
    replies = sum(1 for b in behaviours if b != "blank")
    size = rng.randint(150, 1200) if replies == 1 else rng.randint(300, 500) * replies
    if "periodic" in behaviours:
        doc, lo, hi = seam_documents.periodic_document(fmt, rng, size)
        return doc, (lo, hi)
    multibyte = "multibyte" in behaviours or rng.random() < 0.1
    return seam_documents.document(fmt, rng, size, multibyte), None


def _plan(behaviours: Sequence[Behaviour], rng: random.Random) -> list[Behaviour]:
    """The replies in order: after a trailing blank one, a reply that carries content."""
    plan = list(behaviours)
    if not plan or plan[-1] == "blank":
        plan.append(rng.choice(("exact", "exact", "repeat", "prose_repeat", "prose_exact")))
    return plan


def make_trial(
    fmt: str, behaviours: Sequence[Behaviour], rng: random.Random, auto: bool = False
) -> Trial:
    """A trial of ``fmt`` whose replies after the first follow ``behaviours`` in order."""
    for _ in range(20):
        trial = _attempt(fmt, _plan(behaviours, rng), rng, auto)
        if trial is not None:
            return trial
    raise RuntimeError(f"no valid {fmt} trial for {behaviours}")  # pragma: no cover


def _attempt(fmt: str, plan: list[Behaviour], rng: random.Random, auto: bool) -> Trial | None:
    doc, region = _document(fmt, plan, rng)
    content_replies = sum(1 for b in plan if b != "blank")
    if len(doc) < 2 * content_replies + 2:
        return None
    header = csv_fields(doc.split("\n")[0].rstrip("\r")) if fmt == "csv" else 0
    first = plan[0]
    if first == "periodic" and region is not None:
        cut = pick_cut(doc, fmt, rng, region[0], region[1])
    else:
        span = 2 * len(doc) // (content_replies + 1)
        hi = min(span, len(doc) - content_replies)
        cut = pick_cut(doc, fmt, rng, 0, hi, kind=_cut_kind(first, rng))
    first_prefix = ""
    if auto or rng.random() < 0.2:
        first_prefix = seam_wrappers.first_prefix(fmt, rng, prose=auto)
    fragments = [first_prefix + doc[:cut]]
    steps: list[tuple[str, Reply]] = []
    remaining = content_replies
    for index, behaviour in enumerate(plan):
        if behaviour == "blank":
            end = cut
        elif remaining == 1:
            end = len(doc)
        else:
            nxt = plan[index + 1] if index + 1 < len(plan) else "exact"
            span = 2 * (len(doc) - cut) // remaining
            lo, hi = cut, min(cut + span, len(doc) - remaining)
            if nxt == "periodic" and region is not None and cut < region[1] - 1:
                lo, hi = max(cut, region[0]), min(hi, region[1])
            end = pick_cut(doc, fmt, rng, lo, hi, kind=_cut_kind(nxt, rng))
        if behaviour != "blank":
            remaining -= 1
        reply = continue_reply(doc, cut, end, behaviour, fmt=fmt, rng=rng)
        steps.append((doc[:cut], reply))
        fragments.append(reply.text)
        doc = doc[:cut] + reply.adds + doc[reply.end :]
        cut += len(reply.adds)
    if not valid(doc, fmt) or any(not r.text.strip() for _, r in steps if r.adds):
        return None
    reasons = label_first(fmt, first_prefix, doc, _fenced(first_prefix, steps), header)
    if auto:
        reasons += label_detection(fmt, steps[0][0] if steps else doc)
    accepted = [doc]
    for before, reply in steps:
        after = doc[len(before) + len(reply.adds) :]
        label = label_seam(fmt, before, reply, after, header)
        reasons += label.reasons
        accepted += [a for a in label.accepted if a not in accepted]
    return Trial(
        fmt="auto" if auto else fmt,
        true_fmt=fmt,
        fragments=tuple(fragments),
        expected=doc,
        accepted=tuple(accepted),
        unambiguous=not reasons,
        reasons=tuple(reasons),
        behaviours=tuple(plan),
        variants=tuple(r.variant for _, r in steps),
    )


def _fenced(first_prefix: str, steps: list[tuple[str, Reply]]) -> bool:
    return "```" in first_prefix or any("```" in r.prefix + r.suffix for _, r in steps)


def usable(fmt: str) -> list[Behaviour]:
    return [b for b in BEHAVIOURS if applies(b, fmt)]


def make_multi_trial(fmt: str, rng: random.Random, fragments: int, auto: bool = False) -> Trial:
    """A document cut into ``fragments`` fragments (3-8), the replies' behaviours mixed."""
    periodic = rng.random() < 0.15
    pool = [b for b in usable(fmt) if b != "periodic"]
    plan: list[Behaviour] = [rng.choice(pool) for _ in range(fragments - 1)]
    if periodic:
        plan[rng.randrange(len(plan))] = "periodic"
    return make_trial(fmt, plan, rng, auto)


def format_right(trial: Trial, detected: str) -> bool:
    if trial.fmt != "auto" or detected == trial.true_fmt:
        return True
    return {detected, trial.true_fmt} <= {"markdown", "text"}


def classify(trial: Trial, text: str, ok: bool, doubts: Sequence[str], detected: str) -> Outcome:
    """Exact, flagged or silent, and whether the text (and detected format) is right.

    JSON is right when it holds the expected tokens: white space outside strings is not
    part of the document the model meant."""
    same = text in trial.accepted or (
        trial.true_fmt == "json" and seam_json.same_tokens(text, trial.expected)
    )
    right = same and format_right(trial, detected)
    if not ok or doubts:
        return Outcome("flagged", right)
    return Outcome("exact" if right else "silent", right)


def first_difference(a: str, b: str) -> int:
    """Where ``a`` and ``b`` first differ (the shorter length if one starts the other)."""
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


def explain(trial: Trial, text: str, warnings: Sequence[str], detected: str) -> str:
    """A failure message: what went in, what was right, what came out."""
    at = first_difference(trial.expected, text)
    lines = [
        f"format {trial.fmt} (true {trial.true_fmt}, detected {detected})",
        f"behaviours {list(trial.behaviours)}; variants {list(trial.variants)}",
        f"unambiguous {trial.unambiguous} {list(trial.reasons)}",
        "fragments:",
        *(f"  [{i}] {f!r}" for i, f in enumerate(trial.fragments)),
        f"expected: {trial.expected!r}",
        f"got:      {text!r}",
        f"first difference at {at}: expected ...{trial.expected[max(0, at - 40) : at + 40]!r}",
        f"                          got      ...{text[max(0, at - 40) : at + 40]!r}",
        f"warnings: {list(warnings)}",
    ]
    return "\n".join(lines)
