"""The [rerank] cut (``top_k``, ``min_score``, ``min_keep``, the localGPT harness's settings):
how many of a reranked list stay. The pipeline's use of it runs with a real cross-encoder in
``test_retrieval_model.py``."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("scores, top_k, min_score, min_keep, want", [
    ([3.0, 2.0, 1.0], None, None, 1, 3),
    ([3.0, 2.0, 1.0], 2, None, 1, 2),
    ([3.0, 2.0, 1.0], None, 1.5, 1, 2),     # 1.0 is under min_score
    ([3.0, 2.0, 1.0], None, 5.0, 1, 1),     # none passes: min_keep keeps the best
    ([3.0, 2.0, 1.0], None, 5.0, 0, 0),
    ([3.0, 2.0, 1.0], 1, 0.0, 2, 1),        # min_keep never exceeds top_k
    ([3.0, 2.0, 2.0], None, 2.0, 1, 3),     # at min_score is kept
    ([], 5, 0.0, 1, 0),
])
def test_rerank_cut(scores, top_k, min_score, min_keep, want):
    from ragspan.retrieval.rerank import kept

    assert kept(scores, top_k, min_score, min_keep) == want
