"""Inputs that once crashed (a traceback, exit 1) or were read silently wrong: each is now an
input error (exit 3) with one line naming the file and line, or a warning that names what
did not match. The rest of the bad-input matrix is tests/test_bad_inputs.py."""

from __future__ import annotations

import json
import unicodedata

import pytest

from conftest import assert_error_envelope, assert_input_error, run_cli, write_jsonl

QUERY = {"id": "q", "query": "what", "doc_id": "d", "gold_spans": [[0, 5]]}
ROW = {"id": "q", "retrieved": [{"doc_id": "d", "start": 0, "end": 5}]}


@pytest.fixture
def corpus(tmp_path):
    return write_jsonl(tmp_path / "corpus.jsonl", [{"id": "d", "text": "hello world, hello"}])


@pytest.mark.parametrize("documents", [5, [1], {"d": 3}])
def test_header_documents_of_the_wrong_type(tmp_path, corpus, documents):
    evalset = write_jsonl(tmp_path / "eval.jsonl", [{"_header": {"documents": documents}}, QUERY])
    res = run_cli("validate", "--eval-set", evalset, "--corpus", corpus)
    assert_input_error(res, "eval.jsonl:1", "'_header.documents' must map each document id")


@pytest.mark.parametrize("fast", ["", "1"])
@pytest.mark.parametrize("header,said", [
    ({"config_digest": 5}, "'_header.config_digest' must be of type 'string', got int"),
    ({"config": "fast"}, "'_header.config' must be of type 'object', got str"),
    ({"corpus_sha256": ["a"], "mine": 1}, "'_header.corpus_sha256' must be of type 'string'"),
])
def test_a_run_header_field_a_report_types_is_refused_at_read_time(tmp_path, corpus, header,
                                                                   said, fast, monkeypatch):
    """The fields of a run's header that a score report types (``records.score``) are
    checked as the run is read, by either reader: a wrong type is exit 3 naming it, never an
    internal error while the report is built; any other field is kept as given."""
    monkeypatch.setenv("RAGSPAN_NO_FAST", fast)
    evalset = write_jsonl(tmp_path / "eval.jsonl", [QUERY])
    run = write_jsonl(tmp_path / "run.jsonl", [{"_header": header}, ROW])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--out", tmp_path / "r.json")
    assert_input_error(res, "run.jsonl:1", said)
    run = write_jsonl(tmp_path / "run.jsonl", [{"_header": {"config_digest": "ab", "x": [1]}},
                                               ROW])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--out", tmp_path / "r.json")
    assert res.exit_code == 0, res.stderr


@pytest.mark.parametrize("answers", [3, None])
def test_squad_answers_of_the_wrong_type(tmp_path, answers):
    squad = tmp_path / "cuad.json"
    squad.write_text(json.dumps({"data": [{"title": "doc", "paragraphs": [{
        "context": "some contract text", "qas": [{"id": "doc__Governing Law", "question": "q?",
                                                  "answers": answers}]}]}]}), encoding="utf-8")
    res = run_cli("import", "cuad", "--squad-json", squad, "--out", tmp_path / "e.jsonl")
    assert_input_error(res, "cuad.json", "'answers' must be a list of objects")
    assert not (tmp_path / "e.jsonl").exists()


def test_a_filter_value_that_is_an_object(tmp_path, corpus):
    evalset = write_jsonl(tmp_path / "eval.jsonl", [{**QUERY, "filters": {"year": {"gt": 1}}}])
    res = run_cli("score", "--eval-set", evalset, "--run",
                  write_jsonl(tmp_path / "run.jsonl", [ROW]))
    assert_input_error(res, "eval.jsonl:1", "filters.year: a filter value must be")


@pytest.mark.parametrize("where", ["eval", "run"])
def test_offsets_near_2_to_the_62_without_a_corpus(tmp_path, where):
    huge = [2 ** 62, 2 ** 62 + 5]
    q = {**QUERY, "gold_spans": [huge]} if where == "eval" else QUERY
    r = ({"id": "q", "retrieved": [{"doc_id": "d", "start": huge[0], "end": huge[1]}]}
         if where == "run" else ROW)
    res = run_cli("score", "--eval-set", write_jsonl(tmp_path / "eval.jsonl", [q]), "--run",
                  write_jsonl(tmp_path / "run.jsonl", [r]))
    assert_input_error(res, f"{where}.jsonl:1", "out of range (more than 2^40)")


