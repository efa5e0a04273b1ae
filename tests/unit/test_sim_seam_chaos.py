"""The simulator's seam knobs and document knobs: one behaviour per call, within the
output limit, from the target at the cut; documents made periodic or multibyte."""

from __future__ import annotations

import csv
import io
import json
import random
import re
from itertools import pairwise
from typing import Any

import pytest

from core.json_scan import JsonScanner
from core.models import JobSpec, OutputFormat
from core.prompts import continuation_messages, json_path
from sim import seam_chaos
from sim.doc_variants import vary
from sim.documents import target
from sim.model import SimModel
from sim.options import SEAM_KNOBS, SimOptions
from sim.seams import BEHAVIOURS, applies

PROMPT = "Write a long document about harbours"
MARKER = re.compile(r"\[\[progress: (\d+)%\]\]\n")


def request(fmt: str, delivered: int, repeat: str, model: str, max_tokens: int) -> Any:
    spec = JobSpec(prompt=PROMPT, format=OutputFormat(fmt))
    messages = continuation_messages(
        spec,
        OutputFormat(fmt),
        overlap=repeat,
        context="",
        delivered=f"{delivered:,} characters",
    )
    return {
        "model": model,
        "messages": [m.model_dump() for m in messages],
        "max_tokens": max_tokens,
    }


def reply(sim: SimModel, fmt: str, cut: int, knobs: str, max_tokens: int = 200) -> tuple[str, str]:
    model = f"sim:format={fmt},{knobs}"
    doc = sim.target_for({"prompt": PROMPT, "model": model})
    body = sim.respond(request(fmt, cut, doc[cut - 150 : cut], model, max_tokens)).body
    text: str = body["choices"][0]["message"]["content"]
    found = MARKER.match(text)
    assert found is not None, text[:80]
    return text[found.end() :], body["choices"][0]["finish_reason"]


def test_every_seam_behaviour_has_a_knob_off_by_default() -> None:
    assert set(SEAM_KNOBS.values()) == set(BEHAVIOURS) - {"periodic"}
    assert not SimOptions().seam_chaos
    options = SimOptions.parse("seam_repeat=0.3,seam_reformatted=1,periodic=0.1,multibyte=0.2")
    assert (options.seam_repeat, options.seam_reformatted) == (0.3, 1.0)
    assert (options.periodic, options.multibyte) == (0.1, 0.2)
    assert options.seam_chaos
    assert SimOptions.parse(options.spec()) == options
    with pytest.raises(ValueError, match="seam_blank"):
        SimOptions.parse("seam_blank=2")


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "text"])
def test_document_knobs_at_zero_leave_the_target_as_it_was(fmt: str) -> None:
    sim = SimModel(SimOptions(size=4000))
    plain = target(PROMPT, fmt=fmt, size=4000, seed=0)
    assert sim.target_for({"prompt": PROMPT, "model": f"sim:format={fmt}"}) == plain
    varied = sim.target_for({"prompt": PROMPT, "model": f"sim:format={fmt},periodic=0.3"})
    assert varied != plain
    assert varied == SimModel().target_for(
        {"prompt": PROMPT, "model": f"sim:format={fmt},size=4000,periodic=0.3"}
    )


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "text"])
def test_periodic_and_multibyte_documents_stay_valid(fmt: str) -> None:
    plain = target(PROMPT, fmt=fmt, size=6000, seed=3)
    doc = vary(plain, fmt=fmt, prompt=PROMPT, seed=3, periodic=0.3, multibyte=0.2)
    assert any(ord(c) in (0x200D, 0x301) or 0x1F1E6 <= ord(c) <= 0x1F1FF for c in doc)
    if fmt == "json":
        value = json.loads(doc)
        assert '"samples": [' in doc and isinstance(value, dict)
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(doc)))
        assert {len(row) for row in rows} == {len(rows[0])}
        assert any(a == b for a, b in pairwise(rows[1:]))
    else:
        lines = doc.split("\n")
        assert any(a == b and a for a, b in pairwise(lines)) or "ha ha" in doc
        assert doc.count("```") % 2 == 0


