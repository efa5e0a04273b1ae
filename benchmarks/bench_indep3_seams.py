"""The third seam corpus against ``stitch``: exact / flagged / silent per behaviour and format.

    uv run python -m benchmarks.bench_indep3_seams [--seed S] [--trials N] [--show K]

Trial ``i`` of seed ``S`` is ``benchmarks.indep3.gen.generate(S, i)`` (see
``benchmarks/indep3`` for where the corpus comes from). A merge is ``exact`` when clean
(ok, no doubt) and one of the right documents, ``flagged`` when not ok or doubted,
``silent_amb`` when clean and one of the other readings of a seam that reads two ways,
``silent`` when clean and wrong, ``error`` when ``stitch`` raises. Trailing line breaks are
not compared; JSON is compared by value (members in any order, numbers by value). The
columns are the format ``stitch`` is asked for (``auto`` for 15% of the trials). A cell
reads ``exact/flagged/silent/silent_amb`` (``/error`` if any). ``--show`` lists up to K
silent trials (unambiguous first, then the worst and smallest, at most ``--per-class`` per
class, behaviour and format), each shrunk as the corpus's own runner shrinks them (blocks
of lines, then clauses, cut from a fragment and the documents alike while the merge stays
wrong the same way) unless ``--no-shrink``.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import difflib
import itertools
import json
import re
import time

from benchmarks.bench_indep_seams import first_diff
from benchmarks.indep3 import gen
from benchmarks.indep3.docs import csv_rows
from core import StitchResult, stitch

CLASSES = ["exact", "flagged", "silent", "silent_amb", "error"]
FORMATS = ["json", "csv", "markdown", "text", "auto", "ALL"]

Outcome = tuple[str, StitchResult | None, str]  # class, result (None: raised), text or error


def _sorted_members(pairs: list[tuple[str, object]]) -> object:
    """a JSON object as its members in key order (a key written twice kept twice)."""
    return ("__obj__", tuple(sorted(pairs, key=lambda kv: kv[0])))


def json_value(text: str) -> tuple[bool, object]:
    try:
        return True, json.loads(text, object_pairs_hook=_sorted_members)
    except ValueError:
        return False, None


def same(kind: str, a: str, b: str) -> bool:
    if a.rstrip("\r\n") == b.rstrip("\r\n"):
        return True
    if kind == "json":
        (oka, va), (okb, vb) = json_value(a), json_value(b)
        return oka and okb and va == vb
    return False


def classify(t: gen.Trial) -> Outcome:
    try:
        res = stitch(list(t.fragments), t.fmt)
    except Exception as ex:
        return "error", None, repr(ex)
    if not res.ok or res.doubts:
        return "flagged", res, res.text
    if any(same(t.kind, res.text, a) for a in t.accepts):
        return "exact", res, res.text
    if any(same(t.kind, res.text, a) for a in t.alts):
        return "silent_amb", res, res.text
    return "silent", res, res.text


def severity(kind: str, expected: str, got: str) -> tuple[int, str]:
    """how bad a wrong merge is (0 worst .. 3 whitespace only), and what it did."""
    if kind == "json" and not gen.valid("json", got):
        return 0, "invalid JSON returned as ok"
    e, g = "".join(expected.split()), "".join(got.split())
    if e == g:
        if kind == "csv" and csv_rows(expected) != csv_rows(got):
            return 2, "csv field values changed (line breaks inside quoted fields)"
        return 3, "whitespace only"
    ops = difflib.SequenceMatcher(None, e, g, autojunk=False).get_opcodes()
    if any(op in ("delete", "replace") for op, *_ in ops):
        return 0, "content lost"
    inserted = "".join(g[j1:j2] for op, _, _, j1, j2 in ops if op == "insert")
    if inserted in e:
        return 1, "content duplicated"
    return 2, "extra text kept"


# --------------------------------------------------------------------------- shrinker
def chunks(text: str, gran: str) -> list[str]:
    """``text`` cut after each line break (``gran`` "line") or each clause's punctuation."""
    if gran == "line":
        return re.findall(r"[^\n]*\n|[^\n]+", text)
    out, pos = [], 0
    for m in re.finditer(r"(?<=[,.;!?])\s+", text):
        out.append(text[pos : m.end()])
        pos = m.end()
    out.append(text[pos:])
    return [p for p in out if p]


def signature(expected: str, got: str) -> frozenset[tuple[str, str]]:
    """how a merge differs from the document meant: its (expected, got) differing spans."""
    ops = difflib.SequenceMatcher(None, expected, got, autojunk=False).get_opcodes()
    return frozenset((expected[i1:i2], got[j1:j2]) for op, i1, i2, j1, j2 in ops if op != "equal")


def _removable(t: gen.Trial, block: str, gran: str) -> bool:
    """``block`` is once in the fragments and the document meant (and so is each of its
    lines), so that cutting it cuts the same text from both."""
    if gran != "line" and "\n" in block:
        return False
    pieces = [x for x in block.split("\n") if x.strip()] if gran == "line" else [block]
    return (
        all(sum(f.count(x) for f in t.fragments) == 1 for x in [block, *pieces])
        and t.accepts[0].count(block) == 1
    )


def _without(t: gen.Trial, fi: int, block: str, rest: str, gran: str) -> gen.Trial | None:
    """``t`` with ``block`` cut from fragment ``fi`` (leaving ``rest``) and from its documents
    (None: it cannot be)."""
    if len(block) < 2 or not _removable(t, block, gran) or (rest == "" and fi > 0):
        return None
    return dataclasses.replace(
        t,
        fragments=[*t.fragments[:fi], rest, *t.fragments[fi + 1 :]],
        accepts=[a.replace(block, "", 1) for a in t.accepts],
        alts=[a.replace(block, "", 1) for a in t.alts],
    )


