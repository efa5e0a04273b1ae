"""A fourth independent seam corpus for `core.stitch`, written without reading the engine.

It encodes what real models and serving stacks emit when asked to continue a truncated
reply, concentrating on behaviours the earlier corpora left out: reasoning blocks and
leaked chat-template tokens, repeats the model normalises (quotes, dashes, Unicode forms,
Markdown syntax, JSON escapes, CSV quoting), awkward multilingual cuts, replies that are
summaries, questions or refusals, re-emitted headers and containers, self-truncation notes
and a full re-emission of the document after the continuation.

`docs` makes the documents, `gen.generate(seed, index)` one trial;
`benchmarks/bench_indep4_seams.py` runs them.
"""
