"""Engine benchmarks (``docs/benchmarks.md``, "Engine"), measured side by side in one run.

    uv run python -m benchmarks.bench_engine [--rounds N]

1. Merging a fixed 16 KB fragment into 10 KB vs 10 MB of accumulated JSON, both through
   the JSON merger alone and through a whole ``advance()`` (merge, contexts, next prompt).
   Target: ratio at most 2 (the cost must not depend on what was accumulated).
2. Closing a truncated 1 MB JSON (scan + closed text) vs ``json_repair.repair_json`` on the
   same input. Target: at least 10x faster.

Runs alternate A and B so that machine noise hits both alike; medians are reported.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable

import json_repair

from core import (
    ContinuationConfig,
    FinishReason,
    JobSpec,
    JobState,
    OutputFormat,
    ProviderResponse,
    advance,
    start,
)
from core.json_scan import JsonScanner
from core.json_stitch import merge_json
from core.state import HEAD_CHARS, TAIL_CHARS


def records_document(size: int, seed: int = 7) -> str:
    """A JSON document of about ``size`` characters: an object holding a list of records."""
    rng = random.Random(seed)
    items = []
    total = 0
    i = 0
    while total < size:
        item = {
            "id": i,
            "name": f'customer {i} "quoted" é',
            "score": round(rng.random() * 100, 3),
            "tags": rng.sample(["alpha", "beta", "gamma", "delta", "ε"], k=rng.randint(0, 4)),
            "active": rng.random() < 0.5,
            "address": {"city": rng.choice(["Zürich", "Lyon", "Kraków"]), "zip": f"{10000 + i}"},
            "note": None if i % 3 else "line one\nline two \\ backslash",
        }
        items.append(item)
        total += 200
        i += 1
    return json.dumps({"meta": {"title": "benchmark", "version": 1}, "items": items}, indent=2)


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def side_by_side(
    a: Callable[[], object], b: Callable[[], object], rounds: int
) -> tuple[float, float]:
    """Median seconds of ``a`` and ``b``, run alternately."""
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(timed(a))
        tb.append(timed(b))
    return statistics.median(ta), statistics.median(tb)


def merge_case(
    doc: str, accumulated: int, fragment: int, overlap: int = 200
) -> tuple[JsonScanner, str, str, str]:
    """Scanner state after ``accumulated`` chars, and the next fragment repeating ``overlap``."""
    acc = doc[:accumulated]
    scan = JsonScanner().feed(acc)
    frag = doc[accumulated - overlap : accumulated + fragment - overlap]
    return scan, acc[-TAIL_CHARS:], frag, acc[:HEAD_CHARS]


def engine_state(doc: str, accumulated: int) -> JobState:
    """A job state as it stands after ``accumulated`` characters were merged."""
    spec = JobSpec(
        prompt="benchmark",
        format=OutputFormat.JSON,
        continuation=ContinuationConfig(max_attempts=10_000),
    )
    state = start(spec)
    state, _ = advance(
        state, ProviderResponse(text=doc[:accumulated], finish_reason=FinishReason.LENGTH)
    )
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    rows: list[tuple[str, float, float, str]] = []

    doc = records_document(10_500_000)
    frag_size = 16 * 1024
    small = merge_case(doc, 10 * 1024, frag_size)
    big = merge_case(doc, 10 * 1024 * 1024, frag_size)
    a, b = side_by_side(lambda: merge_json(*small), lambda: merge_json(*big), args.rounds)
    rows.append(
        ("merge 16 KB fragment: 10 KB vs 10 MB accumulated", a, b, f"{b / a:.2f}x (target <= 2)")
    )

    s_small, s_big = engine_state(doc, 10 * 1024), engine_state(doc, 10 * 1024 * 1024)

    def reply(state: JobState) -> ProviderResponse:
        n = state.length
        return ProviderResponse(
            text=doc[n - 200 : n - 200 + frag_size], finish_reason=FinishReason.LENGTH
        )

    r_small, r_big = reply(s_small), reply(s_big)
    a, b = side_by_side(
        lambda: advance(s_small, r_small), lambda: advance(s_big, r_big), args.rounds
    )
    rows.append(("advance() with 16 KB reply: 10 KB vs 10 MB", a, b, f"{b / a:.2f}x (target <= 2)"))

    truncated = records_document(1_200_000, seed=3)[:1_000_000]

    def close_ours() -> str:
        closed = JsonScanner().feed(truncated).close()
        assert closed is not None
        return truncated[: closed[0]] + closed[1]

    json.loads(close_ours())
    a, b = side_by_side(
        close_ours, lambda: json_repair.repair_json(truncated), max(3, args.rounds // 3)
    )
    rows.append(
        (
            "close truncated 1 MB JSON: ours vs json_repair",
            a,
            b,
            f"{b / a:.1f}x faster (target >= 10)",
        )
    )

    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'A median':>10}  {'B median':>10}  result")
    for name, ta, tb, verdict in rows:
        print(f"{name:<{width}}  {ta * 1000:>8.2f}ms  {tb * 1000:>8.2f}ms  {verdict}")


if __name__ == "__main__":
    main()
