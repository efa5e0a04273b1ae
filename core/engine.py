"""The continuation engine: ``advance(state, response) -> (state, decision)``.

One iteration is a pure step (``docs/engine.md``, "One iteration"): take one model reply, strip the
progress marker, merge the fragment into the cut text, then decide:

- the document is complete (JSON closed; a stop for the other formats) -> ``Finish``;
- it was cut -> ``Continue`` with the next prompt (overlap, budgeted context, progress);
- the reply could not be merged, was empty or malformed -> ``Retry``, the request saying
  what went wrong and quoting the text to continue after, until ``max_merge_failures``
  consecutive failures -> ``Fallback`` to the last valid part;
- the reply joins the document in two plausible ways (``Merge.doubts``) -> ``Retry`` the same
  way, ``ambiguity_retries`` times; then the likelier reading, with the doubt as a warning;
- a prefilled reply (``ProviderResponse.prefilled``) joins where the prefill ends;
- content filter, stall, or the attempt budget spent -> ``Fallback`` (partial result).
The caller appends ``decision.append`` to the accumulated output and stores the state.
"""

from __future__ import annotations

import re
from dataclasses import replace

from core.extraction import CUT_CHARACTER, drop_model_markup
from core.formats import Stitcher, detect, resume_stitcher, start_stitcher
from core.merge import Merge
from core.models import FinishReason, JobSpec, OnFailure, OutputFormat, ProviderResponse
from core.overlap import visible
from core.progress import Stall, split_marker
from core.prompts import (
    CONTINUE_MARK,
    MARK_ASKED,
    asks_mark,
    continuation_messages,
    opening_messages,
    overlap_context,
    retry_anchor,
    retry_messages,
)
from core.repair import advance_repair
from core.seam import AMBIGUOUS, AMBIGUOUS_END, STOPPED_NOTE
from core.squares import CONFIRM
from core.state import Continue, Decision, Fallback, Finish, JobState, OutputRef, Retry, Served

_DONE = (FinishReason.STOP, FinishReason.TOOL_CALLS)
_FILTERED = "the provider's content filter stopped the reply"
_STOPPED_SHORT = "the model said it stopped before the end (and stopped): continuing"
_CUT_SEAM = f"{AMBIGUOUS}seam: the reply after a character cut in two does not begin with one"
_ASKED_AGAIN = (
    f"{AMBIGUOUS}end: the model said again that it stopped, with nothing new: finished, "
    "and the document may be incomplete"
)


def start(spec: JobSpec) -> JobState:
    """The state before the first model call."""
    return JobState(spec=spec, format=spec.output_format, messages=opening_messages(spec))


def advance(state: JobState, response: ProviderResponse) -> tuple[JobState, Decision]:
    """Take one model reply into the job; return the new state and what to do next."""
    s = state.clone()
    s.iteration += 1
    _account(s, response)
    if s.phase == "repair":
        return advance_repair(s, response)
    reason = response.finish_reason
    if reason is None:
        return _failure(s, "the reply is malformed: it has no finish reason")
    if reason is FinishReason.ERROR:
        if response.permanent:  # asking again sends the same request: it cannot help
            return s, _fallback(s, f"the provider refused the request: {response.error}")
        return _failure(s, f"the provider reported an error: {response.error}", backoff=True)
    raw, prefilled, markup_doubts, cut = _without_markup(s, response)
    text, percent = split_marker(raw)
    s.metadata.progress_reported.append(percent)
    blank = not text.strip()
    if (blank and (s.length == 0 or markup_doubts)) or (not text and reason not in _DONE):
        if reason is FinishReason.CONTENT_FILTER:
            return s, _fallback(s, _FILTERED)
        # (all reasoning, or a removal in doubt: no document in it either way)
        return _failure(s, "the reply held no document" if markup_doubts else "the reply is empty")
    _settle_format(s, text)
    if text:
        stitcher, merge = _merge(s, text, prefilled)
        merge = _markup_doubts(s, merge, markup_doubts)
        refused = _refuse(s, merge, reason)
        if refused is not None:
            return refused
        s.cut_character = cut
        s.metadata.warn(*merge.warnings)
        reason = _stopped_short(s, merge, reason)
        s = s.model_copy(update={**s.appended(merge.append), "scan": stitcher.scan})
        appended = merge.append
    else:
        assert s.scan is not None  # an empty reply to a job with no text was refused above
        stitcher, appended = resume_stitcher(s.scan), ""
    s.merge_failures = 0
    s.doubt_retries = 0
    s.response_id = response.response_id
    s.metadata.chunk_chars.append(len(appended))
    s.metadata.final_record_count = stitcher.records
    closed = stitcher.close()
    if closed is not None:
        s.fallback = OutputRef(prefix=closed[0], suffix=closed[1])
    return s, _decide(s, stitcher, reason, percent, appended)


