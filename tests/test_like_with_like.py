"""Like with like, said plainly (the default path of ``compare``): document metrics have
character cutoffs, so a budget on them is decided at equal characters too; a cutoff both
sides reached decides; the readout explains the cutoff that decided; reports whose cutoff
lists differ compare on the cutoffs both have; every message names the way on and says
what is true."""

from __future__ import annotations

import json
import random

import pytest

from conftest import as_v1, assert_input_error, report_rows, run_cli, write_jsonl

N = 30


def _score(tmp, corpus, evalset, name, spans_of, *extra):
    run = write_jsonl(tmp / f"run-{name}.jsonl", [
        {"id": f"q{i}", "retrieved": [{"doc_id": d, "start": s, "end": e}
                                      for d, s, e in spans_of(i)]} for i in range(N)])
    out = tmp / f"score-{name}.json"
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus,
                  "--k", "1", "--k", "3", *extra, "--out", out)
    assert res.exit_code == 0, res.stderr
    return out


@pytest.fixture
def data(tmp_path):
    """N questions about N documents of 4,000 characters (words, no doc_id scope); each
    question's answer is in its own document at [650, 700)."""
    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
    docs = [{"id": f"d{i}", "text": " ".join(rng.choice(words) for _ in range(800))}
            for i in range(N)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": f"q{i}", "query": f"question {i}?", "gold_spans": [
            {"doc_id": f"d{i}", "start": 650, "end": 700}]} for i in range(N)])
    return tmp_path, corpus, evalset


def _compare(base, cand, *flags):
    return run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                   "--format", "json", *flags)


# ---- 1. document metrics at character cutoffs ----------------------------------------------


