"""Failure labels (``ragspan.scoring.metrics.failures``): each label on a hand-built case, the
precedence, the span that was split but retrieved whole, the labels without a manifest, a
brute-force re-derivation on the shared CUAD data, and the gate's "why"."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, assert_input_error, report_rows, run_cli, shared, write_jsonl

TEXT = "".join(chr(ord("a") + i % 26) for i in range(1000))
# chunks of 100 characters over [0, 900): the chunker dropped [900, 1000)
CHUNKS = [{"chunk_id": f"d:{i}", "doc_id": "d", "start": 100 * i, "end": 100 * (i + 1)}
          for i in range(9)]


def chunk(i: int) -> dict:
    return {"doc_id": "d", "start": 100 * i, "end": 100 * (i + 1), "chunk_id": f"d:{i}"}


# query id -> (gold spans, retrieved spans best first, label at k = 1)
CASES = {
    "ceiling": ([[900, 1000]], [chunk(0)], "ceiling-bound"),
    "severed": ([[120, 250]], [chunk(2)], "chunk-severance"),  # 50 of 130 retrieved
    "missed": ([[310, 390]], [chunk(0)], "retrieval-miss"),
    "ranked-low": ([[410, 490]], [chunk(0), chunk(4)], "rank-miss"),
    "partial": ([[500, 600]], [{"doc_id": "d", "start": 500, "end": 520}], "partial-grounding"),
    # two failing spans: the earlier label wins
    "ceiling-and-missed": ([[900, 950], [310, 390]], [chunk(0)], "ceiling-bound"),
    "severed-and-missed": ([[120, 250], [310, 390]], [chunk(0)], "chunk-severance"),
    # split across chunks 1 and 2 but retrieved whole: not blamed; the other span failed
    "split-retrieved-whole": ([[120, 250], [310, 390]], [chunk(1), chunk(2)],
                              "retrieval-miss"),
    "grounded": ([[10, 90]], [chunk(0)], None),
}


@pytest.fixture
def labelled(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "d", "text": TEXT}])
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": q, "query": q, "doc_id": "d", "gold_spans": gold}
        for q, (gold, _, _) in CASES.items()])
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": q, "retrieved": got} for q, (_, got, _) in CASES.items()])
    chunks = write_jsonl(tmp_path / "chunks.jsonl", CHUNKS)
    return {"corpus": corpus, "eval": evalset, "run": run, "chunks": chunks, "tmp": tmp_path}


def _chunks(row: dict, span: dict) -> list:
    """The chunks behind a failing span: its entry in the row's ``failure_evidence``."""
    (found,) = [e["chunks"] for e in row["failure_evidence"]
                if (e["doc_id"], e["start"], e["end"]) == (span["doc_id"], span["start"],
                                                            span["end"])]
    return found


def _score(ws, *extra):
    res = run_cli("score", "--eval-set", ws["eval"], "--run", ws["run"], "--corpus", ws["corpus"],
                  "--k", "1", "--k", "2", "--format", "json", *extra)
    assert res.exit_code == 0, res.stderr
    return res.json()["predicate"]


def test_each_label_on_a_hand_built_case(labelled):
    pred = _score(labelled, "--chunks", labelled["chunks"])
    rows = {r["id"]: r for r in report_rows(pred)}
    for q, (_, _, label) in CASES.items():
        assert rows[q].get("failure", {}).get("1") == label, q
    # at k = 2 the low-ranked chunk is in: grounded
    assert "2" not in rows["ranked-low"].get("failure", {})
    summary = pred["summary"]["failure_labels"]
    assert summary["undecided"] == [] and summary["pool_depth"] == 2
    assert summary["by_k"]["1"] == {"ceiling-bound": 2, "chunk-severance": 2,
                                    "retrieval-miss": 2, "rank-miss": 1,
                                    "partial-grounding": 1}
    assert pred["parameters"]["chunks"] is True
    assert any(i["role"] == "chunks" for i in pred["inputs"])


