"""Doc-level metrics equal trec_eval's.

Oracles: (1) pytrec_eval (pytrec-eval-terrier, which wraps trec_eval 9) on 200 seeded random
qrels/run pairs; (2) trec_eval's own reference outputs in ``shared/data/trec_eval_test``
(``out.test.aq``: ``trec_eval -m all_trec -q qrels.test results.test``; ``out.test.aqc``: the
same with ``-c`` on ``results.trunc``; ``out.test.aql``: ``-l2`` on ``qrels.rel_level``).
trec_eval prints 4 decimals, so those comparisons are to 5e-5.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import patch_everywhere, run_cli, shared, write_jsonl
from ragspan.io.qrels import read_qrels
from ragspan.io.runs.docs import read_doc_run
from ragspan.scoring.doc_scoring import score_doc_run

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 5, 10, 100)
OURS_TO_TREC = {"doc_precision": "P_{k}", "doc_recall": "recall_{k}", "doc_ndcg": "ndcg_cut_{k}",
                "doc_map": "map_cut_{k}", "doc_hit_rate": "success_{k}"}


def random_pair(rng: random.Random):
    qrels, run = {}, {}
    for q in range(rng.randint(1, 12)):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(rng.randint(5, 150))]
        if rng.random() < 0.85:  # judged query (some have nothing relevant)
            judged = rng.sample(docs, rng.randint(1, len(docs)))
            qrels[qid] = {d: rng.choice([0, 0, 1, 2, 3]) for d in judged}
        if rng.random() < 0.85:  # query present in the run
            ranked = rng.sample(docs, rng.randint(1, len(docs)))
            # coarse scores force ties, broken by doc id descending as trec_eval does
            run[qid] = {d: float(rng.randint(0, 20)) for d in ranked}
    if not qrels:
        qrels["q0"] = {"d0": 1}
    return qrels, run


def write_trec(tmp, qrels, run):
    qp, rp = tmp / "qrels.txt", tmp / "run.txt"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    rp.write_text("".join(f"{q} Q0 {d} {i} {s} tag\n" for q, ds in run.items()
                          for i, (d, s) in enumerate(ds.items())) or "")
    return qp, rp


def reference(qrels, run, k, level):
    cut = {}
    for q, ds in run.items():  # trec_eval order, then truncated to k for recip_rank@k
        by_doc_desc = sorted(ds.items(), key=lambda kv: kv[0], reverse=True)
        order = sorted(by_doc_desc, key=lambda kv: -kv[1])  # stable: ties stay doc id desc
        cut[q] = dict(order[:k])
    measures = {f"P_{k}", f"recall_{k}", f"ndcg_cut_{k}", f"map_cut_{k}", f"success_{k}"}
    full = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=level).evaluate(cut)
    return full, rr


def scored_pairs(tmp_path, rng, n, level):
    """``n`` random (qrels, run) pairs with a run, each scored by ragspan from its TREC files:
    (qrels, run, scores, the index of each query id in the scores)."""
    for _ in range(n):
        qrels, run = random_pair(rng)
        if not run:
            continue
        qp, rp = write_trec(tmp_path, qrels, run)
        scores = score_doc_run(read_doc_run(rp), read_qrels(qp).judgments, KS, level, False)
        yield qrels, run, scores, {q: i for i, q in enumerate(scores.qids)}


@pytest.mark.parametrize("level", [1, 2])
def test_200_random_pairs_equal_pytrec_eval(tmp_path, level):
    checked = 0
    for case, (qrels, run, scores, idx) in enumerate(
            scored_pairs(tmp_path, random.Random(7 + level), 200, level)):
        for k in KS:
            full, rr = reference(qrels, run, k, level)
            for q in qrels:
                if not qrels[q]:
                    continue
                i = idx[q]
                for ours, theirs in OURS_TO_TREC.items():
                    want = full[q][theirs.format(k=k)] if q in full else 0.0
                    got = scores.values[f"{ours}@{k}"][i]
                    assert got == pytest.approx(want, abs=1e-9), (case, q, ours, k)
                want_rr = rr[q]["recip_rank"] if q in rr else 0.0
                assert scores.values[f"doc_mrr@{k}"][i] == pytest.approx(want_rr, abs=1e-9)
                checked += 1
    assert checked > 1000


def test_doc_judged_equals_precision_with_every_judgment_relevant(tmp_path):
    """``doc_judged@k`` is ir_measures' Judged@k: P@k where every judged document counts as
    relevant, so pytrec_eval's P_k on the qrels with every grade raised by one (level 1) is its
    reference; unjudged documents in the top k, and fewer than k results, lower it."""
    checked = 0
    for qrels, run, scores, idx in scored_pairs(tmp_path, random.Random(11), 100, 1):
        raised = {q: {d: g + 1 for d, g in ds.items()} for q, ds in qrels.items()}
        want = pytrec_eval.RelevanceEvaluator(
            raised, {f"P_{k}" for k in KS}, relevance_level=1).evaluate(run)
        for q in qrels:
            for k in KS:
                expected = want[q][f"P_{k}"] if q in want else 0.0
                assert scores.values[f"doc_judged@{k}"][idx[q]] == pytest.approx(expected,
                                                                                 abs=1e-9)
                checked += 1
    assert checked > 500


@pytest.mark.parametrize("judged_only", [False, True])
def test_score_path_with_top_cut_equals_pytrec_eval(tmp_path, judged_only):
    """What ``score`` runs (the run read on a worker thread, only each query's top max(k)
    kept, judged documents joined through byte keys, or a dict for ids over 8 bytes) equals
    pytrec_eval, with trec_eval's -c (every judged query) and without (queries in both)."""
    from ragspan.scoring.doc_scoring import read_and_score

    ks = (1, 5, 10)
    rng = random.Random(31)
    keyed = checked = cases = 0
    for case in range(150):
        qrels, run = random_pair(rng)
        if not run:
            continue
        if case % 3 == 0:  # long ids: no byte keys
            qrels = {q: {f"document-{d}": g for d, g in ds.items()} for q, ds in qrels.items()}
            run = {q: {f"document-{d}": s for d, s in ds.items()} for q, ds in run.items()}
        qp, rp = write_trec(tmp_path, qrels, run)
        _, parsed, scores = read_and_score(str(qp), str(rp), "auto", "auto", ks, 1, judged_only)
        cases += 1
        keyed += parsed.doc_keys is not None
        idx = {q: i for i, q in enumerate(scores.qids)}
        expected = [q for q in qrels if qrels[q] and (q in run or not judged_only)]
        assert scores.qids == expected
        for k in ks:
            full, rr = reference(qrels, run, k, 1)
            for q in expected:
                for ours, theirs in OURS_TO_TREC.items():
                    want = full[q][theirs.format(k=k)] if q in full else 0.0
                    got = scores.values[f"{ours}@{k}"][idx[q]]
                    assert got == pytest.approx(want, abs=1e-9), (case, q, ours, k)
                want_rr = rr[q]["recip_rank"] if q in rr else 0.0
                assert scores.values[f"doc_mrr@{k}"][idx[q]] == pytest.approx(want_rr, abs=1e-9)
                checked += 1
    assert checked > 500 and 20 < keyed < cases  # both joins really ran


