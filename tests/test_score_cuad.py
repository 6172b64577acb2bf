"""End to end on real contracts nobody here wrote: CUAD (``shared/data/cuad_dev``).

Fixture: every unique clause piece from ``clause_spans.jsonl`` (793), one query per
(contract, category) (419 queries); the run retrieves each contract's fixed 1,000-character
chunks ``[0,1000), [1000,2000), ...`` in document order. Expected values below were worked
out by hand from the offsets in ``clause_spans.jsonl``.
"""

from __future__ import annotations

import pytest

from conftest import assert_valid_report, cuad_questions, report_rows, run_cli, write_jsonl

CHUNK = 1000
FIRST = "2ThemartComInc_19990826_10-12G_EX-10.10_6700288_EX-10.10_Co-Branding Agreement_ Agency Agreement.txt"


@pytest.fixture(scope="module")
def cuad(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cuad")
    texts, questions = cuad_questions()
    corpus = write_jsonl(tmp / "corpus.jsonl", [{"id": d, "text": t} for d, t in texts.items()])
    rows, run = [], []
    for i, (doc, cat, merged) in enumerate(questions):
        qid = f"q{i}"
        rows.append({"id": qid, "query": f"Find the {cat} clause", "doc_id": doc,
                     "gold_spans": merged, "tags": {"category": cat}})
        n = len(texts[doc])
        run.append({"id": qid, "retrieved": [
            {"doc_id": doc, "start": s, "end": min(s + CHUNK, n), "chunk_id": f"{doc}:{s // CHUNK}"}
            for s in range(0, n, CHUNK)]})
    evalset = write_jsonl(tmp / "eval.jsonl", rows)
    runfile = write_jsonl(tmp / "run.jsonl", run)
    res = run_cli("score", "--eval-set", evalset, "--run", runfile, "--corpus", corpus,
                  "--k", "1", "--k", "9", "--k", "10")
    assert res.exit_code == 0, res.stderr
    doc = res.json()
    assert_valid_report(doc)
    by_key = {(r["tags"]["category"], ids_doc): r
              for r, ids_doc in zip(report_rows(doc),
                                    [row["doc_id"] for row in rows])}
    return doc, by_key, texts


def test_counts(cuad):
    doc, _, _ = cuad
    s = doc["predicate"]["summary"]
    assert s["queries"] == 419
    assert s["queries_without_run_row"] == 0 and s["run_rows_without_query"] == 0
    assert 0 < s["metrics"]["complete_grounding@10"] < 1


def test_agreement_date_in_first_chunk(cuad):
    """Agreement Date [114,127) lies in chunk [0,1000): grounded at k=1; precision 13/1000."""
    _, rows, _ = cuad
    m = rows[("Agreement Date", FIRST)]["metrics"]
    assert m["complete_grounding@1"] == 1.0
    assert m["span_coverage@1"] == 1.0
    assert m["char_precision@1"] == pytest.approx(13 / 1000)
    assert m["retrieved_chars@1"] == 1000
    assert m["mrr@1"] == 1.0


def test_audit_rights_severed_at_chunk_boundary(cuad):
    """Audit Rights: [8593,8700) + [8701,8871) + [8958,9168). Chunks 0-8 end at 9000, so the
    third span has 42/210 = 0.2 covered at k=9: not grounded; coverage 319/487. At k=10 chunk
    [9000,10000) completes it."""
    _, rows, texts = cuad
    r = rows[("Audit Rights", FIRST)]
    m = r["metrics"]
    assert m["complete_grounding@9"] == 0.0
    assert m["span_coverage@9"] == pytest.approx(319 / 487)
    assert m["span_recall@9"] == pytest.approx((1 + 1 + 0.2) / 3)
    assert m["complete_grounding@10"] == 1.0
    # first relevant chunk is chunk 8 (rank 9)
    assert m["mrr@10"] == pytest.approx(1 / 9)
    assert m["precision@10"] == pytest.approx(2 / 10)
    missing = r["missing_spans"]["9"]
    assert [(x["start"], x["end"]) for x in missing] == [(8958, 9168)]
    assert missing[0]["covered"] == pytest.approx(0.2)
    assert missing[0]["text"] == texts[FIRST][8958:9168]


def test_governing_law_out_of_reach(cuad):
    """Governing Law [21948,22102) starts in chunk 21: nothing within the top 10."""
    _, rows, _ = cuad
    m = rows[("Governing Law", FIRST)]["metrics"]
    assert m["complete_grounding@10"] == 0.0
    assert m["hit_rate@10"] == 0.0
    assert m["retrieved_chars@10"] == 10_000
    assert m["doc_hit_rate@1"] == 1.0  # the right document, the wrong characters
