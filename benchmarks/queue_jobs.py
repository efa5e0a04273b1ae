"""The jobs the queue benchmarks run: text from the simulated model, sized to take an
exact number of iterations, and one job run on the workers as a timed chain.

Every simulated reply is cut at 100 tokens (400 characters), of which 200 repeat the end
of the previous reply (the simulator's overlap): each continuation adds 200 characters.
The simulator runs in-process in each worker (the ``sim`` profile without
``CONTINUUM_SIM_URL``): its latency is a sleep in the worker thread, as an HTTP call is.
"""

from __future__ import annotations

import time

from benchmarks.queue_harness import Harness
from core import ContinuationConfig, Continue, JobSpec, JobState, OutputFormat, advance, start
from workers.calls import ProviderPool, call_model
from workers.providers.registry import SIM_SWITCH, load_profiles
from workers.settings import Settings

MAX_TOKENS = 100
STEP = 200
#: The most attempts a deployment with default settings lets a job make
#: (``CONTINUUM_LIMIT_MAX_ATTEMPTS``): jobs sent through ``submit_batch`` are held to it.
MAX_ATTEMPTS: int = Settings.model_fields["limit_max_attempts"].default


def sim_spec(
    prompt: str, *, size: int, latency: float = 0.0, max_attempts: int = MAX_ATTEMPTS
) -> JobSpec:
    model = f"sim:format=text,size={size}" + (f",latency={latency:g}" if latency else "")
    return JobSpec(
        prompt=prompt,
        format=OutputFormat.TEXT,
        providers=["sim"],
        model=model,
        max_output_tokens=MAX_TOKENS,
        continuation=ContinuationConfig(max_attempts=max_attempts),
    )


def count_iterations(spec: JobSpec, pool: ProviderPool) -> int:
    """How many iterations the job takes, run in-process (engine and simulator, no queue)."""
    state, n = start(spec), 0
    while True:
        state, reply = call_model(state, pool)
        state, decision = advance(state, reply)
        n += 1
        if not isinstance(decision, Continue):
            return n


def sized_spec(prompt: str, iterations: int, *, latency: float = 0.0) -> JobSpec:
    """A job (prompt: ``prompt`` or a variant of it) whose simulated document takes
    exactly ``iterations`` replies to write.

    The document ends at a paragraph, a little past the size asked for, so not every
    count is reachable for a prompt: the smallest size reaching the count is searched
    (the count grows with the size), and the next variant of the prompt is tried when it
    overshoots.
    """
    pool = ProviderPool(load_profiles({SIM_SWITCH: "1"}), env={})
    for variant in range(20):
        text = prompt if variant == 0 else f"{prompt} (variant {variant})"
        lo, hi = STEP * max(1, iterations - 3), STEP * (iterations + 2)
        while hi - lo > 8:
            mid = (lo + hi) // 2
            if count_iterations(sim_spec(text, size=mid), pool) >= iterations:
                hi = mid
            else:
                lo = mid
        if count_iterations(sim_spec(text, size=hi), pool) == iterations:
            return sim_spec(text, size=hi, latency=latency)
    raise RuntimeError(f"no document size gives {iterations} iterations for {prompt!r}")


def continuum_chain(
    h: Harness,
    spec: JobSpec,
    hops: int,
    *,
    state: JobState | None = None,
    output: str = "",
    status: str = "succeeded",
) -> tuple[float, int]:
    """Store the job, send its next iteration and wait for it to end: (seconds from the
    send to its last commit, iterations run). Raises unless it ends ``status`` after
    exactly ``hops`` iterations."""
    job_id = h.create(spec, state, output)
    first = state.iteration if state else 0
    t0 = time.time()
    h.enqueue(job_id, first)
    ended = h.wait_ended([job_id], timeout=300)[job_id]
    h.drop([job_id])
    done = ended.iteration - first
    if ended.status != status or done != hops:
        raise RuntimeError(
            f"job ended {ended.status} after {done} iterations, expected {status} after {hops}"
        )
    return ended.updated_at - t0, done