def _stopped_short(s: JobState, merge: Merge, reason: FinishReason) -> FinishReason:
    """The finish reason to act on. A reply that said it stopped before the end
    ("[Continued in the next message]", "Would you like me to continue?") although the
    model stopped: go on; but a second one in a row that brings nothing has finished
    (warned: the document may be incomplete)."""
    append = merge.append.strip()
    if reason not in _DONE or not any(w.startswith(STOPPED_NOTE) for w in merge.warnings):
        s.stop_notes = 0 if append else s.stop_notes
        return reason
    if append or not s.stop_notes:
        s.stop_notes = 1
        s.metadata.warn(f"iteration {s.iteration}: {_STOPPED_SHORT}")
        return FinishReason.LENGTH
    s.stop_notes = 0
    s.metadata.ambiguous_seams += 1
    s.metadata.warn(f"iteration {s.iteration}: {_ASKED_AGAIN}")
    return FinishReason.STOP


def _without_markup(s: JobState, response: ProviderResponse) -> tuple[str, int, list[str], bool]:
    """The reply without the reasoning and chat-template tokens around it (removed from
    what a prefilled reply generated, its prefill kept), the prefill's length, the
    doubts, and whether a last character cut in two was removed; removals are warned of."""
    prefill, generated = "", response.text
    if 0 < response.prefilled <= len(response.text):
        prefill, generated = generated[: response.prefilled], generated[response.prefilled :]
    overlap = max(0, len(s.head) + len(s.tail) - s.length)  # a short document: one copy
    limited = response.finish_reason is FinishReason.LENGTH
    generated, warnings, doubts = drop_model_markup(
        generated, s.head + s.tail[overlap:], cut=limited
    )
    if not warnings:
        return response.text, response.prefilled, [], False
    s.metadata.warn(*warnings)
    return prefill + generated, len(prefill), doubts, CUT_CHARACTER in warnings


def _markup_doubts(s: JobState, merge: Merge, doubts: list[str]) -> Merge:
    """The merge with the doubts the markup's removal raised; after a reply whose last
    character, cut in two, was removed, doubted where this one does not begin with a
    character outside ASCII (the cut one, written whole): it may have been lost, or been
    the document's own U+FFFD."""
    if not merge.ok:
        return merge
    warnings = merge.warnings
    if s.cut_character and not merge.append[:1] > "\x7f":
        doubts, warnings = [*doubts, _CUT_SEAM], (*warnings, _CUT_SEAM)
    if not doubts:
        return merge
    return replace(merge, warnings=warnings, doubts=(*doubts, *merge.doubts))


def _settle_format(s: JobState, text: str) -> None:
    """Fix the format from the first reply when the job asked for ``auto``."""
    if s.format is OutputFormat.AUTO:
        s.format, doubt = detect(text)
        s.metadata.warn(f"format detected from the first reply: {s.format.value}")
        if doubt:
            s.metadata.warn(f"ambiguous format: {doubt}")
    s.metadata.merge_strategy_used = s.format.value


