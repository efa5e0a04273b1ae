"""The simulated model's logic, without I/O: a request body in, a ``SimResult`` out.

A first request is answered with the start of the target document, cut at the output
limit (``max_tokens x chars_per_token`` characters). A continuation request is answered
from where its ``<<<REPEAT`` block shows the previous answer stopped: a progress marker,
then the target from ``overlap`` characters before that point (the repeat a real model
makes), cut at the limit; or, when a seam knob fires, the reply ``sim.seams`` builds for
that behaviour (``sim.seam_chaos``). A trailing assistant message (a prefill) is
continued exactly, as vLLM's ``continue_final_message`` does. Chaos knobs are drawn from
one RNG per server, under a lock: the sequence of draws is reproducible for a seed, and a
retried call draws anew (so a 500 can be followed by a success).
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from core.prompts import CONTINUE_MARK, RETRY_NOTE, asks_mark
from sim import seam_chaos
from sim.conversation import (
    ChatRequest,
    RequestError,
    document_format,
    find_repeat,
    locate,
    parse_chat,
)
from sim.doc_variants import vary
from sim.documents import FORMATS, target
from sim.options import CHAOS_KNOBS, SimOptions, model_options
from sim.replies import (
    PROSE_FIRST,
    PROSE_NEXT,
    SimResult,
    completion,
    decorate,
    error,
    garbage,
    marker_line,
    rate_limited,
    reindent,
    server_failed,
    tokens,
)

__all__ = ["SimModel", "SimOptions", "SimResult"]

#: Documents kept ready (each is one prompt's whole target).
CACHE_SIZE = 64


@dataclass(frozen=True)
class _Chaos:
    """What fired on one call, and an RNG for the call's own choices."""

    fired: frozenset[str]
    rng: random.Random
    call_id: str

    def __contains__(self, knob: str) -> bool:
        return knob in self.fired


