"""Cross-encoder reranking with sentence-transformers' ``CrossEncoder`` (model by name or path)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragspan.base.errors import MissingExtraError, UsageError
from ragspan.retrieval.models import quiet_transformers


class Reranker:
    def __init__(self, model: str, batch_size: int = 32):
        quiet_transformers()
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise MissingExtraError("sentence_transformers", "retrieval") from None
        try:
            self.model: Any = CrossEncoder(model, device="cpu")
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot load reranker '{model}': {exc}") from None
        self.batch_size = batch_size

    def scores(self, query: str, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        out = self.model.predict([(query, t) for t in texts], batch_size=self.batch_size,
                                 show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(out, dtype=np.float64).reshape(len(texts), -1)[:, 0]


def kept(scores: Sequence[float], top_k: int | None, min_score: float | None,
         min_keep: int) -> int:
    """How many of a reranked list (``scores`` in its order, best first) stay: the first
    ``top_k`` (all when None), of them those scoring at least ``min_score`` (all when None),
    and never fewer than ``min_keep`` of the first ``top_k`` whatever their scores (the
    localGPT harness's rule)."""
    n = len(scores) if top_k is None else min(top_k, len(scores))
    if min_score is None:
        return n
    passing = sum(1 for s in scores[:n] if s >= min_score)
    return max(passing, min(min_keep, n))
