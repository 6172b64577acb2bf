"""``ragspan validate``: spans inside documents, texts slice back, provenance, coverage gate."""

from __future__ import annotations

import hashlib
import json

from conftest import run_cli, write_jsonl

TEXT = "0123456789" * 10  # 100 characters


def setup(tmp_path, rows, text=TEXT, header=True):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "d", "text": text}])
    head = [{"_header": {"documents": {"d": hashlib.sha256(TEXT.encode()).hexdigest()}}}] if header else []
    evalset = write_jsonl(tmp_path / "eval.jsonl", head + rows)
    return evalset, corpus


def findings(res):
    doc = res.json()
    return doc["predicate"]["summary"], [f["check"] for f in doc["predicate"]["details"]["findings"]]


def test_clean_eval_set_passes(tmp_path):
    ev, co = setup(tmp_path, [{"id": "q", "query": "?", "doc_id": "d",
                               "gold_spans": [{"doc_id": "d", "start": 10, "end": 20, "text": TEXT[10:20]}]}])
    res = run_cli("validate", "--eval-set", ev, "--corpus", co, "--format", "json")
    assert res.exit_code == 0
    assert findings(res)[0]["errors"] == 0


def test_each_finding(tmp_path):
    rows = [
        {"id": "out", "query": "?", "doc_id": "d", "gold_spans": [[90, 120]]},
        {"id": "mismatch", "query": "?",
         "gold_spans": [{"doc_id": "d", "start": 0, "end": 3, "text": "abc"}]},
        {"id": "empty", "query": "?", "gold_spans": []},
        {"id": "ghost", "query": "?", "gold_spans": [{"doc_id": "zz", "start": 0, "end": 3}]},
    ]
    ev, co = setup(tmp_path, rows, text=TEXT[:-1] + "X")
    res = run_cli("validate", "--eval-set", ev, "--corpus", co, "--format", "json",
                  "--out", tmp_path / "r.json")
    assert res.exit_code == 3
    doc = json.loads((tmp_path / "r.json").read_text())
    summary = doc["predicate"]["summary"]
    checks = [f["check"] for f in doc["predicate"]["details"]["findings"]]
    assert sorted(checks) == ["empty_gold", "provenance", "span_outside_document", "text_mismatch",
                              "unknown_document"]
    assert summary["errors"] == 5
    assert res.stderr.count("\n") == 1 and "validation found 5 errors" in res.stderr
    assert doc["predicate"]["verdict"] == "error"


def test_coverage_gate(tmp_path):
    rows = [{"id": "q1", "query": "?", "doc_id": "d", "gold_spans": [[10, 20], [45, 55], [70, 90]]}]
    ev, co = setup(tmp_path, rows)
    chunks = write_jsonl(tmp_path / "chunks.jsonl", [
        {"_header": {"config": {"name": "t"}}},
        {"chunk_id": "d:0", "doc_id": "d", "start": 0, "end": 50},
        {"chunk_id": "d:1", "doc_id": "d", "start": 50, "end": 75},  # 75..100 never chunked
    ])
    res = run_cli("validate", "--eval-set", ev, "--corpus", co, "--chunks", chunks, "--format", "json")
    summary, checks = findings(res)
    # [10,20) whole in d:0; [45,55) severed but fully coverable; [70,90) only 5/20 coverable
    assert summary["coverage"] == {"gold_spans": 3, "contained_whole": 1,
                                   "span_integrity": 1 / 3, "unreachable_spans": 1}
    assert sorted(checks) == ["severed_span", "unreachable_span"]
    assert res.exit_code == 3
    res = run_cli("validate", "--eval-set", ev, "--corpus", co, "--chunks", chunks,
                  "--grounding-threshold", "0.25", "--format", "json")
    assert res.exit_code == 0 and findings(res)[1] == ["severed_span", "severed_span"]
    res = run_cli("validate", "--eval-set", ev, "--corpus", co, "--chunks", chunks,
                  "--grounding-threshold", "0.25", "--min-span-integrity", "0.5", "--format", "json")
    assert res.exit_code == 3 and "span_integrity" in findings(res)[1]
