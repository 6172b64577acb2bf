"""Inputs checked against each other: a run records what it was made from (the corpus, the
eval set, each question's text and judgments), and ``score`` refuses a run made on another
corpus or for other questions, and says so when only the answers changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT, assert_input_error, run_cli

pytest.importorskip("bm25s", reason="the retrieval extra is not installed")
EX = ROOT / "examples" / "cuad"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("provenance")
    res = run_cli("run-retriever", "--corpus", EX / "corpus.jsonl", "--eval-set",
                  EX / "eval.jsonl", "--config", ROOT / "examples" / "configs" /
                  "bm25-corpus.toml", "--out", tmp / "run.jsonl", "--no-cache")
    assert res.exit_code == 0, res.stderr
    return tmp


def rewrite(src: Path, dst: Path, change) -> Path:
    lines = src.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(x) for x in lines]
    change(rows)
    dst.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                   encoding="utf-8")
    return dst


def score(made: Path, evalset: Path, corpus: Path):
    return run_cli("score", "--eval-set", evalset, "--run", made / "run.jsonl", "--corpus",
                   corpus, "--k", "5", "--format", "json")


def test_the_run_records_each_question(made):
    header = json.loads((made / "run.jsonl").read_text().splitlines()[0])["_header"]
    assert {"corpus_sha256", "eval_set_sha256", "queries"} <= set(header)
    assert len(header["queries"]) == 52 and all(len(d) == 2 for d in header["queries"].values())
    res = score(made, EX / "eval.jsonl", EX / "corpus.jsonl")
    assert res.exit_code == 0, res.stderr


def test_a_run_made_on_another_corpus_is_refused(made, tmp_path):
    """Every document edited after the run was made: it scored with exit 0."""
    def edit(rows):
        for r in rows:
            r["text"] = "Preamble added by a later release.\n" + r["text"]

    corpus = rewrite(EX / "corpus.jsonl", tmp_path / "corpus.jsonl", edit)
    res = score(made, EX / "eval.jsonl", corpus)
    assert_input_error(res, "run.jsonl", "the run was made on another corpus (sha256 ",
                       "this one is ", "documents were edited since")


def test_a_run_for_other_questions_is_refused(made, tmp_path):
    def edit(rows):
        rows[3]["query"] = "Which law governs the agreement?"

    evalset = rewrite(EX / "eval.jsonl", tmp_path / "eval.jsonl", edit)
    res = score(made, evalset, EX / "corpus.jsonl")
    qid = json.loads((EX / "eval.jsonl").read_text().splitlines()[3])["id"]
    assert_input_error(res, "run.jsonl", "another version of the eval set: 1 of its "
                       f"questions differ (e.g. '{qid}')")


def test_answers_that_changed_are_said(made, tmp_path):
    def edit(rows):
        for r in rows[1:3]:
            r["gold_spans"] = r["gold_spans"][:1]
            span = r["gold_spans"][0]
            if isinstance(span, list):
                span[1] -= 1
            else:
                span["end"] -= 1
                span.pop("text", None)

    evalset = rewrite(EX / "eval.jsonl", tmp_path / "eval.jsonl", edit)
    res = score(made, evalset, EX / "corpus.jsonl")
    assert res.exit_code == 0, res.stderr
    assert "the eval set changed since the run was made: 2 of its questions have other " \
           "gold spans now" in res.stderr


def test_run_retriever_writes_each_results_text_and_score_checks_it(made):
    rows = [json.loads(x) for x in (made / "run.jsonl").read_text().splitlines()[1:]]
    corpus = {json.loads(x)["id"]: json.loads(x)["text"]
              for x in (EX / "corpus.jsonl").read_text().splitlines()}
    items = [s for r in rows for s in r["retrieved"]]
    assert items and all(corpus[s["doc_id"]][s["start"]:s["end"]] == s["text"] for s in items)
    res = score(made, EX / "eval.jsonl", EX / "corpus.jsonl")
    placement = res.json()["predicate"]["summary"]["placement"]
    assert placement["checked"] == len(items) and "results_without_text" not in \
        res.json()["predicate"]["summary"]


def _changed_answers(tmp_path):
    def edit(rows):
        for r in rows[1:3]:
            r["gold_spans"] = r["gold_spans"][:1]
            span = r["gold_spans"][0]
            if isinstance(span, list):
                span[1] -= 1
            else:
                span["end"] -= 1
                span.pop("text", None)

    return rewrite(EX / "eval.jsonl", tmp_path / "eval.jsonl", edit)


def test_a_warning_is_in_the_report_whatever_q_says(made, tmp_path):
    """``-q`` (as CI runs) silences stderr; the report still says the eval set changed."""
    evalset = _changed_answers(tmp_path)
    out = tmp_path / "score.json"
    res = run_cli("-q", "score", "--eval-set", evalset, "--run", made / "run.jsonl",
                  "--corpus", EX / "corpus.jsonl", "--k", "5", "--out", out)
    assert res.exit_code == 0, res.stderr
    assert "changed since" not in res.stderr
    warned = json.loads(out.read_text())["predicate"]["summary"]["warnings"]
    entry = next(w for w in warned if w["code"] == "eval_set_changed")
    assert entry["count"] == 2 and "2 of its questions have other gold spans" in entry["example"]
    # the same input, without -q: the same record, and the line on stderr
    loud = tmp_path / "loud.json"
    res = run_cli("score", "--eval-set", evalset, "--run", made / "run.jsonl", "--corpus",
                  EX / "corpus.jsonl", "--k", "5", "--out", loud)
    assert "changed since the run was made" in res.stderr
    assert json.loads(loud.read_text())["predicate"]["summary"]["warnings"] == warned


def test_compare_states_both_reports_warnings(made, tmp_path):
    evalset = _changed_answers(tmp_path)
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    for out in (base, cand):
        res = run_cli("-q", "score", "--eval-set", evalset, "--run", made / "run.jsonl",
                      "--corpus", EX / "corpus.jsonl", "--k", "5", "--out", out)
        assert res.exit_code == 0, res.stderr
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                  "--allow-identical", "--format", "json")
    warnings = res.json()["predicate"]["summary"]["warnings"]
    # both reports carry the same warning: said once, naming both
    assert [w for w in warnings if "(eval_set_changed, 2)" in w] == [
        next(w for w in warnings if w.startswith("both reports' scoring warned "
                                                 "(eval_set_changed, 2)"))]
    # and verified: the re-scoring says the same, so the summary matches
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                  "--allow-identical", "--eval-set", evalset, "--corpus", EX / "corpus.jsonl",
                  "--baseline-run", made / "run.jsonl", "--candidate-run",
                  made / "run.jsonl", "--format", "json")
    assert res.exit_code in (0, 4), res.stderr
    assert res.json()["predicate"]["summary"]["verification"]["verified"] is True


def test_a_malformed_warnings_list_is_refused(made, tmp_path):
    out = tmp_path / "score.json"
    res = run_cli("score", "--eval-set", EX / "eval.jsonl", "--run", made / "run.jsonl",
                  "--corpus", EX / "corpus.jsonl", "--k", "5", "--out", out)
    assert res.exit_code == 0, res.stderr
    doc = json.loads(out.read_text())
    doc["predicate"]["summary"]["warnings"] = [{"code": "x", "count": "many", "example": ""}]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", out, "--candidate", bad, "--no-config")
    assert res.exit_code == 3, res.stderr
