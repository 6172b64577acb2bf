"""``ragspan adapt``: gold texts located exactly once, offsets verified, provenance recorded."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from conftest import assert_input_error, run_cli, shared, write_jsonl

DOC_A = "The Supplier shall deliver the Goods.\nPayment is due within\nthirty days of invoice.\n"
DOC_B = "Either party may terminate. Either party may terminate on notice.\n"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "a.txt").write_text(DOC_A, encoding="utf-8")
    (d / "sub" / "b.md").write_text(DOC_B, encoding="utf-8")
    return d


def adapt(tmp_path: Path, docs: Path, rows: list[dict], *extra: str):
    q = write_jsonl(tmp_path / "q.jsonl", rows)
    return run_cli("adapt", "--docs", docs, "--queries", q, "--out", tmp_path / "eval.jsonl",
                   "--corpus-out", tmp_path / "corpus.jsonl", "--report", tmp_path / "r.json",
                   *extra)


def read_rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_gold_texts_located_and_header(tmp_path, docs):
    res = adapt(tmp_path, docs, [
        {"id": "q1", "query": "Who delivers?", "doc_id": "a", "gold_texts": ["The Supplier shall deliver"]},
        {"id": "q2", "query": "Notice?", "doc_id": "sub/b.md", "gold_texts": ["terminate on notice"]},
        {"id": "q3", "query": "Both", "expected": [{"doc_id": "a", "text": "the Goods"},
                                                   {"doc_id": "sub/b", "text": "on notice"}],
         "match": "any", "tags": {"kind": "x"}},
        {"id": "q4", "query": "Given", "doc_id": "a", "gold_spans": [[0, 12]]},
    ])
    assert res.exit_code == 0, res.stderr
    header, *rows = read_rows(tmp_path / "eval.jsonl")
    texts = {"a": DOC_A, "sub/b": DOC_B}
    from ragspan.io.span_anchors import anchor_of

    for row in rows:
        for s in row["gold_spans"]:
            assert texts[s["doc_id"]][s["start"]:s["end"]] == s["text"]
            # every span anchored on the text it indexes
            made = anchor_of(texts[s["doc_id"]], s["start"], s["end"]).digests()
            assert s["anchor"] == msgspec.to_builtins(made)
    assert rows[0]["gold_spans"] == [{"doc_id": "a", "start": 0, "end": 26,
                                      "text": "The Supplier shall deliver",
                                      "anchor": rows[0]["gold_spans"][0]["anchor"]}]
    assert rows[1]["doc_id"] == "sub/b"
    assert rows[2]["match"] == "any" and rows[2]["tags"] == {"kind": "x"}
    assert rows[3]["gold_spans"][0]["text"] == "The Supplier"
    h = header["_header"]
    import hashlib

    assert h["documents"] == {k: hashlib.sha256(v.encode()).hexdigest() for k, v in texts.items()}
    assert h["source"] == "adapt" and "text" in h["extractor"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["predicate"]["kind"] == "adapt"
    assert report["predicate"]["summary"]["spans"] == 5
    # the result reads back as an eval set and validates against its corpus
    ok = run_cli("validate", "--eval-set", tmp_path / "eval.jsonl", "--corpus", tmp_path / "corpus.jsonl")
    assert ok.exit_code == 0, ok.stdout


def test_normalize_whitespace_spans_point_at_original_text(tmp_path, docs):
    rows = [{"id": "q", "query": "When?", "doc_id": "a", "gold_texts": ["due within thirty days"]}]
    res = adapt(tmp_path, docs, rows)
    assert_input_error(res, "'due within thirty days'", "found 0 times", "'a'", "--normalize-whitespace")
    res = adapt(tmp_path, docs, rows, "--normalize-whitespace")
    assert res.exit_code == 0, res.stderr
    span = read_rows(tmp_path / "eval.jsonl")[1]["gold_spans"][0]
    assert DOC_A[span["start"]:span["end"]] == "due within\nthirty days" == span["text"]


@pytest.mark.parametrize("row, fragments", [
    ({"gold_texts": ["may terminate"], "doc_id": "sub/b"}, ["found 2 times", "'sub/b'", "'may terminate'"]),
    ({"gold_texts": ["absent words"], "doc_id": "a"}, ["found 0 times", "'absent words'"]),
    ({"gold_spans": [[0, 999]], "doc_id": "a"}, ["past the end of 'a'"]),
    ({"gold_spans": [{"doc_id": "a", "start": 0, "end": 3, "text": "Tha"}]}, ["does not slice back"]),
    ({"gold_texts": ["x"], "doc_id": "nope"}, ["'nope' is not a document"]),
    ({"gold_texts": ["The"]}, ["needs the row's 'doc_id'"]),
    ({"doc_id": "a"}, ["exactly one of"]),
    ({"gold_texts": ["The Supplier"], "gold_spans": [[0, 1]], "doc_id": "a"}, ["exactly one of"]),
    ({"expected": ["Goods"], "match": "some", "doc_id": "a"}, ["'match'"]),
    ({"gold_texts": [], "doc_id": "a"}, ["non-empty list"]),
    ({"expected": ["Goods", "invoice"], "expected_sources": ["a"]},
     ["'expected_sources' must list the document of each of the 2"]),
    ({"expected": ["may terminate"], "expected_sources": ["sub/b"]}, ["found 2 times"]),
    ({"expected": ["Goods"], "expected_sources": ["a"], "tags": {"kind": "x"}, "kind": 1},
     ["field 'kind' is also a tag"]),
])
def test_bad_rows(tmp_path, docs, row, fragments):
    res = adapt(tmp_path, docs, [{"id": "q1", "query": "?", **row}])
    assert_input_error(res, "q.jsonl:1", *fragments)


def test_a_file_the_selection_leaves_out_is_named_not_read(tmp_path, docs):
    """adapt --docs took the whole folder: a .json sidecar was refused with no way to leave
    it out, and SOURCE.md and TEST_QUESTIONS.md went into the corpus as documents."""
    import json

    (docs / "notes.docx").write_bytes(b"PK")
    (docs / "meta.json").write_text("{}", encoding="utf-8")
    (docs / "SOURCE.md").write_text("Where these came from.", encoding="utf-8")
    (docs / "TEST_QUESTIONS.md").write_text("Q: what is in Goods?", encoding="utf-8")
    rows = [{"id": "q", "query": "?", "doc_id": "a", "gold_texts": ["Goods"]}]
    res = adapt(tmp_path, docs, rows, "--exclude", "SOURCE.md", "--exclude", "TEST_*")
    assert res.exit_code == 0, res.stderr
    pred = json.loads((tmp_path / "r.json").read_text())["predicate"]
    assert pred["summary"]["files_taken"] == 2 and pred["summary"]["files_left_out"] == 4
    files = pred["details"]["files"]
    assert files["taken"] == ["a.txt", "sub/b.md"]
    assert files["left_out"] == ["SOURCE.md", "TEST_QUESTIONS.md", "meta.json", "notes.docx"]
    assert "2 files taken in as documents, 4 left out: SOURCE.md" in res.stderr
    # what --include names is read, and a file that cannot be is named, not skipped
    res = adapt(tmp_path, docs, rows, "--include", "*")
    assert_input_error(res, "meta.json", "unsupported file type")


def test_caps_report_actual_counts(tmp_path, docs):
    rows = [{"id": "q", "query": "?", "doc_id": "a", "gold_texts": ["Goods"]}]
    assert_input_error(adapt(tmp_path, docs, rows, "--max-docs", "1"), "2 files exceed --max-docs 1")
    total = len(DOC_A.encode()) + len(DOC_B.encode())
    assert_input_error(adapt(tmp_path, docs, rows, "--max-bytes", "100"),
                       f"{total} bytes exceed --max-bytes 100")


def test_real_pdfs(tmp_path):
    src = shared("agentic_file_search_test_acquisition")
    docs = tmp_path / "pdfs"
    docs.mkdir()
    for pdf in sorted(src.glob("*.pdf")):
        (docs / pdf.name).write_bytes(pdf.read_bytes())
    rows = [
        {"id": "price", "query": "What is the purchase price?", "doc_id": "01_acquisition_agreement.pdf",
         "gold_texts": ['"Purchase Price" means $45,000,000 USD']},
        {"id": "patents", "query": "How many patents?", "doc_id": "03_ip_certification",
         "gold_texts": ["StartupXYZ owns 12 U.S. patents"]},
        {"id": "dd", "query": "What is the report about?", "doc_id": "02_due_diligence_report",
         "gold_texts": ["due diligence investigation of StartupXYZ LLC in connection with the "
                        "proposed acquisition"]},
    ]
    res = adapt(tmp_path, docs, rows, "--normalize-whitespace")
    assert res.exit_code == 0, res.stderr
    header, *out = read_rows(tmp_path / "eval.jsonl")
    assert header["_header"]["extractor"]["pdf"]["name"] == "pypdf"
    assert len(header["_header"]["documents"]) == 10
    corpus = {r["id"]: r["text"] for r in read_rows(tmp_path / "corpus.jsonl")}
    for row in out:
        s = row["gold_spans"][0]
        assert corpus[s["doc_id"]][s["start"]:s["end"]] == s["text"]
    assert "\n" in out[2]["gold_spans"][0]["text"]  # the PDF wrapped this line


def test_pdf_without_text_is_named(tmp_path, docs):
    import pypdf

    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=200, height=200)
    with open(docs / "scan.pdf", "wb") as fh:
        writer.write(fh)
    res = adapt(tmp_path, docs, [{"id": "q", "query": "?", "doc_id": "a", "gold_texts": ["Goods"]}])
    assert_input_error(res, "scan.pdf", "no extractable text")


def test_planted_facts_and_unknown_fields_kept_as_tags(tmp_path, docs):
    """A planted-fact gold set: each expected string located once in its named document; the
    fields an eval set has no place for are kept as tags (nested ones flattened), and the
    report says which."""
    res = adapt(tmp_path, docs, [
        {"id": "f1", "question": "Deliver and pay?", "expected": ["deliver the Goods", "thirty days"],
         "expected_sources": ["a.txt", "a.txt"], "match": "all",
         "dimensions": {"requires_crossref": True, "hops": 2, "where": {"page": None}},
         "verification": "manual"},
        {"id": "f2", "query": "Notice?", "expected": ["on notice"], "expected_sources": ["sub/b.md"],
         "match": "any", "clause_type": "termination", "tags": {"owner": "legal"}},
    ])
    assert res.exit_code == 0, res.stderr
    rows = read_rows(tmp_path / "eval.jsonl")[1:]
    assert rows[0]["query"] == "Deliver and pay?"
    assert [(s["doc_id"], s["text"]) for s in rows[0]["gold_spans"]] == [
        ("a", "deliver the Goods"), ("a", "thirty days")]
    assert rows[0]["tags"] == {"dimensions.requires_crossref": "true", "dimensions.hops": "2",
                               "dimensions.where.page": "null", "verification": "manual"}
    assert rows[1]["match"] == "any"
    assert rows[1]["tags"] == {"owner": "legal", "clause_type": "termination"}
    kept = json.loads((tmp_path / "r.json").read_text())["predicate"]["summary"]["kept_as_tags"]
    assert kept == {"clause_type": 1, "dimensions.hops": 1, "dimensions.requires_crossref": 1,
                    "dimensions.where.page": 1, "verification": 1}
    val = run_cli("validate", "--eval-set", tmp_path / "eval.jsonl", "--corpus", tmp_path / "corpus.jsonl",
                  "--format", "json")
    # f1 is marked requires_crossref, yet names no anchor_doc to cross from: the one defect
    # validate finds
    assert val.exit_code == 3, val.stdout
    found = [(f["check"], f["query"]) for f in val.json()["predicate"]["details"]["findings"]]
    assert found == [("crossref_flag", "f1")]


def test_rows_without_id_get_a_derived_stable_id(tmp_path, docs):
    """The CUAD harness writes its questions without ids: each gets ``q-`` and 12 hex digits
    of the sha256 of its question and doc_id, counted, listed and said on stderr; the same
    row gets the same id on any line."""
    rows = [{"query": "Who delivers?", "doc_id": "a", "gold_texts": ["deliver the Goods"]},
            {"id": "own", "query": "Notice?", "doc_id": "sub/b", "gold_texts": ["on notice"]},
            {"question": "When is payment due?", "doc_id": "a", "gold_texts": ["thirty days"]}]
    res = adapt(tmp_path, docs, rows)
    assert res.exit_code == 0, res.stderr
    assert "2 rows have no 'id'; each got one derived from its query and doc_id" in res.stderr
    ids = [r["id"] for r in read_rows(tmp_path / "eval.jsonl")[1:]]
    assert ids[1] == "own" and all(len(i) == 14 and i.startswith("q-") for i in ids[::2])
    report = json.loads((tmp_path / "r.json").read_text())["predicate"]
    assert report["summary"]["derived_ids"] == 2
    assert report["details"]["derived_ids"] == [{"line": 1, "id": ids[0]}, {"line": 3, "id": ids[2]}]
    again = tmp_path / "again"
    again.mkdir()
    assert adapt(again, docs, rows[::-1]).exit_code == 0
    assert [r["id"] for r in read_rows(again / "eval.jsonl")[1:]] == ids[::-1]


@pytest.mark.parametrize(("rows", "message"), [
    ([{"doc_id": "a", "gold_texts": ["Goods"]}], "missing 'id' (and no 'query' string"),
    ([{"query": "Who?", "doc_id": "a", "gold_texts": ["Goods"]},
      {"query": "Who?", "doc_id": "a", "gold_texts": ["the Goods"]}],
     "is that of line 1: give the rows ids"),
])
def test_underivable_ids_refused(tmp_path, docs, rows, message):
    assert_input_error(adapt(tmp_path, docs, rows), "q.jsonl", message)


def test_a_row_is_written_in_one_key_order_its_given_values_as_given(tmp_path, docs):
    """A built row's keys in the record's order (``records.evalbuild.BuiltRow``): the unknown
    fields join the tags, which come before the passed-through filters and judgments; tags,
    filters and relevance are written as given (a number stays a number, ``io.evalset``
    reads tags as strings)."""
    res = adapt(tmp_path, docs, [
        {"relevance": {"a": 1}, "id": "q1", "filters": {"lang": "en"}, "difficulty": 2,
         "query": "Who delivers?", "doc_id": "a", "gold_texts": ["The Supplier shall deliver"]},
        {"id": "q2", "query": "Notice?", "doc_id": "sub/b", "tags": {"n": 3},
         "gold_texts": ["terminate on notice"], "match": "all"},
    ])
    assert res.exit_code == 0, res.stderr
    _, first, second = read_rows(tmp_path / "eval.jsonl")
    assert list(first) == ["id", "query", "doc_id", "gold_spans", "tags", "filters", "relevance"]
    assert first["tags"] == {"difficulty": "2"} and first["relevance"] == {"a": 1}
    assert list(second) == ["id", "query", "doc_id", "gold_spans", "tags"]
    assert second["tags"] == {"n": 3}
