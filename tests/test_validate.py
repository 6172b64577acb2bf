"""``ragspan validate``: spans inside documents, texts slice back, provenance, coverage gate."""

from __future__ import annotations

import hashlib
import json

import pytest

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
    assert sorted(checks) == ["corpus_drift", "empty_gold", "span_outside_document", "text_mismatch",
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


MANIFESTS = [
    ('{"chunk_id": "a:0", "doc_id": "a", "start": 0, "end": 5}\n', True),
    ('{"_header": {"config_digest": "x"}}\n{"chunk_id": "a:0", "doc_id": "a", "start": 0, '
     '"end": 5}\n\n{"chunk_id": "a:1", "doc_id": "a", "start": 5, "end": 9}', True),
    ('{"chunk_id": 7, "doc_id": "a", "start": 0, "end": 5}\n', False),  # an integer id
    ('{"chunk_id": "a:0", "doc_id": "a", "start": true, "end": 5}\n', False),
    ('{"chunk_id": "a:0", "doc_id": "a", "start": 5, "end": 5}\n', False),
    ('{"chunk_id": "a:0", "doc_id": "a", "start": 0, "end": 99999999999999999999}\n', False),
    ('{"chunk_id": "a:0", "doc_id": "a", "start": 0, "end": 5}\n'
     '{"chunk_id": "a:0", "doc_id": "a", "start": 5, "end": 9}\n', False),  # id twice
    ('{"chunk_id": "a:0", "doc_id": "a", "start": 0, "end": 5}\n{"_header": {}}\n', False),
    ('{"chunk_id": "a:0", "doc_id": "a", "start": 0, "end": 5} {"chunk_id": "a:1"}\n', False),
    ('{"_header": {}}\n', False),
    ('[1]\n', False),
    ('{"chunk_id": "a:0", "doc_id": "a", "start": 0, "end": 5, "w": NaN}\n', False),
]


@pytest.mark.parametrize("content, fast", MANIFESTS)
def test_manifest_fast_reader_equals_the_line_reader(tmp_path, monkeypatch, content, fast):
    """The one-parse manifest reader takes only manifests the line reader reads the same;
    everything else goes to the line reader, which names the line."""
    from ragspan.base.errors import InputError
    from ragspan.io import chunks

    path = tmp_path / "chunks.jsonl"
    path.write_text(content, encoding="utf-8")

    def outcome():
        try:
            got = chunks.read_chunks(path)
            return (got.chunks, got.header, got.sha256)
        except InputError as exc:
            return str(exc)

    assert (chunks._fast_chunks(content) is not None
            and bool(chunks._fast_chunks(content)[1])) == fast
    quick = outcome()
    monkeypatch.setattr(chunks, "_fast_chunks", lambda text: None)
    assert quick == outcome()


def test_chunking_diagnostics_on_a_hand_built_manifest(tmp_path):
    """Two queries over one document cut in 100-character chunks: relevant chunks per query,
    the precision ceiling they allow at k, the precision a run attained as a share of it,
    and the chunk lengths."""
    text = "x" * 1000
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": text}])
    ev = write_jsonl(tmp_path / "e.jsonl", [
        {"id": "one", "query": "q", "doc_id": "d", "gold_spans": [[10, 90]]},  # 1 chunk
        {"id": "three", "query": "q", "doc_id": "d", "gold_spans": [[150, 390]]}])  # 3
    chunks = write_jsonl(tmp_path / "ch.jsonl", [
        {"chunk_id": f"d:{i}", "doc_id": "d", "start": 100 * i, "end": 100 * (i + 1)}
        for i in range(9)] + [{"chunk_id": "d:9", "doc_id": "d", "start": 900, "end": 950}])
    run = write_jsonl(tmp_path / "r.jsonl", [
        {"id": "one", "retrieved": [{"doc_id": "d", "start": 0, "end": 100},
                                    {"doc_id": "d", "start": 500, "end": 600}]},
        {"id": "three", "retrieved": [{"doc_id": "d", "start": 100, "end": 200},
                                      {"doc_id": "d", "start": 700, "end": 800}]}])
    res = run_cli("validate", "--eval-set", ev, "--corpus", corpus, "--chunks", chunks,
                  "--run", run, "--k", "2", "--format", "json")
    assert res.exit_code == 0, res.stderr
    ch = res.json()["predicate"]["summary"]["chunking"]
    assert ch["chunks"] == 10
    assert ch["chunk_chars"] == {"mean": 95.0, "median": 100.0, "p90": 100.0, "max": 100.0}
    assert ch["relevant_chunks_per_query"]["mean"] == 2.0
    # ceiling at k = 2: one -> 1/2, three -> min(3/2, 1) = 1; mean 0.75
    assert ch["precision_ceiling"] == {"2": 0.75}
    # attained: one 1/2, three 1/2 -> 0.5; share 0.5 / 0.75
    assert ch["precision_attained"] == {"2": 0.5}
    assert ch["precision_share_of_ceiling"]["2"] == pytest.approx(2 / 3)
    table = run_cli("validate", "--eval-set", ev, "--corpus", corpus, "--chunks", chunks,
                    "--run", run, "--k", "2", "--format", "table").stdout
    assert "precision@2 ceiling" in table and "0.7500" in table and "{" not in table


def test_validate_run_needs_chunks(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": "x" * 100}])
    ev = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "q", "doc_id": "d",
                                            "gold_spans": [[1, 9]]}])
    res = run_cli("validate", "--eval-set", ev, "--corpus", corpus, "--run", ev)
    assert res.exit_code == 2 and "--chunks" in res.stderr


def test_token_check_says_when_it_cannot_run(monkeypatch):
    import importlib.util

    from ragspan.app.validate import _model_of, _token_check
    from ragspan.io.chunks import ChunkManifest

    manifest = ChunkManifest("m", "x", (), {"config": {"dense": {"model": "all-MiniLM-L6-v2"}}})
    assert _model_of(manifest) == "all-MiniLM-L6-v2"
    assert _model_of(ChunkManifest("m", "x", (), {"config": {"dense": None}})) is None
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentence_transformers"
                        else real(name, *a))
    got = _token_check("all-MiniLM-L6-v2", manifest, None)
    assert got.checked is False and "ragspan[retrieval]" in str(got.why)
