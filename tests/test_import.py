"""Importers on real data: CUAD (CSV and SQuAD shapes), LegalBench-RAG, BEIR SciFact; and the
round trip CUAD -> documents + gold_texts -> adapt."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import assert_input_error, run_cli, shared, write_jsonl

METADATA = {"Document Name", "Parties", "Agreement Date", "Effective Date", "Expiration Date"}
CROSS_REFERENCES = {"Competitive Restriction Exception"}  # left out by default, as the harness


def read_rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def import_cuad(tmp_path: Path, *extra, csv_path=None, contracts=None):
    base = shared("cuad_dev")
    return run_cli("import", "cuad", "--csv", csv_path or base / "master_clauses_subset.csv",
                   "--contracts", contracts or base / "contracts",
                   "--categories", base / "category_descriptions.csv",
                   "--out", tmp_path / "eval.jsonl", "--corpus-out", tmp_path / "corpus.jsonl",
                   "--report", tmp_path / "r.json", *extra)


def clause_pieces(exclude_metadata: bool) -> list[dict]:
    rows = [json.loads(x) for x in
            (shared("cuad_dev") / "clause_spans.jsonl").read_text("utf-8").splitlines()]
    return [r for r in rows
            if not (exclude_metadata and r["category"] in METADATA | CROSS_REFERENCES)]


def union_of_overlaps(spans: set) -> set:
    """(doc, category, start, end) with the overlapping spans of one (doc, category) joined."""
    out: list[list] = []
    for d, c, s, e in sorted(spans):
        if out and out[-1][:2] == [d, c] and s < out[-1][3]:
            out[-1][3] = max(out[-1][3], e)
        else:
            out.append([d, c, s, e])
    return {tuple(x) for x in out}


@pytest.mark.parametrize("exclude", [True, False])
def test_cuad_counts_match_clause_spans(tmp_path, exclude):
    res = import_cuad(tmp_path, *([] if exclude else ["--include-metadata-clauses",
                                                      "--include-cross-references"]))
    assert res.exit_code == 0, res.stderr
    pieces = clause_pieces(exclude)
    unique = {(p["doc_id"][:-4], p["category"], p["start"], p["end"]) for p in pieces if p["unique"]}
    summary = json.loads((tmp_path / "r.json").read_text())["predicate"]["summary"]
    assert summary["pieces"] == len(pieces)
    merged = union_of_overlaps(unique)
    assert summary["spans"] == len(merged)
    assert summary["spans"] + summary["overlapping_merged"] == len(unique)
    assert summary["ambiguous_pieces"] == sum(not p["unique"] for p in pieces)
    assert summary["queries"] == len({(d, c) for d, c, _, _ in unique})
    if not exclude:
        assert (summary["pieces"], summary["spans"], summary["overlapping_merged"],
                summary["ambiguous_pieces"], summary["queries"]) == (941, 786, 7, 148, 419)
    header, *rows = read_rows(tmp_path / "eval.jsonl")
    corpus = {r["id"]: r["text"] for r in read_rows(tmp_path / "corpus.jsonl")}
    got = set()
    for row in rows:
        assert row["query"].startswith('Highlight the parts (if any) of this contract related to "')
        for s in row["gold_spans"]:
            assert corpus[s["doc_id"]][s["start"]:s["end"]] == s["text"]
            got.add((s["doc_id"], row["tags"]["category"], s["start"], s["end"]))
    assert got == merged
    assert len(header["_header"]["documents"]) == 32
    details = json.loads((tmp_path / "r.json").read_text())["predicate"]["details"]
    assert len(details["ambiguous_pieces"]) == summary["ambiguous_pieces"]
    assert all(a["occurrences"] > 1 for a in details["ambiguous_pieces"])


def test_cross_references_are_left_out_by_default_and_counted(tmp_path):
    """Competitive Restriction Exception is phrased as a cross-reference ("except as set
    forth in Articles 7.1 ..."): not imported unless --include-cross-references, and each
    (contract, category) cell left out is counted."""
    rows = [json.loads(x) for x in
            (shared("cuad_dev") / "clause_spans.jsonl").read_text("utf-8").splitlines()]
    cells = {(r["doc_id"], r["category"]) for r in rows if r["category"] in CROSS_REFERENCES}
    assert cells  # the shared subset has some
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert import_cuad(tmp_path / "a").exit_code == 0
    assert import_cuad(tmp_path / "b", "--include-cross-references").exit_code == 0
    left = json.loads((tmp_path / "a" / "r.json").read_text())["predicate"]
    kept = json.loads((tmp_path / "b" / "r.json").read_text())["predicate"]
    assert left["summary"]["cross_reference_skipped"] == len(cells)
    assert kept["summary"]["cross_reference_skipped"] == 0
    cats = lambda d: {r["tags"]["category"] for r in read_rows(d / "eval.jsonl")[1:]}  # noqa: E731
    assert not cats(tmp_path / "a") & CROSS_REFERENCES
    assert cats(tmp_path / "b") & CROSS_REFERENCES == CROSS_REFERENCES
    header = read_rows(tmp_path / "a" / "eval.jsonl")[0]["_header"]
    assert header["exclude_cross_references"] is True


def test_cuad_sampling_is_deterministic(tmp_path):
    picks = []
    for seed in (7, 7, 8):
        out = tmp_path / str(len(picks))
        out.mkdir()
        assert import_cuad(out, "--sample-docs", "4", "--seed", str(seed)).exit_code == 0
        picks.append(sorted(read_rows(out / "eval.jsonl")[0]["_header"]["documents"]))
        assert len(picks[-1]) == 4
    assert picks[0] == picks[1] != picks[2]
    assert (tmp_path / "0" / "eval.jsonl").read_bytes() == (tmp_path / "1" / "eval.jsonl").read_bytes()


def test_cuad_query_sampling_keeps_n_queries_of_the_sampled_contracts(tmp_path):
    """The reproduce recipe's draw: 20 contracts, then 50 of their queries (docs/results.md)."""
    (tmp_path / "all").mkdir()
    (tmp_path / "some").mkdir()
    assert import_cuad(tmp_path / "all", "--sample-docs", "20").exit_code == 0
    res = import_cuad(tmp_path / "some", "--sample-docs", "20", "--sample-queries", "50")
    assert res.exit_code == 0, res.stderr
    every = read_rows(tmp_path / "all" / "eval.jsonl")
    kept = read_rows(tmp_path / "some" / "eval.jsonl")
    assert kept[0]["_header"]["sample_queries"] == 50
    assert "sample_queries" not in every[0]["_header"]
    ids = [r["id"] for r in every[1:]]
    kept_ids = [r["id"] for r in kept[1:]]
    assert len(kept_ids) == 50 and kept_ids == [q for q in ids if q in set(kept_ids)]
    summary = json.loads((tmp_path / "some" / "r.json").read_text())["predicate"]["summary"]
    assert summary["queries_before_sampling"] == len(ids)
    assert summary["spans"] == sum(len(r["gold_spans"]) for r in kept[1:])
    assert (tmp_path / "some" / "corpus.jsonl").read_bytes() == \
        (tmp_path / "all" / "corpus.jsonl").read_bytes()
    assert_input_error(import_cuad(tmp_path, "--sample-docs", "2", "--sample-queries", "999"),
                       "--sample-queries 999 exceeds the")


def test_cuad_missing_contract_and_unknown_piece(tmp_path):
    base = shared("cuad_dev")
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    files = sorted((base / "contracts").glob("*.txt"))
    for f in files[1:]:
        (contracts / f.name).write_bytes(f.read_bytes())
    assert_input_error(import_cuad(tmp_path, contracts=contracts),
                       "1 contracts have no .txt", files[0].stem[:20])
    res = import_cuad(tmp_path, "--allow-missing-contracts", contracts=contracts)
    assert res.exit_code == 0, res.stderr
    report = json.loads((tmp_path / "r.json").read_text())["predicate"]
    assert report["summary"]["missing_contracts"] == 1 and report["summary"]["documents"] == 31
    # a quote that is not in its contract is an error, never skipped
    with open(base / "master_clauses_subset.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    col = rows[0].index("Governing Law")
    rows[1][col] = "['This clause appears nowhere in the contract']"
    bad = tmp_path / "bad.csv"
    with open(bad, "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(rows)
    for name in ("r.json", "eval.jsonl", "corpus.jsonl"):
        (tmp_path / name).unlink()
    assert_input_error(import_cuad(tmp_path, csv_path=bad), "1 clause pieces not found",
                       "Governing Law", "appears nowhere")


def squad_fixture(tmp_path: Path, break_one: bool = False) -> Path:
    base = shared("cuad_dev")
    pieces = [p for p in clause_pieces(False) if p["unique"]]
    docs = sorted({p["doc_id"] for p in pieces})[:3]
    data = []
    for d in docs:
        with open(base / "contracts" / d, encoding="utf-8", newline="") as fh:
            context = fh.read()
        by_cat: dict[str, list] = {}
        for p in pieces:
            if p["doc_id"] == d:
                by_cat.setdefault(p["category"], []).append(p)
        qas = [{"id": f"{d[:-4]}__{c}", "question": f"Find {c}", "is_impossible": False,
                "answers": [{"text": p["text"], "answer_start": p["start"]} for p in ps]}
               for c, ps in sorted(by_cat.items())]
        qas.append({"id": f"{d[:-4]}__Insurance-none", "question": "x", "is_impossible": True,
                    "answers": []})
        data.append({"title": d[:-4], "paragraphs": [{"context": context, "qas": qas}]})
    if break_one:
        data[0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] += 1
    path = tmp_path / "CUADv1.json"
    path.write_text(json.dumps({"version": "1", "data": data}), encoding="utf-8")
    return path


def test_cuad_squad_shape(tmp_path):
    path = squad_fixture(tmp_path)
    res = run_cli("import", "cuad", "--squad-json", path, "--include-metadata-clauses",
                  "--out", tmp_path / "e.jsonl", "--corpus-out", tmp_path / "c.jsonl",
                  "--report", tmp_path / "r.json")
    assert res.exit_code == 0, res.stderr
    summary = json.loads((tmp_path / "r.json").read_text())["predicate"]["summary"]
    assert summary["impossible_skipped"] == 3 and summary["documents"] == 3
    corpus = {r["id"]: r["text"] for r in read_rows(tmp_path / "c.jsonl")}
    rows = read_rows(tmp_path / "e.jsonl")[1:]
    assert sum(len(r["gold_spans"]) for r in rows) == summary["spans"] > 0
    for row in rows:
        for s in row["gold_spans"]:
            assert corpus[s["doc_id"]][s["start"]:s["end"]] == s["text"]
    # a SQuAD question's filters before its tags, as this importer has always written them
    assert {tuple(r) for r in rows} <= {("id", "query", "doc_id", "gold_spans", "filters", "tags"),
                                        ("id", "query", "doc_id", "gold_spans", "filters")}
    assert any("tags" in r for r in rows)
    bad = squad_fixture(tmp_path, break_one=True)
    res = run_cli("import", "cuad", "--squad-json", bad, "--include-metadata-clauses",
                  "--out", tmp_path / "e2.jsonl",
                  "--corpus-out", tmp_path / "c2.jsonl")
    assert_input_error(res, "1 CUAD SQuAD spans do not slice back")


def test_cuad_release_checksum(tmp_path):
    """``--expect-sha256``: the release file's published digest checked before it is read;
    another is refused naming both digests, nothing written; a malformed one is a usage
    error; the digest asked for is recorded."""
    import hashlib

    path = squad_fixture(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    args = ("import", "cuad", "--squad-json", path, "--out", tmp_path / "e.jsonl",
            "--corpus-out", tmp_path / "c.jsonl", "--report", tmp_path / "r.json")
    res = run_cli(*args, "--expect-sha256", digest.upper())
    assert res.exit_code == 0, res.stderr
    pred = json.loads((tmp_path / "r.json").read_text())["predicate"]
    assert pred["parameters"]["expect_sha256"] == digest
    assert pred["inputs"][0]["digest"]["sha256"] == digest
    for f in ("e.jsonl", "c.jsonl", "r.json"):
        (tmp_path / f).unlink()
    other = "0" * 64
    assert_input_error(run_cli(*args, "--expect-sha256", other), path.name,
                       f"sha256 {digest} is not the release's published {other}")
    assert not (tmp_path / "e.jsonl").exists()
    res = run_cli(*args, "--expect-sha256", "abc")
    assert res.exit_code == 2 and "64 hexadecimal digits" in res.stderr
    csv_res = import_cuad(tmp_path, "--expect-sha256", other)
    assert_input_error(csv_res, "master_clauses_subset.csv", "is not the release's published")
    # with --csv the digest covers the CSV only: the contracts the corpus is built from are
    # named as not covered, and their tree digest recorded
    csv_digest = hashlib.sha256((shared("cuad_dev") / "master_clauses_subset.csv")
                                .read_bytes()).hexdigest()
    res = import_cuad(tmp_path, "--expect-sha256", csv_digest)
    assert res.exit_code == 0, res.stderr
    assert "--expect-sha256 covers --csv only, not --contracts" in res.stderr
    pred = json.loads((tmp_path / "r.json").read_text())["predicate"]
    assert pred["parameters"]["expect_sha256_does_not_cover"] == ["contracts", "categories"]
    tree = next(i for i in pred["inputs"] if i["role"] == "contracts")
    assert len(tree["digest"]["sha256"]) == 64


def test_round_trip_through_adapt(tmp_path):
    """Imported CUAD -> .txt documents + gold_texts -> adapt gives the same eval set."""
    assert import_cuad(tmp_path).exit_code == 0
    _, *rows = read_rows(tmp_path / "eval.jsonl")
    docs = tmp_path / "docs"
    docs.mkdir()
    for r in read_rows(tmp_path / "corpus.jsonl"):
        with open(docs / f"{r['id']}.txt", "w", encoding="utf-8", newline="") as fh:
            fh.write(r["text"])
    queries = [{"id": r["id"], "query": r["query"], "doc_id": r["doc_id"],
                "gold_texts": [s["text"] for s in r["gold_spans"]], "tags": r["tags"],
                "filters": r["filters"]} for r in rows]
    q = write_jsonl(tmp_path / "q.jsonl", queries)
    res = run_cli("adapt", "--docs", docs, "--queries", q, "--out", tmp_path / "again.jsonl")
    assert res.exit_code == 0, res.stderr
    header, *again = read_rows(tmp_path / "again.jsonl")
    assert len(again) == len(rows)
    for a, b in zip(rows, again):
        for key in ("id", "query", "doc_id", "tags", "filters"):
            assert a[key] == b[key], key
        assert sorted((s["doc_id"], s["start"], s["end"], s["text"]) for s in a["gold_spans"]) == \
            sorted((s["doc_id"], s["start"], s["end"], s["text"]) for s in b["gold_spans"])
    orig = read_rows(tmp_path / "eval.jsonl")[0]["_header"]["documents"]
    assert header["_header"]["documents"] == orig


def legalbench_fixture(tmp_path: Path, order: list[str], answer_ok: bool = True) -> Path:
    """Real CUAD text under corpus/cuad/{a,b,c,d}.txt; one test per entry of ``order`` whose
    first snippet is in that file."""
    base = shared("cuad_dev")
    root = tmp_path / "lbr"
    (root / "corpus" / "cuad").mkdir(parents=True)
    (root / "benchmarks").mkdir()
    files = sorted((base / "contracts").glob("*.txt"))[:4]
    texts = {}
    for name, f in zip("abcd", files):
        with open(f, encoding="utf-8", newline="") as fh:
            texts[name] = fh.read()
        (root / "corpus" / "cuad" / f"{name}.txt").write_bytes(f.read_bytes())
    tests = []
    for i, name in enumerate(order):
        start = 100 + i
        answer = texts[name][start:start + 50]
        tests.append({"query": f"q{i}", "snippets": [
            {"file_path": f"cuad/{name}.txt", "span": [start, start + 50],
             "answer": answer if answer_ok or i else answer.upper() + "!"}]})
    (root / "benchmarks" / "cuad.json").write_text(json.dumps({"tests": tests}), encoding="utf-8")
    return root


def test_paper_sampling_pinned_by_hand():
    """Keys worked out once with random.Random(path).random(): a 0.7241, b 0.3064, c 0.7001,
    d 0.0811 -> sorted d, b, c, a; a cap of 3 keeps tests 3, 1, 2."""
    from ragspan.evalsets.importers.legalbench import paper_sample

    tests = [{"snippets": [{"file_path": f"cuad/{n}.txt"}]} for n in "abcd"]
    assert paper_sample(tests, cap=3) == [3, 1, 2]
    assert paper_sample(tests, cap=4) == [0, 1, 2, 3]


def test_legalbench_import_with_paper_sampling(tmp_path):
    # 196 tests: a, c, d, then 193 x b. Sorted by key: d, b x 193 (stable), c, a -> the
    # first 194 drop exactly the tests on a (index 0) and c (index 1).
    root = legalbench_fixture(tmp_path, ["a", "c", "d"] + ["b"] * 193)
    res = run_cli("import", "legalbench-rag", "--root", root, "--paper-sampling",
                  "--out", tmp_path / "e.jsonl", "--corpus-out", tmp_path / "c.jsonl",
                  "--report", tmp_path / "r.json")
    assert res.exit_code == 0, res.stderr
    rows = read_rows(tmp_path / "e.jsonl")[1:]
    assert len(rows) == 194
    assert [r["id"] for r in rows[:2]] == ["cuad-0002", "cuad-0003"]
    assert {r["id"] for r in rows}.isdisjoint({"cuad-0000", "cuad-0001"})
    assert Counter(s["doc_id"] for r in rows for s in r["gold_spans"]) == {"cuad/b.txt": 193,
                                                                           "cuad/d.txt": 1}
    res = run_cli("import", "legalbench-rag", "--root", root, "--out", tmp_path / "all.jsonl")
    assert res.exit_code == 0 and len(read_rows(tmp_path / "all.jsonl")) == 197


def test_legalbench_mismatch_fails_with_examples(tmp_path):
    root = legalbench_fixture(tmp_path, ["a", "b"], answer_ok=False)
    res = run_cli("import", "legalbench-rag", "--root", root, "--out", tmp_path / "e.jsonl")
    assert_input_error(res, "1 LegalBench-RAG spans do not slice back", "cuad-0000")


def test_beir_scifact(tmp_path):
    root = shared("beir_scifact")
    res = run_cli("import", "beir", "--root", root, "--out", tmp_path / "e.jsonl",
                  "--report", tmp_path / "r.json")
    assert res.exit_code == 0, res.stderr
    rows = read_rows(tmp_path / "e.jsonl")[1:]
    assert len(rows) == 300
    assert sum(len(r["relevance"]) for r in rows) == 339
    summary = json.loads((tmp_path / "r.json").read_text())["predicate"]["summary"]
    assert summary["judgments"] == 339 and summary["queries"] == 300


def test_import_error_paths(tmp_path):
    """Every importer failure: exit 3 (2 for usage), one line, no output left behind."""
    base = shared("cuad_dev")
    out = ["--out", tmp_path / "e.jsonl", "--corpus-out", tmp_path / "c.jsonl"]
    assert_input_error(import_cuad(tmp_path, "--sample-docs", "99"),
                       "--sample-docs 99 exceeds the 32 contracts")
    bad_header = tmp_path / "bad.csv"
    bad_header.write_text("Name,Parties\nx,[]\n", encoding="utf-8")
    assert_input_error(import_cuad(tmp_path, csv_path=bad_header), "bad.csv:1", "'Filename'")
    res = run_cli("import", "cuad", "--csv", base / "master_clauses_subset.csv", *out)
    assert res.exit_code == 2 and "--contracts" in res.stderr
    # BEIR: a judged document missing from the corpus, a judged query missing from the queries
    root = shared("beir_scifact")
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "x"}\n', encoding="utf-8")
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "why?"}\n', encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td9\t1\n", encoding="utf-8")
    assert_input_error(run_cli("import", "beir", "--root", beir, *out),
                       "1 judged documents are not in corpus.jsonl", "d9")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq7\td1\t1\n", encoding="utf-8")
    assert_input_error(run_cli("import", "beir", "--root", beir, *out),
                       "1 judged queries are not in queries.jsonl", "q7")
    assert root.is_dir()
    # LegalBench-RAG without its folders, and with a span past the end of its file
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_input_error(run_cli("import", "legalbench-rag", "--root", empty, *out),
                       "expected 'benchmarks/' and 'corpus/'")
    # an output inside the folder it imports is refused before any work
    res = run_cli("import", "legalbench-rag", "--root", tmp_path, *out)
    assert res.exit_code == 2 and "is inside the input folder" in res.stderr
    lbr = legalbench_fixture(tmp_path, ["a"])
    bench = lbr / "benchmarks" / "cuad.json"
    data = json.loads(bench.read_text())
    data["tests"][0]["snippets"][0]["span"] = [10, 10_000_000]
    bench.write_text(json.dumps(data))
    assert_input_error(run_cli("import", "legalbench-rag", "--root", lbr, *out),
                       "past the end of 'cuad/a.txt'")


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d["data"].append("not an object"), "'data' must be a list of objects"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"].append(
        dict(d["data"][0]["paragraphs"][0]["qas"][0])), "is repeated"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(question=7), "must be a string"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0]["answers"].append("x"),
     "lacks text or answer_start"),
])
def test_malformed_squad_json(tmp_path, mutate, fragment):
    path = squad_fixture(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    mutate(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    res = run_cli("import", "cuad", "--squad-json", path, "--include-metadata-clauses",
                  "--out", tmp_path / "e.jsonl", "--corpus-out", tmp_path / "c.jsonl")
    assert_input_error(res, "CUADv1.json", fragment)


def test_legalbench_offsets_error_has_no_fake_line(tmp_path):
    root = legalbench_fixture(tmp_path, ["a"])
    bench = root / "benchmarks" / "cuad.json"
    data = json.loads(bench.read_text())
    data["tests"][0]["snippets"][0]["span"] = [20, 10]
    bench.write_text(json.dumps(data))
    res = run_cli("import", "legalbench-rag", "--root", root, "--out", tmp_path / "e.jsonl")
    assert_input_error(res, "cuad.json: tests[0].snippets[0]: start=20 must be < end=10")


def test_legalbench_duplicate_snippets_are_merged_and_counted(tmp_path):
    """The duplicate-annotation bug: a snippet listed twice would count twice in the
    LegalBench-RAG character metrics (char_precision@1 = 2.0). The import keeps it once and
    counts it; validate refuses a duplicate that reaches it another way, and warns on overlap."""
    root = legalbench_fixture(tmp_path, ["a", "b"])
    bench = root / "benchmarks" / "cuad.json"
    tests = json.loads(bench.read_text(encoding="utf-8"))["tests"]
    tests[0]["snippets"].append(dict(tests[0]["snippets"][0]))
    bench.write_text(json.dumps({"tests": tests}), encoding="utf-8")
    res = run_cli("import", "legalbench-rag", "--root", root, "--out", tmp_path / "e.jsonl",
                  "--corpus-out", tmp_path / "c.jsonl", "--report", tmp_path / "r.json")
    assert res.exit_code == 0, res.stderr
    assert json.loads((tmp_path / "r.json").read_text())["predicate"]["summary"][
        "duplicate_spans"] == 1
    rows = read_rows(tmp_path / "e.jsonl")
    assert len(rows[1]["gold_spans"]) == 1
    run = tmp_path / "run.jsonl"
    g = rows[1]["gold_spans"][0]
    run.write_text(json.dumps({"id": rows[1]["id"], "retrieved": [
        {"doc_id": g["doc_id"], "start": g["start"], "end": g["end"]}]}) + "\n", "utf-8")
    res = run_cli("score", "--eval-set", tmp_path / "e.jsonl", "--run", run, "--k", "1",
                  "--min-coverage", "0", "--format", "json")
    assert res.json()["predicate"]["summary"]["metrics"]["char_precision@1"] <= 1.0
    # the same duplicate written by hand into an eval set: validate refuses it
    rows[1]["gold_spans"].append(dict(g))
    rows[2]["gold_spans"].append({**rows[2]["gold_spans"][0], "end": rows[2]["gold_spans"][0]["end"] + 5,
                                  "start": rows[2]["gold_spans"][0]["start"] + 10})
    rows[2]["gold_spans"][1].pop("text")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = run_cli("validate", "--eval-set", bad, "--corpus", tmp_path / "c.jsonl",
                  "--format", "json")
    assert res.exit_code == 3
    checks = {f["check"]: f for f in res.json()["predicate"]["details"]["findings"]}
    assert checks["duplicate_gold_span"]["severity"] == "error"
    assert checks["overlapping_gold_spans"]["severity"] == "error"
    assert "merge them into" in checks["overlapping_gold_spans"]["message"]


def test_validate_warns_when_the_query_holds_its_answer(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "d", "text": "The fee is due within thirty days of the invoice date."}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [
        {"id": "q", "query": "Is the fee is due within thirty days of the invoice?", "doc_id": "d",
         "gold_spans": [[0, 44]]}])
    res = run_cli("validate", "--eval-set", evalset, "--corpus", corpus, "--format", "json")
    assert res.exit_code == 0, res.stdout  # a warning
    finding = res.json()["predicate"]["details"]["findings"][0]
    assert finding["check"] == "gold_in_query" and "verbatim" in finding["message"]


def _crlf_legalbench(tmp_path: Path) -> tuple[Path, str]:
    """Two subsets over a corpus file with CRLF line ends, spans given as the benchmark's code
    reads the file (text mode: CRLF is one character)."""
    raw = "Clause 1.\r\nThe Supplier shall indemnify the Buyer.\r\nClause 3.\r\n"
    translated = raw.replace("\r\n", "\n")
    answer = "The Supplier shall indemnify the Buyer."
    start = translated.index(answer)
    root = tmp_path / "lbr"
    (root / "corpus" / "c").mkdir(parents=True)
    (root / "benchmarks").mkdir()
    (root / "corpus" / "c" / "a.txt").write_bytes(raw.encode("utf-8"))
    for subset, n in (("one", 1), ("two", 3)):
        tests = [{"query": f"{subset} {i}?", "snippets": [
            {"file_path": "c/a.txt", "span": [start, start + len(answer)], "answer": answer}]}
            for i in range(n)]
        (root / "benchmarks" / f"{subset}.json").write_text(json.dumps({"tests": tests}),
                                                           encoding="utf-8")
    return root, answer


def test_legalbench_reads_crlf_documents_as_the_benchmark_does(tmp_path):
    """Default: newlines translated as Python's text mode reads them, so the benchmark's
    offsets slice back to its answers; --newlines keep reads the bytes as they are, where
    the same offsets point one character early per CRLF before them: refused by name."""
    root, answer = _crlf_legalbench(tmp_path)
    res = run_cli("import", "legalbench-rag", "--root", root, "--out", tmp_path / "e.jsonl",
                  "--corpus-out", tmp_path / "c.jsonl")
    assert res.exit_code == 0, res.stderr
    header, *rows = read_rows(tmp_path / "e.jsonl")
    text = read_rows(tmp_path / "c.jsonl")[0]["text"]
    assert "\r" not in text and header["_header"]["newlines"] == "translate"
    span = rows[0]["gold_spans"][0]
    assert text[span["start"]:span["end"]] == answer
    res = run_cli("import", "legalbench-rag", "--root", root, "--newlines", "keep", "--out",
                  tmp_path / "k.jsonl")
    assert res.exit_code == 3 and "c/a.txt" in res.stderr, res.stderr
    assert not (tmp_path / "k.jsonl").exists()


def test_several_legalbench_subsets_get_a_macro_mean(tmp_path):
    """The benchmark weighs each subset equally: score states that mean (summary.macro_mean)
    beside the mean over queries."""
    root, _ = _crlf_legalbench(tmp_path)
    assert run_cli("import", "legalbench-rag", "--root", root, "--out", tmp_path / "e.jsonl",
                   "--corpus-out", tmp_path / "c.jsonl").exit_code == 0
    rows = read_rows(tmp_path / "e.jsonl")[1:]
    span = rows[0]["gold_spans"][0]
    run = [{"id": r["id"], "retrieved": [{"doc_id": span["doc_id"], "start": span["start"],
                                          "end": span["end"]}] if r["tags"]["subset"] == "one"
            else []} for r in rows]
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(x) for x in run), encoding="utf-8")
    res = run_cli("score", "--eval-set", tmp_path / "e.jsonl", "--run", tmp_path / "r.jsonl",
                  "--corpus", tmp_path / "c.jsonl", "--k", "1", "--format", "json",
                  "--min-coverage", "0")
    assert res.exit_code == 0, res.stderr
    summary = res.json()["predicate"]["summary"]
    assert summary["metrics"]["span_recall@1"] == 0.25  # 1 of 4 queries
    macro = summary["macro_mean"]
    assert macro["over"] == "subset" and macro["groups"] == ["one", "two"]
    assert macro["metrics"]["span_recall@1"] == 0.5  # (1 + 0) / 2


