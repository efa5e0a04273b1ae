"""Size: an iteration hop when the job has already accumulated 10 MB vs 10 KB.

The job is built in-process (``start``, then ``advance`` with a 10 KB or 10 MB prefix of
the simulator's document) and stored, then one worker thread runs ``hops`` more
iterations, the two sizes alternating round by round. Target: ratio at most 1.5. The
``continuum.iterate`` message a worker sends stays small and constant: a probe worker
sends the next iteration to a queue nobody consumes, where it is read.
"""

from __future__ import annotations

import base64
import json
import time
from functools import partial
from typing import Any

from benchmarks.queue_harness import Harness
from benchmarks.queue_jobs import STEP, continuum_chain, sim_spec
from benchmarks.queue_measure import Row, Samples, Usage, ms, timed_hops
from core import Continue, FinishReason, JobSpec, JobState, ProviderResponse, advance, start
from sim.model import SimModel
from sim.options import SimOptions

KB, MB = 1024, 1024 * 1024
PROMPT = "Write a very long chronicle of a river town."
PROBE_IN, PROBE_OUT = "bench-probe-in", "bench-probe-out"


def message_size(h: Harness, job_id: str, iteration: int) -> tuple[int, dict[str, Any]]:
    """Bytes of the ``continuum.iterate`` message a worker sends after ``iteration``, and
    its arguments.

    The probe worker consumes ``PROBE_IN`` and sends the next iteration to its default
    queue, ``PROBE_OUT``, which nobody consumes: the message is read there.
    """
    h.enqueue(job_id, iteration, queue=PROBE_IN)
    deadline = time.monotonic() + 120
    while (raw := h.redis.lpop(PROBE_OUT)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the probe worker sent nothing\n{h.logs()}")
        time.sleep(0.05)
    assert isinstance(raw, bytes), raw
    envelope = json.loads(raw)
    body = json.loads(base64.b64decode(envelope["body"]))
    return len(raw), body[1]


def prepared(doc: str, chars: int, spec: JobSpec) -> JobState:
    """The job's state after a first reply of ``chars`` characters of ``doc``."""
    reply = ProviderResponse(text=doc[:chars], finish_reason=FinishReason.LENGTH)
    state, decision = advance(start(spec), reply)
    assert isinstance(decision, Continue), decision
    return state


def bench_size(h: Harness, rounds: int, hops: int) -> list[Row]:
    small, big = 10 * KB, 10 * MB
    print(f"\n== size: {hops} iterations after 10 KB vs 10 MB, {rounds} rounds", flush=True)
    size = big + STEP * (hops + 20)
    spec = sim_spec(PROMPT, size=size, max_attempts=hops)
    doc = SimModel().target_for(PROMPT, SimOptions.parse((spec.model or "").partition(":")[2]))
    states = {chars: prepared(doc, chars, spec) for chars in (small, big)}
    worker = h.continuum("size", 1)
    probe = h.continuum("probe", 1, queues=PROBE_IN, CONTINUUM_QUEUE=PROBE_OUT)
    worker.wait_ready()
    probe.wait_ready()
    warm = sim_spec(PROMPT, size=size, max_attempts=3)
    for chars in (small, big):  # warm-up: the worker's simulator builds its 10 MB document
        state = prepared(doc, chars, warm)
        continuum_chain(h, warm, 3, state=state, output=doc[:chars], status="partial")
    results = {small: Samples(), big: Samples()}
    usage = Usage(h, [worker])
    for r in range(rounds):
        for chars in (small, big):
            run = partial(
                continuum_chain,
                h,
                spec,
                hops,
                state=states[chars],
                output=doc[:chars],
                status="partial",
            )
            timed_hops(h, worker, run, results[chars])
        print(
            f"  round {r + 1}: 10 KB {ms(results[small].wall[-1])}  "
            f"10 MB {ms(results[big].wall[-1])}",
            flush=True,
        )
    print(f"  {usage.stop().describe()}")
    sizes = {}
    for chars in (small, big):
        job_id = h.create(spec, states[chars], doc[:chars])
        sizes[chars], kwargs = message_size(h, job_id, states[chars].iteration)
        h.drop([job_id])
        print(f"  message after {chars:,} chars: {sizes[chars]} bytes, kwargs {kwargs}")
    state_json = {c: len(s.model_dump_json()) for c, s in states.items()}
    print("  per hop (medians): wall | worker CPU | Redis CPU | state JSON")
    for chars, label in ((small, "10 KB"), (big, "10 MB")):
        print(f"  {label:<6} {results[chars].medians()} | {state_json[chars]:,} chars")
    h.stop(worker, probe)
    a, b = results[small].median(), results[big].median()
    return [
        Row(
            "hop at 10 KB (A) vs 10 MB (B) accumulated",
            ms(a),
            ms(b),
            f"B/A = {b / a:.2f}",
            "<= 1.5",
            b / a <= 1.5,
        ),
        Row(
            "`continuum.iterate` message sent by a worker, at 10 KB (A) vs 10 MB (B)",
            f"{sizes[small]} B",
            f"{sizes[big]} B",
            f"B-A = {sizes[big] - sizes[small]} B",
            "small, constant",
            sizes[big] == sizes[small] and sizes[big] < 4096,
        ),
    ]
