"""What a continued job is billed for as input, call by call: Chat Completions (the
bounded continuation prompt every time) against the Responses API chained with
``previous_response_id`` (the whole conversation again every time), unbounded and with
the profile's ``chain_max_tokens``. Whole jobs (``workers.local.run_job``) against the
local fakes over real HTTP; tokens are the fakes' (one per whitespace-led word).

    uv run python tests/integration/providers/chain_costs.py

prints the table in docs/providers.md ("Stateful continuation and its cost").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

# Run as a script: the fakes and the repository's packages are imported by name.
sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[3])]

from core import JobSpec  # noqa: E402
from core.models import ContinuationConfig, OutputFormat  # noqa: E402
from tests.conftest import serving  # noqa: E402
from tests.integration.providers.provider_fakes import (  # noqa: E402
    ChatFake,
    Fake,
    ResponsesFake,
    Served,
    Switchboard,
)
from workers.calls import ProviderPool  # noqa: E402
from workers.local import Outcome, run_job  # noqa: E402
from workers.providers.profiles import CHAIN_MAX_TOKENS  # noqa: E402

#: About 8 KB of text: 1,000 words of 7 to 9 characters.
DOCUMENT_8KB = " ".join(f"entry{i:03d}" for i in range(1000)) + "."
UNBOUNDED = 10**9


@dataclass(frozen=True)
class Run:
    """One job's calls: the input tokens billed for each, and which chained."""

    label: str
    inputs: list[int]
    chained: list[bool]

    @property
    def total(self) -> int:
        return sum(self.inputs)


def measure(
    board: Switchboard,
    url: str,
    fake: Fake,
    label: str,
    *,
    document: str = DOCUMENT_8KB,
    tokens: int = 100,
    **profile: object,
) -> Run:
    """Run a text job for ``document`` against ``fake``, ``tokens`` output tokens a call;
    the input tokens the fake billed for each call. The job must end exact."""
    fake.document = document
    board.fake = fake
    served = Served(fake, url)
    chosen = served.profile(**profile)
    pool = ProviderPool({chosen.name: chosen}, env={})
    spec = JobSpec(
        prompt="Write the register.",
        format=OutputFormat.TEXT,
        providers=[chosen.name],
        max_output_tokens=tokens,
        continuation=ContinuationConfig(max_attempts=500),
    )
    try:
        result = run_job(spec, pool, sleep=lambda _: None)
    finally:
        pool.close()
        board.fake = None
    assert result.outcome is Outcome.SUCCEEDED and result.output == document, result.reason
    inputs = [r.input_tokens for r in fake.requests]
    assert all(n is not None for n in inputs)
    chained = [isinstance(r.body, dict) and "previous_response_id" in r.body for r in fake.requests]
    return Run(label, [n or 0 for n in inputs], chained)


BOUNDS = (UNBOUNDED, 2 * CHAIN_MAX_TOKENS, CHAIN_MAX_TOKENS, CHAIN_MAX_TOKENS // 2, 0)


def runs(board: Switchboard, url: str, document: str = DOCUMENT_8KB) -> list[Run]:
    """The same job on Chat Completions, then on the Responses API with each of
    ``BOUNDS`` as ``chain_max_tokens``."""
    made = [measure(board, url, ChatFake(), "Chat Completions", document=document)]
    for bound in BOUNDS:
        label = "Responses, chained without bound"
        if bound < UNBOUNDED:
            default = " (default)" if bound == CHAIN_MAX_TOKENS else ""
            label = f"Responses, `chain_max_tokens = {bound}`{default}"
        made.append(
            measure(board, url, ResponsesFake(), label, document=document, chain_max_tokens=bound)
        )
    return made


def table(made: list[Run]) -> str:
    lines = [
        "| calls made as | input tokens of each call | largest call | total input "
        "| vs Chat Completions |",
        "|---|---|---|---|---|",
    ]
    base = made[0].total
    for run in made:
        counts = [f"{n:,}" for n in run.inputs]
        shown = counts if len(counts) <= 9 else [*counts[:5], "…", *counts[-3:]]
        lines.append(
            f"| {run.label} | {', '.join(shown)} ({len(counts)} calls) | {max(run.inputs):,} "
            f"| {run.total:,} | {run.total / base:.1f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    board = Switchboard()
    with serving(board.app()) as url:
        for name, document in (
            ("8 KB document", DOCUMENT_8KB),
            ("32 KB document", " ".join(f"entry{i:04d}" for i in range(3600)) + "."),
        ):
            print(f"{name}, 100 output tokens a call:\n\n{table(runs(board, url, document))}\n")


if __name__ == "__main__":
    main()
