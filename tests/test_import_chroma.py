"""``ragspan import chroma`` on Chroma's own chunking-evaluation data (MIT, in
``shared/data/chroma_chunking_eval``): every one of its 790 references must slice back."""

from __future__ import annotations

import csv
import json
import shutil

from conftest import assert_input_error, run_cli, shared


def test_all_790_references_slice_back(tmp_path):
    root = shared("chroma_chunking_eval")
    res = run_cli("import", "chroma", "--root", root, "--out", tmp_path / "eval.jsonl",
                  "--corpus-out", tmp_path / "corpus.jsonl")
    assert res.exit_code == 0, res.stderr
    summary = res.json()["predicate"]["summary"]
    assert (summary["questions"], summary["references"], summary["documents"]) == (472, 790, 5)
    rows = [json.loads(x) for x in (tmp_path / "eval.jsonl").read_text("utf-8").splitlines()]
    queries = [r for r in rows if "_header" not in r]
    by_corpus: dict[str, int] = {}
    for q in queries:
        by_corpus[q["tags"]["corpus_id"]] = by_corpus.get(q["tags"]["corpus_id"], 0) + 1
    assert by_corpus == {"wikitexts": 144, "pubmed": 99, "finance": 97,
                         "state_of_the_union": 76, "chatlogs": 56}  # as SOURCE.md counts
    val = run_cli("validate", "--eval-set", tmp_path / "eval.jsonl", "--corpus",
                  tmp_path / "corpus.jsonl")
    assert val.exit_code == 0, val.stdout


def test_a_reference_that_does_not_slice_back_fails_the_import(tmp_path):
    root = tmp_path / "chroma"
    shutil.copytree(shared("chroma_chunking_eval"), root)
    path = root / "questions_df.csv"
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    refs = json.loads(rows[3][1])
    refs[0]["start_index"] += 1
    rows[3][1] = json.dumps(refs)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(rows)
    res = run_cli("import", "chroma", "--root", root, "--out", tmp_path / "e.jsonl")
    assert_input_error(res, "questions_df.csv", "chroma-0003")
    assert not (tmp_path / "e.jsonl").exists()
    (root / "corpora" / "finance.md").unlink()
    res = run_cli("import", "chroma", "--root", root, "--out", tmp_path / "e.jsonl")
    assert_input_error(res, "corpus 'finance' has no file finance.md")