def test_each_failing_span_carries_its_label_and_evidence(labelled):
    pred = _score(labelled, "--chunks", labelled["chunks"])
    rows = {r["id"]: r for r in report_rows(pred)}
    (span,) = rows["severed"]["missing_spans"]["1"]
    assert span["covered"] == pytest.approx(50 / 130)
    (facts,) = rows["severed"]["failure_evidence"]
    assert (facts["first_rank"], facts["chunk_ceiling"], facts["whole_in_one_chunk"]) == (
        1, 1.0, False)
    assert _chunks(rows["severed"], span) == [
        {"chunk_id": "d:1", "start": 100, "end": 200, "rank": None},
        {"chunk_id": "d:2", "start": 200, "end": 300, "rank": 1}]
    assert span["text"] == TEXT[120:250]
    (low,) = rows["ranked-low"]["missing_spans"]["1"]
    assert _chunks(rows["ranked-low"], low) == [
        {"chunk_id": "d:4", "start": 400, "end": 500, "rank": 2}]
    (ceiling,) = rows["ceiling"]["missing_spans"]["1"]
    assert _chunks(rows["ceiling"], ceiling) == []
    assert rows["ceiling"]["failure_evidence"][0]["chunk_ceiling"] == 0.0
    # the evidence is listed once per failing span, whatever the k
    assert len(rows["severed"]["failure_evidence"]) == 1
    # the split span retrieved whole is not among the failing spans
    spans = rows["split-retrieved-whole"]["missing_spans"]["1"]
    assert [s["start"] for s in spans] == [310]
    (facts,) = rows["split-retrieved-whole"]["failure_evidence"]
    assert (facts["start"], facts["first_rank"], facts["whole_in_one_chunk"]) == (310, None, True)


def test_without_a_manifest_the_chunking_labels_are_undecided(labelled):
    pred = _score(labelled)
    rows = {r["id"]: r for r in report_rows(pred)}
    assert pred["summary"]["failure_labels"]["undecided"] == ["ceiling-bound",
                                                               "chunk-severance"]
    assert rows["ceiling"]["failure"]["1"] == "retrieval-miss"
    assert rows["severed"]["failure"]["1"] == "partial-grounding"
    (span,) = rows["severed"]["missing_spans"]["1"]
    assert _chunks(rows["severed"], span) == [
        {"chunk_id": "d:2", "start": 200, "end": 300, "rank": 1}]


def test_slices_count_labels(labelled):
    rows = [json.loads(x) for x in labelled["eval"].read_text().splitlines()]
    for r in rows:
        r["tags"] = {"kind": "pair" if len(r["gold_spans"]) == 2 else "one"}
    write_jsonl(labelled["eval"], rows)
    pred = _score(labelled, "--chunks", labelled["chunks"])
    pair = pred["details"]["slices"]["kind"]["pair"]["failure_labels"]["1"]
    assert pair == {"ceiling-bound": 1, "chunk-severance": 1, "retrieval-miss": 1,
                    "rank-miss": 0, "partial-grounding": 0}


def test_a_manifest_that_is_not_the_run_s_is_refused(labelled):
    ws = labelled
    header = {"_header": {"config_digest": "a" * 64}}
    write_jsonl(ws["chunks"], [header, *CHUNKS])
    rows = [json.loads(x) for x in ws["run"].read_text().splitlines()]
    write_jsonl(ws["run"], [{"_header": {"config_digest": "b" * 64}}, *rows])
    res = run_cli("score", "--eval-set", ws["eval"], "--run", ws["run"], "--chunks", ws["chunks"])
    assert_input_error(res, "chunks.jsonl", "not the run's chunking")


def test_a_chunk_past_its_document_is_refused(labelled):
    write_jsonl(labelled["chunks"], [*CHUNKS, {"chunk_id": "d:x", "doc_id": "d", "start": 990,
                                               "end": 1200}])
    res = run_cli("score", "--eval-set", labelled["eval"], "--run", labelled["run"],
                  "--corpus", labelled["corpus"], "--chunks", labelled["chunks"])
    assert_input_error(res, "chunks.jsonl", "d:x", "1000 characters")


def test_chunks_need_a_span_run(labelled):
    qrels = labelled["tmp"] / "q.trec"
    qrels.write_text("ceiling 0 d 1\n")
    res = run_cli("score", "--qrels", qrels, "--run", labelled["run"], "--chunks",
                  labelled["chunks"])
    assert res.exit_code == 2 and "--chunks" in res.stderr


