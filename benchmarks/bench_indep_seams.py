"""The independent seam corpus against ``stitch``: exact / flagged / silent per behaviour, format.

    uv run python -m benchmarks.bench_indep_seams [--seed S] [--trials N] [--show K]

Trial ``i`` of seed ``S`` is ``benchmarks.indep.gen.make_trial(S, i)`` (see
``benchmarks/indep`` for where the corpus comes from). A merge is ``exact`` when clean and
one of the right documents, ``flagged`` when not ok or doubted, ``silent_amb`` when clean
and one of the other readings of a seam that reads two ways, ``silent`` when clean and
wrong, ``error`` when ``stitch`` raises. Trailing line breaks are not compared; JSON is
compared by value. A cell reads ``exact/flagged/silent/silent_amb`` (``/error`` if any).
``--show`` lists up to K silent trials (unambiguous first, at most ``--per-class`` per
class, behaviour and format), each shrunk to a small reproducer unless ``--no-shrink``.
"""

from __future__ import annotations

import argparse
import collections
import copy
import time

from benchmarks.indep import gen
from core import StitchResult, stitch

CLASSES = ["exact", "flagged", "silent", "silent_amb", "error"]
FORMATS = ["json", "csv", "markdown", "text", "ALL"]

Outcome = tuple[str, StitchResult | None, str]  # class, result (None: raised), text or error


def classify(t: gen.Trial, rend: gen.Rendering) -> Outcome:
    try:
        res = stitch(list(rend.frags), t.pass_fmt)
    except Exception as ex:
        return "error", None, repr(ex)
    text = res.text if res.text is not None else ""
    if not res.ok or res.doubts:
        return "flagged", res, text
    fmt = t.fmt
    if any(gen.same(fmt, text, a) for a in rend.accepts):
        return "exact", res, text
    if any(gen.same(fmt, text, a) for a in rend.alts):
        return "silent_amb", res, text
    return "silent", res, text


def delete_span(t: gen.Trial, a: int, b: int) -> gen.Trial | None:
    doc = t.doc
    if any(a <= c < b for c in t.cuts):
        return None
    t2 = copy.deepcopy(t)
    t2.doc = doc[:a] + doc[b:]
    t2.cuts = [c - (b - a) if c >= b else c for c in t.cuts]
    if len(set(t2.cuts)) != len(t2.cuts) or any(c <= 0 or c >= len(t2.doc) for c in t2.cuts):
        return None
    return t2


