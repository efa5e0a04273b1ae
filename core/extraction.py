"""Cleaning what a model wrapped around its payload.

Models add things that are not the document: a byte-order mark, NUL characters, lone
surrogates from a broken encoder, a code fence around the payload, a line of prose before
it, a progress marker. Every removal is reported as a warning, never done silently.
"""

from __future__ import annotations

import re

_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")
# Possessive quantifiers: a long run of blanks is never split between two of them.
_FENCE_LINE = re.compile(r"[ \t]*+(```|~~~)[ \t]*+([A-Za-z0-9_+-]*+)[ \t]*+\r?\n")
_FENCE_ANYWHERE = re.compile(r"(```|~~~)[ \t]*+[A-Za-z0-9_+-]*+[ \t]*+\r?\n")
# First line that starts like a JSON container: where a payload begins after prose.
_JSON_LINE_START = re.compile(r"^[ \t]*[\[{]", re.MULTILINE)


def clean_text(text: str) -> tuple[str, list[str]]:
    """Drop a leading byte-order mark, NUL characters and lone surrogates.

    A BOM elsewhere is content (U+FEFF inside a string is legal); NUL characters and lone
    surrogates never are (JSON forbids the first raw, UTF-8 cannot encode the second).
    """
    warnings = []
    if text.startswith("\ufeff"):
        text = text[1:]
        warnings.append("removed a byte-order mark")
    if not _BAD_CHARS.search(text):
        return text, warnings
    nuls = text.count("\x00")
    if nuls:
        warnings.append(f"removed {nuls} NUL character{'s' if nuls > 1 else ''}")
    surrogates = len(text) - nuls - len(_BAD_CHARS.sub("", text))
    if surrogates:
        warnings.append(f"removed {surrogates} invalid surrogate character(s)")
    return _BAD_CHARS.sub("", text), warnings


def strip_wrapper_fence(text: str) -> tuple[str, list[str]]:
    """Remove a code fence that wraps the whole payload (its closer may be missing)."""
    m = _FENCE_LINE.match(text)
    if m is None:
        return text, []
    body = text[m.end() :]
    warnings = [f"removed a code fence ({m.group(1)}{m.group(2)})"]
    end = len(body.rstrip())
    if body.endswith(m.group(1), 0, end):  # the last line closes the fence, blanks aside
        start = end - len(m.group(1))
        line = body.rfind("\n", 0, start) + 1
        if not body[line:start].strip(" \t"):
            body = body[: line - 1 if line and body[line - 1] == "\n" else line]
            body = body[:-1] if body.endswith("\r") else body
    return body, warnings


def find_json_start(text: str) -> tuple[int, list[str]]:
    """Offset where a first JSON fragment's payload starts, skipping prose and fences.

    A payload that starts at once (after whitespace) starts there. Otherwise the first
    code fence or the first line that opens an object or array marks the start.
    """
    stripped = len(text) - len(text.lstrip())
    if stripped < len(text) and text[stripped] in '[{"-0123456789tfn':
        head = text[stripped:]
        if head[0] in '[{"-0123456789' or head.startswith(("true", "false", "null")):
            return stripped, []
    fence = _FENCE_ANYWHERE.search(text)
    line = _JSON_LINE_START.search(text)
    if fence is not None and (line is None or fence.start() < line.start()):
        prose = text[: fence.start()].strip()
        what = f"prose and a code fence: {prose!r:.80}" if prose else "a code fence"
        return fence.end(), [f"removed {what} before the JSON"]
    if line is not None:
        start = line.start()
        return start, [f"removed prose before the JSON: {text[:start].strip()!r:.80}"]
    return stripped, []


