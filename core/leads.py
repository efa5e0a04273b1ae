"""What a model writes around a continuation that is not the document
(``docs/engine.md``, "What models emit at a seam").

Chat models wrap a continuation: a line of prose ("Sure! Here is the rest:"), a code-fence
opener, and at the end a closing fence and a sign-off ("Let me know if you need anything
else!"). This module only *classifies* lines; whether dropping them is the right reading of
a seam is decided in ``core.seam``, where every reading is weighed against the others.

A lead line is one of:

- a fence opener (```` ``` ````, ```` ```json ````, ``~~~``): ``Strength.STRONG`` (the
  format may weaken a bare fence: in Markdown it can open the document's own code block);
- chat prose: a line that starts the way assistants start a reply ("Sure", "Here is",
  "Continuing", "Of course", "The rest", …): ``STRONG``;
- other prose ending with a colon ("The list goes on:"): ``WEAK``; a document's own line
  can look like that, so the reading that drops it needs other evidence or is a doubt;
- a blank line, kept with the lead it follows.

Every pattern here is linear: no two quantifiers can match the same characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

#: Lead lines looked at, and the longest line that can be one.
MAX_LEAD_LINES = 4
MAX_LEAD_LINE = 240

FENCE_LINE = re.compile(r"[ \t]*(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)\n")
#: Chat prose that introduces a continuation. An interjection counts only with its
#: punctuation ("Sure!", not "Sure enough, the river..."), "Here is" only about the
#: document, "Continuing" only about the answer ("Continuing:", "Continuing from the cut",
#: not "Continuing the work of ...").
_CHAT = re.compile(
    r"[ \t]*(?:\*\*|__)?[ \t]*(?:"
    r"(?:sure(?: thing)?|certainly|of course|okay|ok|alright|absolutely|no problem|got it"
    r"|understood"
    r"|apologies|my apologies|sorry)(?:[ \t]*[!.:\u2014-][ \t]*$|[ \t]*[!,.:\u2014-][ \t]+\S)"
    r"|here(?:'s|\u2019s| is| are| you go| it is| goes)(?:[ \t]*[!.:]|[ \t]*$"
    r"|[ \t]+(?:the|a|an|your|my)[ \t]+(?:[\w-]+[ \t]+){0,3}?(?:rest|remainder|continu\w*"
    r"|document|json|csv|file|output|markdown|answer|response|essay|article|story|draft|version"
    r"|content|code|notes|asked|requested)\b)"
    r"|continu(?:ing|ed|ation)\b[ \t]*(?:[:.!(\u2014-]|$|from\b|where\b|exactly\b|on\b"
    r"|with (?:the|my)\b|the (?:document|json|csv|table|list|text|data|output|answer)\b)"
    r"|[(\[]continued[)\]][ \t.:!\u2026\u2014-]*$"  # a whole line ("(continued) goes" is text)
    # words about the answer: the rest of the document, where I left off …
    r"|[^\n]*\b(?:(?:the rest|the remainder) of (?:it\b|(?:the|my) (?:[\w-]+ ){0,2}?"
    r"(?:document|text|file|csv|json|table|list|data|output|answer|response|content|markdown"
    r"|code|report|essay|article|story|rows|entries|items|sections)\b)"
    r"|where (?:i|it) (?:left off|stopped|was cut)\b|picking up (?:where|from)\b"
    r"|pick up where\b|resuming (?:from|where|the)\b)"
    # … or words a document says too, on a line said to the user ("Here is the rest of the
    # cake recipe:"; not "He ate the rest of the cake.")
    r"|(?=[^\n]*(?::[ \t*_]*$|\b(?:here|below|follows|i'll|i\u2019ll|i will|i'm|i\u2019m|i am"
    r"|let me|continuing|sorry|apolog)))"
    r"[^\n]*\b(?:the rest of|the remainder|where we (?:left off|stopped)|(?:was|were|got) cut off"
    r"|as requested|the continuation)\b)",
    re.IGNORECASE,
)
#: Lines that start like the document's own blocks are never taken for chat.
_CONTENT_START = re.compile(r"[ \t]*(?:[-*+>|#][ \t]|\d{1,9}[.)][ \t]|[\[{\"])")
#: What a model says of its own reply when it has nothing more to add: words a document
#: seldom says of itself ("(No further content.)", "It looks like the previous response
#: was already complete."). Only a whole line of them counts (``done_note``).
_DONE = (
    r"no (?:further|more) content"
    r"|it (?:looks|seems) like (?:the|my) (?:previous|last|earlier) (?:response|reply|answer)"
    r" (?:was|is) (?:already )?complete"
    r"|the (?:document|text|response|output)(?: above)? (?:is|was) (?:already )?"
    r"(?:complete|finished)"
    r"|that(?:'s|\u2019s| is) all \d+ (?:rows|records|entries)"
    r"|that(?:'s|\u2019s| is) the end of the (?:document|response|text|output)"
)
_SIGN_OFF = re.compile(
    r"[ \t]*[*_]*[ \t]*(?:let me know|i hope|hope this|feel free|would you like"
    r"|if you (?:need|want|have|would)|shall i|do you want|happy to help|is there anything"
    r"|(?:this|that) (?:completes|concludes|is the (?:end|rest|complete|full))|end of (?:the )?doc"
    r"|that(?:'s| is) the (?:end|rest|complete))\b",
    re.IGNORECASE,
)
#: An offer after a done note ("That's all 25 rows. Want me to add a totals row?").
_OFFER = re.compile(r"(?:want me to|should i|shall i|would you like|do you want)\b", re.IGNORECASE)
_DONE_NOTE = re.compile(r"[ \t]*[*_(\[]*[ \t]*(?:" + _DONE + r")\b", re.IGNORECASE)
#: A line that says the text ends ("(End of the text.)", "*End of document.*", "END OF
#: DOCUMENT"): the reply's most often, but documents end so too; dropped with a doubt.
_END_MARK = re.compile(
    r"[ \t]*[*_(\[]*[ \t]*end of (?:the )?(?:text|document|file|essay|story|report|data|csv"
    r"|list|table|response|reply|answer|output)[ \t.!]*[)\]*_]*[ \t]*",
    re.IGNORECASE,
)
#: A line that only says the reply goes on ("*(continued)*", "[Continued]", "(cont.)"):
#: the wrapper's most often, whatever it starts with (a document may say so of a table).
_CONTINUED = re.compile(
    r"[ \t]*[*_]*[ \t]*[(\[][ \t]*(?:continued|cont(?:'d|\u2019d|\.)|continuation)[ \t]*[)\]]"
    r"[ \t]*[*_]*[ \t]*[.:]?[ \t]*"
    # a marker line: "— continued —", "<!-- continued -->", "# continued", "~~ cont'd ~~"
    r"|[ \t]*(?:<!--|#{1,6}|[-\u2013\u2014=~*_]{1,5})[ \t]*(?:continued|cont(?:'d|\u2019d|\.)"
    r"|continuation)[ \t]*(?:-->|[-\u2013\u2014=~*_]{1,5})?[ \t]*[.:]?[ \t]*",
    re.IGNORECASE,
)


class Strength(IntEnum):
    """How sure a dropped lead is not the document's own text."""

    NONE = 0  # nothing dropped
    WEAK = 1
    STRONG = 2