def test_an_exact_seam_continues_at_the_cut_within_the_limit() -> None:
    sim = SimModel(SimOptions(size=5000))
    doc = sim.target_for({"prompt": PROMPT, "model": "sim:format=text"})
    payload, finish = reply(sim, "text", 1000, "seam_exact=1", max_tokens=100)
    assert (payload, finish) == (doc[1000:1400], "length")


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "text"])
@pytest.mark.parametrize("knob", sorted(SEAM_KNOBS))
def test_each_seam_reply_is_built_from_the_target_at_the_cut(fmt: str, knob: str) -> None:
    """The reply, wrappers and repeat included, fits the limit and re-states or continues
    the target around the cut (a restart starts it again; a blank reply is white space)."""
    sim = SimModel(SimOptions(size=6000, seed=4))
    doc = sim.target_for({"prompt": PROMPT, "model": f"sim:format={fmt}"})
    for cut in (1500, 2500, 4000):
        payload, finish = reply(sim, fmt, cut, f"{knob}=1", max_tokens=200)
        assert finish == "length"
        assert len(payload) <= 800
        behaviour = SEAM_KNOBS[knob]
        if not applies(behaviour, fmt):  # type: ignore[arg-type]
            assert payload == doc[cut - 200 : cut + 600]  # a plain reply
        elif behaviour == "blank":
            assert not payload.strip()
        elif behaviour == "restart":
            assert doc[:40] in payload
        elif behaviour in ("exact", "repeat", "unit_restart", "multibyte"):
            at = doc.find(payload)
            assert 0 <= at <= cut < at + len(payload)


def test_the_last_seam_reply_finishes_with_stop() -> None:
    sim = SimModel(SimOptions(size=3000))
    doc = sim.target_for({"prompt": PROMPT, "model": "sim:format=csv"})
    payload, finish = reply(sim, "csv", len(doc) - 50, "seam_repeat=1", max_tokens=400)
    assert finish == "stop" and payload.endswith(doc[-50:])


def test_seam_replies_repeat_for_a_seed() -> None:
    def replies(seed: int) -> list[str]:
        sim = SimModel(SimOptions(size=5000, seed=seed))
        knobs = ",".join(f"{knob}=0.2" for knob in SEAM_KNOBS)
        return [reply(sim, "json", 700 + 300 * i, knobs)[0] for i in range(10)]

    assert replies(1) == replies(1)
    assert replies(1) != replies(2)


def test_a_json_slip_that_would_change_a_value_is_drawn_again() -> None:
    """``[10, 20`` then ``30]`` reads as ``[10, 2030]``: the sim never sends it for
    ``[10, 20, 30]`` (every reply reads back as the target; no number here has 4 digits)."""
    doc = json.dumps({"values": list(range(10, 400, 10))})
    rng = random.Random(5)
    for _ in range(300):
        cut = rng.randrange(12, len(doc) - 5)
        text, _ = seam_chaos.reply(doc, cut, "syntax_slip", fmt="json", budget=60, rng=rng)
        assert not re.search(r"\d{4}", text), (doc[:cut], text)


def test_locate_uses_the_json_path_where_a_periodic_run_repeats_the_text() -> None:
    """After a reply in another layout the delivered count is off; in a run of zeros the
    repeat occurs everywhere: the path the request states picks the place."""
    doc = json.dumps({"a": [0] * 30, "b": [0] * 30}, indent=2)
    truth = doc.index('"b"') + 100
    truth = doc.index("\n", truth) + 5  # after a line's indentation
    repeat = doc[truth - 40 : truth]
    scanner = JsonScanner()
    scanner.feed(doc[:truth])
    path = json_path(scanner)
    wrong = doc.index('"a"') + 50
    assert seam_chaos.locate(doc, repeat, wrong, None) != truth
    assert seam_chaos.locate(doc, repeat, wrong, path) == truth


def test_locate_ignores_white_space_then_uses_the_repeat_end() -> None:
    doc = '{\n  "name": "harbour",\n  "piers": [\n    1,\n    2\n  ]\n}'
    assert seam_chaos.locate(doc, '{"name":"harbour","piers":[1', None, None) == doc.index("1") + 1
    garbled = 'XXXX "harbour",\n  "piers": [\n    1,\n    2'
    assert seam_chaos.locate(doc, garbled, 10, None) == doc.index("2") + 1
    assert seam_chaos.locate(doc, "zzzzzzzzzzzzzzzzzzzzzzzzzzzz", 10, None) is None
    message = "Delivered so far: 1,234 characters, cut inside $.b[13], your last estimate: 40%."
    assert seam_chaos.cut_path(message) == "$.b[13]"