class SimModel:
    """An OpenAI-compatible model that writes long, deterministic documents."""

    def __init__(self, options: SimOptions | None = None) -> None:
        self.options = options or SimOptions()
        self._rng = random.Random(self.options.seed)
        self._lock = threading.Lock()
        self._targets: OrderedDict[tuple[str, str, int, int, float, float], str] = OrderedDict()

    # Documents ----------------------------------------------------------------------

    def target_for(
        self, body_or_prompt: dict[str, Any] | str, options: SimOptions | None = None
    ) -> str:
        """The whole document a job's requests are answered from.

        ``body_or_prompt``: the prompt, or a body with ``messages`` (the first user message
        is the prompt, a system message may state the format) or ``prompt`` (and optionally
        ``format``: the job's), and optionally ``model`` (``sim:k=v,...``) and ``seed``.
        ``options`` replaces the server's options as the base.
        """
        base = options or self.options
        if isinstance(body_or_prompt, str):
            fmt = document_format(base, None, body_or_prompt)
            return self._target(body_or_prompt, fmt, base, None)
        body = body_or_prompt
        if "messages" in body:
            request = parse_chat(body, base)
            return self._target(request.prompt, request.format, request.options, request.seed)
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt:
            raise RequestError("give 'prompt' (a non-empty string) or 'messages'")
        model = body.get("model", "sim")
        if not isinstance(model, str):
            raise RequestError("'model' must be a string")
        try:
            opts = model_options(model, base)
        except ValueError as exc:
            raise RequestError(f"model {model!r}: {exc}") from None
        seed = body.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise RequestError("'seed' must be an integer")
        stated = body.get("format")
        if stated is not None and stated not in (*FORMATS, "auto"):
            raise RequestError(f"'format' must be one of {', '.join(FORMATS)} or auto")
        fmt = document_format(opts, None if stated == "auto" else stated, prompt)
        return self._target(prompt, fmt, opts, seed)

    def _target(self, prompt: str, fmt: str, options: SimOptions, seed: int | None) -> str:
        seed = options.seed if seed is None else seed
        key = (prompt, fmt, options.size, seed, options.periodic, options.multibyte)
        with self._lock:
            found = self._targets.get(key)
            if found is not None:
                self._targets.move_to_end(key)
                return found
        text = target(prompt, fmt=fmt, size=options.size, seed=seed)
        text = vary(
            text,
            fmt=fmt,
            prompt=prompt,
            seed=seed,
            periodic=options.periodic,
            multibyte=options.multibyte,
        )
        with self._lock:
            self._targets[key] = text
            while len(self._targets) > CACHE_SIZE:
                self._targets.popitem(last=False)
        return text

    # Calls --------------------------------------------------------------------------

    def respond(self, body: Any) -> SimResult:
        """Answer one Chat Completions request body."""
        try:
            request = parse_chat(body, self.options)
        except RequestError as exc:
            return error(400, str(exc), "invalid_request_error", "invalid_request")
        opts = request.options
        chaos = self._draw(opts)
        delay = opts.latency
        if "rate_limit" in chaos:
            return rate_limited(opts.retry_after, delay)
        if "server_error" in chaos:
            return server_failed(delay)
        hang = "timeout" in chaos
        if hang:
            delay += opts.hang
        content, finish = self._reply(request, chaos)
        if content and opts.reasoning:
            content, finish = think(content, finish, chaos.call_id, opts.reasoning)
        body_out = completion(
            call_id=chaos.call_id,
            model=request.model,
            content=content,
            finish=finish,
            prompt_tokens=tokens(request.prompt_chars, opts.chars_per_token),
            completion_tokens=tokens(len(content), opts.chars_per_token),
        )
        return SimResult(status=200, body=body_out, delay=delay, hang=hang)

    def _draw(self, options: SimOptions) -> _Chaos:
        with self._lock:
            draws = [self._rng.random() for _ in CHAOS_KNOBS]
            sub_seed = self._rng.getrandbits(64)
        fired = frozenset(
            knob
            for knob, draw in zip(CHAOS_KNOBS, draws, strict=True)
            if draw < getattr(options, knob)
        )
        return _Chaos(fired, random.Random(sub_seed), f"{sub_seed:016x}")

    def _reply(self, request: ChatRequest, chaos: _Chaos) -> tuple[str, str]:
        """The reply's content and finish reason."""
        opts = request.options
        text = self._target(request.prompt, request.format, opts, request.seed)
        limit = max(1, int(request.max_tokens * opts.chars_per_token))
        if "empty" in chaos:
            return "", "length"
        if request.prefill is not None:
            return self._prefilled(request, text, limit, chaos)
        repeat = find_repeat(request.last_user)
        end = _repeat_end(request, text, repeat)
        heeded = opts.heed_retry and end is not None and RETRY_NOTE in request.last_user
        if repeat is None or end is None or ("restart" in chaos and not heeded):
            marker = (
                "" if repeat is None or not opts.marker else marker_line(_percent(end or 0, text))
            )
            body, finish = _body(
                request, text, limit, chaos, start=0, repeated=0, first=repeat is None
            )
            return marker + body, finish
        return _continue(request, text, (repeat[0], end), limit, chaos, heeded=heeded)

    def _prefilled(
        self, request: ChatRequest, text: str, limit: int, chaos: _Chaos
    ) -> tuple[str, str]:
        """Continue a trailing assistant message exactly (no marker, no repeat)."""
        assert request.prefill is not None
        prefill = request.prefill[-2000:]
        repeat = find_repeat(request.last_user)
        end = locate(text, prefill, None if repeat is None else repeat[1])
        start = 0 if end is None else end
        payload = text[start : start + limit]
        finish = "stop" if start + limit >= len(text) else "length"
        if "content_filter" in chaos:
            payload = payload[: chaos.rng.randint(0, len(payload))]
            finish = "content_filter"
        return payload, finish


#: What a reasoning model thinks before it answers (never the document's words).
THOUGHTS = (
    "The user wants the rest of the document. I should continue exactly where it stopped.",
    "Okay, the previous reply was cut off. Let me pick up after the last words.",
    "",
)


def think(content: str, finish: str, call_id: str, chance: float) -> tuple[str, str]:
    """``content`` as a reasoning model served without its reasoning parser writes it,
    with probability ``chance``: a ``<think>`` block first (or only its close, as
    DeepSeek-R1's template opens it in the prompt), an end-of-turn token last when it
    stopped; one time in eight the whole reply is thinking, cut by the output limit."""
    rng = random.Random(f"reasoning:{call_id}")  # the other draws are unchanged
    if rng.random() >= chance:
        return content, finish
    thought = rng.choice(THOUGHTS)
    form = rng.randrange(8)
    if form == 0:
        return f"<think>\n{thought} Maybe the", "length"
    block = f"<think>\n{thought}\n</think>\n\n" if form < 5 else f"{thought}\n</think>\n\n"
    end = rng.choice(("<|im_end|>", "<|eot_id|>", "")) if finish == "stop" else ""
    return block + content + end, finish