@dataclass(frozen=True, slots=True)
class Lead:
    """Drop ``end`` characters (whole lines) before the content; ``fence`` opened there."""

    end: int
    strength: Strength
    fence: str = ""
    text: str = ""


NO_LEAD = Lead(0, Strength.NONE)


def fence_of(line: str) -> tuple[str, str] | None:
    """The marker and info string of a fence opener line (with its newline), else None."""
    match = FENCE_LINE.fullmatch(line.replace("\r\n", "\n"))
    if match is None:
        return None
    info = match.group("info").strip()
    if match.group("fence")[0] == "`" and "`" in info:
        return None
    return match.group("fence"), info


#: A line that ends saying it goes on: a heading again ("## 2. Setup (continued)").
_CONTINUED_END = re.compile(
    r"[^\n]{0,200}?[ \t][(\[][ \t]*(?:continued|cont(?:'d|\u2019d|\.))[ \t]*[)\]]"
    r"[ \t]*[*_:.]*[ \t]*",
    re.IGNORECASE,
)


#: A lead that quotes the end it goes on from ("(continuing from `…"Solid work`)"): its
#: quotes are the quoted text's, not a quoted value's.
_QUOTING_LEAD = re.compile(
    r"[ \t]*[*_]*[ \t]*\(?[ \t]*continu(?:ing|ed) from (?:where i left off )?[ \t]*[(:]?[ \t]*"
    r"[`\"'\u201c\u2018\u2026]",
    re.IGNORECASE,
)