def parse_trec_eval_output(path):
    out = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        try:
            out[(name, qid)] = float(value)
        except ValueError:  # relstring, runid: not numbers
            continue
    return out


CASES = [  # reference output, qrels, run, -c, -l
    ("out.test.aq", "qrels.test", "results.test", False, 1),
    ("out.test.aqc", "qrels.test", "results.trunc", True, 1),
    ("out.test.aql", "qrels.rel_level", "results.test", False, 2),
]


@pytest.mark.parametrize("expected,qrels,run,complete,level", CASES)
def test_reproduces_trec_eval_reference_outputs(expected, qrels, run, complete, level):
    base = shared("trec_eval_test")
    want = parse_trec_eval_output(base / expected)
    scores = score_doc_run(read_doc_run(base / run), read_qrels(base / qrels).judgments,
                           (5, 10, 15, 20, 30, 100, 200, 500, 1000), level,
                           judged_only=not complete)
    names = {"P_{k}": "doc_precision", "recall_{k}": "doc_recall", "ndcg_cut_{k}": "doc_ndcg",
             "map_cut_{k}": "doc_map", "success_{k}": "doc_hit_rate"}
    compared = 0
    for (name, qid), value in want.items():
        for pattern, ours in names.items():
            for k in scores.ks:
                if name != pattern.format(k=k):
                    continue
                arr = scores.values[f"{ours}@{k}"]
                got = float(arr.mean()) if qid == "all" else float(arr[scores.qids.index(qid)])
                assert got == pytest.approx(value, abs=5e-5), (name, qid)
                compared += 1
        if name == "recip_rank":
            arr = scores.values["doc_mrr@1000"]
            got = float(arr.mean()) if qid == "all" else float(arr[scores.qids.index(qid)])
            assert got == pytest.approx(value, abs=5e-5)
            compared += 1
    assert compared >= 40


