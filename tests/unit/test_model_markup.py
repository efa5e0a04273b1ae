"""Reasoning and chat-template tokens around a reply (``core.extraction.drop_model_markup``).

A reasoning model served without its reasoning parser (vLLM without
``--reasoning-parser``, llama.cpp, a router passing raw text) writes ``<think>…</think>``
before the answer, an empty block when thinking is off (Qwen3), or only the close when the
template opened the block in the prompt (DeepSeek-R1); gpt-oss writes its analysis channel;
a wrong template leaks ``<|im_end|>`` or ``<|eot_id|>``. None of it is the document. Before
this was handled, ``stitch`` kept a think block inside Markdown and text with ``ok=True`` and
no doubt, and refused the JSON and CSV fragment. Where the document itself uses the same
tag, the removal may be wrong, and is doubted.
"""

from __future__ import annotations

import itertools
import json

import pytest

from core import Continue, Finish, JobState, ProviderResponse, Retry, advance, start, stitch
from core.extraction import drop_model_markup
from core.models import ContinuationConfig, FinishReason, JobSpec, OutputFormat

THINK = "<think>\nThe user wants the rest. The last words were cut; go on after them.\n</think>\n\n"
QWEN_OFF = "<think>\n\n</think>\n\n"
R1 = "Okay, the document stopped mid-sentence. I will continue it.\n</think>\n\n"
HARMONY = (
    "<|channel|>analysis<|message|>Continue the list.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>"
)

# (reply, the document so far, the reply without markup (None: as it is), doubted)
CASES = [
    (THINK + " through the valley.", "The river runs", " through the valley.", False),
    (QWEN_OFF + "3, 4]", "[1, 2, ", "3, 4]", False),
    (R1 + "and the rest.", "It grew", "and the rest.", False),
    (HARMONY + "- three\n<|return|>", "- one\n- two\n", "- three\n", False),
    ("<thinking>\nplan\n</thinking>\nrows", "a,b\n", "rows", False),
    ("[THINK]plan\n[/THINK]\n\nmore", "text", "more", False),
    # A tag named within a line, or a value after a separator: the document's.
    ("[THINK] and [/THINK] wrap it.", "Docs.\n", "[THINK] and [/THINK] wrap it.", False),
    ("Strips what R1 writes before </think>.\n\nUse it.", "", None, False),
    ("llama2,</s>\n", "family,eos\n", "llama2,</s>\n", True),
    # After a code block the document opened: an example of the output.
    (THINK + "4\n```\n", "Raw output:\n\n```text\n", "4\n```\n", True),
    ("<|channel|>analysis<|message|>2+2.<|end|>\n```\n", "Raw:\n", "", True),
    ("the end.\n<|im_end|>", "Text", "the end.\n", False),
    ("the end.<|eot_id|>\n\n<|eot_id|>", "Text", "the end.", False),
    ("<|im_start|>assistant\nmore text", "Text", "more text", False),
    ("x, y</s>", "a, b", "x, y", False),
    # Open and never closed: cut while thinking, or the document's own tag; doubted.
    ("<think>\nstill thinking when the limit came", "Text", "", True),
    ("[THINK] is a tag", "Text", "", True),
    # The document uses the same tag: the removal may be wrong.
    (THINK + "more", "Models write <think> first.", "more", True),
    (R1 + "more", "The tag </think> closes it.", R1 + "more", True),
    ("old</s>", "Prices: <s>12", "old", True),
    ("x<|im_end|>", "write <|im_end|> after", "x", True),
    (THINK + "and <think> is the tag.", "Models", "and <think> is the tag.", True),
    # Not markup: left as it is.
    ("a <think> tag, mid-reply", "Text", "a <think> tag, mid-reply", False),
    ("plain text", "Text", "plain text", False),
]


@pytest.mark.parametrize(("reply", "seen", "expected", "doubted"), CASES)
def test_markup_is_removed_and_doubted_where_the_document_uses_it(
    reply: str, seen: str, expected: str | None, doubted: bool
) -> None:
    text, warnings, doubts = drop_model_markup(reply, seen)
    assert text == (reply if expected is None else expected)
    assert bool(doubts) is doubted
    assert bool(warnings) is (expected not in (None, reply) or doubted)