# What a model or its server writes around the reply when the reasoning or the chat
# template is not parsed out (vLLM without ``--reasoning-parser``, llama.cpp with a wrong
# template, a router passing raw tokens): never the document's, unless the document is
# about these very tags (then the removal is doubted).
_REASONING = (("<think>", "</think>"), ("<thinking>", "</thinking>"), ("[THINK]", "[/THINK]"))
# A reasoning close with no opening before it: DeepSeek-R1's template puts "<think>\n" in
# the prompt, so the reply is "…reasoning…</think>\n\n" and then the answer.
_LONE_CLOSE = "</think>"
# gpt-oss (harmony) unparsed: analysis, then the final channel's message.
_HARMONY_FINAL = "<|channel|>final<|message|>"
_HARMONY_START = re.compile(r"\s*+(?:<\|start\|>assistant)?+<\|channel\|>analysis<\|message\|>")
# A turn header a template leaked before the reply.
_TURN_START = re.compile(
    r"(?:<\|im_start\|>assistant|<\|start_header_id\|>assistant<\|end_header_id\|>"
    r"|<start_of_turn>model)[ \t]*+\r?\n(?:\r?\n)?"
    r"|<\|assistant\|>[ \t]*+\r?\n"  # Phi-3's
    r"|assistant[ \t]*+\r?\n\r?\n"  # Llama 3's header without its special tokens
)
# Marks of a document that shows chat templates itself (a turn header in it may be its own).
_TEMPLATES = ("<|", "<start_of_turn>")
# A role label a raw completion writes before the reply; a transcript's own line.
_ROLE_LABEL = re.compile(r"Assistant:[ \t]")
_TRANSCRIPT = re.compile(r"^(?:User|Human|Customer|Q):", re.MULTILINE)
# Beginning-of-text tokens a server did not strip (and the marks that make one the text's).
_START_TOKENS = {
    "<|begin_of_text|>": ("<|begin_of_text|>",),
    "<|startoftext|>": ("<|startoftext|>",),
    "<bos>": ("<bos>",),
    "<s>": ("<s>", "</s>"),  # also HTML's strike-through
}
# End-of-turn tokens a server did not treat as stop tokens.
_END_TOKENS = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|end|>",
    "<|return|>",
    "<end_of_turn>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>",  # DeepSeek's
    "</s>",
)
_MARKUP_DOUBT = "ambiguous seam: "  # core.seam.AMBIGUOUS + "seam: " (seam imports this module)


def _template_break(text: str, at: int) -> int:
    """Where the reply starts after a reasoning block that ends at ``at``: past the line
    breaks the templates write there (one blank line at most)."""
    for br in ("\r\n\r\n", "\n\n", "\r\n", "\n"):
        if text.startswith(br, at):
            return at + len(br)
    return at


_FENCE_MARK = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)


def _open_fence(text: str) -> bool:
    """Whether ``text`` leaves a code block open (an odd number of fence lines)."""
    return len(_FENCE_MARK.findall(text)) % 2 == 1


class _Removals:
    """What ``drop_model_markup`` removed, and its doubts."""

    def __init__(self, seen: str) -> None:
        self.seen = seen
        self.warnings: list[str] = []
        self.doubts: list[str] = []

    def note(self, what: str, marks: tuple[str, ...], rest: str) -> None:
        """``what`` was removed; doubted where the document or the rest uses its marks, or
        where the document so far leaves a code block open (an example of the output)."""
        self.warnings.append(f"removed {what}")
        if any(mark in self.seen or mark in rest for mark in marks):
            self.doubt(f"removed {what}, but the document uses {marks[0]} too")
        elif _open_fence(self.seen):
            self.doubt(f"removed {what}, but it follows a code block the document opened")

    def doubt(self, text: str) -> None:
        self.warnings.append(_MARKUP_DOUBT + text)
        self.doubts.append(_MARKUP_DOUBT + text)


def drop_model_markup(
    text: str, seen: str = "", *, cut: bool = True
) -> tuple[str, list[str], list[str]]:
    """Remove reasoning and chat-template tokens a reply carries; return the reply, the
    warnings and the doubts.

    ``seen`` is the document so far (or its head and tail). Removed: a beginning-of-text
    token and a turn header at the start (``<|im_start|>assistant``, or the role's name
    and a blank line, as a template that lost its special tokens writes it), a
    reasoning block at the start (``<think>…</think>``, ``<thinking>``, ``[THINK]``; one
    left open is the whole reply, doubted), the reasoning before a lone ``</think>``,
    gpt-oss's analysis channel, and end-of-turn tokens at the end. Where the document or
    the rest of the reply uses the same mark, it may be the document's own: the removal
    is doubted, and a lone ``</think>`` is left as it is. A character the server cut in
    two at the output limit (a last U+FFFD) is removed where the reply may have been cut
    there (``cut``: not after a model that stopped).
    """
    if (
        "<" not in text
        and "[" not in text
        and not (cut and text.endswith("\ufffd"))
        and not text.lstrip().startswith(("assistant", "Assistant:"))
    ):
        return text, [], []
    done = _Removals(seen)
    start = len(text) - len(text.lstrip())
    token = next((t for t in _START_TOKENS if text.startswith(t, start)), None)
    if token is not None:
        text = text[start + len(token) :]
        done.note(f"a beginning-of-text token {token}", _START_TOKENS[token], text)
    m = _TURN_START.match(text, len(text) - len(text.lstrip()))
    if m is not None:
        text = text[m.end() :]
        done.note("a chat template's turn header", (m.group(0).strip(), *_TEMPLATES), text)
    m = _ROLE_LABEL.match(text)
    if m is not None and not _TRANSCRIPT.search(seen):
        # Always doubted: "Manager: Ana" + "Assistant: Bo" is a document's too.
        text = text[m.end() :]
        done.warnings.append("removed a role label (Assistant:)")
        done.doubt("removed a role label (Assistant:): the reply's, or the document's own")
    text = _drop_end_tokens(_drop_reasoning(text, done), done)
    text = _drop_cut_character(text, done) if cut else text
    return text, done.warnings, done.doubts