def test_trec_eval_comment_ids_and_graded(tmp_path):
    """TREC RAG 2024-style ids with '#', graded 0-3 (``out.comment.test``: default measures)."""
    base = shared("trec_eval_test")
    want = parse_trec_eval_output(base / "out.comment.test")
    scores = score_doc_run(read_doc_run(base / "results.comment.test"),
                           read_qrels(base / "qrels.comment.test").judgments, (5, 10, 1000), 1,
                           judged_only=True)
    for name, ours in (("P_5", "doc_precision@5"), ("P_10", "doc_precision@10"),
                       ("recip_rank", "doc_mrr@1000")):
        assert float(scores.values[ours].mean()) == pytest.approx(want[(name, "all")], abs=5e-5)


def test_cli_doc_score_counts(tmp_path):
    qrels = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "a", "relevance": {"d1": 2, "d2": 0}},
        {"id": "b", "relevant_ids": ["d3"]},
        {"id": "c", "relevant_ids": []},
    ])
    run = write_jsonl(tmp_path / "r.jsonl", [
        {"id": "a", "retrieved_ids": ["d2", "d1"]},
        {"id": "z", "retrieved_ids": ["d9"]},
    ])
    res = run_cli("score", "--qrels", qrels, "--run", run, "--k", "2")
    assert res.exit_code == 0, res.stderr
    s = res.json()["predicate"]["summary"]
    assert s["queries"] == 2
    assert s["queries_without_judgments"] == 1
    assert s["judged_queries_without_run_row"] == 1
    assert s["run_rows_for_unjudged_queries"] == 1
    assert s["metrics"]["doc_mrr@2"] == pytest.approx(0.25)  # a: 1/2, b: 0 (missing, -c)
    only = run_cli("score", "--qrels", qrels, "--run", run, "--k", "2", "--judged-only").json()
    assert only["predicate"]["summary"]["metrics"]["doc_mrr@2"] == pytest.approx(0.5)


def test_scifact_scores_end_to_end(tmp_path):
    """BEIR SciFact test qrels (read from shared/, never copied) against a run made here:
    for each query, its judged docs placed at rank 2 behind one unjudged doc."""
    base = shared("beir_scifact")
    judg = read_qrels(base / "qrels" / "test.tsv")
    assert judg.format == "beir"
    assert len(judg.judgments) == 300
    assert sum(len(v) for v in judg.judgments.values()) == 339
    lines = []
    for q, docs in judg.judgments.items():
        lines.append(f"{q} Q0 unjudged-{q} 1 10.0 t\n")
        for i, d in enumerate(sorted(docs)):
            lines.append(f"{q} Q0 {d} {i + 2} {9.0 - i} t\n")
    run = tmp_path / "run.trec"
    run.write_text("".join(lines))
    res = run_cli("score", "--qrels", base / "qrels" / "test.tsv", "--run", run, "--k", "10")
    assert res.exit_code == 0, res.stderr
    m = res.json()["predicate"]["summary"]["metrics"]
    assert m["doc_mrr@10"] == pytest.approx(0.5)
    assert m["doc_recall@10"] == pytest.approx(1.0)
    assert m["doc_hit_rate@10"] == 1.0


def test_duplicate_doc_in_trec_run_is_an_error(tmp_path):
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 d1 1\n")
    run = tmp_path / "r.txt"
    run.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n1 Q0 d1 3 0.5 t\n")
    from conftest import assert_input_error

    assert_input_error(run_cli("score", "--qrels", qrels, "--run", run), "r.txt:3",
                       "listed twice")


