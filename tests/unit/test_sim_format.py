"""The simulated model writes the format the request asks for (issue 14).

The engine opens every request of a job with a system message stating the job's format
(``core.prompts.opening_messages``); the simulator reads it as a model reads its
instructions, before the prompt's words. A job whose prompt names no format, or another
one, gets the document of its own format, and runs to the end exact.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from core import Continue, Finish, JobSpec, JobState, ProviderResponse, Retry, advance, start
from core.models import OutputFormat
from core.prompts import FORMAT_INSTRUCTIONS, opening_messages
from sim.conversation import RequestError
from sim.documents import named_format
from sim.model import SimModel
from sim.options import SimOptions

FORMATS = [OutputFormat.JSON, OutputFormat.CSV, OutputFormat.MARKDOWN, OutputFormat.TEXT]


def _body(spec: JobSpec, messages: list[Any], max_tokens: int) -> dict[str, Any]:
    return {
        "model": spec.model or "sim",
        "messages": [m.model_dump() for m in messages],
        "max_tokens": max_tokens,
    }


def run(sim: SimModel, spec: JobSpec) -> tuple[str, JobState]:
    """The engine's loop against the simulator, in process: the merged output, the state."""
    state, output = start(spec), ""
    for _ in range(100):
        reply = sim.respond(_body(spec, state.messages, spec.max_output_tokens)).body
        choice = reply["choices"][0]
        response = ProviderResponse(
            text=choice["message"]["content"], finish_reason=choice["finish_reason"]
        )
        state, decision = advance(state, response)
        assert isinstance(decision, Continue | Finish | Retry), decision
        output += decision.append
        if isinstance(decision, Finish):
            return output, state
    raise AssertionError("the job did not finish in 100 calls")


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_instruction_names_its_own_format_only(fmt: OutputFormat) -> None:
    """What the simulator (and a model) reads in the system message is the job's format."""
    assert named_format(FORMAT_INSTRUCTIONS[fmt]) == fmt.value


def test_auto_states_no_format() -> None:
    spec = JobSpec(prompt="List the exhibits", format=OutputFormat.AUTO)
    assert opening_messages(spec) == spec.conversation()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_job_gets_its_format_whatever_the_prompt_says(fmt: OutputFormat) -> None:
    """The prompt names JSON (or nothing): the document is in the job's format, whole."""
    sim = SimModel(SimOptions(size=3000))
    for prompt in ("List the exhibits", "Write a JSON inventory of the museum's storage"):
        spec = JobSpec(prompt=prompt, format=fmt, max_output_tokens=200)
        target = sim.target_for({"prompt": prompt, "format": fmt.value})
        assert run(sim, spec)[0] == target
        if fmt is OutputFormat.JSON:
            json.loads(target)
        elif fmt is OutputFormat.CSV:
            rows = list(csv.reader(io.StringIO(target)))
            assert len(rows) > 2 and len({len(row) for row in rows}) == 1


def test_the_model_names_format_option_comes_first() -> None:
    """``sim:format=...`` is the simulator's own knob: a test asks for a misbehaving model."""
    sim = SimModel(SimOptions(size=2000))
    spec = JobSpec(prompt="List the exhibits", format=OutputFormat.CSV, model="sim:format=json")
    body = _body(spec, opening_messages(spec), 10_000)
    text = sim.respond(body).body["choices"][0]["message"]["content"]
    assert text == sim.target_for({"prompt": spec.prompt, "format": "json"})
    assert json.loads(text)


def test_without_a_stated_format_the_prompts_words_decide() -> None:
    sim = SimModel(SimOptions(size=2000))
    asked = sim.target_for({"prompt": "Write CSV rows"})
    assert asked == sim.target_for({"prompt": "Write CSV rows", "format": "csv"})
    assert asked == sim.target_for({"prompt": "Write CSV rows", "format": "auto"})
    assert sim.target_for({"prompt": "List the exhibits"}) == sim.target_for(
        {"prompt": "List the exhibits", "format": "text"}
    )


def test_target_refuses_an_unknown_format() -> None:
    with pytest.raises(RequestError, match="'format' must be one of json, csv"):
        SimModel().target_for({"prompt": "p", "format": "yaml"})


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_default_document_fits_the_default_budget_at_500_tokens(fmt: OutputFormat) -> None:
    """The documented 500-token jobs finish within the default 10 continuations, with
    room to spare for retries (at 20,000 characters they needed all ten)."""
    spec = JobSpec(prompt="Write an inventory of the storage", format=fmt, max_output_tokens=500)
    _, state = run(SimModel(), spec)
    assert 3 <= state.metadata.continuation_count <= spec.continuation.max_attempts - 3