def is_chat(line: str) -> bool:
    line = line.rstrip("\r\n")
    if len(line) > MAX_LEAD_LINE or _CONTENT_START.match(line):
        return False
    if line.count('"') % 2 and not _QUOTING_LEAD.match(line):
        return False  # an odd quote closes a quoted value: the line is the document's
    return _CHAT.match(line) is not None


#: An interjection and a comma, then words ("Of course, nothing went as planned."): chat
#: where the words are about the answer, else as likely a document's own first line.
_SOFT_CHAT = re.compile(
    r"[ \t]*(?:\*\*|__)?[ \t]*(?:sure(?: thing)?|certainly|of course|okay|ok|alright|absolutely"
    r"|no problem|got it|understood|apologies|my apologies|sorry)[ \t]*,[ \t]+(?P<rest>[^\n]*)",
    re.IGNORECASE,
)
_ANSWER_WORDS = re.compile(
    r"\b(?:rest|remainder|continu\w*|document|json|csv|markdown|output|request\w*|asked"
    r"|pick\w* up|resum\w*|left off|cut|happy|glad|problem|i'll|i\u2019ll|i will)\b",
    re.IGNORECASE,
)


def soft_chat(line: str) -> bool:
    """Whether a line taken for chat is an interjection and a comma before words that say
    nothing of the answer (nor end in a colon, as an introduction does): the document's
    first line, as likely."""
    match = _SOFT_CHAT.match(line)
    if match is None or match.group("rest").rstrip().endswith(":"):
        return False
    return _ANSWER_WORDS.search(match.group("rest")) is None


def is_sign_off(line: str) -> bool:
    if len(line) > MAX_LEAD_LINE:
        return False
    return (
        _SIGN_OFF.match(line) is not None
        or end_mark(line)
        or done_note(line)
        or stopped(line)
        or elided(line)
    )


#: A line saying the reply stopped before the document's end, or asking whether to go on
#: ("[Continued in the next message due to length…]", "*(Response truncated — reply
#: “continue” for the rest.)*", "Would you like me to continue with the rest?"): the
#: model's own, and the document is not finished, whatever the finish reason says.
_NOTE_START = r"[ \t]*[*_(\[]*[ \t]*(?:note[ \t]*:[*_]*[ \t]*)?(?:\.\.\.|\u2026)?[ \t]*[(\[]?"
_STOPPED = re.compile(
    _NOTE_START + r"(?:"
    r"(?:(?:to be )?continued|continuing) (?:in (?:the |my |a )?next (?:message|reply|response)"
    r"|below\b)"
    r"|(?:my |the )?(?:response|output|reply|message|answer) (?:was |has been |got )?"
    r"(?:truncated|cut off)"
    r"|(?:reply|say|type|respond|answer)(?: with)? [\"'\u201c\u2018]?continue\b"
    r"|i(?:'ve|\u2019ve| have) (?:reached|hit) (?:the|my) (?:maximum|max|output|response|length"
    r"|character|token)"
    r"|due to (?:the )?(?:length|output|response|character|token|space) (?:limit|constraint"
    r"|restriction)s?,? i\b"
    r"|let me know if you(?:'d|\u2019d| would)? (?:like|want) me to (?:continue|keep going"
    r"|go on|proceed)"
    r")",
    re.IGNORECASE,
)
#: A question whether to go on, the whole line ("Shall I continue with the rest?"; not
#: "Should I continue paying rent? Yes." nor "Do you want to continue the subscription?").
_ASKS_TO_GO_ON = re.compile(
    _NOTE_START + r"(?:(?:would you like|do you want|want) me to|(?:shall|should) i)"
    r" (?:continue|keep going|go on|proceed)"
    r"(?: with (?:the )?(?:rest|remaining|remainder|next)[^?\n]{0,80})?[ \t]*\?[ \t*_)\]]*",
    re.IGNORECASE,
)