def _still(t: gen.Trial, cls: str, sig: frozenset[tuple[str, str]]) -> bool:
    if not gen.valid(t.kind, t.accepts[0]):
        return False
    got, _, text = classify(t)
    return got == cls and signature(t.accepts[0], text) == sig


def shrink(t: gen.Trial, cls: str, budget: int = 1500) -> gen.Trial:
    """``t`` with blocks of lines, then of clauses, cut while it stays ``cls`` the same way;
    never a reply's first chunk or a fragment's last (``budget``: merges tried)."""
    sig = signature(t.accepts[0], stitch(list(t.fragments), t.fmt).text)
    tries = 0
    for gran, size in itertools.product(("line", "line", "clause"), (16, 8, 4, 2, 1)):
        fi = 0
        while fi < len(t.fragments):
            parts = chunks(t.fragments[fi], gran)
            i = 0
            while i < len(parts):
                if (i == 0 and fi > 0) or i + size >= len(parts):
                    i += 1
                    continue
                block = "".join(parts[i : i + size])
                rest = "".join(parts[:i] + parts[i + size :])
                smaller = _without(t, fi, block, rest, gran) if tries <= budget else None
                if smaller is None:
                    i += size
                    continue
                tries += 1
                if _still(smaller, cls, sig):
                    t = smaller
                    parts = chunks(t.fragments[fi], gran)
                else:
                    i += size
            fi += 1
    return t


# --------------------------------------------------------------------------- report
def show(t: gen.Trial, cls: str, what: str, orig_len: int) -> str:
    _, res, text = classify(t)
    exp = t.accepts[0]
    size = sum(map(len, t.fragments))
    shrunk = f", shrunk from {orig_len}" if size != orig_len else ""
    out = [
        f"--- {cls}  seed={t.seed} idx={t.index} fmt={t.fmt} kind={t.kind} "
        f"behaviour={t.behaviour}  ({what}; {size} chars{shrunk})"
    ]
    out.append(f"stitch({t.fragments!r}, {t.fmt!r})")
    j = first_diff(text, exp)
    lo = max(0, j - 60)
    out.append(f"  got:      {text[lo : j + 60]!r}")
    out.append(
        f"  expected: {exp[lo : j + 60]!r}   (first difference at {j}; "
        f"{len(t.accepts)} acceptable doc(s))"
    )
    if res is not None and res.warnings:
        out.append(f"  warnings: {res.warnings!r}")
    return "\n".join(out)


Table = collections.defaultdict[tuple[str, str], collections.Counter[str]]
Silent = tuple[str, gen.Trial, str]  # class, trial, merged text


def print_table(table: Table, seed: int, trials: int, elapsed: float) -> None:
    print(f"seed={seed} trials={trials} time={elapsed:.0f}s")
    print("cells: exact/flagged/SILENT/silent_amb(/error)")
    print(f"{'behaviour':20}" + "".join(f"{f:>18}" for f in FORMATS))
    behaviours = sorted({b for b, _ in table} - {"ALL"})
    for b in [*behaviours, "ALL"]:
        row = f"{b:20}"
        for f in FORMATS:
            c = table.get((b, f))
            cell = ""
            if c:
                cell = f"{c['exact']}/{c['flagged']}/{c['silent']}/{c['silent_amb']}"
                cell += f"/{c['error']}" if c["error"] else ""
            row += f"{cell:>18}"
        print(row)
    total = table[("ALL", "ALL")]
    print("TOTAL " + " ".join(f"{k}={total[k]}" for k in CLASSES))


def print_silent(silent: list[Silent], args: argparse.Namespace) -> None:
    """up to ``args.show`` silent trials, unambiguous first, then the worst and smallest."""
    ob, _, of = args.only.partition(":")
    ranked = []
    for cls, t, text in silent:
        if args.only and (t.behaviour != ob or (of and t.fmt != of)):
            continue
        sev, what = severity(t.kind, t.accepts[0], text)
        ranked.append((cls != "silent", sev, sum(map(len, t.fragments)), what, cls, t))
    ranked.sort(key=lambda x: x[:3])
    seen: collections.Counter[tuple[str, str, str]] = collections.Counter()
    shown = 0
    for _, _, size, what, cls, t in ranked:
        if shown >= args.show:
            break
        key = (cls, t.behaviour, t.fmt)
        if seen[key] >= args.per_class:
            continue
        seen[key] += 1
        print(show(t if args.no_shrink else shrink(t, cls), cls, what, size))
        shown += 1


def run(args: argparse.Namespace) -> None:
    t0 = time.time()
    table: Table = collections.defaultdict(collections.Counter)
    silent: list[Silent] = []
    errors: list[tuple[gen.Trial, str]] = []
    for i in range(args.trials):
        t = gen.generate(args.seed, i)
        cls, _, text = classify(t)
        for key in itertools.product((t.behaviour, "ALL"), (t.fmt, "ALL")):
            table[key][cls] += 1
        if cls in ("silent", "silent_amb"):
            silent.append((cls, t, text))
        if cls == "error":
            errors.append((t, text))
    print_table(table, args.seed, args.trials, time.time() - t0)
    for t, e in errors[:5]:
        print("ERROR", t.seed, t.index, e)
    print_silent(silent, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--trials", type=int, default=3000)
    parser.add_argument("--show", type=int, default=0, help="silent trials to list (shrunk)")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--only", default="", help="behaviour[:fmt] filter for the listing")
    parser.add_argument("--per-class", type=int, default=2)
    run(parser.parse_args())


if __name__ == "__main__":
    main()
