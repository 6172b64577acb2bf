"""``ragspan import ragas``: Ragas-style rows (texts only) become an eval set and a span run by
placing every context in the corpus; built from the bundled example, they score exactly as
the original eval set and run."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import assert_input_error, run_cli, write_jsonl
from test_anchoring import EXAMPLE, read_texts, windows_run


def ragas_rows(tmp: Path) -> tuple[list[dict], Path, Path, Path]:
    evalset, corpus = EXAMPLE / "eval.jsonl", EXAMPLE / "corpus.jsonl"
    texts = read_texts(corpus)
    run = windows_run(evalset, texts, seed=3)
    queries = {q["id"]: q for q in map(json.loads, evalset.read_text("utf-8").splitlines())
               if "id" in q}
    rows = []
    for r in run:
        q = queries[r["id"]]
        gold = [texts[q["doc_id"]][s[0]:s[1]] if isinstance(s, list)
                else texts[s.get("doc_id", q.get("doc_id"))][s["start"]:s["end"]]
                for s in q["gold_spans"]]
        rows.append({"id": q["id"], "user_input": q["query"], "reference_contexts": gold,
                     "retrieved_contexts": [texts[s["doc_id"]][s["start"]:s["end"]]
                                            for s in r["retrieved"]],
                     "reference": "an answer", "metadata": {"source": "unit"}})
    return rows, write_jsonl(tmp / "run.jsonl", run), evalset, corpus


def test_round_trip_scores_as_the_original(tmp_path):
    rows, run, evalset, corpus = ragas_rows(tmp_path)
    path = write_jsonl(tmp_path / "ragas.jsonl", rows)
    res = run_cli("import", "ragas", "--rows", path, "--corpus", corpus, "--out",
                  tmp_path / "eval.jsonl", "--run-out", tmp_path / "r.jsonl",
                  "--report", tmp_path / "import.json")
    assert res.exit_code == 0, res.stderr
    summary = json.loads((tmp_path / "import.json").read_text())["predicate"]["summary"]
    assert summary["rows"] == len(rows) and summary["retrieved_contexts_exact"] > 0
    assert summary["kept_as_tags"] == {"metadata.source": len(rows), "reference": len(rows)}
    scores = []
    for ev, rn in ((evalset, run), (tmp_path / "eval.jsonl", tmp_path / "r.jsonl")):
        out = run_cli("score", "--eval-set", ev, "--run", rn, "--corpus", corpus, "--k", "1",
                      "--k", "3", "--k", "10", "--format", "json")
        assert out.exit_code == 0, out.stderr
        scores.append(out.json()["predicate"]["summary"]["metrics"])
    assert scores[0] == scores[1]


def test_bad_rows_are_named(tmp_path):
    rows, _, _, corpus = ragas_rows(tmp_path)
    bad = [dict(rows[0]), dict(rows[1])]
    bad[1]["reference_contexts"] = ["words that no contract of this corpus holds anywhere"]
    path = write_jsonl(tmp_path / "bad.jsonl", bad)
    res = run_cli("import", "ragas", "--rows", path, "--corpus", corpus, "--out",
                  tmp_path / "e.jsonl", "--run-out", tmp_path / "r.jsonl")
    assert_input_error(res, "bad.jsonl:2", "reference_contexts[0]", "cannot place")
    assert not (tmp_path / "e.jsonl").exists() and not (tmp_path / "r.jsonl").exists()
    bad[1] = {**rows[1], "retrieved_contexts": ["the"]}
    path = write_jsonl(tmp_path / "amb.jsonl", bad)
    res = run_cli("import", "ragas", "--rows", path, "--corpus", corpus, "--out",
                  tmp_path / "e.jsonl", "--run-out", tmp_path / "r.jsonl")
    assert_input_error(res, "retrieved_contexts[0]", "occurs", "--on-ambiguous first")
    res = run_cli("import", "ragas", "--rows", path, "--corpus", corpus, "--out",
                  tmp_path / "e.jsonl", "--run-out", tmp_path / "r.jsonl", "--on-ambiguous",
                  "first")
    assert res.exit_code == 0, res.stderr
    bad[1] = {k: v for k, v in rows[1].items() if k != "user_input"}
    path = write_jsonl(tmp_path / "noq.jsonl", bad)
    res = run_cli("import", "ragas", "--rows", path, "--corpus", corpus, "--out",
                  tmp_path / "e2.jsonl", "--run-out", tmp_path / "r2.jsonl")
    assert_input_error(res, "noq.jsonl:2", "'user_input' (or 'question')")


def test_overlapping_reference_contexts_become_their_union(tmp_path):
    text = "The fee is due within thirty days. Late fees accrue monthly. Notices go by mail."
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": text}])
    # [0, 34) and [22, 59) overlap; [59, 80) only touches the second and stays its own piece
    refs = [text[0:34], text[22:59], text[59:80]]
    path = write_jsonl(tmp_path / "ragas.jsonl", [
        {"id": "q", "user_input": "When is the fee due?", "doc_id": "d",
         "reference_contexts": refs, "retrieved_contexts": [text[0:34]]}])
    res = run_cli("import", "ragas", "--rows", path, "--corpus", corpus, "--out",
                  tmp_path / "eval.jsonl", "--run-out", tmp_path / "r.jsonl",
                  "--report", tmp_path / "import.json")
    assert res.exit_code == 0, res.stderr
    report = json.loads((tmp_path / "import.json").read_text())["predicate"]
    assert report["summary"]["overlapping_merged"] == 1
    assert report["details"]["overlapping_merged"] == [
        {"query": "q", "doc_id": "d", "spans": [[0, 34], [22, 59]], "into": [0, 59]}]
    row = json.loads((tmp_path / "eval.jsonl").read_text("utf-8").splitlines()[1])
    assert [(s["start"], s["end"], s["text"]) for s in row["gold_spans"]] == [
        (0, 59, text[0:59]), (59, 80, text[59:80])]
    res = run_cli("validate", "--eval-set", tmp_path / "eval.jsonl", "--corpus", corpus,
                  "--format", "json")
    assert res.exit_code == 0, res.stdout
