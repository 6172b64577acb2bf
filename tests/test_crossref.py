"""``ragspan validate`` on a localGPT-shaped planted-fact gold set (``adapt``-ed): each planted
cross-reference defect is flagged, the clean rows are not, and a bad facts sidecar is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_input_error, run_cli, write_jsonl

DOCS = {
    "01_agreement.txt": "ACQUISITION AGREEMENT. The purchase price is $45 million, payable as set "
                        "out in Exhibit A. The Seller warrants title. Closing occurs on March 1.\n",
    "02_diligence.txt": "DUE DILIGENCE REPORT. StartupXYZ owns 12 U.S. patents. MegaCorp is the "
                        "largest customer. The reviewers confirm the $45 million valuation.\n",
    "03_exhibit_a.txt": "EXHIBIT A. Payment schedule: 80% at closing, 20% after escrow of "
                        "eighteen months. The escrow agent is First Trust.\n",
}
CLEAN = [
    {"id": "ok_cross", "question": "How is the price paid, per Exhibit A?",
     "expected": ["payable as set out in Exhibit A", "80% at closing"],
     "expected_sources": ["01_agreement.txt", "03_exhibit_a.txt"], "match": "all",
     "anchor_doc": "01_agreement.txt", "dimensions": {"requires_crossref": True},
     "facts": ["F_pay"]},
    {"id": "ok_single", "question": "Who is the escrow agent?",
     "expected": ["First Trust"], "expected_sources": ["03_exhibit_a.txt"],
     "anchor_doc": "03_exhibit_a.txt", "dimensions": {"requires_crossref": False}},
]
DEFECTS = [
    # marked as needing two documents, its evidence lies in one
    {"id": "cross_one_doc", "question": "When does closing occur and who warrants title?",
     "expected": ["Closing occurs on March 1", "The Seller warrants title"],
     "expected_sources": ["01_agreement.txt", "01_agreement.txt"],
     "anchor_doc": "01_agreement.txt", "dimensions": {"requires_crossref": True}},
    # its anchor document holds none of its spans
    {"id": "anchor_elsewhere", "question": "Who is the largest customer?",
     "expected": ["MegaCorp is the largest customer"], "expected_sources": ["02_diligence.txt"],
     "anchor_doc": "01_agreement.txt", "dimensions": {"requires_crossref": False}},
    # the query points to another document, the row says it needs one
    {"id": "cue_unmarked", "question": "What does the schedule in Exhibit A say about escrow?",
     "expected": ["20% after escrow of eighteen months"], "expected_sources": ["03_exhibit_a.txt"],
     "anchor_doc": "03_exhibit_a.txt", "dimensions": {"requires_crossref": False}},
    # a short answer that two documents say
    {"id": "short_not_unique", "question": "What is the purchase price?",
     "expected": ["$45 million"], "expected_sources": ["01_agreement.txt"],
     "anchor_doc": "01_agreement.txt", "dimensions": {"requires_crossref": False}},
    # a short answer written in its own question
    {"id": "short_leak", "question": "Does StartupXYZ own 12 U.S. patents?",
     "expected": ["12 U.S. patents"], "expected_sources": ["02_diligence.txt"],
     "anchor_doc": "02_diligence.txt", "dimensions": {"requires_crossref": False},
     "facts": ["F_unknown", "F_price"]},
]
FACTS = [
    {"id": "F_pay", "text": "80% at closing", "doc_id": "03_exhibit_a.txt"},
    {"id": "F_price", "text": "The purchase price is $45 million", "source": "01_agreement"},
    {"id": "F_missing", "text": "a fact nobody planted", "doc_id": "02_diligence.txt"},
    {"id": "F_twice", "text": "the", "doc_id": "02_diligence.txt"},
    {"id": "F_both", "text": "$45 million", "doc_id": "02_diligence.txt"},
]


def build(tmp_path: Path, rows: list[dict], docs: dict[str, str] = DOCS) -> tuple[Path, Path]:
    d = tmp_path / "docs"
    d.mkdir(exist_ok=True)
    for name, text in docs.items():
        (d / name).write_text(text, encoding="utf-8")
    q = write_jsonl(tmp_path / "gold.jsonl", rows)
    res = run_cli("adapt", "--docs", d, "--queries", q, "--out", tmp_path / "eval.jsonl",
                  "--corpus-out", tmp_path / "corpus.jsonl")
    assert res.exit_code == 0, res.stderr
    return tmp_path / "eval.jsonl", tmp_path / "corpus.jsonl"


def validate(ev: Path, co: Path, *extra: object):
    return run_cli("validate", "--eval-set", ev, "--corpus", co, "--format", "json", *extra)


def found(res) -> list[tuple[str, str, str | None]]:
    return sorted((f["check"], f["severity"], f["query"])
                  for f in res.json()["predicate"]["details"]["findings"])


def test_clean_crossref_rows_pass(tmp_path):
    ev, co = build(tmp_path, CLEAN)
    facts = write_jsonl(tmp_path / "facts.jsonl", FACTS[:1])
    res = validate(ev, co, "--facts", facts)
    assert res.exit_code == 0, res.stdout
    assert found(res) == []
    assert res.json()["predicate"]["summary"]["facts"] == 1
    assert [i["role"] for i in res.json()["predicate"]["inputs"]][-1] == "facts"


def test_each_planted_defect_is_flagged(tmp_path):
    ev, co = build(tmp_path, CLEAN + DEFECTS)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(FACTS), encoding="utf-8")  # a JSON list works as JSONL does
    res = validate(ev, co, "--facts", facts)
    assert res.exit_code == 3
    assert found(res) == [
        ("anchor_doc", "error", "anchor_elsewhere"),
        ("answer_not_unique", "warning", "short_not_unique"),
        ("crossref_cue", "warning", "cue_unmarked"),
        ("crossref_single_document", "error", "cross_one_doc"),
        ("fact_ambiguous", "error", None),
        ("fact_not_found", "error", None),
        ("fact_not_unique", "warning", None),
        ("fact_uncovered", "error", "short_leak"),
        ("gold_in_query", "warning", "short_leak"),
        ("unknown_fact", "error", "short_leak"),
    ]
    messages = {f["check"]: f["message"] for f in res.json()["predicate"]["details"]["findings"]}
    assert "'Exhibit A'" in messages["crossref_cue"]
    assert "'$45 million' occurs in 1 other document(s) too (first '02_diligence')" \
        in messages["answer_not_unique"]
    assert "'12 U.S. patents'" in messages["gold_in_query"]
    assert "fact 'F_twice' (record 4) occurs 2 times in '02_diligence'" in messages["fact_ambiguous"]
    assert "fact 'F_price' ('01_agreement' [23, 56)) lies inside none" in messages["fact_uncovered"]


def test_without_facts_the_sidecar_checks_do_not_run(tmp_path):
    ev, co = build(tmp_path, CLEAN + DEFECTS)
    checks = {c for c, _, _ in found(validate(ev, co))}
    assert checks == {"anchor_doc", "answer_not_unique", "crossref_cue",
                      "crossref_single_document", "gold_in_query"}


def test_cue_check_only_in_a_set_that_marks_crossref(tmp_path):
    """A set that never says requires_crossref is not held to it: no cue warnings."""
    rows = [{"id": "q", "question": "What does Exhibit A say about escrow?",
             "expected": ["20% after escrow"], "expected_sources": ["03_exhibit_a.txt"]}]
    ev, co = build(tmp_path, rows)
    assert found(validate(ev, co)) == []


@pytest.mark.parametrize(("answer", "query", "leaked"), [
    ("$45", "Was the price $45?", True),
    ("12 patents", "Does it hold 2012 patents?", False),
    ("net", "Which network?", False),
    ("ok", "Is it ok?", False),  # under 3 characters: never a leak
])
def test_short_answer_leak_is_a_word_match(answer, query, leaked):
    from ragspan.evalsets.checks import _leaked

    assert _leaked(answer, query) is leaked


@pytest.mark.parametrize(("facts", "message"), [
    ([{"id": "F", "text": "80%", "doc_id": "nowhere.txt"}],
     "fact 'F': 'nowhere.txt' is not a document of the corpus"),
    ([{"id": "F", "text": "80%", "doc_id": "03_exhibit_a"}] * 2, "fact id 'F' is repeated"),
    ([{"id": "F", "doc_id": "03_exhibit_a"}], "fact 'F' needs a non-empty 'text'"),
    ([{"text": "80%", "doc_id": "03_exhibit_a"}], "a fact needs an 'id'"),
    ([{"id": True, "text": "80%", "doc_id": "03_exhibit_a"}], "a fact needs an 'id'"),
    ([{"id": "F", "text": "80%"}], "fact 'F' needs its document"),
    ([], "no facts in the sidecar"),
])
def test_bad_facts_sidecar_refused(tmp_path, facts, message):
    ev, co = build(tmp_path, CLEAN)
    path = write_jsonl(tmp_path / "facts.jsonl", facts)
    assert_input_error(validate(ev, co, "--facts", path), "facts.jsonl", message)


def test_multi_document_and_cross_references_checked(tmp_path):
    """The harness's other marks: ``multi_document`` must agree with where the gold lies (true
    needs two documents, false allows one) and each ``cross_references`` entry must be said by
    one of the row's gold documents."""
    rows = [
        {"id": "multi_one_doc", "question": "Who warrants title?",
         "expected": ["The Seller warrants title"], "expected_sources": ["01_agreement.txt"],
         "multi_document": True},
        {"id": "single_two_docs", "question": "How is the price paid?",
         "expected": ["payable as set out in Exhibit A", "80% at closing"],
         "expected_sources": ["01_agreement.txt", "03_exhibit_a.txt"],
         "dimensions": {"multi_document": False}},
        {"id": "ref_missing", "question": "How is the price paid?",
         "expected": ["payable as set out in Exhibit A", "80% at closing"],
         "expected_sources": ["01_agreement.txt", "03_exhibit_a.txt"], "multi_document": True,
         "cross_references": ["Exhibit A", "Schedule 7"]},
        {"id": "ref_ok", "question": "Who holds the escrow?",
         "expected": ["payable as set out in Exhibit A", "The escrow agent is First Trust"],
         "expected_sources": ["01_agreement.txt", "03_exhibit_a.txt"],
         "dimensions": {"multi_document": True, "cross_references": ["Exhibit A"]}},
    ]
    ev, co = build(tmp_path, rows)
    res = validate(ev, co)
    assert res.exit_code == 3
    assert found(res) == [("cross_reference_not_found", "error", "ref_missing"),
                          ("crossref_single_document", "error", "multi_one_doc"),
                          ("multi_document", "error", "single_two_docs")]
    messages = {f["query"]: f["message"] for f in res.json()["predicate"]["details"]["findings"]}
    assert "marked multi_document but its gold spans lie in one document ('01_agreement')" \
        in messages["multi_one_doc"]
    assert "'Schedule 7'" in messages["ref_missing"]
    assert "2 documents: '01_agreement', '03_exhibit_a'" in messages["single_two_docs"]