def _merge(s: JobState, text: str, prefilled: int) -> tuple[Stitcher, Merge]:
    """Merge the reply's text into the document (or start it)."""
    if s.scan is None:
        return start_stitcher(s.format, text)
    stitcher = resume_stitcher(s.scan)
    generated = _after_prefill(s.tail, text, prefilled)
    asked = _asked_mark(s) if CONTINUE_MARK in text else False
    if generated is not None and not (asked and CONTINUE_MARK in generated):
        return stitcher.merge(s.tail, generated, s.head, exact=True)  # continued exactly
    if not asked or CONTINUE_MARK not in text:
        return stitcher.merge(s.tail, text, s.head)
    json = s.format is OutputFormat.JSON
    if generated is None:
        marked, rest, doubts = _after_mark(s.tail, text, compact=json)
    elif generated.startswith(CONTINUE_MARK):  # at once: after a prefill, nothing to copy
        marked, doubts = generated[len(CONTINUE_MARK) :], ()
    else:
        # A prefilled reply that wrote the mark after some text: a copy of the end (as the
        # note asks), or text going on from the prefill. A copy where it is one; doubted.
        marked, rest, doubts = _after_mark(s.tail, generated, compact=json)
        marked, doubts = rest if marked is None else marked, (_MARK_PREFILLED,)
    if marked is None:
        stitcher, merge = stitcher.merge(s.tail, rest, s.head)
    elif not marked:  # the copy, the mark, then the output limit
        merge = Merge(ok=True)
    else:
        stitcher, merge = stitcher.merge(s.tail, marked, s.head, exact=True)
    if merge.ok and doubts:
        merge = replace(merge, warnings=(*merge.warnings, *doubts), doubts=(*merge.doubts, *doubts))
    return stitcher, merge


def _asked_mark(s: JobState) -> bool:
    """Whether the request this reply answers is a retry note that asked for the mark
    (its quote recomputed: the tail is as it was when the note went out)."""
    turn = s.messages[-1].content if s.messages else ""
    if not s.tail or MARK_ASKED not in turn:
        return False
    return asks_mark(turn, retry_anchor(s.tail, _quote_most(s)))


def _doubt(text: str) -> str:
    return f"{AMBIGUOUS}seam: {text}"


#: The doubts of a reply to a retry that asked for ``CONTINUE_MARK`` (``_after_mark``).
_MARK_ASTRAY = _doubt(f"the reply wrote {CONTINUE_MARK} after text that is no copy of the end")
_MARK_LINE = _doubt(f"{CONTINUE_MARK} on a line of its own: a line break by it may be the text's")
_MARK_SPACE = _doubt(f"a space after {CONTINUE_MARK} doubles the space before the cut")
#: Two spaces between words: the second, right after the mark, may be the model's.
_DOUBLE_SPACE = re.compile(r"\S  \S")
_MARK_AGAIN = _doubt(f"the reply wrote {CONTINUE_MARK} more than once; dropped the others")
_MARK_PREFILLED = _doubt(f"the prefilled reply wrote {CONTINUE_MARK} after some text")


def _after_mark(
    tail: str, text: str, *, compact: bool = False
) -> tuple[str | None, str, tuple[str, ...]]:
    """A retried reply that was asked for ``CONTINUE_MARK`` and wrote it: the text after
    the first mark when a copy of the end of ``tail`` comes before it (the reply
    continues exactly there), else None; the reply with that mark dropped, to be read as
    any other; and the doubts.

    The mark is the junction the model states: where the text is periodic (identical rows,
    zeros), no repeat however long tells how much of the reply is new, and a model that
    loses count copying a periodic end still marks where its copy ends. The copy must be
    verbatim (JSON: white space aside) and hold ``CONFIRM`` visible characters (or all the
    tail has). Otherwise the
    reply is read as usual, the mark dropped, doubted (it may be the document's own, or
    misplaced). White space after the mark is the document's, as the note asks; doubted
    where a space after it makes two between words, or where the mark stands on a line
    of its own after a copy that ends in a line break the tail does not have there (one
    line break after the mark is then taken for the model's too). Marks after the first
    are dropped, with a doubt. A model that breaks the note's rule otherwise (a space or
    a line break after the mark where the text has none) is not told from the text.
    """
    before, _, after = text.partition(CONTINUE_MARK)
    enough = min(CONFIRM, visible(tail))
    line = before[:-2] if before.endswith("\r\n") else before[:-1]
    doubts: list[str] = []
    if _copies_end(tail, before, compact=compact) and visible(before) >= enough:
        if _DOUBLE_SPACE.match(tail[-2:] + after[:2]):
            doubts.append(_MARK_SPACE)
    elif before.endswith("\n") and tail.endswith(line) and visible(line) >= enough:
        doubts.append(_MARK_LINE)
        after = after[2:] if after.startswith("\r\n") else after[after.startswith("\n") :]
    else:
        return None, before + after, (_MARK_ASTRAY,)
    if CONTINUE_MARK in after:  # the text holds no mark (else none was asked for)
        after = after.replace(CONTINUE_MARK, "")
        doubts.append(_MARK_AGAIN)
    return after, before + after, tuple(doubts)


