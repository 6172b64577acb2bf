"""``ragspan validate`` on a localGPT-shaped planted-fact gold set (``adapt``-ed): each planted
cross-reference defect is flagged, the clean rows are not, and a bad facts sidecar is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_input_error, run_cli, shared, write_jsonl

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
    # the harness's own correct rows: the answer only in another document than the anchor,
    # and a question that starts from no document
    {"id": "ok_elsewhere", "question": "Who owns the patents the agreement relies on?",
     "expected": ["StartupXYZ owns 12 U.S. patents"], "expected_sources": ["02_diligence.txt"],
     "anchor_doc": "01_agreement.txt", "multi_document": False,
     "dimensions": {"requires_crossref": True}},
    {"id": "ok_no_anchor", "question": "Who is the escrow agent named?",
     "expected": ["The escrow agent is First Trust"], "expected_sources": ["03_exhibit_a.txt"],
     "anchor_doc": None, "multi_document": False, "dimensions": {"requires_crossref": False}},
]
DEFECTS = [
    # marked as needing two documents, its evidence lies in one
    {"id": "cross_one_doc", "question": "When does closing occur and who warrants title?",
     "expected": ["Closing occurs on March 1", "The Seller warrants title"],
     "expected_sources": ["01_agreement.txt", "01_agreement.txt"],
     "anchor_doc": "01_agreement.txt", "dimensions": {"requires_crossref": True}},
    # its answer lies only in another document than its anchor, yet marked as needing none
    {"id": "anchor_elsewhere", "question": "Who is the largest customer?",
     "expected": ["MegaCorp is the largest customer"], "expected_sources": ["02_diligence.txt"],
     "anchor_doc": "01_agreement.txt", "dimensions": {"requires_crossref": False}},
    # marked as needing a cross-reference, but it starts from no document
    {"id": "cross_no_anchor", "question": "Which escrow agent holds the funds?",
     "expected": ["The escrow agent is First Trust"], "expected_sources": ["03_exhibit_a.txt"],
     "anchor_doc": None, "dimensions": {"requires_crossref": True}},
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
        ("answer_not_unique", "warning", "short_not_unique"),
        ("crossref_cue", "warning", "cue_unmarked"),
        ("crossref_flag", "error", "anchor_elsewhere"),
        ("crossref_flag", "error", "cross_no_anchor"),
        ("crossref_flag", "error", "cross_one_doc"),
        ("fact_ambiguous", "error", None),
        ("fact_not_found", "error", None),
        ("fact_not_unique", "warning", None),
        ("fact_uncovered", "error", "short_leak"),
        ("gold_in_query", "warning", "short_leak"),
        ("unknown_fact", "error", "short_leak"),
    ]
    messages = {f["check"]: f["message"] for f in res.json()["predicate"]["details"]["findings"]}
    by_query = {f["query"]: f["message"] for f in res.json()["predicate"]["details"]["findings"]
                if f["check"] == "crossref_flag"}
    assert by_query["anchor_elsewhere"] == (
        "marked requires_crossref false, but its anchor_doc is '01_agreement' and its gold "
        "spans lie in '02_diligence': it should be true")
    assert by_query["cross_no_anchor"] == (
        "marked requires_crossref true, but it names no anchor_doc, so there is no document "
        "to cross from: it should be false")
    assert "its anchor_doc is '01_agreement' and its gold spans lie in '01_agreement'" \
        in by_query["cross_one_doc"]
    assert "validation found 7 errors (crossref_flag: 3, fact_ambiguous: 1, fact_not_found: 1, " \
        "fact_uncovered: 1, unknown_fact: 1) and 4 warnings" in res.stderr
    assert "'Exhibit A'" in messages["crossref_cue"]
    assert "'$45 million' occurs in 1 other document(s) too (first '02_diligence')" \
        in messages["answer_not_unique"]
    assert "'12 U.S. patents'" in messages["gold_in_query"]
    assert "fact 'F_twice' (record 4) occurs 2 times in '02_diligence'" in messages["fact_ambiguous"]
    assert "fact 'F_price' ('01_agreement' [23, 56)) lies inside none" in messages["fact_uncovered"]


def test_without_facts_the_sidecar_checks_do_not_run(tmp_path):
    ev, co = build(tmp_path, CLEAN + DEFECTS)
    checks = {c for c, _, _ in found(validate(ev, co))}
    assert checks == {"answer_not_unique", "crossref_cue", "crossref_flag", "gold_in_query"}


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
    ([{"id": "F", "doc_id": "03_exhibit_a"}], "fact 'F' needs a non-empty 'expected'"),
    ([{"text": "80%", "doc_id": "03_exhibit_a"}], "a fact needs an 'id'"),
    ([{"id": True, "text": "80%", "doc_id": "03_exhibit_a"}], "a fact needs an 'id'"),
    ([{"id": "F", "text": "80%", "source": 3}], "fact 'F': 3 is not a document of the corpus"),
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
                          ("multi_document", "error", "multi_one_doc"),
                          ("multi_document", "error", "single_two_docs")]
    messages = {f["query"]: f["message"] for f in res.json()["predicate"]["details"]["findings"]}
    assert messages["multi_one_doc"] == ("marked multi_document true, but its gold spans lie "
                                         "in 1 document(s): '01_agreement'")
    assert "'Schedule 7'" in messages["ref_missing"]
    assert "2 document(s): '01_agreement', '03_exhibit_a'" in messages["single_two_docs"]


def seed_sidecar(tmp_path: Path, body: dict) -> Path:
    path = tmp_path / "acq.facts.json"
    path.write_text(json.dumps({"corpus": "acq", "documents_dir": "docs", **body}, indent=2),
                    encoding="utf-8")
    return path


def test_the_harness_sidecar_as_it_writes_it(tmp_path):
    """The harness's ``*.facts.json``: an object whose facts say ``expected`` and ``source``
    (a file name), a fact naming no document placed in the one that holds it, and its
    ``cross_references`` block: a dangling reference (``to`` null) passes, a cue its ``from``
    does not say and a document outside the corpus are errors."""
    rows = [{"id": "q_pay", "question": "How is the price paid?",
             "expected": ["80% at closing"], "expected_sources": ["03_exhibit_a.txt"],
             "anchor_doc": "01_agreement.txt", "dimensions": {"requires_crossref": True},
             "multi_document": False, "fact_ids": ["F_pay"]},
            {"id": "q_agent", "question": "Who is the escrow agent?",
             "expected": ["The escrow agent is First Trust"],
             "expected_sources": ["03_exhibit_a.txt"], "anchor_doc": None,
             "dimensions": {"requires_crossref": False}, "multi_document": False,
             "fact_ids": ["F_agent", "F_price"]}]
    ev, co = build(tmp_path, rows)
    facts = [{"id": "F_pay", "topic": "price", "source": "03_exhibit_a.txt",
              "expected": "80% at\n closing", "summary": "80% is paid at closing."},
             {"id": "F_agent", "expected": "The escrow agent is First Trust"},  # no source
             {"id": "F_price", "expected": "$45 million"}]  # no source, in two documents
    refs = [{"from": "01_agreement.txt", "to": "03_exhibit_a.txt", "kind": "exhibit",
             "cue": "Exhibit A"},
            {"from": "01_agreement.txt", "to": None, "cue": "Exhibit A", "dangling": True},
            {"from": "02_diligence.txt", "to": "03_exhibit_a.txt", "cue": "Exhibit A"},
            {"from": "04_missing.txt", "to": "05_gone.txt", "cue": "Exhibit A"}]
    res = validate(ev, co, "--facts", seed_sidecar(tmp_path, {"facts": facts,
                                                              "cross_references": refs}))
    assert res.exit_code == 3, res.stderr
    summary = res.json()["predicate"]["summary"]
    assert (summary["facts"], summary["cross_references"]) == (3, 4)
    assert found(res) == [("cross_reference_cue_not_found", "error", None),
                          ("cross_reference_document", "error", None),
                          ("fact_not_unique", "warning", None),
                          ("fact_uncovered", "error", "q_agent")]
    messages = {f["check"]: f["message"] for f in res.json()["predicate"]["details"]["findings"]}
    assert messages["cross_reference_document"] == (
        "cross_references[3] ('Exhibit A') names '04_missing.txt' and '05_gone.txt', not a "
        "document of the corpus")
    assert messages["cross_reference_cue_not_found"] == (
        "cross_references[2] ('Exhibit A'): its cue is not said in '02_diligence'")
    assert "fact 'F_price' names no document and occurs in 2 (first '01_agreement')" \
        in messages["fact_not_unique"]
    assert "fact 'F_price' names no document and occurs in 2" in messages["fact_uncovered"]


def test_a_single_document_sidecar_names_its_document_once(tmp_path):
    ev, co = build(tmp_path, CLEAN)
    path = seed_sidecar(tmp_path, {"document": "03_exhibit_a.txt",
                                   "facts": [{"id": "F_pay", "expected": "80% at closing"}]})
    res = validate(ev, co, "--facts", path)
    assert res.exit_code == 0, res.stderr
    assert found(res) == []
    path = seed_sidecar(tmp_path, {"document": "01_agreement.txt",
                                   "facts": [{"id": "F_pay", "expected": "80% at closing"}]})
    res = validate(ev, co, "--facts", path)
    assert found(res) == [("fact_not_found", "error", None)]
    assert "fact 'F_pay' (record 1) occurs 0 times in '01_agreement'" in res.stderr + \
        res.json()["predicate"]["details"]["findings"][0]["message"]


@pytest.mark.parametrize(("body", "message"), [
    ({"facts": {"F": "80%"}}, "'facts' must be a list of objects"),
    ({"facts": [{"id": "F", "expected": "80%"}], "document": "nowhere.pdf"},
     "'document': 'nowhere.pdf' is not a document of the corpus"),
    ({"facts": [{"id": "F", "expected": "80%"}], "cross_references": {"cue": "x"}},
     "'cross_references' must be a list"),
    ({"facts": [{"id": "F", "expected": "80%"}], "cross_references": [{"from": "01_agreement"}]},
     "cross_references[0] needs a non-empty 'cue'"),
    ({"facts": [{"id": "F", "expected": "80%"}],
      "cross_references": [{"cue": "Exhibit A", "to": "03_exhibit_a"}]},
     "cross_references[0] needs the document it is said in ('from')"),
    ({"facts": [{"id": "F", "expected": "80%"}],
      "cross_references": [{"cue": "Exhibit A", "from": "01_agreement", "to": 3}]},
     "cross_references[0]: 'to' must be a document name or null"),
    ({"facts": []}, "no facts in the sidecar"),
])
def test_bad_harness_sidecar_refused(tmp_path, body, message):
    ev, co = build(tmp_path, CLEAN)
    assert_input_error(validate(ev, co, "--facts", seed_sidecar(tmp_path, body)),
                       "acq.facts.json", message)


def test_the_harness_checks_on_the_real_acquisition_pdfs(tmp_path):
    """The ten interlinked acquisition PDFs (public, MIT): a sidecar and a gold set written as
    the harness writes them pass, with facts and a cue that the PDF wraps across lines; a row
    whose requires_crossref disagrees with where its answer lies fails."""
    src = shared("agentic_file_search_test_acquisition")
    rows = [
        {"id": "cross", "question": "How many patents back the deal's IP representations?",
         "expected": ["StartupXYZ owns 12 U.S. patents"],
         "expected_sources": ["03_ip_certification.pdf"], "anchor_doc": "01_acquisition_agreement.pdf",
         "multi_document": False, "dimensions": {"requires_crossref": True},
         "fact_ids": ["ip_patents"]},
        {"id": "no_anchor", "question": "What will integrating the company cost?",
         "expected": ["Estimated integration costs: $4.2M over 18 months"],
         "expected_sources": ["04_risk_assessment.pdf"], "anchor_doc": None,
         "multi_document": False, "dimensions": {"requires_crossref": False},
         "fact_ids": ["risk_cost"]},
        {"id": "multi", "question": "What is the price, and are the financials warranted?",
         "expected": ['"Purchase Price" means $45,000,000 USD as detailed in Exhibit A',
                      "financial statements provided in Document: Due Diligence Report"],
         "expected_sources": ["01_acquisition_agreement.pdf", "01_acquisition_agreement.pdf"],
         "match": "all", "anchor_doc": "01_acquisition_agreement.pdf", "multi_document": False,
         "dimensions": {"requires_crossref": False}, "fact_ids": ["price", "warranty"]},
    ]
    facts = [
        {"id": "ip_patents", "source": "03_ip_certification.pdf",
         "expected": "StartupXYZ owns 12 U.S. patents"},
        {"id": "risk_cost", "expected": "Estimated integration costs: $4.2M over 18 months"},
        {"id": "price", "source": "01_acquisition_agreement.pdf",
         "expected": "means $45,000,000 USD as detailed in Exhibit A"},
        {"id": "warranty", "source": "01_acquisition_agreement.pdf",  # wrapped in the PDF
         "expected": "financial statements provided in Document: Due Diligence Report"},
    ]
    refs = [{"from": "01_acquisition_agreement.pdf", "to": "02_due_diligence_report.pdf",
             "kind": "document", "cue": "Document: Due Diligence Report"},
            {"from": "04_risk_assessment.pdf", "to": None, "kind": "document",
             "cue": "Document: Integration Plan", "dangling": True}]
    docs = tmp_path / "docs"
    docs.mkdir()
    for pdf in sorted(src.glob("*.pdf")):
        (docs / pdf.name).write_bytes(pdf.read_bytes())
    sidecar = seed_sidecar(tmp_path, {"facts": facts, "cross_references": refs})

    def check(rows: list[dict]):
        q = write_jsonl(tmp_path / "gold.jsonl", rows)
        res = run_cli("adapt", "--docs", docs, "--queries", q, "--normalize-whitespace",
                      "--out", tmp_path / "eval.jsonl", "--corpus-out", tmp_path / "corpus.jsonl")
        assert res.exit_code == 0, res.stderr
        return validate(tmp_path / "eval.jsonl", tmp_path / "corpus.jsonl", "--facts", sidecar)

    res = check(rows)
    assert res.exit_code == 0, res.stderr
    assert found(res) == []
    assert res.json()["predicate"]["summary"]["cross_references"] == 2
    rows[0]["dimensions"] = {"requires_crossref": False}
    res = check(rows)
    assert found(res) == [("crossref_flag", "error", "cross")]
