"""Run readers: what a retriever returned, read strictly into columns.

``spans`` (span runs, JSON lines), ``docs`` (doc-level runs: TREC and JSON lines), ``detect``
(which kind a file holds), ``columns`` (a doc run's columns and id coding), ``fast_docs`` and
``arrow_jsonl`` (large doc runs through numpy and pyarrow), ``fast_spans`` (large span runs
through pyarrow), ``ranking`` (trec_eval's order) and ``anchoring`` (items that carry their
text, checked or placed in the corpus). Each submodule is imported by name; this package
imports none of them, so a reader pays only for what it uses.
"""