def _repeat_end(
    request: ChatRequest, text: str, repeat: tuple[str, int | None] | None
) -> int | None:
    """Where in ``text`` the end the prompt quotes (``repeat``) ends, or None."""
    if repeat is None:
        return None
    if request.options.seam_chaos:
        path = seam_chaos.cut_path(request.last_user) if request.format == "json" else None
        return seam_chaos.locate(text, repeat[0], repeat[1], path)
    return locate(text, repeat[0], repeat[1])


def _continue(
    request: ChatRequest,
    text: str,
    quoted: tuple[str, int],
    limit: int,
    chaos: _Chaos,
    *,
    heeded: bool,
) -> tuple[str, str]:
    """A continuation of ``text`` after the quoted end (``quoted``: its text and where
    it ends in ``text``)."""
    opts = request.options
    tail, end = quoted
    marker = marker_line(_percent(end, text)) if opts.marker else ""
    if "malformed" in chaos:
        return marker + garbage(chaos.rng), "length"
    if "stall" in chaos:
        return marker + tail, "length"
    if heeded:  # told what went wrong: the quoted end again, then on, as asked
        repeated = min(len(tail), end)
        plain = chaos.fired - {"prose", "fence", "reindent"}
        chaos = _Chaos(plain, chaos.rng, chaos.call_id)
    else:
        seamed = _seam_reply(request, text, end, limit, chaos)
        if seamed is not None:
            return marker + seamed[0], seamed[1]
        repeated = min(opts.overlap, end)
    mark = heeded and opts.heed_mark and asks_mark(request.last_user)
    body, finish = _body(
        request, text, limit, chaos, start=end - repeated, repeated=repeated, first=False
    )
    if mark and len(body) >= repeated:  # where the copy ends, as the note asks
        body = body[:repeated] + CONTINUE_MARK + body[repeated:]
    return marker + body, finish


def _seam_reply(
    request: ChatRequest, text: str, end: int, limit: int, chaos: _Chaos
) -> tuple[str, str] | None:
    """A seam-chaos continuation from ``end``, or None when seam chaos draws none."""
    opts, fmt = request.options, request.format
    if not (opts.seam_chaos and 0 < end < len(text) and "content_filter" not in chaos):
        return None
    seams = random.Random(f"seams:{chaos.call_id}")  # default draws unchanged
    behaviour = seam_chaos.draw(opts, fmt, seams)
    if behaviour is None:
        return None
    body, ended = seam_chaos.reply(text, end, behaviour, fmt=fmt, budget=limit, rng=seams)
    return body, "stop" if ended else "length"


def _body(
    request: ChatRequest,
    text: str,
    limit: int,
    chaos: _Chaos,
    *,
    start: int,
    repeated: int,
    first: bool,
) -> tuple[str, str]:
    """``limit`` characters of ``text`` from ``start`` (``repeated`` of them already
    sent), with the chaos that fired; ``first``: the prompt quoted no end."""
    fmt = request.format
    payload = text[start : start + limit]
    finish = "stop" if start + limit >= len(text) else "length"
    if "content_filter" in chaos:
        payload = payload[: chaos.rng.randint(1, max(1, len(payload) - 1))]
        finish = "content_filter"
    if "reindent" in chaos and fmt == "json":
        payload = reindent(payload, repeated)
    prose = None
    if "prose" in chaos and (not first or fmt == "json"):
        # Only where a reader can tell it from the document: a first line of prose in
        # a text, Markdown or CSV document is the document's first line.
        prose = chaos.rng.choice(PROSE_FIRST if first else PROSE_NEXT)
    body = decorate(payload, fmt, fence="fence" in chaos, closed=finish == "stop", prose=prose)
    return body, finish


def _percent(delivered: int, text: str) -> int:
    return min(100, delivered * 100 // max(1, len(text)))