#: A warning: the reply ended in U+FFFD, a character the server cut in two at the output
#: limit (its first bytes decoded alone). The next reply writes it whole.
CUT_CHARACTER = "removed a character the server cut in two at the end of the reply"


def _drop_cut_character(text: str, done: _Removals) -> str:
    if not text.endswith("\ufffd"):
        return text
    kept = text.rstrip("\ufffd")
    if len(text) - len(kept) > 3 or "\ufffd" in kept or "\ufffd" in done.seen:
        return text  # the document's own replacement characters
    done.warnings.append(CUT_CHARACTER)
    return kept


def _drop_reasoning(text: str, done: _Removals) -> str:
    m = _HARMONY_START.match(text)
    if m is not None:
        final = text.find(_HARMONY_FINAL, m.end())
        if final < 0:  # cut while thinking, or the document's own example: nothing is sure
            done.doubt("dropped a reply that opens gpt-oss's analysis channel and no final one")
            return ""
        text = text[final + len(_HARMONY_FINAL) :]
        done.note("the reasoning channel (gpt-oss)", ("<|channel|>",), text)
        return text
    start = len(text) - len(text.lstrip())
    for opener, closer in _REASONING:
        if text.startswith(opener, start):
            end = text.find(closer, start + len(opener))
            if end < 0:  # cut while thinking, or the document's own tag: nothing is sure
                done.doubt(f"dropped a reply that opens {opener} and never closes it")
                return ""
            inner = text[start + len(opener) : end]
            if inner and "\n" not in inner:  # "[THINK] and [/THINK] wrap…": a line's words
                return text
            text = text[_template_break(text, end + len(closer)) :]
            done.note(f"a reasoning block ({opener}…{closer})", (opener, closer), text)
            return text
    close = text.find(_LONE_CLOSE)
    if close < 0 or "<think>" in text[:close]:
        return text
    if text[close - 1 : close] != "\n" or text[close + len(_LONE_CLOSE) :][:1] not in ("\n", ""):
        return text  # reasoning ends a line, and its close stands alone on the next
    what = "reasoning before a </think> with no <think>"
    if "<think>" in done.seen or _LONE_CLOSE in done.seen:
        done.doubt(f"kept {what}: the document uses <think> too")
        return text
    text = text[_template_break(text, close + len(_LONE_CLOSE)) :]
    done.note(what, (_LONE_CLOSE,), text)
    return text


def _drop_end_tokens(text: str, done: _Removals) -> str:
    """Drop end-of-turn tokens (and the white space between them) at the reply's end."""
    end, cut, ends = len(text), -1, set()
    while True:
        while end and text[end - 1].isspace():
            end -= 1
        token = next((t for t in _END_TOKENS if text.endswith(t, 0, end)), None)
        if token is None:
            break
        end = cut = end - len(token)
        ends.add(token)
    if cut < 0:
        return text
    first = min(ends, key=_END_TOKENS.index)
    if text[cut - 1 : cut] in (" ", "\t", ",", ":", ";", "=", "|", '"', "'", "`"):
        # "llama2,</s>", "- EOS: </s>": a value the document names, as likely as a leak
        done.doubt(f"kept the end-of-turn token {first} after a separator: a value, or a leak")
        return text
    text = text[:cut]
    html = ("<s>", "<s ") if "</s>" in ends else ()  # </s> also closes HTML's strike-through
    done.note(f"end-of-turn token {first}", (first, *ends, *html), text)
    return text