def _copies_end(tail: str, copy: str, *, compact: bool) -> bool:
    """Whether ``copy`` is an end of ``tail`` as it stands (``compact``, JSON: white space
    aside, since a re-indented document is the same document)."""
    if tail.endswith(copy):
        return True
    if not compact:
        return False
    bare = "".join(copy.split())
    return bool(bare) and "".join(tail[-2 * len(copy) - 64 :].split()).endswith(bare)


def _refuse(s: JobState, merge: Merge, reason: FinishReason) -> tuple[JobState, Decision] | None:
    """A merge that failed, or a seam read two ways (asked again while the spec allows);
    None when the merge is taken."""
    if not merge.ok:
        s.metadata.warn(*merge.warnings)
        if reason is FinishReason.CONTENT_FILTER:
            return s, _fallback(s, _FILTERED)
        return _failure(s, f"the reply could not be merged: {merge.error}")
    doubts = [d for d in merge.doubts if reason not in _DONE or not d.startswith(AMBIGUOUS_END)]
    if doubts and s.doubt_retries < s.spec.continuation.ambiguity_retries:
        return _doubted(s, doubts[0])
    if doubts:
        s.metadata.ambiguous_seams += 1
    return None


def _after_prefill(tail: str, text: str, prefilled: int) -> str | None:
    """The text a prefilled reply adds after the received text, or None when it is not one.

    The prefill is the tail's end without its trailing white space (providers refuse an
    assistant turn that ends in white space); a model that regenerates that white space is
    continuing exactly, one that does not may have normalised it: merged as usual.
    """
    if prefilled <= 0 or prefilled > len(text):
        return None
    stripped = tail.rstrip()
    if not stripped.endswith(text[:prefilled].rstrip()):
        return None
    generated, blanks = text[prefilled:], tail[len(stripped) :]
    return generated[len(blanks) :] if generated.startswith(blanks) and generated else None


def _decide(
    s: JobState, stitcher: Stitcher, reason: FinishReason, percent: int | None, appended: str
) -> Decision:
    cfg = s.spec.continuation
    if stitcher.complete:
        assert s.fallback is not None
        return Finish(output=s.fallback, append=appended, review=_wants_review(s))
    if reason is FinishReason.CONTENT_FILTER:
        return _fallback(s, _FILTERED, appended)
    if reason in _DONE:
        if s.format is not OutputFormat.JSON:
            return Finish(output=OutputRef(prefix=s.length), append=appended)
        s.metadata.warn(
            f"iteration {s.iteration}: the model said it had finished, "
            "but the JSON is not complete: continuing"
        )
    if s.iteration > 1:
        stall = Stall(s.stall_percent, s.stall_count, s.stall_chars, s.stall_pending).update(
            percent, len(appended), s.length - len(appended)
        )
        s.stall_percent, s.stall_count, s.stall_chars, s.stall_pending = stall.as_tuple()
        if stall.stalled(cfg.stall_limit):
            return _fallback(s, f"stalled: no progress for {stall.count} iterations", appended)
    cut = stitcher.cut_point(s.length)
    s.metadata.truncation_points.append(cut)
    if s.iteration > cfg.max_attempts:
        return _fallback(s, f"max_attempts ({cfg.max_attempts}) continuations used", appended)
    s.metadata.was_continued = True
    s.metadata.continuation_count += 1
    _prepare_next(s, stitcher, cut)
    return Continue(messages=s.messages, append=appended)