DOCS = {
    "json": json.dumps({"items": [{"id": i, "name": f"item {i}"} for i in range(12)]}, indent=2),
    "csv": "id,name\n" + "".join(f'{i},"Name, {i}"\n' for i in range(30)),
    "markdown": "# Notes\n\n"
    + "".join(
        f"## Part {i}\n\nThe river runs {w} past {i * 7} mills.\n\n"
        for i, w in enumerate(
            ["north", "slowly", "east", "under bridges", "wide", "south", "fast", "deep"]
        )
    ),
    "text": " ".join(f"Sentence {i} says one thing or another." for i in range(40)),
}
WRAPS = {
    "think": lambda r: THINK + r,
    "qwen-off": lambda r: QWEN_OFF + r,
    "r1": lambda r: R1 + r,
    "harmony": lambda r: HARMONY + r,
}


@pytest.mark.parametrize("fmt", sorted(DOCS))
@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_stitch_reads_wrapped_fragments_exactly(fmt: str, wrap: str) -> None:
    doc = DOCS[fmt]
    cuts = [0, len(doc) // 3 + 1, 2 * len(doc) // 3 + 2, len(doc)]
    plain = [doc[a:b] for a, b in itertools.pairwise(cuts)]
    assert stitch(plain, fmt).text == doc
    wrapped = [WRAPS[wrap](f) for f in plain]
    wrapped[-1] += "<|im_end|>"  # the server left the stop token in the last reply
    res = stitch(wrapped, fmt)
    assert res.ok and not res.doubts, res.warnings
    assert res.text == doc
    assert any("removed" in w for w in res.warnings)


def _job(fmt: str) -> JobSpec:
    return JobSpec(
        prompt="Write the document.", format=OutputFormat(fmt), continuation=ContinuationConfig()
    )


def _reply(text: str, reason: str = "length", prefilled: int = 0) -> ProviderResponse:
    return ProviderResponse(text=text, finish_reason=FinishReason(reason), prefilled=prefilled)


def test_the_engine_drops_reasoning_from_every_reply() -> None:
    doc = DOCS["markdown"]
    state, d = advance(start(_job("markdown")), _reply(THINK + doc[:100]))
    assert isinstance(d, Continue)
    state, d = advance(state, _reply(R1 + doc[100:250]))
    assert isinstance(d, Continue)
    state, d = advance(state, _reply(QWEN_OFF + doc[250:] + "<|im_end|>", "stop"))
    assert isinstance(d, Finish)
    assert state.length == len(doc) and state.tail == doc[-len(state.tail) :]
    assert not any("ambiguous" in w for w in state.metadata.warnings)
    assert sum("removed" in w for w in state.metadata.warnings) == 4


def test_a_reply_that_is_all_reasoning_is_asked_again() -> None:
    state, d = advance(start(_job("text")), _reply("The river runs"))
    assert isinstance(d, Continue)
    state, d = advance(state, _reply("<think>\nLet me think about how the river"))
    assert isinstance(d, Retry) and "no document" in d.reason, d
    assert state.length == len("The river runs")


def test_a_prefilled_reply_keeps_its_prefill_and_drops_the_reasoning_after_it() -> None:
    doc = "The river runs through the valley and on to the sea.\n"
    state, d = advance(start(_job("text")), _reply(doc[:20]))
    assert isinstance(d, Continue)
    prefill = state.tail.rstrip()
    state, d = advance(state, _reply(prefill + QWEN_OFF + doc[20:], "stop", prefilled=len(prefill)))
    assert isinstance(d, Finish), d
    assert state.length == len(doc)


def test_reasoning_over_a_document_about_the_tag_is_asked_again() -> None:
    state, d = advance(start(_job("text")), _reply("Models write <think> before the answer; th"))
    assert isinstance(d, Continue)
    state, d = advance(state, _reply(THINK + "e answer follows."))
    assert isinstance(d, Retry) and "ambiguous" in d.reason, d
    assert isinstance(state, JobState)


# A model that stops itself before the end says so ("[Continued in the next message]",
# "Would you like me to continue?"), often with finish reason ``stop``: the note is
# dropped, and the engine goes on instead of finishing a document cut short. Before, the
# note was kept as text (the CSV rows after it glued onto it) and the job "succeeded".
STOPPED = [
    (
        ["id,name\n1,Ana\n2,Bo\n\n[Continued in the next message due to length…]", "3,Cy\n"],
        "csv",
        "id,name\n1,Ana\n2,Bo\n3,Cy\n",
    ),
    (
        [
            "id,name\n1,Ana\n2,Bo\n",
            "Would you like me to continue with the rest of the CSV?",
            "3,Cy\n",
        ],
        "csv",
        "id,name\n1,Ana\n2,Bo\n3,Cy\n",
    ),
    (
        [
            "# Plan\n\n- one\n- two\n\n*(Response truncated — reply “continue” for the rest.)*",
            "- three\n",
        ],
        "markdown",
        "# Plan\n\n- one\n- two\n- three\n",
    ),
    (
        ["The parcel was recei", "assistant\n\nved on Monday."],
        "text",
        "The parcel was received on Monday.",
    ),
]


@pytest.mark.parametrize(("fragments", "fmt", "expected"), STOPPED)
def test_notes_that_the_reply_stopped_short_are_dropped(
    fragments: list[str], fmt: str, expected: str
) -> None:
    res = stitch(fragments, fmt)
    assert res.ok and res.text == expected, res.warnings
    # (a whole reply that only asks is doubted: a story may ask so too)
    asked = "Would you like" in fragments[1]
    assert asked or all(d.startswith("fragment 1: ambiguous end") for d in res.doubts)


def test_the_engine_goes_on_after_a_reply_that_stopped_short() -> None:
    doc = "id,name\n" + "".join(f"{i},name {i}\n" for i in range(30))
    cut = doc.index("\n", 120) + 1  # the model stopped after a whole row
    state, d = advance(
        start(_job("csv")),
        _reply(doc[:cut] + "\nShall I continue with the remaining rows?", "stop"),
    )
    assert isinstance(d, Continue), d
    assert any("stopped before the end" in w for w in state.metadata.warnings)
    assert state.tail == doc[:cut]
    state, d = advance(state, _reply(doc[cut:], "stop"))
    assert isinstance(d, Finish), d
    assert state.length == len(doc) and state.tail == doc[-len(state.tail) :]


def test_a_question_inside_a_quoted_field_is_doubted_not_dropped_silently() -> None:
    res = stitch(['id,text\n1,"She asked: ', "Would you like me to continue?", '"\n'], "csv")
    assert res.doubts, res.text


# Found by an attacker review of this change (session 9): documents about the very tags, a
# value after a separator, an example inside a code block, wrapper lines it stopped seeing.
REVIEW_9 = [
    (
        ["Strips what DeepSeek-R1 writes before </think>.\n\n## Usage\n\nCall `parse(reply)`.\n"],
        "markdown",
    ),
    (['{"model": "deepseek-r1", ', '"reasoning_end": "</think>", "strip": true}'], "json"),
    (
        [
            "# Harmony\n\nA raw completion from gpt-oss:\n\n```\n",
            "<|start|>assistant<|channel|>analysis<|message|>User asks 2+2.<|end|>\n```\n\nDone.\n",
        ],
        "markdown",
    ),
    (["family,eos_token\nllama2,</s>\n", "gpt2,<|endoftext|>\nchatml,<|im_end|>\n"], "csv"),
    (["## Special tokens\n\n- PAD: <pad>\n- EOS: </s>\n"], "markdown"),
    (['<p>Price: <s class="old">$12</s>', ' $9</p>\n<p>Was: <s class="old">$30</s></p>\n'], "text"),
    (
        [
            "## Raw output\n\nWithout the parser the raw output is:\n\n```text\n",
            "<think>\nThe user asks for 2+2. That is 4.\n</think>\n\n4\n```\n\nStrip it.\n",
        ],
        "markdown",
    ),
    (["Magistral docs.\n", "[THINK] and [/THINK] wrap Magistral's reasoning.\n"], "text"),
]


@pytest.mark.parametrize(("fragments", "fmt"), REVIEW_9)
def test_documents_that_hold_the_tags_are_exact_or_flagged(fragments: list[str], fmt: str) -> None:
    res = stitch(fragments, fmt)
    if res.ok and not res.doubts:
        assert res.text == "".join(fragments)


@pytest.mark.parametrize("lead", ["(continued)...", "(continued)…", "(continued) —", "(continued)"])
def test_a_continued_line_is_the_wrappers(lead: str) -> None:
    first = "# Log\n\nThe first day was calm and the crew rested.\n\n"
    res = stitch([first, lead + "\n\nThe second day brought wind from the north.\n"], "markdown")
    assert res.ok and not res.doubts, res.warnings
    assert res.text == first + "The second day brought wind from the north.\n"


# The fourth corpus's replies that are not the document: the whole document sent again after
# the continuation (dropped: it starts with the document's own first characters after an
# introduction), and replies that leave the rest out, summarise it or ask about the task
# (dropped, doubted: the document is not all there, and the engine asks again).
def test_the_whole_document_sent_again_after_the_text_is_dropped() -> None:
    head = "id,name,city\n1,Ana,Lisbon\n2,Bo,Osaka\n3,Cy,Lagos\n"
    rest = "4,Di,Paris\n5,Ed,Quito\n"
    res = stitch(
        [
            "```csv\n" + head,
            rest + "```\n\nFor reference, here's the full CSV:\n\n```csv\n" + head + rest + "```",
        ],
        "csv",
    )
    assert res.ok and not res.doubts, res.warnings
    assert res.text == head + rest
    text = "It rained all week, and the trail stayed closed until further notice. "
    res = stitch(
        [text, "The town slept.\n\n---\n\nHere is the complete text in one piece:\n\n" + text],
        "text",
    )
    assert res.ok and res.text.rstrip("\n") == text + "The town slept.", res.warnings


def test_a_restart_after_a_lead_is_no_copy() -> None:
    """Nothing before the introduction: the reply starts the document again and goes on
    past the cut; what it adds is never dropped silently."""
    res = stitch(
        [
            "id,city\n0,Lagos\n1,Paris\n2,Quito\n",
            "...continuing from `2,Quito`\n\n```text\n"
            "id,city\n0,Lagos\n1,Paris\n2,Quito\n3,Oslo\n```",
        ],
        "csv",
    )
    assert "3,Oslo" in res.text or res.doubts or not res.ok, res.text


LEFT_OUT = [
    (
        [
            '{"items": [{"id": 1, "note": "fir',
            "I'll summarise the rest: 5 more objects with the same schema.",
        ],
        "json",
    ),
    (["id,name\n1,Ana\n2,Bo\n", "(The remaining rows follow the same pattern.)"], "csv"),
    (["id,name\n1,Ana\n2,B", "o\n3,Cy\n(remaining 4 rows omitted for brevity)\n"], "csv"),
    (["# Plan\n\n- one\n- tw", "o\n\n(rest of the document unchanged)"], "markdown"),
    (
        [
            "The river ran",
            " north.\n\n*[The remaining sections follow the same format and are omitted here"
            " for brevity.]*",
        ],
        "text",
    ),
    (["The river ran", "I apologize, but I'm unable to continue with this request."], "text"),
    (
        [
            "The river ran",
            "Should I pick up exactly where I left off, or would you prefer that I start over?",
        ],
        "text",
    ),
]


@pytest.mark.parametrize(("fragments", "fmt"), LEFT_OUT)
def test_a_reply_that_leaves_the_rest_out_is_doubted_and_its_note_dropped(
    fragments: list[str], fmt: str
) -> None:
    res = stitch(fragments, fmt)
    assert res.doubts, res.warnings
    assert fragments[-1].strip().splitlines()[-1] not in res.text


def test_the_engine_asks_again_after_a_reply_that_leaves_the_rest_out() -> None:
    state, d = advance(start(_job("csv")), _reply("id,name\n1,Ana\n2,Bo\n"))
    assert isinstance(d, Continue)
    state, d = advance(state, _reply("(The remaining rows follow the same pattern.)", "stop"))
    assert isinstance(d, Retry) and "ambiguous" in d.reason, d


# A server that cuts a reply at the output limit inside a character's UTF-8 bytes decodes
# the first bytes alone as U+FFFD. Before, it stayed in the document ("S\ufffdão Paulo").
def test_a_character_cut_in_two_is_dropped_and_the_seam_after_it_doubted() -> None:
    res = stitch(["| Laura | S\ufffd", "ão Paulo |\n"], "markdown")
    assert res.text == "| Laura | São Paulo |\n" and res.doubts, res.warnings
    res = stitch(["Le caf\ufffd", " est fermé."], "text")
    assert res.doubts, res.text  # the character may be lost for good
    res = stitch(["Le caf\ufffd"], "text")
    assert res.text == "Le caf" and res.doubts
    res = stitch(["Bad bytes: \ufffd here, and at the end \ufffd"], "text")
    assert res.text.endswith("\ufffd")  # the document's own


def test_the_engine_asks_on_after_the_text_without_the_cut_character() -> None:
    state, d = advance(start(_job("text")), _reply("Shipping to S\ufffd"))
    assert isinstance(d, Continue) and state.tail == "Shipping to S"
    state, d = advance(state, _reply("ão Paulo takes 3 days.", "stop"))
    assert isinstance(d, Finish) and state.tail == "Shipping to São Paulo takes 3 days."


# Found by an attacker review of the stop-note, left-out and copy rules (session 9, second
# review): documents that end so, ask so, or repeat their own start.
_STORY = (
    "Episode 1: The Lighthouse\n\nMara climbed the stairs of the old lighthouse, counting "
    "every step until the lamp room opened above her.\n\n"
)
_CHORUS = (
    "Oh the river runs and the river sings all the night long,\n"
    "carry me home where the willows belong.\n"
)
_RECEIPT = (
    "RECEIPT No. 4471\nDate: 2024-03-01\nCustomer: J. Doe\nItem: Garden hose, 20 m\n"
    "Amount: 34.90 EUR\nPaid in cash.\n"
)
REVIEW_9B = [
    ([_STORY, "At the top she found a letter.\n\nTo be continued in the next part.\n"], "text"),
    (
        ["FAQ\n\n", "Rent.\n\nShould I continue paying rent during repairs? Yes, unless told.\n"],
        "text",
    ),
    (
        ["Paper\n\n", "Refs.\n\nDue to space constraints, only selected references are listed.\n"],
        "text",
    ),
    (["Notes\n\n", "Limits.\n\nThe response is truncated when it exceeds max_tokens.\n"], "text"),
    (["Dear Anna,\n\nI wonder, ", "should I go on waiting for you?"], "text"),
    (["Step 1. Run setup.exe. A dialog asks: ", "Do you want to continue? Click Yes."], "text"),
    (
        [
            "question,yes,no\nOwn a car?,61%,39%\n",
            "Do you want to continue the subscription?,72%,28%\n",
        ],
        "csv",
    ),
    (
        [
            _CHORUS + "\nVerse 1:\nI left the town with a borrowed coat,\n",
            "and a song in my pocket.\n\nFinal chorus:\n" + _CHORUS,
        ],
        "text",
    ),
    ([_RECEIPT[:60], _RECEIPT[60:] + "\nMerchant copy:\n" + _RECEIPT], "text"),
    (
        ["The committee asked whether ", "the full document should be published before the vote."],
        "text",
    ),
    (["Travel FAQ\n\nDo I need a visa? No.\n", "Should I bring my passport? Yes, always."], "text"),
]


@pytest.mark.parametrize(("fragments", "fmt"), REVIEW_9B)
def test_documents_that_end_ask_or_repeat_so_are_exact_or_flagged(
    fragments: list[str], fmt: str
) -> None:
    res = stitch(fragments, fmt)
    if res.ok and not res.doubts:
        assert res.text.rstrip("\n") == "".join(fragments).rstrip("\n"), res.warnings


def test_a_first_reply_that_only_asks_is_no_document() -> None:
    assert not stitch(["Would you like me to continue?"], "text").ok
    _, d = advance(start(_job("text")), _reply("Would you like me to continue?", "stop"))
    assert isinstance(d, Retry), d


def test_a_model_that_asks_again_with_nothing_new_has_finished_warned() -> None:
    doc = "Packing list\n\n- tent\n- stove\n- water filter\n"
    state, d = advance(
        start(_job("markdown")), _reply(doc + "\nWould you like me to continue?", "stop")
    )
    assert isinstance(d, Continue), d
    for _ in range(5):  # asked again (a story may ask so too), then taken
        state, d = advance(state, _reply("Would you like me to continue?", "stop"))
        if not isinstance(d, Retry):
            break
    assert isinstance(d, Finish), d
    assert state.tail == doc and state.metadata.ambiguous_seams >= 1


# More of the fourth corpus's silent classes, each now flagged or exact.
FLAGGED_9 = [
    # a marker line before a continuation in the middle of a word
    (["It rained all week, and the t", "* * *\n\nrail stayed closed."], "text"),
    (["| Summit | Priya | 20", "<!-- continued -->\n24-02-16 |\n"], "markdown"),
    (["The client retri", "— continued —\n\nes up to 5 times."], "text"),
    # the cut paragraph begun again in other quotes
    (
        [
            'Intro.\n\nAccording to Hannah, the "temporary" fix has been in production. It rained',
            "According to Hannah, the “temporary” fix has been in production. It rained all week.",
        ],
        "text",
    ),
    # a gap in the middle of a reply
    (["He said it twice.", " Then left.\n\n[...]\n\nThe end came in spring."], "text"),
    # summaries of what is left
    (
        [
            "id,n\n1,a\n",
            "The rest of the file continues with the remaining 4 rows in the same format.",
        ],
        "csv",
    ),
    (["id,n\n1,a\n", "Remaining rows: 13 more, same columns as the header above."], "csv"),
    # the Assistant role label
    (["Results: t", "Assistant: he conclusion feels rushed."], "text"),
]


@pytest.mark.parametrize(("fragments", "fmt"), FLAGGED_9)
def test_more_replies_that_are_not_the_document_are_flagged(fragments: list[str], fmt: str) -> None:
    res = stitch(fragments, fmt)
    assert res.doubts or not res.ok, res.text


def test_a_lead_that_quotes_the_tail_is_dropped() -> None:
    first = 'Intro.\n\nOne reviewer wrote: "Solid work... but the conclus'
    res = stitch(
        [
            first,
            'Continuing from where I left off (“…"Solid work... but the conclus”):\n\n'
            'ion feels rushed."',
        ],
        "text",
    )
    assert res.ok and res.text == first + 'ion feels rushed."', res.warnings


# Found by a third attacker review (session 9): documents whose own lines look like leads,
# markers or template tokens, and U+FFFD that is the document's.
_REFRAIN = "Come home, come home, the lanterns are lit and the nets are dry and the tide is high.\n"
REVIEW_9C = [
    (
        [
            "Chapter one ends here.\n",
            "(Continued from \u201cChapter One\u201d.)\nChapter two begins.\n",
        ],
        "text",
    ),
    (
        ["## Step 3\n\nRun the build.\n\n", "(continuing from `step 3`) Now run the tests.\n"],
        "markdown",
    ),
    ([_REFRAIN, "* * *\n" + _REFRAIN + "The boats are in.\n"], "text"),
    (
        ["Song\n\n" + _REFRAIN, "\u2014 continued \u2014\n" + _REFRAIN + "The boats are in.\n"],
        "text",
    ),
    (["Phi-3 format:\n\n<|user|>\nHi there\n", "<|assistant|>\nHello!\n"], "text"),
    (
        ["It was late when they got home.\n", "He ate the rest of the cake.\nThen he slept.\n"],
        "text",
    ),
    (["Home.\n", "The budget was approved as requested by the board.\nDone.\n"], "text"),
    (["She stood at the crossroads.\n", "Should I go on?\n", "She walked on.\n"], "text"),
    (["User: Hello, how are you?\n", "Assistant: Fine, thanks.\n"], "text"),
]


@pytest.mark.parametrize(("fragments", "fmt"), REVIEW_9C)
def test_document_lines_like_leads_or_tokens_are_exact_or_flagged(
    fragments: list[str], fmt: str
) -> None:
    res = stitch(fragments, fmt)
    if res.ok and not res.doubts:
        assert res.text == "".join(fragments), res.warnings


def test_the_engine_keeps_a_replacement_character_a_model_stopped_on() -> None:
    state, d = advance(start(_job("text")), _reply("Bad bytes decode to \ufffd", "stop"))
    assert isinstance(d, Finish) and state.tail.endswith("\ufffd")


def test_the_engine_doubts_a_reply_that_does_not_write_the_cut_character_whole() -> None:
    state, d = advance(start(_job("text")), _reply("Bad bytes decode to \ufffd"))
    assert isinstance(d, Continue)
    state, d = advance(state, _reply(", the replacement character.", "stop"))
    assert isinstance(d, Retry) and "cut in two" in d.reason, d


def test_a_sign_off_after_the_wrappers_closing_fence_is_dropped_in_markdown() -> None:
    """The wrapper's closing fence is no code block of the document's: the remark after it
    is the reply's (seed 101 of the seam corpus, silent at a draft of this session)."""
    res = stitch(
        [
            "Here is the document you asked for:\n\n```markdown\n# Notes\n\n* Note: the follo",
            "wing figures are preliminary.\n* Done: the ch\n\n```\n\nLet me know if you need more!",
            "chart was moved.\n",
        ],
        "markdown",
    )
    assert "Let me know" not in res.text