@pytest.mark.parametrize("content,what", [
    ("1 0 d1\n", "expected 4 columns"),
    ("1 0 d1 x\n", "not an integer"),
])
def test_bad_qrels(tmp_path, content, what):
    from conftest import assert_input_error

    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 d0 1\n" + content)
    run = tmp_path / "r.txt"
    run.write_text("1 Q0 d1 1 2.0 t\n")
    res = run_cli("score", "--qrels", qrels, "--run", run, "--qrels-format", "trec")
    assert_input_error(res, "q.txt:2", what)


def test_bad_trec_run_score(tmp_path):
    from conftest import assert_input_error

    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 d0 1\n")
    run = tmp_path / "r.txt"
    run.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 abc t\n")
    assert_input_error(run_cli("score", "--qrels", qrels, "--run", run), "r.txt:2", "score")


def test_convert_round_trips(tmp_path):
    base = shared("trec_eval_test")
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.trec", tmp_path / "c.jsonl"
    assert run_cli("convert", "run", "--in", base / "results.test", "--to", "jsonl",
                   "--out", a).exit_code == 0
    assert run_cli("convert", "run", "--in", a, "--to", "trec", "--out", b).exit_code == 0
    assert run_cli("convert", "run", "--in", b, "--to", "jsonl", "--out", c).exit_code == 0
    assert a.read_text() == c.read_text()
    orig, back = read_doc_run(base / "results.test"), read_doc_run(b)
    assert orig.per_query() == back.per_query()
    assert np.array_equal(orig.score, back.score)
    # a JSONL run without scores gets strictly decreasing TREC scores, order kept
    plain = write_jsonl(tmp_path / "p.jsonl", [{"id": "q", "retrieved_ids": ["a", "z", "m"]}])
    assert run_cli("convert", "run", "--in", plain, "--to", "trec", "--out", b).exit_code == 0
    assert read_doc_run(b).per_query() == {"q": ["a", "z", "m"]}
    # qrels both ways
    q1, q2 = tmp_path / "q.jsonl", tmp_path / "q.trec"
    assert run_cli("convert", "qrels", "--in", base / "qrels.rel_level", "--to", "jsonl",
                   "--out", q1).exit_code == 0
    assert run_cli("convert", "qrels", "--in", q1, "--to", "trec", "--out", q2).exit_code == 0
    assert read_qrels(q2).judgments == read_qrels(base / "qrels.rel_level").judgments


def test_convert_run_tag(tmp_path):
    """``convert run --to trec --tag T`` writes T in the tag column; a tag TREC cannot carry,
    or a tag where there is no tag column, is a usage error and nothing is written."""
    run = write_jsonl(tmp_path / "p.jsonl", [{"id": "q", "retrieved_ids": ["a", "z"]}])
    out = tmp_path / "r.trec"
    assert run_cli("convert", "run", "--in", run, "--to", "trec", "--out", out,
                   "--tag", "bm25-v2").exit_code == 0
    assert {line.split()[5] for line in out.read_text().splitlines()} == {"bm25-v2"}
    assert run_cli("convert", "run", "--in", run, "--to", "trec",
                   "--out", tmp_path / "d.trec").exit_code == 0
    assert (tmp_path / "d.trec").read_text().split()[5] == "ragspan"
    for args, fragment in ((["run", "--to", "trec", "--tag", "two words"], "without whitespace"),
                           (["run", "--to", "trec", "--tag", ""], "without whitespace"),
                           (["run", "--to", "jsonl", "--tag", "x"], "has no place in run"),
                           (["qrels", "--to", "trec", "--tag", "x"], "has no place in qrels")):
        bad = tmp_path / "bad.out"
        res = run_cli("convert", args[0], "--in", run, *args[1:], "--out", bad)
        assert res.exit_code == 2 and fragment in res.stderr, res.stderr
        assert not bad.exists()


