"""Each retrieved result's length in tokens, for token budgets (``--k 512t``).

A result's tokens are those of its text alone (the corpus slice ``[start, end)``) in the
named tokenizer; the characters of its first ``m`` tokens are the start of token ``m``. Each
distinct ``(document, start, end)`` is tokenized once, and only the results a budget cuts
are asked for their token starts.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np

from ragspan.io.corpus import Corpus
from ragspan.scoring.metrics.span import RankedColumns, TokenCounts


class TokenizerLike(Protocol):
    """What a token budget needs of a tokenizer (``retrieval.tokens.Tokenizer`` is one)."""

    name: str

    def count(self, text: str) -> int: ...

    def offsets(self, text: str) -> list[int]: ...


def with_token_counts(ranked: RankedColumns, corpus: Corpus, doc_names: list[str],
                      tokenizer: TokenizerLike, extra: dict[str, str] | None = None
                      ) -> RankedColumns:
    """``ranked`` with ``tokens`` set: each entry's length in tokens of ``tokenizer``
    (``doc_names[code]`` is the document of code ``code``; ``extra``: texts of documents
    outside the corpus, such as the results kept though they could not be placed)."""
    extra = extra or {}
    texts: dict[tuple[int, int, int], str] = {}
    counts: dict[tuple[int, int, int], int] = {}
    keys = list(zip(ranked.doc.tolist(), ranked.start.tolist(), ranked.end.tolist()))
    for key in keys:
        if key not in counts:
            doc, start, end = key
            name = doc_names[doc]
            texts[key] = (extra[name] if name in extra else corpus.text(name))[start:end]
            counts[key] = tokenizer.count(texts[key])
    count = np.fromiter((counts[k] for k in keys), dtype=np.int64, count=len(keys))

    def prefix(i: int, m: int) -> int:
        return tokenizer.offsets(texts[keys[i]])[m]

    return dataclasses.replace(ranked, tokens=TokenCounts(count, prefix))