def test_the_gate_says_why(labelled, tmp_path):
    """Baseline: every query gets the chunks over its gold spans first. The candidate (the
    cases above) breaks the queries it fails: the verdict counts them by their labels and
    names the lever, and the most-regressed rows carry each label and the chunks behind it."""
    ws = labelled
    ideal = []
    for q, (gold, _, _) in CASES.items():
        ids = sorted({i for s, e in gold for i in range(9) if 100 * i < e and 100 * (i + 1) > s})
        ideal.append({"id": q, "retrieved": [chunk(i) for i in ids]})
    base_run = write_jsonl(tmp_path / "base.jsonl", ideal)
    reports = {}
    for name, run in (("base", base_run), ("cand", ws["run"])):
        out = tmp_path / f"{name}.json"
        res = run_cli("score", "--eval-set", ws["eval"], "--run", run, "--corpus", ws["corpus"],
                      "--chunks", ws["chunks"], "--k", "2", "--out", out)
        assert res.exit_code == 0, res.stderr
        reports[name] = out
    res = run_cli("compare", "--baseline", reports["base"], "--candidate", reports["cand"],
                  "--allow-budget-change", "--mode", "threshold", "--format", "json")
    assert res.exit_code == 4
    pred = res.json()["predicate"]
    changes = pred["summary"]["grounding_changes"]["2"]
    # the ideal run grounds at k = 2 the queries whose gold lies in at most two chunks the
    # chunker kept; the candidate loses three of them, one per label
    assert changes["broken"] == 3 and changes["fixed"] == 0
    assert changes["broken_by_label"] == {"chunk-severance": 1, "retrieval-miss": 1,
                                          "partial-grounding": 1}
    assert pred["summary"]["why"] == (
        "3 queries lost complete grounding@2: 1 chunk-severance (chunking), 1 retrieval-miss "
        "(embeddings / hybrid retrieval), 1 partial-grounding (filtering / k)")
    worst = {r["id"]: r for r in pred["details"]["most_regressed"]}
    assert worst["severed"]["label"] == "chunk-severance"
    assert [c["chunk_id"] for c in worst["severed"]["lost_spans"][0]["chunks"]] == ["d:1", "d:2"]
    listed = {r["id"]: r for r in pred["details"]["grounding_changes"]["2"]}
    assert listed["missed"] == {"id": "missed", "change": "broken", "baseline_label": None,
                                "candidate_label": "retrieval-miss"}
    md = run_cli("compare", "--baseline", reports["base"], "--candidate", reports["cand"],
                 "--allow-budget-change", "--mode", "threshold", "--format", "markdown").stdout
    assert "**Why:** 3 queries lost complete grounding@2: 1 chunk-severance (chunking)" in md
    # the comment writes a chunk id of the span's own document from its colon
    assert "| chunk-severance | d \\[120, 250) — :1: -, :2: 1 |" in md


def test_why_line_wording():
    from ragspan.gate.changes import why_line
    from ragspan.records.compare import LabelChanges

    changes = {"5": LabelChanges(broken=5, broken_by_label={"chunk-severance": 4, "rank-miss": 1},
                                 fixed=1, fixed_by_label={"rank-miss": 1})}
    assert why_line(changes, 5) == (
        "5 queries lost complete grounding@5: 4 chunk-severance (chunking), 1 rank-miss "
        "(reranking / k); 1 gained it, having been 1 rank-miss (reranking / k)")
    assert why_line({"5": LabelChanges(broken=0, broken_by_label={}, fixed=0,
                                       fixed_by_label={})}, 5) is None


# ---- a brute-force re-derivation on real data ------------------------------------------------