def test_doc_metrics_at_a_character_cutoff_are_trec_eval_at_each_questions_k(data):
    """doc_*@Nc is trec_eval's measure at k = the documents whose first result starts within
    the first N characters of the question's results (pytrec_eval, query by query)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    tmp, corpus, evalset = data
    rng = random.Random(9)
    runs = {i: [(f"d{rng.randrange(N)}", s, s + rng.choice((200, 400, 700)))
                for s in rng.sample(range(0, 3000, 100), 6)] for i in range(N)}
    for i in range(0, N, 3):
        runs[i].insert(rng.randrange(4), (f"d{i}", 600, 760))
    out = _score(tmp, corpus, evalset, "x", lambda i: runs[i])
    rows = {r["id"]: r["metrics"] for r in report_rows(json.loads(out.read_text()))}
    measures = {"P", "recall", "ndcg_cut", "map_cut", "success"}
    for i in range(N):
        ranking, before, reached = [], 0, {}
        for d, s, e in runs[i]:
            if d not in [r for r, _ in ranking]:
                ranking.append((d, before))
            before += e - s
        for cutoff in (250, 500, 1000, 2000):
            k = sum(1 for _, b in ranking if b < cutoff)
            reached[cutoff] = k
            got = rows[f"q{i}"]
            if k == 0:
                assert got[f"doc_recall@{cutoff}c"] == 0.0
                assert got[f"doc_precision@{cutoff}c"] == 0.0
                continue
            run = {f"q{i}": {d: float(100 - r) for r, (d, _) in enumerate(ranking)}}
            ev = pytrec_eval.RelevanceEvaluator({f"q{i}": {f"d{i}": 1}},
                                                {f"{m}.{k}" for m in measures})
            ref = ev.evaluate(run)[f"q{i}"]
            assert got[f"doc_precision@{cutoff}c"] == pytest.approx(ref[f"P_{k}"])
            assert got[f"doc_recall@{cutoff}c"] == pytest.approx(ref[f"recall_{k}"])
            assert got[f"doc_ndcg@{cutoff}c"] == pytest.approx(ref[f"ndcg_cut_{k}"])
            assert got[f"doc_map@{cutoff}c"] == pytest.approx(ref[f"map_cut_{k}"])
            assert got[f"doc_hit_rate@{cutoff}c"] == pytest.approx(ref[f"success_{k}"])


def test_a_percent_budget_on_doc_metrics_is_decided_at_equal_characters(data):
    """toolkit-rag-quality's --max-recall-regression-pct with a cheaper candidate: every
    doc_*@k budget was 'off' without a word; now each is gated at the character cutoff."""
    tmp, corpus, evalset = data
    base = _score(tmp, corpus, evalset, "b",
                  lambda i: [(f"d{i}", 0, 300), (f"d{(i + 1) % N}", 1000, 1300),
                             (f"d{i}", 600, 900)])
    cand = _score(tmp, corpus, evalset, "c",
                  lambda i: [(f"d{i}", 600, 750), (f"d{i}", 0, 150),
                             (f"d{(i + 1) % N}", 1000, 1150)])
    res = _compare(base, cand, "--max-recall-regression-pct", "2")
    assert res.exit_code == 0, res.stdout + res.stderr
    summary = res.json()["predicate"]["summary"]
    gated = {n for n, m in summary["metrics"].items() if m["gated"]}
    assert {"doc_recall@250c", "doc_ndcg@250c", "doc_hit_rate@250c", "doc_recall@1000c",
            "doc_ndcg@1000c", "doc_hit_rate@1000c"} <= gated
    assert not {n for n in gated if n.startswith("doc_") and not n.endswith("c")}
    # each count cutoff at the grid point nearest the baseline's median budget there (300
    # and 900 characters), fixed before the candidate was read
    assert summary["retrieval_budget"]["decided_at"] == {"1": "250c", "3": "1000c"}
    assert summary["plan"]["equal_budget"] == {
        "1": {"baseline_median_chars": 300.0, "at": "250c"},
        "3": {"baseline_median_chars": 900.0, "at": "1000c"}}


def test_a_metric_that_cannot_be_decided_is_an_error_unless_allowed(data):
    """Reports scored before document metrics had character cutoffs: a budget on them
    cannot be decided at equal budget; that is said, and exit 3 unless --allow-ungated."""
    tmp, corpus, evalset = data
    base = _score(tmp, corpus, evalset, "b", lambda i: [(f"d{i}", 0, 300), (f"d{i}", 600, 900)])
    cand = _score(tmp, corpus, evalset, "c", lambda i: [(f"d{i}", 600, 750), (f"d{i}", 0, 300)])
    for path in (base, cand):  # as an older ragspan wrote them
        doc = as_v1(json.loads(path.read_text()))
        pred = doc["predicate"]
        keep = {n for n in pred["summary"]["metrics"]
                if not (n.startswith("doc_") and n.endswith("c"))}
        pred["summary"]["metrics"] = {n: v for n, v in pred["summary"]["metrics"].items()
                                      if n in keep}
        for row in pred["details"]["queries"]:
            row["metrics"] = {n: v for n, v in row["metrics"].items() if n in keep}
        path.write_text(json.dumps(doc), encoding="utf-8")
    res = _compare(base, cand, "--budget", "doc_recall=2pt")
    assert_input_error(res, "doc_recall@1", "cannot be gated", "the reports carry no "
                       "doc_recall@250c", "--allow-ungated")
    res = _compare(base, cand, "--budget", "doc_recall=2pt", "--allow-ungated")
    assert res.exit_code in (0, 4), res.stderr
    warnings = res.json()["predicate"]["summary"]["warnings"]
    assert any(w.startswith("doc_recall@1 is not gated:") for w in warnings), warnings


def test_small_contexts_are_decided_at_the_first_cutoff(data):
    """Both runs shorter than the smallest cutoff (the last round refused these as "no
    cutoff both reached"): decided at 250c, each side with its whole run. A cheaper
    candidate that grounds as much passes; one that retrieves x1.11 the characters and gains
    nothing is the budget trap; one that retrieves less and grounds less fails."""
    tmp, corpus, evalset = data
    base = _score(tmp, corpus, evalset, "b", lambda i: [(f"d{i}", 640, 730)])
    cheaper = _score(tmp, corpus, evalset, "c", lambda i: [(f"d{i}", 640, 690)])
    res = _compare(base, cheaper)
    assert res.exit_code == 0, res.stdout + res.stderr
    summary = res.json()["predicate"]["summary"]
    assert summary["retrieval_budget"]["decided_at"] == {"1": "250c", "3": "250c"}
    assert summary["verdict"] == "pass"
    costlier = _score(tmp, corpus, evalset, "x", lambda i: [(f"d{i}", 635, 735)])
    res = _compare(base, costlier)
    assert res.exit_code == 4, res.stdout + res.stderr
    reasons = res.json()["predicate"]["summary"]["reasons"]
    assert any(r.startswith("retrieval budget trap: at k = 1 the candidate retrieves x1.11")
               and "it gains nothing at k = 1 either (complete_grounding@1 +0.00pt)" in r
               for r in reasons), reasons  # never "the gain at k = 1", when there was none
    worse = _score(tmp, corpus, evalset, "w",
                   lambda i: [(f"d{i}", 640, 690) if i % 2 else (f"d{i}", 0, 50)])
    res = _compare(base, worse)
    assert res.exit_code == 4, res.stdout + res.stderr
    metrics = res.json()["predicate"]["summary"]["metrics"]
    assert metrics["complete_grounding@250c"]["failed"]


# ---- 3. the explanation follows the decision ------------------------------------------------


def test_a_fail_is_explained_at_the_cutoff_that_failed(data):
    """The candidate loses its answer at k = 3 and never had it at k = 1: the primary
    metric, the Why line and the most-regressed queries are about k = 3."""
    tmp, corpus, evalset = data
    def other(i):
        return [(f"d{(i + 1) % N}", 0, 100), (f"d{(i + 2) % N}", 0, 100)]

    base = _score(tmp, corpus, evalset, "b", lambda i: [*other(i), (f"d{i}", 640, 740)],
                  "--no-budget-grid")
    cand = _score(tmp, corpus, evalset, "c",
                  lambda i: [*other(i), (f"d{i}", 640, 740) if i % 2 else (f"d{i}", 0, 100)],
                  "--no-budget-grid")
    res = _compare(base, cand)
    assert res.exit_code == 4, res.stdout
    summary = res.json()["predicate"]["summary"]
    assert summary["primary_metric"] == "complete_grounding@3"
    assert summary["why"].startswith("15 queries lost complete grounding@3")
    regressed = res.json()["predicate"]["details"]["most_regressed"]
    assert regressed and all(r["baseline"] == 1.0 and r["candidate"] == 0.0 for r in regressed)


# ---- 4. the baseline's cutoffs --------------------------------------------------------------


def test_an_old_baseline_and_todays_candidate_compare_at_the_baselines_cutoffs(data):
    """A baseline scored without the character cutoffs (as before they were the default)
    and a candidate scored today: compared at the baseline's k = 1 and 3, the candidate's
    grid named as left out."""
    tmp, corpus, evalset = data
    spans = lambda i: [(f"d{i}", 600, 900), (f"d{i}", 0, 300)]  # noqa: E731
    base = _score(tmp, corpus, evalset, "b", spans, "--no-budget-grid")
    cand = _score(tmp, corpus, evalset, "c", spans)
    res = _compare(base, cand, "--allow-identical")
    assert res.exit_code in (0, 4), res.stderr
    summary = res.json()["predicate"]["summary"]
    assert all(n.endswith(("@1", "@3")) for n in summary["metrics"])
    assert any(w.startswith("the candidate carries 8 cutoffs the baseline lacks (250c, 500c, "
                            "1000c, 2000c, 4000c, 8000c, 16000c, 32000c): left out, the "
                            "baseline's cutoffs decide") for w in summary["warnings"]), \
        summary["warnings"]
    assert summary["plan"]["cutoffs"] == ["1", "3"]
    # every other parameter is still compared
    doc = json.loads(cand.read_text())
    doc["predicate"]["parameters"]["grounding_threshold"] = 0.9
    cand.write_text(json.dumps(doc), encoding="utf-8")
    assert_input_error(_compare(base, cand), "parameter 'grounding_threshold' differs")


def test_a_candidate_cannot_choose_its_cutoffs(data):
    """The plan is the baseline's: a candidate scored at fewer cutoffs (``--k 3`` only, its
    loss at k = 1 hidden; no character grid, its budget change undecidable) is refused
    naming what it lacks, never compared on what it chose to carry."""
    tmp, corpus, evalset = data
    base = _score(tmp, corpus, evalset, "b", lambda i: [(f"d{i}", 600, 900), (f"d{i}", 0, 300)])
    cand = _score(tmp, corpus, evalset, "c", lambda i: [(f"d{i}", 0, 300), (f"d{i}", 600, 900)],
                  "--no-budget-grid")
    assert_input_error(_compare(base, cand), "the candidate report lacks the cutoffs 250c, "
                       "500c, 1000c", "that the gate's plan decides at")
    res = run_cli("score", "--eval-set", evalset, "--run", tmp / "run-c.jsonl", "--corpus",
                  corpus, "--k", "3", "--out", tmp / "only3.json")
    assert res.exit_code == 0, res.stderr
    assert_input_error(_compare(base, tmp / "only3.json"), "lacks the cutoff 1 that the "
                       "gate's plan decides at")


# ---- 5 and 6. messages that name the way on and say what is true ------------------------------


def test_a_plain_compare_across_a_corpus_edit_names_migration(data):
    tmp, corpus, evalset = data
    base = _score(tmp, corpus, evalset, "b", lambda i: [(f"d{i}", 600, 900)])
    rows = [json.loads(x) for x in evalset.read_text().splitlines()]
    rows[0]["gold_spans"][0]["end"] = 690
    ev2 = write_jsonl(tmp / "eval2.jsonl", rows)
    run = tmp / "run-b.jsonl"
    res = run_cli("score", "--eval-set", ev2, "--run", run, "--corpus", corpus, "--k", "1",
                  "--k", "3", "--out", tmp / "c.json")
    assert res.exit_code == 0, res.stderr
    assert_input_error(_compare(base, tmp / "c.json"), "scored on a different eval set",
                       "ragspan migrate", "--migration")


def test_every_sentence_true(data, tmp_path):
    tmp, corpus, evalset = data
    # one result without text: "1 result gives", not "1 results give"
    out = tmp / "one.json"
    run = write_jsonl(tmp / "one.jsonl", [{"id": "q0", "retrieved": [
        {"doc_id": "d0", "start": 600, "end": 900}]}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus,
                  "--min-coverage", "0", "--out", out, "--format", "table")
    assert res.exit_code == 0, res.stderr
    assert "offsets alone: 1 result gives no text, so nothing checks that its offsets" \
        in res.stderr
    # a zero delta is 0.00, never -0.00; the verification line reads as a sentence
    base = _score(tmp, corpus, evalset, "b", lambda i: [(f"d{i}", 600, 900)])
    again = tmp / "again.json"
    again.write_bytes(base.read_bytes())
    res = run_cli("compare", "--baseline", base, "--candidate", again, "--allow-identical",
                  "--no-config", "--format", "table")
    assert "-0.00" not in res.stdout and "[-0" not in res.stdout
    assert "  verification: taken as written" in res.stdout and "reports taken" not in res.stdout
    # a question without doc_id counts the documents it asks about, not a made-up one
    rows = [{"id": "a", "query": "two?", "gold_spans": [{"doc_id": "d0", "start": 1, "end": 9},
                                                       {"doc_id": "d1", "start": 1, "end": 9}]},
            {"id": "b", "query": "one?", "gold_spans": [{"doc_id": "d0", "start": 20, "end": 29}]}]
    ev = write_jsonl(tmp_path / "e.jsonl", rows)
    small = write_jsonl(tmp_path / "c.jsonl", [json.loads(x) for x in
                                               corpus.read_text().splitlines()][:2])
    run = write_jsonl(tmp_path / "r.jsonl", [{"id": q, "retrieved": [
        {"doc_id": "d0", "start": 0, "end": 40}]} for q in ("a", "b")])
    res = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", small, "--format", "json")
    assert res.json()["predicate"]["summary"]["documents"] == {"corpus": 2, "asked": 2}


def test_verification_names_a_chunk_manifest(data):
    tmp, corpus, evalset = data
    chunks = write_jsonl(tmp / "chunks.jsonl", [
        {"doc_id": f"d{i}", "chunk_id": f"d{i}:0", "start": 0, "end": 4000} for i in range(N)])
    run = write_jsonl(tmp / "run.jsonl", [{"id": f"q{i}", "retrieved": [
        {"doc_id": f"d{i}", "start": 0, "end": 4000}]} for i in range(N)])
    out = tmp / "s.json"
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--chunks",
                  chunks, "--out", out)
    assert res.exit_code == 0, res.stderr
    again = tmp / "again.json"
    again.write_bytes(out.read_bytes())
    res = run_cli("compare", "--baseline", out, "--candidate", again, "--allow-identical",
                  "--no-config", "--eval-set", evalset, "--corpus", corpus, "--baseline-run",
                  run, "--candidate-run", run)
    assert res.exit_code == 2 and "scored with a chunk manifest: give --baseline-chunks" \
        in res.stderr


def test_the_api_takes_k_as_the_command_line_does_and_warns_through_warnings(data):
    import ragspan

    tmp, corpus, evalset = data
    rows = [{"id": f"q{i}", "retrieved": [{"doc_id": f"d{i}", "start": 600, "end": 900}]}
            for i in range(N)]
    with pytest.warns(ragspan.RagspanWarning, match="offsets_alone"):
        one = ragspan.score(str(evalset), rows, str(corpus), k=5, budget_grid=False)
    assert one.report["predicate"]["parameters"]["k"] == [5]
    with pytest.warns(ragspan.RagspanWarning):
        two = ragspan.score(str(evalset), rows, str(corpus), k="2000c")
    assert "complete_grounding@2000c" in two.metrics
    for bad in (True, 0, "5x", 2.5):
        with pytest.raises(ragspan.api.UsageError, match="k="):
            ragspan.score(str(evalset), rows, str(corpus), k=bad)


def test_scope_messages_name_what_the_user_typed(tmp_path):
    from ragspan.base.errors import InputError
    from ragspan.io.evalset import EvalQuery
    from ragspan.retrieval.filters import unscoped_rows

    q = [EvalQuery(id="q", query="?", doc_id=None, gold_spans=[], line=1)]
    with pytest.raises(InputError, match="--scope is doc_id .* give --scope doc_id-or-all"):
        unscoped_rows("doc_id", q, "e.jsonl", flag=True)
    with pytest.raises(InputError, match=r"\[filter\] scope is \"doc_id\"; "
                       "|the config's \\[filter\\] scope"):
        unscoped_rows("doc_id", q, "e.jsonl")


def test_adapt_suggests_normalize_whitespace_only_where_it_finds_the_text(tmp_path):
    from ragspan.base.errors import InputError
    from ragspan.evalsets.locate import locate_once

    text = "The licensee shall pay\nroyalties of five percent."
    with pytest.raises(InputError) as typo:
        locate_once(text, "royaltys of five", doc_id="d")
    assert "normalize-whitespace" not in str(typo.value)
    with pytest.raises(InputError, match="--normalize-whitespace finds it once"):
        locate_once(text, "shall pay royalties", doc_id="d")


def test_validate_table_keeps_the_hint_of_a_long_message(tmp_path):
    """A corpus drifted under its eval set: the table's cell cuts the message's head and
    keeps its end, 'ragspan migrate' (it was cut at 80 characters, hint and all)."""
    from ragspan.io.span_anchors import REPAIR
    from ragspan.records.envelope import Tool
    from ragspan.records.validate import (
        Finding,
        ValidateDetails,
        ValidateParameters,
        ValidatePredicate,
        ValidateSummary,
    )
    from ragspan.report.render.validate import table

    message = (f"corpus drifted: document 'acme-msa' changed since the eval set was made (3 of "
               f"its 5 gold spans no longer match their anchors; re-saved with other line "
               f"endings, or edited?): {REPAIR}")
    pred = ValidatePredicate(
        tool=Tool("ragspan", "0"), kind="validate", created_at="", verdict="error", exit_code=3,
        parameters=ValidateParameters(grounding_threshold=0.5), inputs=[],
        summary=ValidateSummary(queries=1, gold_spans=1, errors=1, warnings=0,
                                findings_by_check={"corpus_drift": 1}),
        details=ValidateDetails([Finding("corpus_drift", "error", "q1", message)], 1))
    shown = table(pred)
    assert "ragspan migrate --eval-set EVAL --corpus OLD --to-corpus NEW" in shown
    assert "corpus drifted: document 'acme-msa'" in shown