def test_eval_set_with_doc_run(tmp_path):
    """A doc-level eval set (``relevance``) scores a doc run directly."""
    evalset = write_jsonl(tmp_path / "e.jsonl", [
        {"id": "a", "query": "x", "relevance": {"d1": 1}},
        {"id": "b", "query": "y", "relevant_ids": ["d2"]},
    ])
    run = write_jsonl(tmp_path / "r.jsonl", [
        {"id": "a", "retrieved_ids": ["d1"]}, {"id": "b", "retrieved_ids": ["d9", "d2"]}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--k", "2")
    assert res.exit_code == 0, res.stderr
    assert res.json()["predicate"]["kind"] == "score.doc"
    assert res.json()["predicate"]["summary"]["metrics"]["doc_mrr@2"] == pytest.approx(0.75)


def assert_same_run(a, b):
    assert a.qids == b.qids and a.docs == b.docs and a.format == b.format
    for field in ("query", "doc", "rank"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert np.array_equal(a.score, b.score, equal_nan=True)


def test_fast_and_plain_parsers_give_identical_runs(tmp_path):
    pytest.importorskip("pyarrow", reason="the fast extra is not installed")
    from ragspan.io.runs.fast_docs import arrow_trec

    base = shared("trec_eval_test")
    for name in ("results.test", "results-302.test", "results.trunc"):
        path = base / name
        first = path.read_text().split("\n", 1)[0]
        assert arrow_trec(str(path), "x", first) is not None, name  # the fast path really ran
        assert_same_run(read_doc_run(path, fast=True), read_doc_run(path, fast=False))
    rng = random.Random(11)
    for _ in range(50):
        qrels, run = random_pair(rng)
        if run:
            _, rp = write_trec(tmp_path, qrels, run)
            assert arrow_trec(str(rp), "x", "1 Q0") is not None
            assert_same_run(read_doc_run(rp, fast=True), read_doc_run(rp, fast=False))


@pytest.mark.parametrize("content, error", [
    ("1 Q0 d1 1 2.0 t\n#comment line here a b\n1 Q0 d2 2 1.0 t\n", None),  # comment line
    ("1\tQ0\td1\t1\t2.0\tt\n1 Q0 d2 2 1.0 t\n", None),  # tabs
    ("1 Q0 d1 1 2.0 t extra words\n1 Q0 d2 2 1.0 t\n", None),  # trailing words
    ("1  Q0 d1 1 2.0 t\n", None),  # double space
    ("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 nan t\n", "r.txt:2"),
    ("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n1 Q0 d1 3 0.5 t\n", "r.txt:3"),
    ("1\tQ0\td 1\t1\t2.0\tt\n1\tQ0\td2\t2\t1.0\tt\n", None),  # a space inside a tab field
    ("1 Q0 d1 1 2.0 t x\n1 Q0 d2 2 1.0\n", "r.txt:2"),  # 7 + 5 tokens: not two rows of 6
])
def test_fast_path_falls_back_to_the_plain_parser(tmp_path, content, error):
    pytest.importorskip("pyarrow", reason="the fast extra is not installed")
    from ragspan.base.errors import InputError

    run = tmp_path / "r.txt"
    run.write_text(content)
    if error is None:
        assert_same_run(read_doc_run(run, fast=True), read_doc_run(run, fast=False))
    else:
        for fast in (True, False):
            with pytest.raises(InputError) as exc:
                read_doc_run(run, fast=fast)
            assert error in str(exc.value)


@pytest.mark.parametrize("top", [1, 5, 100])
def test_top_selection_equals_full_order_cut(top, monkeypatch):
    """``trec_top`` == ``trec_order`` then a cut at rank ``top``, with many ties, on runs
    whose lines are grouped by query and on shuffled ones, with queries of equal length,
    of somewhat unequal length (the padded matrix) and of very unequal length (the loop per
    query); ``check_repeats`` answers None exactly when a query repeats a document."""
    from ragspan.io.runs import ranking
    from ragspan.io.runs.ranking import trec_order, trec_top

    ran = {"_top_padded": 0, "_top_per_query": 0}
    for name in ran:
        def counted(*args, _f=getattr(ranking, name), _name=name, **kw):
            ran[_name] += 1
            return _f(*args, **kw)
        monkeypatch.setattr(ranking, name, counted)
    rng = np.random.default_rng(top)
    for case in range(90):
        nq = int(rng.integers(1, 30))
        per = int(rng.integers(1, 10 * top + 40))
        shape = case % 3
        sizes = (np.full(nq, per) if shape == 0
                 else rng.integers(max(per // 2, 1), per + 1, nq) if shape == 1
                 else np.where(rng.random(nq) < 0.2, 20 * per, rng.integers(1, per + 1, nq)))
        q = np.repeat(np.arange(nq), sizes)
        d = np.concatenate([rng.permutation(m * 3)[:m] for m in sizes])
        s = rng.integers(0, 6 if case % 2 else 1000, q.size).astype(float)
        if case % 4 == 0:
            p = rng.permutation(q.size)
            q, d, s = q[p], d[p], s[p]
        if case % 5 == 0:
            s[::7] = -0.0
            s[1::7] = 0.0
        full = trec_order(q, d, s)
        qs = q[full]
        first = np.concatenate([[0], np.flatnonzero(qs[1:] != qs[:-1]) + 1])
        rank = np.arange(q.size) - np.repeat(first, np.diff(np.append(first, q.size)))
        assert np.array_equal(trec_top(q, d, s, top), full[rank < top]), case
        checked = trec_top(q, d, s, top, check_repeats=True)
        assert checked is None or np.array_equal(checked, full[rank < top]), case
        if checked is not None and q.size > 1:
            i = int(rng.integers(q.size))
            same_query = np.flatnonzero(q == q[i])
            if same_query.size > 1:
                d2 = d.copy()
                d2[same_query[0]] = d2[same_query[-1]]
                assert trec_top(q, d2, s, top, check_repeats=True) is None, case
    assert min(ran.values()) >= 5, ran  # both selection paths really ran


def test_scoring_reads_only_the_top_but_checks_every_line(tmp_path):
    from conftest import assert_input_error

    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 d1 1\n")
    run = tmp_path / "r.txt"
    lines = [f"1 Q0 d{i} {i} {100 - i} t\n" for i in range(1, 60)] + ["1 Q0 d1 99 0.5 t\n"]
    run.write_text("".join(lines))
    assert_input_error(run_cli("score", "--qrels", qrels, "--run", run, "--k", "5"), "r.txt:60",
                       "listed twice")


@pytest.mark.parametrize("top", [None, 1, 3, 100])
def test_three_parsers_agree(tmp_path, monkeypatch, top):
    """pyarrow, the numpy byte parser and the line-by-line parser give the same run, with
    and without a top cut, on random runs (ties, shuffled lines, long and short doc ids)."""
    pytest.importorskip("pyarrow", reason="the fast extra is not installed")
    import ragspan.io.runs.docs as dr
    import ragspan.io.runs.fast_docs as fr

    rng = np.random.default_rng(5)
    for case in range(25):
        nq, per = int(rng.integers(1, 8)), int(rng.integers(1, 60))
        width = 6 if case % 2 else 12  # keys (<= 8 bytes) and strings (> 8)
        lines = [f"q{qi} Q0 {'d' * (width - 5)}{int(rng.integers(0, 9999)):04d} 0 "
                 f"{rng.integers(0, 5) / 4} t\n" for qi in range(nq) for _ in range(per)]
        lines = list(dict.fromkeys(lines))  # no exact repeats
        seen, unique_lines = set(), []
        for ln in lines:
            key = tuple(ln.split()[i] for i in (0, 2))
            if key not in seen:
                seen.add(key)
                unique_lines.append(ln)
        if case % 3 == 0:
            rng.shuffle(unique_lines)
        path = tmp_path / f"r{case}.txt"
        path.write_text("".join(unique_lines))
        assert fr.numpy_trec(path.read_bytes(), str(path), "x") is not None  # really ran
        assert fr.arrow_trec(str(path), "x", "", keys=top is not None) is not None
        arrow = dr.read_doc_run(path, fast=True, top=top)
        numpy_run = dr.read_doc_run(path, fast=False, top=top)
        with monkeypatch.context() as m:
            m.setattr(fr, "numpy_trec", lambda *a, **k: None)
            plain = dr.read_doc_run(path, fast=False, top=top)
        assert_same_run(arrow, plain)
        assert_same_run(numpy_run, plain)


QRELS_CASES = [
    ("trec", "1 0 d1 1\n1 0 d2 0\n2 0 d1 2\n", True),
    ("trec", "1 0 d1 1\n2 0 d3 +1", True),  # no final newline; int() reads "+1"
    ("trec", "1 0 d1 1\r\n2 0 d3 1\r\n", True),
    ("trec", "1\t0\td1\t1\n2 0 d3 1\n", True),
    ("trec", "# judged by hand\n1 0 d1 1\n", False),
    ("trec", "1 0 d1 1\n\n2 0 d2 1\n", False),
    ("trec", "1 0 d1 1\n1 0 d1 2\n", False),  # judged twice: the line reader names line 2
    ("trec", "1 0 d1 1 x\n1 0 d2\n", False),  # 5 + 3 tokens are not two rows of 4
    ("trec", "1 0 d1 x\n", False),
    ("beir", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n", True),
    ("beir", "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n", True),
    ("beir", "query-id\tcorpus-id\tscore\nq 1\td1\t1\n", False),  # a space inside an id
    ("beir", "query-id\tcorpus-id\tscore\nq1\t\td1 1\n", False),
]


@pytest.mark.parametrize("fmt, content, fast", QRELS_CASES)
def test_qrels_one_split_reader_equals_the_line_reader(tmp_path, monkeypatch, fmt, content,
                                                       fast):
    """The one-split reader of clean TREC/BEIR qrels gives the line reader's judgments, and
    leaves every file it does not take (comments, blank lines, misaligned or repeated rows,
    spaces in BEIR ids) to the line reader, which names the line."""
    from ragspan.base.errors import InputError
    from ragspan.io import qrels as qrels_module

    path = tmp_path / "q.txt"
    path.write_bytes(content.encode())

    def outcome():
        try:
            return read_qrels(path, fmt).judgments
        except InputError as exc:
            return str(exc)

    taken = []
    real = qrels_module._read_columns
    monkeypatch.setattr(qrels_module, "_read_columns",
                        lambda *a: taken.append(real(*a) is not None) or real(*a))
    with_fast = outcome()
    assert taken == [fast]
    monkeypatch.setattr(qrels_module, "_read_columns", lambda *a: None)
    assert with_fast == outcome()


@pytest.mark.parametrize("text, width, expected", [
    ("a b\nc d\n", 2, ["a", "b", "c", "d"]),
    ("a b\nc d", 2, ["a", "b", "c", "d"]),
    ("a\tb \r\n c d\n", 2, ["a", "b", "c", "d"]),
    ("a b c\nd\n", 2, None),  # 3 + 1 tokens
    ("a b\n\nc d\n", 2, None),  # a blank line
    ("a b\nc\x00 d\n", 2, None),
    ("", 2, None),
])
def test_split_rows(text, width, expected):
    from ragspan.io.files import split_rows

    assert split_rows(text, width) == expected


def _run_outcome(path, fast, top):
    from ragspan.base.errors import InputError

    try:
        return read_doc_run(path, fast=fast, top=top)
    except InputError as exc:
        return str(exc)


def _assert_same_outcome(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
    else:
        assert_same_run(a, b)
        assert (a.path, a.sha256) == (b.path, b.sha256)
        assert np.array_equal(a.line, b.line)


JSONL_CASES = [  # (rows as text, taken by pyarrow's JSON reader)
    ('{"id":"q1","retrieved_ids":["d1","d2"],"scores":[2,1.5]}\n'
     '{"id":"q0","retrieved_ids":["d2"]}\n', True),
    ('{"_header":{"tool":"x"}}\n{"id":"q1","retrieved_ids":["é1","d2"]}\n', True),
    ('{"id":"q1","retrieved_ids":["a-very-long-document-id","d2"],"x":{"y":[1]}}\r\n', True),
    ('{"id":"q1","retrieved_ids":["d1"]}\n{"_header":{}}\n', False),  # header not first
    ('{"id":"q1","retrieved_ids":["d1"]}\n\n{"id":"q2","retrieved_ids":["d1"]}\n', False),
    ('{"id":"q1","retrieved_ids":["d1"],"scores":null}\n', False),
    ('{"id":1,"retrieved_ids":[7,"d2"]}\n', False),  # integer ids: the plain reader's text
    ('{"id":"","retrieved_ids":["d1"]}\n', False),
    ('{"id":"q1","retrieved_ids":["d1"]}\n{"id":"q1","retrieved_ids":["d2"]}\n', False),
    ('{"id":"q1","retrieved_ids":["d1","d2","d1"]}\n', False),
    ('{"id":"q1","retrieved_ids":["d1","d2","d3"]}\n{"id":"q2","retrieved_ids":["d4","d4"]}\n',
     False),  # a repeat in a short row of the padded matrix
    ('{"id":"q1","retrieved_ids":["d0","d1","d2","d3","d4","d5","d6","d7","d8","d9"]}\n'
     '{"id":"q2","retrieved_ids":["d1"]}\n{"id":"q3","retrieved_ids":["d5","d5"]}\n',
     False),  # very unequal rows: (row, id) pairs
    ('{"id":"q1","retrieved_ids":["d0","d1","d2","d3","d4","d5","d6","d7","d8","d9"]}\n'
     '{"id":"q2","retrieved_ids":["d1"]}\n{"id":"q3","retrieved_ids":["d5","d6"]}\n', True),
    ('{"id":"q1","retrieved_ids":["d1"],"scores":[NaN]}\n', False),
    ('{"id":"q1","retrieved_ids":["d1"],"scores":[true]}\n', False),
    ('{"id":"q1","retrieved_ids":["d1"],"scores":[1' + "0" * 400 + ']}\n', False),  # > a double
    ('{"id":"q1","retrieved_ids":["d1","d2"],"scores":[1]}\n', False),
    ('{"id":"q1","retrieved_ids":[]}\n{"id":"q2","retrieved_ids":["d1"]}\n', False),
    ('{"id":"q0","retrieved_ids":["d0"]}\n'
     '{"id":"q1","retrieved_ids":["d1"]} {"id":"q2","retrieved_ids":["d1"]}\n', False),
    ('{"id":"q1","retrieved_ids":["a\\u0000","a"]}\n', False),  # equal keys, distinct ids
    ('{"id":"q1","retrieved_ids":["d1"]}\n{"id":"q2"}\n', False),
]


@pytest.mark.parametrize("content, taken", JSONL_CASES)
@pytest.mark.parametrize("top", [None, 1])
def test_jsonl_fast_reader_equals_the_plain_reader(tmp_path, monkeypatch, content, taken, top):
    """pyarrow's JSON reader takes only the JSONL runs it reads exactly as the plain reader
    does (same run, same line numbers); every other file, good or bad, goes to the plain
    reader, which names the line."""
    pytest.importorskip("pyarrow", reason="the fast extra is not installed")
    from ragspan.io.runs import arrow_jsonl

    path = tmp_path / "run.jsonl"
    path.write_bytes(content.encode())
    answers = []
    real = arrow_jsonl.read_arrow_jsonl
    patch_everywhere(monkeypatch, arrow_jsonl, "read_arrow_jsonl",
                     lambda *a: answers.append(real(*a)) or answers[-1])
    fast = _run_outcome(path, True, top)
    # a first line the format detection already refuses (NaN) never reaches pyarrow
    assert len(answers) <= 1 and bool(answers and answers[0] is not None) == taken
    _assert_same_outcome(fast, _run_outcome(path, False, top))


def test_jsonl_fast_reader_on_random_runs(tmp_path):
    """Random JSONL runs (short and long ids, rows with and without scores, a header or
    not, rows of unequal length): pyarrow's reader takes them and equals the plain one."""
    pytest.importorskip("pyarrow", reason="the fast extra is not installed")
    from ragspan.io.runs.arrow_jsonl import read_arrow_jsonl

    rng = random.Random(3)
    for case in range(40):
        prefix = "document-number-" if case % 3 == 0 else "d"
        rows = []
        if case % 4 == 0:
            rows.append({"_header": {"case": case}})
        for q in rng.sample(range(50), rng.randint(1, 12)):
            ids = [f"{prefix}{i}" for i in rng.sample(range(300), rng.randint(1, 40))]
            row = {"id": f"q{q}", "retrieved_ids": ids, "latency_ms": 3}
            if rng.random() < 0.5:
                row["scores"] = sorted((rng.randint(0, 9) / 2 for _ in ids), reverse=True)
            rows.append(row)
        path = write_jsonl(tmp_path / f"r{case}.jsonl", rows)
        data = path.read_bytes()
        judgments = {f"q{q}": {f"{prefix}{i}": rng.randint(0, 2) for i in range(0, 300, 7)}
                     for q in range(0, 50, 2)}
        for top in (None, 1, 5):
            assert read_arrow_jsonl(data, str(path), "x", top) is not None
            fast, plain = _run_outcome(path, True, top), _run_outcome(path, False, top)
            _assert_same_outcome(fast, plain)
            assert (fast.doc_keys is None) == (prefix != "d")  # short ids: the keyed join
            a, b = (score_doc_run(r, judgments, (1, 5), 1, False) for r in (fast, plain))
            assert all(np.array_equal(a.values[m], b.values[m]) for m in a.values)