def candidate_spans(t: gen.Trial) -> list[tuple[int, int]]:
    doc, fmt = t.doc, t.fmt
    spans: set[tuple[int, int]] = set()
    if fmt == "json":
        spans.update(gen.json_elements(doc))
    if fmt == "csv":
        starts = [*gen.csv_record_starts(doc)[1:], len(doc)]  # never the header
    else:
        lines = [i + 1 for i, ch in enumerate(doc) if ch == "\n" and i + 1 < len(doc)]
        starts = [0, *lines, len(doc)]
    n = len(starts) - 1
    size = n
    while size >= 1:
        for i in range(0, n - size + 1, max(1, size // 2)):
            spans.add((starts[i], starts[i + size]))
        size //= 2
    return sorted(spans, key=lambda s: -(s[1] - s[0]))


def _drop_a_seam(t: gen.Trial, cls: str) -> tuple[gen.Trial | None, int]:
    """a trial with two fragments merged that is still ``cls`` (None: none), and the calls."""
    calls = 0
    for i in range(len(t.cuts)):
        if len(t.cuts) <= 1:
            break
        t2 = copy.deepcopy(t)
        del t2.cuts[i]
        del t2.seams[i]
        calls += 1
        if classify(t2, gen.render(t2))[0] == cls:
            return t2, calls
    return None, calls


def _drop_a_span(t: gen.Trial, cls: str, calls: int, budget: int) -> tuple[gen.Trial | None, int]:
    """a trial with a span of the document deleted that is still ``cls``, and the calls."""
    wins = gen.render(t).windows
    for a, b in candidate_spans(t):
        if calls >= budget:
            break
        if any(a < hi and lo < b for lo, hi in wins):
            continue
        t2 = delete_span(t, a, b)
        if t2 is None or (t.fmt in ("json", "csv") and not gen.valid(t.fmt, t2.doc)):
            continue
        calls += 1
        if classify(t2, gen.render(t2))[0] == cls:
            return t2, calls
    return None, calls


def shrink(t: gen.Trial, cls: str, budget: int = 300) -> gen.Trial:
    calls = 0
    progress = True
    while progress and calls < budget:
        # drop a whole seam (merge two fragments), else a span away from the seams
        smaller, spent = _drop_a_seam(t, cls)
        calls += spent
        if smaller is None:
            smaller, calls = _drop_a_span(t, cls, calls, budget)
        progress = smaller is not None
        if smaller is not None:
            t = smaller
    return t


def first_diff(a: str, b: str) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def show(t: gen.Trial, cls: str, text: str, res: StitchResult | None) -> str:
    rend = gen.render(t)
    exp = rend.accepts[0]
    out = [
        f"--- {cls}  seed={t.seed} idx={t.idx} fmt={t.fmt} behaviour={t.beh} "
        f"seams={[s.b for s in t.seams]} ambiguous={bool(rend.alts)}"
    ]
    out.append(f"stitch({rend.frags!r}, {t.pass_fmt!r})")
    j = first_diff(text, exp)
    lo = max(0, j - 60)
    out.append(f"  got:      {text[lo : j + 60]!r}")
    out.append(
        f"  expected: {exp[lo : j + 60]!r}   (first difference at {j}; "
        f"{len(rend.accepts)} acceptable doc(s))"
    )
    if res is not None and res.warnings:
        out.append(f"  warnings: {res.warnings!r}")
    return "\n".join(out)


Table = collections.defaultdict[tuple[str, str], collections.Counter[str]]
Silent = tuple[str, gen.Trial, str, StitchResult | None]


def print_table(table: Table, seed: int, trials: int, elapsed: float) -> None:
    print(f"seed={seed} trials={trials} time={elapsed:.0f}s")
    print("cells: exact/flagged/SILENT/silent_amb(/error)")
    print(f"{'behaviour':16}" + "".join(f"{f:>22}" for f in FORMATS))
    for b in [*gen.BEHAVIOURS, "ALL"]:
        row = f"{b:16}"
        for f in FORMATS:
            c = table[(b, f)]
            cell = f"{c['exact']}/{c['flagged']}/{c['silent']}/{c['silent_amb']}"
            cell += f"/{c['error']}" if c["error"] else ""
            row += f"{cell:>22}"
        print(row)
    print("TOTAL", dict(table[("ALL", "ALL")]))


def print_silent(silent: list[Silent], args: argparse.Namespace) -> None:
    """up to ``args.show`` silent trials, unambiguous first, varied over behaviours."""
    silent.sort(key=lambda x: (x[0] != "silent",))
    seen: collections.Counter[tuple[str, str, str]] = collections.Counter()
    shown = 0
    for cls, t, text, res in silent:
        if shown >= args.show:
            break
        key = (cls, t.beh, t.fmt)
        if args.only:
            ob, _, of = args.only.partition(":")
            if t.beh != ob or (of and t.fmt != of):
                continue
        if seen[key] >= args.per_class:
            continue
        seen[key] += 1
        if args.no_shrink:
            print(show(t, cls, text, res))
        else:
            small = shrink(t, cls)
            _, small_res, small_text = classify(small, gen.render(small))
            print(show(small, cls, small_text, small_res))
        shown += 1


def run(args: argparse.Namespace) -> None:
    t0 = time.time()
    table: Table = collections.defaultdict(collections.Counter)
    silent: list[Silent] = []
    errors: list[tuple[gen.Trial, str]] = []
    for i in range(args.trials):
        t = gen.make_trial(args.seed, i)
        rend = gen.render(t)
        cls, res, text = classify(t, rend)
        table[(t.beh, t.fmt)][cls] += 1
        table[("ALL", t.fmt)][cls] += 1
        table[(t.beh, "ALL")][cls] += 1
        table[("ALL", "ALL")][cls] += 1
        if cls in ("silent", "silent_amb"):
            silent.append((cls, t, text, res))
        if cls == "error":
            errors.append((t, text))
    print_table(table, args.seed, args.trials, time.time() - t0)
    for t, e in errors[:5]:
        print("ERROR", t.seed, t.idx, e)
    print_silent(silent, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--trials", type=int, default=5000)
    parser.add_argument("--show", type=int, default=40, help="silent trials to list (shrunk)")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--only", default="", help="behaviour[:fmt] filter for the listing")
    parser.add_argument("--per-class", type=int, default=3)
    run(parser.parse_args())


if __name__ == "__main__":
    main()
