"""Every cutoff read off one order of the run (``scoring/metrics/span_scores.py``): all cutoffs
computed together equal each computed alone, bit for bit, whatever the order of the run's
columns; and together they equal the definitions (``test_span_metrics.brute``) on runs made
to stress the one order: nested, touching and repeated results, results that overlap no gold
span beside ones that do, budgets that cut a result inside a gold span."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ragspan.scoring.metrics.registry import Chars
from ragspan.scoring.metrics.span import RankedColumns
from ragspan.scoring.metrics.span_scores import score_spans
from ragspan.scoring.span_scoring import DocCodes, _map_rows, gold_columns, ranked_columns
from test_span_metrics import brute, brute_budget, build, make_case

CUTOFFS = (1, 2, 3, 5, 10, Chars(1), Chars(25), Chars(60), Chars(150), Chars(400))


def crafted_case(rng: random.Random):
    """A gold span or two in document ``a``, and a ranking of nested, touching and repeated
    results around them, with results in ``b`` that overlap no gold span."""
    s = rng.randint(20, 80)
    gold = [("a", s, s + rng.randint(5, 30))]
    if rng.random() < 0.5:
        t = gold[0][2] + rng.randint(0, 10)
        gold.append(("a", t, t + rng.randint(1, 20)))
    ranked = []
    for _ in range(rng.randint(1, 14)):
        kind = rng.random()
        if ranked and kind < 0.15:
            ranked.append(rng.choice(ranked))  # an exact repeat
        elif ranked and kind < 0.35:  # nested inside an earlier result
            d, a, b = rng.choice(ranked)
            x = rng.randint(a, b - 1)
            ranked.append((d, x, rng.randint(x + 1, b)))
        elif ranked and kind < 0.5:  # touching an earlier result
            d, a, b = rng.choice(ranked)
            ranked.append((d, b, b + rng.randint(1, 30)))
        elif kind < 0.7:  # overlapping no gold span
            x = rng.randint(0, 200)
            ranked.append(("b", x, x + rng.randint(1, 50)))
        else:
            x = rng.randint(max(0, s - 30), s + 40)
            ranked.append(("a", x, x + rng.randint(1, 45)))
    return gold, ranked


def columns(cases, match_any):
    evalset, run = build(cases, match_any)
    codes = DocCodes()
    gold = gold_columns(evalset, codes)
    rows, _ = _map_rows(evalset, run.spans)
    return gold, ranked_columns(run.spans, rows, codes, len(evalset.queries))


def drawn(make, seed: int, n: int = 400):
    """``n`` cases from ``make``, about 30% of them matched by any gold span, and their
    columns."""
    rng = random.Random(seed)
    cases = [make(rng) for _ in range(n)]
    match_any = [rng.random() < 0.3 for _ in cases]
    return cases, match_any, *columns(cases, match_any)


def fresh(r: RankedColumns) -> RankedColumns:
    return RankedColumns(r.query, r.doc, r.start, r.end, r.rank)


def assert_same(together, alone, k):
    for name, value in alone.values.items():
        assert value.tobytes() == together.values[name].tobytes(), name
    assert alone.gold_fraction[k].tobytes() == together.gold_fraction[k].tobytes()
    assert alone.slots is not None and together.slots is not None
    assert np.array_equal(alone.slots[k], together.slots[k])


@pytest.mark.parametrize("make", [make_case, crafted_case], ids=["random", "crafted"])
def test_all_cutoffs_together_equal_each_alone_bit_for_bit(make):
    _, _, gold, ranked = drawn(make, 20261206)
    together = score_spans(gold, fresh(ranked), CUTOFFS, 0.5, chroma=True)
    assert set(together.values) == {f"{m}@{k}" for m in (
        "complete_grounding", "span_coverage", "span_recall", "char_precision", "char_recall",
        "char_precision_merged", "retrieved_chars", "precision", "hit_rate", "mrr",
        "chroma_recall", "chroma_precision", "iou") for k in CUTOFFS}
    for k in CUTOFFS:
        assert_same(together, score_spans(gold, fresh(ranked), (k,), 0.5, chroma=True), k)


def test_the_order_of_the_run_columns_changes_no_number():
    """The columns shuffled (``RankedColumns.taken``), with the characters before each
    result carried over or summed again: every number the same, bit for bit."""
    rng = random.Random(7)
    cases = [crafted_case(rng) for _ in range(300)]
    gold, ranked = columns(cases, [False] * len(cases))
    expected = score_spans(gold, fresh(ranked), CUTOFFS, 0.5)
    order = np.random.default_rng(3).permutation(ranked.query.size)
    summed = fresh(ranked)
    summed.chars_before  # noqa: B018  (computed, then carried by taken)
    for shuffled in (fresh(ranked).taken(order), summed.taken(order)):
        got = score_spans(gold, shuffled, CUTOFFS, 0.5)
        for k in CUTOFFS:
            assert_same(got, expected, k)
    assert np.array_equal(summed.taken(order).chars_before, fresh(ranked).taken(order).chars_before)


@pytest.mark.parametrize("make", [make_case, crafted_case], ids=["random", "crafted"])
def test_all_cutoffs_together_equal_the_definitions(make):
    cases, match_any, gold, ranked = drawn(make, 11)
    values = score_spans(gold, ranked, CUTOFFS, 0.5).values
    for i, (g, r) in enumerate(cases):
        for k in CUTOFFS:
            expected = brute_budget(g, r, int(k), 0.5, match_any[i]) if isinstance(k, Chars) \
                else brute(g, r, k, 0.5, match_any[i])
            for name, value in expected.items():
                assert values[f"{name}@{k}"][i] == pytest.approx(value, abs=1e-12), (name, k, i)