#: A line saying the reply left part of the document out ("(rest of the document
#: unchanged)", "*[The remaining sections follow the same format and are omitted here for
#: brevity.]*", "I'll summarise the rest: 5 more objects with the same schema"): the
#: document is not all there, whatever the reply says.
_ELIDED = re.compile(
    r"[ \t]*[*_(\[]*[ \t]*(?:note[ \t]*:[*_]*[ \t]*)?(?:\.\.\.|\u2026)?[ \t]*[(\[]?(?:"
    r"(?:the )?(?:rest|remainder)(?: of (?:the|this|my) [\w-]+)? (?:is |are |remains? |stays? )?"
    r"(?:unchanged|omitted|the same|identical|as (?:before|above))"
    r"|(?:the )?remaining (?:\d+ )?(?:[\w-]+ ){1,2}?(?:follow|are|is|have been|were|would)\b"
    r"[^\n]*\b(?:omitted|(?:same|similar) (?:pattern|format|structure|schema|layout|shape))"
    r"|(?:the )?(?:rest|remainder) of the [\w-]+ (?:continues|follows)\b[^\n]*\b(?:same|similar)\b"
    r"|remaining [\w-]+:[ \t]*\d+ more\b"
    r"|i(?:'ll|\u2019ll| will) (?:summari[sz]e|skip|omit|abbreviate) the rest"
    r"|\d+ more (?:rows|entries|objects|items|records|lines|sections|elements) (?:with|following"
    r"|in|of) the same\b"
    r"|[^\n]*\bomitted (?:here )?for brevity"
    r"|(?:\.\.\.|\u2026)[ \t]*[)\]]?[ \t]*$"
    r")",
    re.IGNORECASE,
)


#: Words a reply says of the task, not of the document ("It looks like my previous message
#: was cut off…", "do you want only the remaining part, or the full document again?").
_ABOUT_TASK = re.compile(
    r"\b(?:(?:my |the )?previous (?:message|response|reply|answer)|where i left off|start over"
    r"|the (?:full|whole|entire|complete) (?:document|text|file|csv|json|table|list)"
    r"|remaining (?:part|portion)|unable to continue|can(?:not|'t|\u2019t) continue"
    r"|summary of the rest|(?:the )?rest of the (?:file|document|output|story|letter|text)"
    r" (?:continues|follows|is))\b",
    re.IGNORECASE,
)


#: How a reply that talks to the user starts (or it is a question).
_TO_THE_USER = re.compile(
    r"[ \t]*(?:i\b|i'|i\u2019|sorry|apolog|my apolog|it (?:looks|seems)|summary\b|sure\b"
    r"|just to confirm|(?:would|do|shall|should|can|could) (?:you|i)\b)",
    re.IGNORECASE,
)


def about_the_task(text: str) -> bool:
    """Whether ``text``, a whole reply of one line, talks to the user about the task (a
    question, an apology, a summary of what is left) rather than going on with the
    document: words about the task, said as a question or in the first person."""
    line = text.strip()
    if not 0 < len(line) <= 2 * MAX_LEAD_LINE or "\n" in line:
        return False
    if _ABOUT_TASK.search(line) is None:
        return False
    return line.rstrip(" .!*_)]").endswith("?") or _TO_THE_USER.match(line) is not None


def elided(text: str) -> bool:
    """Whether ``text`` (one line) says the reply left part of the document out."""
    line = text.strip()
    return 0 < len(line) <= MAX_LEAD_LINE and "\n" not in line and bool(_ELIDED.match(line))


def asks_to_go_on(text: str) -> bool:
    """Whether ``text`` (one line) is only a question whether to go on ("Shall I
    continue?"): the model's most often, but a story may ask so too."""
    return bool(_ASKS_TO_GO_ON.fullmatch(text.strip()))


def stopped(text: str) -> bool:
    """Whether ``text`` (one line) says the reply stopped short or asks whether to go on."""
    line = text.strip()
    if not 0 < len(line) <= MAX_LEAD_LINE or "\n" in line:
        return False
    return bool(_STOPPED.match(line) or _ASKS_TO_GO_ON.fullmatch(line))


def done_note(text: str) -> bool:
    """Whether ``text`` is only a note that the document was complete already ("(No
    further content.)", "It looks like the previous response was already complete."), a
    sign-off or an offer at most after it: a reply that carries nothing. One line, nothing
    else after the words but closing marks. (A document may hold such a line too: "No
    further content." under a heading; the reader doubts every one it drops.)"""
    line = text.strip()
    if not 0 < len(line) <= MAX_LEAD_LINE or "\n" in line:
        return False
    match = _DONE_NOTE.match(line)
    if match is None:
        return False
    rest = line[match.end() :].lstrip(" \t.!*_)]")
    return not rest or bool(_SIGN_OFF.match(rest) or _OFFER.match(rest))


