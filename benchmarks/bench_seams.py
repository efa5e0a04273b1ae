"""The seam corpus against ``stitch``: exact / flagged / silent per behaviour and format.

    uv run python -m benchmarks.bench_seams [--trials N] [--seed S] [--show-silent K]

Trials (``sim.seam_trials``, driven by plain ``random.Random``) are spread evenly over every
behaviour x format cell (``auto``: a random format the behaviour applies to, asked for as
``auto``) plus a ``mixed`` row of 3-8 fragment trials. A cell reads ``exact / flagged
(flagged but right) / silent``; ``unamb`` is the exact share of the trials labelled
unambiguous. Silent (ok, no doubt, wrong text) is the number to drive to 0. The slowest
merges are timed; ``--show-silent`` prints that many silent trials, one per cell in turn.
"""

from __future__ import annotations

import argparse
import heapq
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import cast

from core import stitch
from sim.seam_trials import (
    FORMATS,
    Trial,
    classify,
    first_difference,
    format_right,
    make_multi_trial,
    make_trial,
)
from sim.seams import BEHAVIOURS, Behaviour, applies

COLUMNS = (*FORMATS, "auto")
ROWS = (*BEHAVIOURS, "mixed")


@dataclass
class Cell:
    trials: int = 0
    exact: int = 0
    flagged: int = 0
    flagged_right: int = 0
    silent: int = 0
    unambiguous: int = 0
    unambiguous_exact: int = 0
    examples: list[tuple[Trial, str]] = field(default_factory=list)

    def add(self, other: Cell) -> None:
        for name in ("trials", "exact", "flagged", "flagged_right", "silent"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.unambiguous += other.unambiguous
        self.unambiguous_exact += other.unambiguous_exact

    def text(self) -> str:
        return f"{self.exact} / {self.flagged} ({self.flagged_right}) / {self.silent}"

    def share(self) -> str:
        if not self.unambiguous:
            return "-"
        return f"{100 * self.unambiguous_exact / self.unambiguous:.1f}%"


def cells() -> list[tuple[str, str]]:
    out = []
    for row in ROWS:
        for col in COLUMNS:
            if row == "mixed" or col == "auto" or applies(cast(Behaviour, row), col):
                out.append((row, col))
    return out


def trial_for(row: str, col: str, rng: random.Random) -> Trial:
    auto = col == "auto"
    if row == "mixed":
        fmt = rng.choice(FORMATS) if auto else col
        return make_multi_trial(fmt, rng, rng.randint(3, 8), auto=auto)
    behaviour = cast(Behaviour, row)
    fmt = rng.choice([f for f in FORMATS if applies(behaviour, f)]) if auto else col
    return make_trial(fmt, [behaviour], rng, auto=auto)


def short(text: str, width: int = 70) -> str:
    if len(text) <= 2 * width:
        return repr(text)
    return repr(text[:width]) + " ... " + repr(text[-width:])


def run(trials: int, seed: int, show_silent: int) -> None:
    grid: dict[tuple[str, str], Cell] = defaultdict(Cell)
    slowest: list[tuple[float, str]] = []
    per_cell = max(1, -(-trials // len(cells())))  # at least ``trials`` in all
    started = time.perf_counter()
    merging = 0.0
    misdetected: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # true format: [all, text ok]
    for row, col in cells():
        for index in range(per_cell):
            trial = trial_for(row, col, random.Random(f"{seed}/{row}/{col}/{index}"))
            t0 = time.perf_counter()
            result = stitch(list(trial.fragments), trial.fmt)
            spent = time.perf_counter() - t0
            merging += spent
            size = sum(map(len, trial.fragments))
            note = f"{row}/{col} #{index}: {len(trial.fragments)} fragments, {size} chars"
            heapq.heappush(slowest, (spent, note))
            if len(slowest) > 5:
                heapq.heappop(slowest)
            outcome = classify(trial, result.text, result.ok, result.doubts, result.format)
            if not format_right(trial, result.format):
                misdetected[f"{trial.true_fmt} as {result.format}"][0] += 1
                misdetected[f"{trial.true_fmt} as {result.format}"][1] += (
                    result.text in trial.accepted
                )
            cell = grid[row, col]
            cell.trials += 1
            cell.unambiguous += trial.unambiguous
            if outcome.kind == "exact":
                cell.exact += 1
                cell.unambiguous_exact += trial.unambiguous
            elif outcome.kind == "flagged":
                cell.flagged += 1
                cell.flagged_right += outcome.right
            else:
                cell.silent += 1
                if len(cell.examples) < 3:
                    cell.examples.append((trial, result.text))
    total = time.perf_counter() - started
    print_table(grid, per_cell, seed)
    print(f"\n{per_cell * len(cells())} trials in {total:.1f} s ({merging:.1f} s merging).")
    if misdetected:
        print("Wrong format detected (auto), with the right text nonetheless:")
        for name, (count, text_ok) in sorted(misdetected.items()):
            print(f"- {name}: {count} ({text_ok})")
    print("Slowest merges:")
    for spent, note in sorted(slowest, reverse=True):
        print(f"- {1000 * spent:.1f} ms  {note}")
    print_silent(grid, show_silent)


def print_table(grid: dict[tuple[str, str], Cell], per_cell: int, seed: int) -> None:
    print(f"Seam corpus, seed {seed}, {per_cell} trials per cell: exact / flagged (right) / silent")
    print()
    print("| behaviour | " + " | ".join(COLUMNS) + " | silent | unamb |")
    print("|---|" + "---|" * (len(COLUMNS) + 2))
    totals: dict[str, Cell] = defaultdict(Cell)
    for row in ROWS:
        line = Cell()
        texts = []
        for col in COLUMNS:
            if (row, col) not in grid:
                texts.append("-")
                continue
            cell = grid[row, col]
            texts.append(cell.text())
            line.add(cell)
            totals[col].add(cell)
        print(f"| {row} | " + " | ".join(texts) + f" | {line.silent} | {line.share()} |")
    everything = Cell()
    for cell in totals.values():
        everything.add(cell)
    cols = " | ".join(totals[c].text() for c in COLUMNS)
    print(f"| **total** | {cols} | {everything.silent} | {everything.share()} |")
    shares = " | ".join(totals[c].share() for c in COLUMNS)
    print(f"| exact % of unambiguous | {shares} | | |")
    print(
        f"\n{everything.trials} trials: {everything.exact} exact, {everything.flagged} flagged "
        f"({everything.flagged_right} of them right), {everything.silent} silent; "
        f"{everything.unambiguous} labelled unambiguous."
    )


def print_silent(grid: dict[tuple[str, str], Cell], count: int) -> None:
    if not count:
        return
    print(f"\nSilent trials (up to {count}, one per cell in turn):")
    queue = [list(cell.examples) for cell in grid.values() if cell.examples]
    shown = 0
    while shown < count and any(queue):
        for examples in queue:
            if examples and shown < count:
                trial, got = examples.pop(0)
                shown += 1
                print(f"\n{shown}. {trial.fmt} {list(trial.behaviours)} {list(trial.variants)}")
                print(f"   unambiguous {trial.unambiguous} {list(trial.reasons)[:1]}")
                for i, fragment in enumerate(trial.fragments):
                    print(f"   [{i}] {short(fragment)}")
                at = first_difference(trial.expected, got)
                print(f"   expected ...{trial.expected[max(0, at - 40) : at + 40]!r}")
                print(f"   got      ...{got[max(0, at - 40) : at + 40]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-silent", type=int, default=0)
    args = parser.parse_args()
    run(args.trials, args.seed, args.show_silent)


if __name__ == "__main__":
    main()