def test_a_corpus_of_empty_documents(tmp_path):
    pytest.importorskip("rank_bm25")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "d", "text": ""},
                                                     {"id": "e", "text": "  \n "}])
    config = tmp_path / "bm25.toml"
    config.write_text('name = "b"\n[sparse]\n[filter]\nscope = "none"\n', encoding="utf-8")
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set",
                  write_jsonl(tmp_path / "eval.jsonl", [{"id": "q", "query": "x"}]),
                  "--config", config, "--out", tmp_path / "run.jsonl")
    assert_input_error(res, "corpus.jsonl", "the corpus yields no chunk to retrieve")


@pytest.mark.parametrize("field,value", [("id", "q\ud800"), ("query", "x\udc00y")])
def test_a_lone_surrogate_escape_is_refused_at_read_time(tmp_path, corpus, field, value):
    """``"q\\ud800"`` is valid JSON but no character: it once crashed the report writer."""
    evalset = tmp_path / "eval.jsonl"
    evalset.write_text(json.dumps({**QUERY, field: value}) + "\n", encoding="utf-8")
    res = run_cli("score", "--eval-set", evalset, "--run",
                  write_jsonl(tmp_path / "run.jsonl", [ROW]), "--out", tmp_path / "s.json")
    assert_input_error(res, "eval.jsonl:1", "is a lone surrogate")
    assert_error_envelope(tmp_path / "s.json", 3)


def test_an_escaped_surrogate_pair_is_a_character(tmp_path, corpus):
    evalset = tmp_path / "eval.jsonl"
    evalset.write_text(json.dumps({**QUERY, "query": "smile \U0001F600 \\ud800"}) + "\n",
                       encoding="utf-8")  # ensure_ascii: the emoji as \ud83d\ude00
    assert "\\ud83d\\ude00" in evalset.read_text() and "\\\\ud800" in evalset.read_text()
    res = run_cli("score", "--eval-set", evalset, "--run",
                  write_jsonl(tmp_path / "run.jsonl", [ROW]), "--format", "json")
    assert res.exit_code == 0, res.stderr


def test_ids_that_differ_only_by_normalisation_are_warned_about(tmp_path):
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    evalset = write_jsonl(tmp_path / "eval.jsonl", [{**QUERY, "id": nfc},
                                                    {**QUERY, "id": "other"}])
    run = write_jsonl(tmp_path / "run.jsonl", [{**ROW, "id": nfd}, {**ROW, "id": "other"}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert res.json()["predicate"]["summary"]["ids_differing_by_normalization"] == {
        "count": 1, "example": [nfc, nfd]}
    assert "differ from eval-set ids only by Unicode normalisation" in res.stderr
    # with no row matching at all, the score is refused (a run that missed the eval set)
    lone = write_jsonl(tmp_path / "lone.jsonl", [{**QUERY, "id": nfc}])
    res = run_cli("score", "--eval-set", lone, "--run",
                  write_jsonl(tmp_path / "r1.jsonl", [{**ROW, "id": nfd}]))
    assert res.exit_code == 3 and "a row for none of the 1 queries" in res.stderr


def test_compare_names_ids_that_differ_only_by_normalisation(tmp_path):
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    reports = []
    for name, qid in (("a", nfc), ("b", nfd)):
        evalset = write_jsonl(tmp_path / f"eval-{name}.jsonl", [{**QUERY, "id": qid}, {
            **QUERY, "id": "other"}])
        run = write_jsonl(tmp_path / f"run-{name}.jsonl", [{**ROW, "id": qid}])
        out = tmp_path / f"{name}.json"
        assert run_cli("score", "--eval-set", evalset, "--run", run, "--out", out).exit_code == 0
        reports.append(out)
    # the same eval set as far as its digest goes: the query sets are what differs
    docs = [json.loads(p.read_text()) for p in reports]
    digest = next(r["digest"] for r in docs[0]["predicate"]["inputs"] if r["role"] == "eval_set")
    for ref in docs[1]["predicate"]["inputs"]:
        if ref["role"] == "eval_set":
            ref["digest"] = digest
    reports[1].write_text(json.dumps(docs[1]), encoding="utf-8")
    res = run_cli("compare", "--baseline", reports[0], "--candidate", reports[1], "--no-config")
    assert_input_error(res, "b.json", "query sets differ",
                       "1 of them differ only by Unicode normalisation")


def test_a_nan_after_the_header_names_its_own_line(tmp_path):
    run = tmp_path / "run.jsonl"
    run.write_text('{"_header": {"x": 1}}\n{"id": "q", "retrieved": [{"doc_id": "d", "start": 0, '
                   '"end": 5, "score": NaN}]}\n', encoding="utf-8")
    res = run_cli("score", "--eval-set", write_jsonl(tmp_path / "eval.jsonl", [QUERY]), "--run", run)
    assert_input_error(res, "run.jsonl:2", "NaN")
