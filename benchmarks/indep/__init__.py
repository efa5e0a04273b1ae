"""An independent seam corpus: the engine measured against behaviour it was not designed on.

A separate author wrote this corpus from the issue's list of what models emit at a seam
(a repeat of the delivered end, a chat preamble or sign-off, a fence, the cut unit or the
whole document begun again, a reformatted or re-quoted repeat, a typo or a reworded
restart, a line break added or lost, an ellipsis, an elided restart, a fresh array...),
without reading ``core/``. Its documents, its cuts, what it makes the model send and its
judgement of the result (the right documents, and the other readings a seam may fairly
have) are therefore its own, not the engine's: it is kept, unchanged in its logic, as a
benchmark so that the engine keeps being measured against cases its authors did not
design it on, next to ``sim.seam_trials`` (``benchmarks/bench_seams.py``), which they did.

``gen`` draws the trials (seeded: the same seed and index give the same trial);
``benchmarks/bench_indep_seams.py`` runs them against ``core.stitch`` and prints the
table. It is a benchmark, not a test: the test suite does not run it, and its silent
count is a number to drive down, not a gate.
"""
