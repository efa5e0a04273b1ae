"""A third seam corpus, by a second independent author: the engine against real-model habits.

Its author wrote it from how real models behave when asked to continue a cut-off reply,
without reading ``core/``, ``sim/`` or the other independent corpus (``benchmarks/indep``):
its documents, its cuts, what it makes the model send and its judgement of the result are
its own. Its behaviours: the end of the delivered text repeated (a few characters, the cut
word, line, sentence, paragraph, section, list item, table row or CSV record, a JSON
member or element), an apology or "(continued)" preamble, a closing note or a "the
document is complete" reply, fences around every reply, progress lines, whitespace lost
at the seam, an indent trimmed or tabs for spaces, a repeat re-escaped, renumbered,
reindented or with its members reordered, a lost comma, a CSV or Markdown table header
sent again, a code fence reopened, a list renumbered from 1, a new JSON document holding
the rest of the array, many short fragments; and honest trials, where the document itself
holds what looks like a model's habit (a text repeated across the cut, a line written
twice, a "Note:" or "Here is..." line, a code fence) and must be kept.

It is kept, unchanged in its trials and judgement, as a benchmark: ``gen`` draws the
trials (seeded: the same seed and index give the same trial) from ``docs``' documents;
``benchmarks/bench_indep3_seams.py`` runs them against ``core.stitch`` and prints the
table. It is a benchmark, not a test: the test suite does not run it, and its silent
count is a number to drive down, not a gate.
"""
