"""Run the indep4 seam corpus against `core.stitch` (a corpus written without reading the engine).

    uv run python -m benchmarks.bench_indep4_seams [--seed S] [--trials N] [--show K]

Each trial is classified as
  exact       clean (ok, no doubts) and equal to an accepted document
  flagged     not ok, or doubts raised
  silent      clean and wrong: the worst outcome
  silent_amb  clean and equal to another reading the corpus author judges plausible
  error       stitch raised
(JSON compared by value, trailing newlines ignored). The table is behaviour x real format,
cells exact/flagged/silent/silent_amb. `--show K` prints up to K silent trials, at most two
per behaviour, with their fragments as a Python literal and a diff around the first
difference.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from typing import Any

from benchmarks.indep4.gen import BEHAVIOUR_NAMES, KINDS, Trial, generate
from core import stitch

OUTCOMES = ("exact", "flagged", "silent", "silent_amb", "error")


def _canon(v: Any) -> Any:
    if isinstance(v, bool) or v is None:
        return ("c", v)
    if isinstance(v, int | float):
        return ("n", float(v))
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("l", tuple(_canon(x) for x in v))
    if isinstance(v, dict):
        return ("d", tuple(sorted((k, _canon(x)) for k, x in v.items())))
    return ("?", repr(v))


def _parse(s: str | None) -> Any:
    if s is None:
        return None
    try:
        return ("ok", _canon(json.loads(s)))
    except (ValueError, RecursionError):
        return None


def same(kind: str, got: str, complete: str | None, want: str) -> bool:
    if got.rstrip("\n") == want.rstrip("\n"):
        return True
    if kind != "json":
        return False
    w = _parse(want)
    if w is None:
        return False
    return any(_parse(g) == w for g in (got, complete))


def classify(trial: Trial) -> tuple[str, str]:
    """(outcome, merged text)."""
    try:
        res = stitch(list(trial.fragments), trial.fmt)
    except Exception as exc:  # an engine crash is a result, not a harness failure
        return "error", f"{type(exc).__name__}: {exc}"
    text: str = res.text
    complete = (
        res.complete
        if isinstance(res.complete, str) or res.complete is None
        else json.dumps(res.complete)
    )
    if not res.ok or res.doubts:
        return "flagged", text
    if any(same(trial.kind, text, complete, a) for a in trial.accepts):
        return "exact", text
    if any(same(trial.kind, text, complete, a) for a in trial.alts):
        return "silent_amb", text
    return "silent", text


def _first_diff(want: str, got: str) -> int:
    i = 0
    n = min(len(want), len(got))
    while i < n and want[i] == got[i]:
        i += 1
    return i


def at_plain_seam(trial: Trial, got: str) -> bool:
    """Whether the first difference lies nearer a seam without the behaviour."""
    if not trial.seams:
        return False
    i = _first_diff(trial.accepts[0], got)
    near = min(range(len(trial.seams)), key=lambda k: abs(trial.seams[k] - i))
    return near != trial.behaviour_seam and abs(trial.seams[near] - i) < 40


def show(trial: Trial, index: int, got: str) -> None:
    want = trial.accepts[0]
    i = _first_diff(want, got)
    a = max(0, i - 90)
    w, g = want[a : i + 90], got[a : i + 90]
    where = " (first difference at a PLAIN seam)" if at_plain_seam(trial, got) else ""
    print(f"--- #{index} {trial.behaviour} kind={trial.kind} fmt={trial.fmt!r}{where}")
    print(f"fragments = {list(trial.fragments)!r}")
    print(f"expected (around first difference): {w!r}")
    print(f"got      (around first difference): {g!r}")
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--trials", type=int, default=3000)
    ap.add_argument("--show", type=int, default=0)
    args = ap.parse_args(argv)

    cells: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    totals: Counter[str] = Counter()
    plain_silent = 0
    shown: Counter[str] = Counter()
    to_show: list[tuple[int, Trial, str]] = []
    t0 = time.perf_counter()
    gen_time = 0.0
    for i in range(args.trials):
        g0 = time.perf_counter()
        trial = generate(args.seed, i)
        gen_time += time.perf_counter() - g0
        outcome, got = classify(trial)
        cells[trial.behaviour, trial.kind][outcome] += 1
        totals[outcome] += 1
        if outcome == "silent" and at_plain_seam(trial, got):
            plain_silent += 1
        if (
            outcome in ("silent", "error")
            and len(to_show) < args.show
            and shown[trial.behaviour] < 2
        ):
            shown[trial.behaviour] += 1
            to_show.append((i, trial, got))
    elapsed = time.perf_counter() - t0

    head = f"{'behaviour':26}" + "".join(f"{k:>18}" for k in (*KINDS, "all")) + "   err"
    print(
        f"indep4 seams: seed {args.seed}, {args.trials} trials;"
        " cells exact/flagged/silent/silent_amb"
    )
    print(head)
    print("-" * len(head))
    for b in BEHAVIOUR_NAMES:
        row = [cells[b, k] for k in KINDS]
        if not any(sum(c.values()) for c in row):
            continue
        allc: Counter[str] = Counter()
        for c in row:
            allc.update(c)
        line = f"{b:26}"
        for c in (*row, allc):
            line += (
                f"{'' if not sum(c.values()) else '/'.join(str(c[o]) for o in OUTCOMES[:4]):>18}"
            )
        print(line + f"{allc['error'] or '':>6}")
    print("-" * len(head))
    print("totals: " + ", ".join(f"{o} {totals[o]}" for o in OUTCOMES))
    print(f"silent trials whose first difference is at a plain (exact) seam: {plain_silent}")
    print(f"time: {elapsed:.1f} s ({gen_time:.1f} s generating)")
    for i, trial, got in to_show:
        show(trial, i, got)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