def _prepare_next(s: JobState, stitcher: Stitcher, cut: str) -> None:
    """Build the continuation request from the cut (``cut``: where it is)."""
    cfg = s.spec.continuation
    tail_start = s.length - len(s.tail)
    element = stitcher.element_start
    rel = None if element is None else element - tail_start
    s.overlap = overlap_context(s.tail, cfg.overlap_chars, rel)
    context = stitcher.context(s.tail, s.head, cfg.context_budget_chars)
    s.messages = continuation_messages(
        s.spec, s.format, overlap=s.overlap, context=context, delivered=_delivered(s, cut)
    )


def _delivered(s: JobState, cut: str) -> str:
    parts = [f"{s.length:,} characters"]
    records = s.metadata.final_record_count
    if records:
        parts.append(f"{records:,} complete {'rows' if s.format is OutputFormat.CSV else 'items'}")
    if s.format is OutputFormat.JSON:
        parts.append(f"cut inside {cut}")
    if s.stall_percent is not None:
        parts.append(f"your last estimate: {s.stall_percent}%")
    return ", ".join(parts)


def _wants_review(s: JobState) -> bool:
    v = s.spec.validation
    return v.max_repair_attempts > 0 and (v.json_schema is not None or v.item_schema is not None)


def _account(s: JobState, response: ProviderResponse) -> None:
    meta = s.metadata
    meta.make_room()
    meta.total_input_tokens += response.usage.input_tokens
    meta.total_output_tokens += response.usage.output_tokens
    meta.total_cost_estimate += response.cost
    meta.chunk_sizes.append(response.usage.output_tokens)
    meta.finish_reasons.append(
        None if response.finish_reason is None else response.finish_reason.value
    )
    meta.incomplete_details.append(response.incomplete_details)
    if response.provider or response.model:
        meta.served_by.append(
            Served(
                iteration=s.iteration,
                provider=response.provider,
                model=response.model,
                request_id=response.request_id,
            )
        )


def _failure(s: JobState, why: str, *, backoff: bool = False) -> tuple[JobState, Decision]:
    """A reply that moved nothing: retry the same request, or give up after too many."""
    cfg = s.spec.continuation
    s.merge_failures += 1
    s.metadata.merge_failures += 1
    s.metadata.warn(f"iteration {s.iteration}: {why}")
    if s.merge_failures >= cfg.max_merge_failures:
        return s, _fallback(s, f"{s.merge_failures} consecutive failures; the last: {why}")
    if s.iteration > cfg.max_attempts:
        return s, _fallback(s, f"max_attempts ({cfg.max_attempts}) used; the last reply: {why}")
    if not backoff and s.scan is not None:
        s.messages = retry_messages(
            s.messages, why, s.tail, _quote_most(s)
        )  # the next call says what failed
    return s, Retry(messages=s.messages, reason=why, backoff=backoff)


def _doubted(s: JobState, doubt: str) -> tuple[JobState, Decision]:
    """A reply that joins the document in two ways: ask again, saying so
    (``docs/engine.md``, "Reading a seam").

    Nothing is appended. When the doubt persists after ``ambiguity_retries`` asks, the best
    reading is taken and the doubt stays in the warnings.
    """
    cfg = s.spec.continuation
    s.doubt_retries += 1
    s.metadata.seam_retries += 1
    s.metadata.warn(f"iteration {s.iteration}: asked again: {doubt}")
    if s.iteration > cfg.max_attempts:
        return s, _fallback(s, f"max_attempts ({cfg.max_attempts}) used; the last reply: {doubt}")
    s.messages = retry_messages(
        s.messages, doubt, s.tail, _quote_most(s)
    )  # the next call names the doubt
    return s, Retry(messages=s.messages, reason=doubt)


def _quote_most(s: JobState) -> int:
    """The longest end of the text a retry asks to repeat: half a reply's output (at about
    four characters a token), so that the repeat leaves room for new text."""
    return max(1, 2 * s.spec.max_output_tokens)


def _fallback(s: JobState, reason: str, appended: str = "") -> Fallback:
    meta = s.metadata
    meta.fallback_used = True
    meta.fallback_reason = reason
    meta.warn(f"iteration {s.iteration}: stopped early: {reason}")
    meta.merge_success = meta.merge_failures == 0
    failed = s.fallback is None or s.spec.continuation.on_failure is OnFailure.RAISE_ERROR
    return Fallback(output=s.fallback, reason=reason, append=appended, failed=failed)