def end_mark(text: str) -> bool:
    """Whether ``text`` is a line that says the text ends (see ``_END_MARK``)."""
    return _END_MARK.fullmatch(text.strip()) is not None


def _continued(line: str) -> bool:
    """A colon line, or one that only says the reply goes on ("*(continued)*") or ends so
    (a heading again: "## 2. Setup (cont.)"): a document may hold such a line too."""
    return is_colon_prose(line) or bool(
        _CONTINUED.fullmatch(line) or _CONTINUED_END.fullmatch(line) or _QUOTING_LEAD.match(line)
    )


def is_colon_prose(line: str) -> bool:
    """A line of prose ending with a colon, starting like a sentence (a capital letter)."""
    text = line.rstrip()
    if not 0 < len(text) <= MAX_LEAD_LINE or text.count('"') % 2:
        return False
    return text[0].isupper() and text.endswith(":")


def any_fence(info: str) -> Strength:
    return Strength.STRONG


def lead_candidates(
    fragment: str, *, prose: bool = True, fence_strength: Callable[[str], Strength] = any_fence
) -> list[Lead]:
    """The ways the fragment's first lines could be a wrapper, shortest first.

    A lead is as sure as its least sure line: chat prose then a colon line is unsure.

    ``prose`` False: only fence lines can lead (a format whose lines are never prose).
    ``fence_strength``: how sure a fence opener with this info string is a wrapper.
    """
    out: list[Lead] = []
    pos, strength, fence, seen, after_fence = 0, Strength.NONE, "", False, False
    for _ in range(MAX_LEAD_LINES + 2):
        nl = fragment.find("\n", pos, pos + MAX_LEAD_LINE + 2)
        if nl < 0:
            break
        line = fragment[pos : nl + 1]
        if after_fence or (not line.strip() and not seen):
            break  # after a fence opener, every line is the document's
        if not line.strip():
            out.append(Lead(nl + 1, strength, fence, fragment[: nl + 1]))
            pos = nl + 1
            continue
        opened = fence_of(line)
        after_fence = opened is not None
        if opened is not None:
            fence = opened[0]
            kind = fence_strength(opened[1])
            if seen and kind is Strength.STRONG:
                strength = kind  # prose, then a fence the format never holds: a wrapper
        elif prose and is_chat(line):
            kind = Strength.STRONG
        elif prose and _continued(line.rstrip("\r\n")):
            kind = Strength.WEAK  # (a document may have such a line of its own)
        else:
            break
        strength = kind if not seen else min(strength, kind)
        seen = True
        out.append(Lead(nl + 1, strength, fence, fragment[: nl + 1]))
        pos = nl + 1
    return out


def closing_fence(text: str, fence: str, *, line_start: bool) -> tuple[str, str]:
    """Split off a closing ``fence`` line and what follows it, if that is only prose.

    Returns ``(content, dropped)``; ``dropped`` is '' when there is no such closer. The
    newline before the closing line stays: it ends the wrapped content's last line.
    ``line_start`` says whether ``text`` begins a line (else its first line continues one).
    """
    if not fence:
        return text, ""
    pos, noted = len(text), False
    # Walk back over trailing prose and blank lines to the last fence-looking line (and a
    # rule right above an end note: "```" + "\n\n---\n*End of document.*").
    for _ in range(MAX_LEAD_LINES + 2):
        end = len(text[:pos].rstrip())
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end].strip()
        if (start or line_start) and len(line) >= len(fence) and line == fence[0] * len(line):
            keep = _one_line_break(text[:start])
            return text[:keep], text[keep:]
        if not line or start == 0:
            return text, ""
        if not (is_sign_off(line) or is_chat(line) or (noted and _RULE.fullmatch(line))):
            return text, ""
        noted = end_mark(line) or done_note(line) or stopped(line)
        pos = start
    return text, ""


_RULE = re.compile(r"-{3,}|\*{3,}|_{3,}")