def test_overlapping_gold_spans_are_merged_into_their_union_and_listed(tmp_path):
    """Overlapping gold spans of a query would count their shared characters twice: every
    importer joins them (touching spans stay two pieces), counts and lists each merge."""
    text = "alpha beta gamma delta epsilon"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "d.txt").write_text(text, encoding="utf-8")
    rows = [{"id": "q1", "query": "what?", "gold_spans": [
        {"doc_id": "d", "start": 0, "end": 10}, {"doc_id": "d", "start": 6, "end": 16},
        {"doc_id": "d", "start": 16, "end": 22}, {"doc_id": "d", "start": 2, "end": 4}]}]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    res = run_cli("adapt", "--docs", tmp_path / "docs", "--queries", tmp_path / "q.jsonl",
                  "--out", tmp_path / "eval.jsonl", "--corpus-out", tmp_path / "corpus.jsonl",
                  "--report", tmp_path / "r.json")
    assert res.exit_code == 0, res.stderr
    _, row = read_rows(tmp_path / "eval.jsonl")
    assert [(s["start"], s["end"], s["text"]) for s in row["gold_spans"]] == [
        (0, 16, text[0:16]), (16, 22, text[16:22])]
    predicate = json.loads((tmp_path / "r.json").read_text())["predicate"]
    assert predicate["summary"]["overlapping_merged"] == 2
    assert predicate["summary"]["spans"] == 2
    assert predicate["details"]["overlapping_merged"] == [
        {"query": "q1", "doc_id": "d", "spans": [[0, 10], [2, 4], [6, 16]], "into": [0, 16]}]
