"""No bounded metric leaves [0, 1] on any input (issue: a gold snippet listed twice once gave
``char_precision@1 = 2.0``). Hypothesis draws eval sets and runs with the cases that broke
other harnesses: gold spans repeated or overlapping, retrieved spans repeated, overlapping,
nested or in other documents, empty pools, budgets smaller than the first result. An eval set
that ``validate`` calls wrong (a gold span listed twice, two that overlap) is refused by
``score`` too, naming the query; every other input scores within [0, 1]."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ragspan
from ragspan.base.errors import InputError
from ragspan.scoring.metrics.registry import parse_name

DOCS = ("a", "b", "c")
LENGTH = 200


@st.composite
def span(draw):
    start = draw(st.integers(0, LENGTH - 1))
    return {"doc_id": draw(st.sampled_from(DOCS)), "start": start,
            "end": draw(st.integers(start + 1, LENGTH))}


@st.composite
def case(draw):
    queries, run = [], []
    for i in range(draw(st.integers(1, 4))):
        gold = draw(st.lists(span(), min_size=1, max_size=4))
        if draw(st.booleans()):  # the duplicate-annotation bug: one snippet listed twice
            gold.append(dict(draw(st.sampled_from(gold))))
        queries.append({"id": f"q{i}", "query": "x", "gold_spans": gold,
                        "match": draw(st.sampled_from(["all", "any"]))})
        got = draw(st.lists(span(), max_size=8))
        if got and draw(st.booleans()):
            got.append(dict(draw(st.sampled_from(got))))  # a result returned twice
        run.append({"id": f"q{i}", "retrieved": got})
    ks = draw(st.lists(st.sampled_from([1, 2, 5, "1c", "50c", "300c"]), min_size=1,
                       max_size=3, unique=True))
    return queries, run, ks


def refused(queries) -> bool:
    """Whether a query lists a gold span twice or two that overlap (validate's errors)."""
    for q in queries:
        spans = sorted((s["doc_id"], s["start"], s["end"]) for s in q["gold_spans"])
        if any(a[0] == b[0] and b[1] < a[2] for a, b in zip(spans, spans[1:])):
            return True
    return False


@given(case())
def test_every_bounded_metric_lies_in_0_1(drawn):
    queries, run, ks = drawn
    corpus = [{"id": d, "text": "x" * LENGTH} for d in DOCS]
    if refused(queries):
        with pytest.raises(InputError, match="gold.span"):
            ragspan.score(queries, run, corpus, k=ks)
        return
    scored = ragspan.score(queries, run, corpus, k=ks)
    typed = scored.typed
    for j, name in enumerate(typed.names):
        spec = parse_name(name).spec
        column = typed.values[:, j]
        assert all(math.isfinite(v) for v in column), name
        assert (column >= 0).all(), name
        if spec.bounded:
            assert (column <= 1 + 1e-12).all(), (name, column.max())


def test_a_gold_span_listed_twice_is_refused_by_score_as_by_validate(tmp_path):
    """It gave char_precision@1 = 2.0, exit 0: validate refused the eval set, score took it."""
    from conftest import assert_input_error, run_cli, write_jsonl

    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "x" * LENGTH}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [
        {"id": "q1", "query": "?", "doc_id": "a", "gold_spans": [[10, 20], [10, 20]]},
        {"id": "q2", "query": "?", "doc_id": "a", "gold_spans": [[0, 30], [20, 40]]}])
    run = write_jsonl(tmp_path / "r.jsonl", [
        {"id": q, "retrieved": [{"doc_id": "a", "start": 10, "end": 20}]} for q in ("q1", "q2")])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus)
    assert_input_error(res, "e.jsonl:1", "query 'q1': gold_spans[1] repeats gold_spans[0]",
                       "(2 errors; ragspan validate lists them)")
    res = run_cli("validate", "--eval-set", evalset, "--corpus", corpus, "--format", "json")
    assert res.exit_code == 3