def sign_off(text: str) -> int:
    """Where a closing chat paragraph ("Let me know if …") starts, or ``len(text)``.

    Only a last paragraph after a blank line counts: a line break alone could be the
    document's own sentence.
    """
    stripped = text.rstrip()
    lf, crlf = stripped.rfind("\n\n"), stripped.rfind("\n\r\n")
    start = max(lf + 2 if lf >= 0 else -1, crlf + 3 if crlf >= 0 else -1)
    if start < 0 or len(stripped) - start > 2 * MAX_LEAD_LINE:
        return len(text)
    last = stripped[start:]
    rule = _RULE.match(last)
    if rule is not None and last[rule.end() : rule.end() + 1] == "\n":
        # A rule above a note that the reply stopped short ("---\n**Note:** I've reached
        # the length limit…"); not above a sign-off, which a document may end with.
        return _one_line_break(text[:start]) if stopped(last[rule.end() + 1 :]) else len(text)
    return _one_line_break(text[:start]) if is_sign_off(last) else len(text)


#: Characters of the document's start a copy must repeat (fewer when the document is
#: shorter: all of it), and that it is compared over.
COPY_PROBE, COPY_CHECK = 48, 400


#: How a reply introduces the whole document again ("For reference, here's the full
#: CSV:", "Full text (combined):", "Here is the complete text in one piece:").
_COPY_INTRO = re.compile(
    r"[^\n]*\b(?:full|complete|entire|whole|combined|consolidated|in one piece|all together)\b"
    r"[^\n]*(?:csv|json|markdown|text|document|file|table|list|version|output)\b[^\n]*:[ \t*_]*"
    r"|[^\n]*\b(?:full|complete|entire|whole) (?:csv|json|markdown|text|document|file|output)"
    r"\b[^\n]*:[ \t*_]*",
    re.IGNORECASE,
)


#: An introduction that talks to the user ("Here is…", "For reference", "(combined)"): the
#: copy is the reply's; other words ("The whole text once more:") may be the document's.
_COPY_SURE = re.compile(
    r"\b(?:here|for reference|for convenience|combined|consolidated|in one piece)\b",
    re.IGNORECASE,
)


def copy_again(text: str, head: str) -> tuple[int, int]:
    """Where a closing copy of the whole document starts in ``text`` ("---", "For
    reference, here's the full CSV:", maybe a fence opener, then the document from its
    first character), and the copy's length (-1 where the introduction does not talk to
    the user, so the copy may be the document's); ``(len(text), 0)`` when there is none:
    the reply went on, then sent everything again.

    The copy must start a line after such an introduction (a line that says the whole
    document follows, ending in a colon) and repeat the document's start (``head``) as
    far as both go, at least ``COPY_PROBE`` characters of it, or all of a shorter one.
    A document that repeats its own start ("Final chorus:", "Merchant copy:") says no
    such thing; one that does is told by the copy's length (the caller's).
    """
    none = (len(text), 0)
    probe = head[:COPY_PROBE]
    if len(probe.strip()) < 16:
        return none
    at = text.find(probe, 1)
    while at > 0 and text[at - 1] != "\n":
        at = text.find(probe, at + 1)
    if at <= 0:
        return none
    size = min(len(head), len(text) - at, COPY_CHECK)
    if text[at : at + size] != head[:size]:
        return none
    lines = text[:at].splitlines(keepends=True)
    while lines and (not lines[-1].strip() or fence_of(lines[-1]) is not None):
        lines.pop()  # the copy's fence opener and blank lines
    if not lines or len(lines[-1]) > MAX_LEAD_LINE or not _COPY_INTRO.fullmatch(lines[-1].strip()):
        return none
    intro = lines.pop()
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and _RULE.fullmatch(lines[-1].strip()):
        lines.pop()  # "---" between the text and the introduction
    if not any(line.strip() for line in lines):
        return none  # nothing before it: the reply starts again (a restart), no copy
    sure = _COPY_SURE.search(intro) is not None
    return _one_line_break("".join(lines) + "\n\n"), len(text) - at if sure else -1


def _one_line_break(text: str) -> int:
    """The length of ``text`` with blank lines at its end left to the wrapper."""
    end = len(text)
    while text.endswith("\n\n", 0, end) or text.endswith("\n\r\n", 0, end):
        end -= 2 if text[end - 2] == "\r" else 1
    return end