def _brute_labels(report: dict, run_rows: dict, chunks: list[dict], tau: float, k: int
                  ) -> dict[str, str]:
    """Each failing query's label at k from character sets alone: the report's failing
    spans, the run's ranked spans, the manifest's chunks."""
    by_doc: dict[str, list[dict]] = {}
    for c in chunks:
        by_doc.setdefault(c["doc_id"], []).append(c)
    out = {}
    for row in report_rows(report):
        if row["metrics"][f"complete_grounding@{k}"] >= 1.0:
            continue
        codes = []
        for span in row["missing_spans"][str(k)]:
            gold = set(range(span["start"], span["end"]))
            near = [c for c in by_doc.get(span["doc_id"], [])
                    if gold & set(range(c["start"], c["end"]))]
            reach = set().union(*(set(range(c["start"], c["end"])) for c in near)) & gold
            ranked = run_rows.get(row["id"], [])
            ranks = [r for r, s in enumerate(ranked) if s["doc_id"] == span["doc_id"]
                     and gold & set(range(s["start"], s["end"]))]
            if len(reach) < tau * len(gold):
                codes.append(0)
            elif not any(gold <= set(range(c["start"], c["end"])) for c in near):
                codes.append(1)
            elif not ranks:
                codes.append(2)
            elif min(ranks) >= k:
                codes.append(3)
            else:
                codes.append(4)
        from ragspan.scoring.metrics.failures import LABELS

        out[row["id"]] = LABELS[min(codes)]
    return out


def test_labels_equal_a_brute_force_derivation_on_cuad(tmp_path):
    """Real CUAD contracts, BM25 over fixed 500-character and clause chunks: the labels of
    every failing query at k = 1, 3, 5, 10 equal a re-derivation by character sets from the
    written report, run and manifest, partition the failing queries, and chunk-severance
    falls with clause chunks."""
    pytest.importorskip("bm25s", reason="the retrieval extra is not installed")
    cuad = shared("cuad_dev")
    ev, corpus = tmp_path / "eval.jsonl", tmp_path / "corpus.jsonl"
    res = run_cli("import", "cuad", "--csv", cuad / "master_clauses_subset.csv", "--contracts",
                  cuad / "contracts", "--categories", cuad / "category_descriptions.csv",
                  "--sample-docs", "8", "--out", ev, "--corpus-out", corpus)
    assert res.exit_code == 0, res.stderr
    ks = (1, 3, 5, 10)
    severed = {}
    for config in ("fixed", "clause"):
        cfg = tmp_path / f"{config}.toml"
        cfg.write_text(f'name = "{config}"\ndepth = 10\n[chunker]\nkind = "{config}"\n'
                       'size = 500\n[sparse]\nbackend = "bm25s"\ndepth = 50\n'
                       '[filter]\nscope = "doc_id"\n')
        run, chunks = tmp_path / f"run-{config}.jsonl", tmp_path / f"chunks-{config}.jsonl"
        res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", ev, "--config", cfg,
                      "--out", run, "--chunks-out", chunks, "--no-cache")
        assert res.exit_code == 0, res.stderr
        out = tmp_path / f"score-{config}.json"
        res = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", corpus,
                      "--chunks", chunks, *[a for k in ks for a in ("--k", str(k))],
                      "--out", out)
        assert res.exit_code == 0, res.stderr
        report = json.loads(out.read_text())["predicate"]
        run_rows = {r["id"]: r["retrieved"]
                    for r in map(json.loads, run.read_text().splitlines()) if "id" in r}
        manifest = [c for c in map(json.loads, chunks.read_text().splitlines())
                    if "chunk_id" in c]
        n = report["summary"]["queries"]
        for k in ks:
            want = _brute_labels(report, run_rows, manifest, 0.5, k)
            got = {r["id"]: r["failure"][str(k)] for r in report_rows(report)
                   if str(k) in r.get("failure", {})}
            assert got == want, (config, k)
            grounded = report["summary"]["metrics"][f"complete_grounding@{k}"] * n
            # the labels partition the failing queries, exactly once each
            assert sum(report["summary"]["failure_labels"]["by_k"][str(k)].values()) == len(got)
            assert len(got) + round(grounded) == n
        severed[config] = report["summary"]["failure_labels"]["by_k"]["5"]["chunk-severance"]
    assert severed["fixed"] > severed["clause"], severed


def test_docs_table_lists_every_label():
    from ragspan.scoring.metrics.registry import FAILURE_LEVERS, LABELS

    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    for label in LABELS:
        assert f"`{label}`" in text and FAILURE_LEVERS[label] in text
