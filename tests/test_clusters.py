"""Clustered inference (``ragspan.gate.clusters`` and the gate's sampling unit): the clustered
tests equal exact enumeration over cluster sign patterns, reduce to the per-query ones when
every query is its own cluster, and the default unit is decided from what the reports say
about the corpus. The calibration on real clustered data is benchmarks/bench_gate_calibration.py
(``clustered``); its table is in docs/gate.md."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from conftest import ROOT, run_cli
from ragspan.base.errors import InputError, UsageError
from ragspan.gate import clusters as cl
from ragspan.gate import stats
from ragspan.gate.alignment import cluster_plan
from ragspan.gate.compare import compare
from ragspan.gate.inputs import QueryRow, ScoreReport
from ragspan.gate.options import GateOptions
from ragspan.records.score_summary import Documents

FIX = ROOT / "tests" / "fixtures" / "gate"


def test_cluster_index_keeps_first_seen_order_and_lone_queries():
    assert cl.cluster_index(["b", "a", "b", None, "a", None]).tolist() == [0, 1, 0, 2, 1, 3]


@pytest.mark.parametrize("seed", range(6))
def test_cluster_sums_are_the_sums_added_in_query_order_bit_for_bit(seed):
    """Each cluster's totals as ``np.add.at`` adds them (from 0.0, in the queries' order),
    bit for bit: values of very different sizes, signed zeros, empty clusters, no query."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(0, 3000)), int(rng.integers(1, 40))
    index = rng.integers(0, max(1, n // 3), size=n) * 2  # every odd cluster empty
    d = rng.standard_normal((n, m)) * rng.choice([1e-9, 1.0, 1e9], size=(n, m))
    d[rng.random((n, m)) < 0.2] = -0.0
    expected = np.zeros((cl.count(index), m))
    np.add.at(expected, index, d)
    assert cl.cluster_sums(d, index).tobytes() == expected.tobytes()


def test_clustered_sign_flip_is_exact_enumeration_over_cluster_patterns():
    """The two-sided p-value of the mean, by brute force over the 2^C sign patterns of the
    cluster totals, against ``sign_flip_test`` on the totals (what the gate runs)."""
    rng = np.random.default_rng(3)
    d = rng.normal(0.1, 1.0, size=(23, 2))
    index = rng.integers(0, 7, size=23)
    index = cl.renumber(index)
    totals = cl.cluster_sums(d, index)
    got = stats.sign_flip_test(totals, 1000, 0).p_values
    observed = d.sum(axis=0)
    for j in range(2):
        null = [sum(s * t for s, t in zip(signs, totals[:, j]))
                for signs in itertools.product((1, -1), repeat=totals.shape[0])]
        tol = 1e-9 * max(1.0, abs(observed[j]))
        le = np.mean([x <= observed[j] + tol for x in null])
        ge = np.mean([x >= observed[j] - tol for x in null])
        assert got[j] == pytest.approx(min(1.0, 2 * min(le, ge)), abs=1e-12)


def test_every_query_its_own_cluster_is_the_per_query_inference():
    rng = np.random.default_rng(5)
    d = rng.normal(size=(40, 3))
    own = np.arange(40)
    np.testing.assert_allclose(stats.sign_flip_test(cl.cluster_sums(d, own), 2000, 1).p_values,
                               stats.sign_flip_test(d, 2000, 1).p_values)
    np.testing.assert_allclose(cl.robust_se(d, own), d.std(axis=0, ddof=1) / math.sqrt(40))
    np.testing.assert_allclose(cl.design_effect(d, own), 1.0)
    got = stats.bootstrap_ci(d, 500, 2, clusters=own)
    ref = stats.bootstrap_ci(d, 500, 2)
    np.testing.assert_allclose(got.low, ref.low)
    np.testing.assert_allclose(got.high, ref.high)
    drops = [d[:, 0], d[:20, 1]]
    rows = [np.arange(40), np.arange(20)]
    assert stats.family_alpha(drops, rows, 40, 0.05, "max-t", 3000, 4, own) == pytest.approx(
        stats.family_alpha(drops, rows, 40, 0.05, "max-t", 3000, 4))


def test_robust_se_is_larger_when_clusters_move_together():
    """Ten clusters of five identical deltas: the clustered variance is five times the
    per-query one (design effect 5)."""
    rng = np.random.default_rng(0)
    d = np.repeat(rng.normal(size=(10, 1)), 5, axis=0)
    index = np.repeat(np.arange(10), 5)
    de = float(cl.design_effect(d, index)[0])
    assert de == pytest.approx(5 * 49 / 45, rel=1e-9)  # CR1: C/(C-1) and the sd: n-1
    low, high = cl.t_bounds(d, index, 0.05)
    assert high[0] - low[0] > 2 * 1.83 * float(d.std(ddof=1)) / math.sqrt(50)
    wide = stats.bootstrap_ci(d, 2000, 0, clusters=index)
    narrow = stats.bootstrap_ci(d, 2000, 0)
    assert wide.high[0] - wide.low[0] > 1.8 * (narrow.high[0] - narrow.low[0])  # ~sqrt(5)


def test_a_single_cluster_claims_nothing():
    low, high = cl.t_bounds(np.ones((5, 1)), np.zeros(5, dtype=np.int64), 0.05)
    assert low[0] < -1e200 and high[0] > 1e200


# ---- the sampling unit ------------------------------------------------------------------------

def report(docs, values, corpus, tag="b", tags=None):
    ids = tuple(f"q{i}" for i in range(len(docs)))
    rows = tuple(QueryRow(q, "", (tags or {}).get(q, {}), {}, {}, {}, d)
                 for q, d in zip(ids, docs))
    matrix = np.stack([np.asarray(values, float), np.full(len(docs), 500.0)], axis=1)
    return ScoreReport(path=tag, sha256=tag, kind="score.span",
                       parameters={"k": [5], "grounding_threshold": 0.5}, eval_sha256="e",
                       corpus_sha256=None, ids=ids,
                       names=("complete_grounding@5", "retrieved_chars@5"), values=matrix,
                       rows=rows, documents=Documents(corpus, len({d for d in docs if d})))


SIX = [d for d in "abcdef" for _ in range(2)]  # six documents, two questions each


@pytest.mark.parametrize("docs,corpus,by,why", [
    (SIX, 10, "doc_id", "asks about 6 of the corpus's 10 documents"),
    (SIX, 6, "none", "asks about all 6 documents"),
    (list("abcdef"), 10, "none", "no document has two questions"),
    (SIX, None, "doc_id", "the corpus size is not recorded"),
    (["a", "a", "b", "b"], 10, "none", "only 2 clusters by doc_id: fewer than the 5"),
])
def test_the_default_unit(docs, corpus, by, why):
    values = [1, 0] * (len(docs) // 2)
    plan = cluster_plan(report(docs, values, corpus), report(docs, values, corpus, "c"), "auto")
    assert plan.by == by and why in plan.reason
    assert plan.population == ("documents like these 6" if by == "doc_id"
                               else f"questions about these {len(set(docs))} documents")


@pytest.mark.parametrize("alpha,fewest", [(0.05, 5), (0.1, 4), (0.01, 7), (0.03125, 5),
                                          (0.5, 2)])
def test_the_fewest_clusters_an_exact_test_needs(alpha, fewest):
    """2^-C, the smallest one-sided p-value of an exact sign-flip test over C clusters, must
    reach alpha."""
    from ragspan.gate.alignment import min_clusters

    assert min_clusters(alpha) == fewest
    assert 2.0 ** -fewest <= alpha + 1e-12 and (fewest == 2 or 2.0 ** -(fewest - 1) > alpha)


def test_given_units_and_clusters_that_differ():
    docs = SIX
    tags = {f"q{i}": {"team": "uvwxyz"[i % 6]} for i in range(12)}
    values = [1, 0] * 6
    base = report(docs, values, 10, tags=tags)
    plan = cluster_plan(base, report(docs, values, 10, "c", tags), "tag:team")
    assert plan.index(base.ids).tolist() == [0, 1, 2, 3, 4, 5] * 2
    with pytest.raises(UsageError, match="no query carries the tag 'nope'"):
        cluster_plan(base, base, "tag:nope")
    other = ["a", "b"] + SIX[2:]
    with pytest.raises(InputError, match=r"clusters \(doc_id\) differ, e.g. query 'q1'"):
        cluster_plan(base, report(other, values, 10, "c"), "doc_id")
    with pytest.raises(UsageError, match="expected auto, none, doc_id or tag:KEY"):
        GateOptions(cluster_by="contract").validate()


def test_too_few_clusters_decide_per_question_and_say_so():
    """20 questions about one document of a two-document corpus, all 20 lost: one cluster
    by document used to be inconclusive (exit 0), and one more unrelated document in a
    one-document corpus turned a fail into that pass."""
    docs = ["a"] * 20
    base = report(docs, [1] * 20, 2)
    cand = report(docs, [0] * 20, 2, "c")
    for setting in ("auto", "doc_id"):
        res = compare(base, cand, GateOptions(permutations=500, bootstrap=100,
                                              cluster_by=setting))
        assert res.decision.verdict == "fail", setting
        assert res.clusters is not None and res.clusters.by == "none"
        assert "only 1 cluster by doc_id" in res.clusters.reason
        assert res.clusters.population == "questions about this one document"
    # two, three and four documents: still per question; five: by document
    for n_docs, by in ((2, "none"), (3, "none"), (4, "none"), (5, "doc_id")):
        docs = [f"d{i % n_docs}" for i in range(20)]
        res = compare(report(docs, [1] * 20, 50), report(docs, [0] * 20, 50, "c"),
                      GateOptions(permutations=500, bootstrap=100))
        assert res.clusters is not None and res.clusters.by == by, n_docs
        assert res.decision.verdict == "fail", n_docs


def test_a_fail_never_stands_beside_a_p_value_that_contradicts_it():
    """Two clusters used to print FAIL with p = 0.5 beside a lower bound above 0 from a
    zero-variance cluster-t; now the p-value printed is the bound's own test's."""
    docs = [f"d{i % 6}" for i in range(30)]
    rng = np.random.default_rng(1)
    for _ in range(20):
        b = rng.integers(0, 2, 30).astype(float)
        c = np.where(rng.random(30) < 0.3, 0.0, b)
        res = compare(report(docs, b, 50), report(docs, c, 50, "c"),
                      GateOptions(permutations=500, bootstrap=200))
        for o in res.outcomes:
            if o.gated and o.decision == "fail":
                assert o.p_drop is not None and o.p_drop < (o.bound_alpha or 0)
            if o.gated and o.p_drop is not None and o.p_drop < (o.bound_alpha or 0) - 1e-9:
                assert (o.drop_low or 0) > 0


def test_an_eval_set_about_every_document_keeps_the_per_query_gate():
    """The gate fixtures ask 30 questions of the one document of their corpus: the default
    stays per-query, and the verdict (26.67pt drop fails) is today's."""
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "candidate-fail.json", "--no-config", "--format", "json")
    assert res.exit_code == 4
    summary = res.json()["predicate"]["summary"]
    assert summary["clusters"]["by"] == "none"
    assert summary["clusters"]["population"] == "questions about this one document"
    assert summary["metrics"]["complete_grounding@1"]["interval"] == "mid-p-mcnemar"
    forced = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                     FIX / "candidate-fail.json", "--no-config", "--cluster-by", "doc_id",
                     "--format", "json")
    assert forced.exit_code == 4  # one document: decided about these questions, and said
    clusters = forced.json()["predicate"]["summary"]["clusters"]
    assert clusters["by"] == "none" and "only 1 cluster by doc_id" in clusters["reason"]


def test_the_api_and_the_cli_follow_one_settings_rule(tmp_path, monkeypatch):
    import ragspan

    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.ragspan]\nmode = "threshold"\nalpha = 1e-9\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    b, c = FIX / "baseline.json", FIX / "candidate-fail.json"
    cli_default = run_cli("compare", "--baseline", b, "--candidate", c, "--format", "json")
    api_default = ragspan.compare(b, c)  # reads no file
    cli_none = run_cli("compare", "--baseline", b, "--candidate", c, "--no-config",
                       "--format", "json")
    assert api_default.decision.verdict == cli_none.json()["predicate"]["verdict"] == "fail"
    api_file = ragspan.compare(b, c, config=str(config))
    assert api_file.decision.verdict == cli_default.json()["predicate"]["verdict"] == "pass"
    cli_file = run_cli("compare", "--baseline", b, "--candidate", c, "--config", config,
                       "--format", "json")
    assert cli_file.json()["predicate"]["verdict"] == api_file.decision.verdict
