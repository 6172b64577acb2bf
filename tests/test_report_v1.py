"""Stored baselines keep working: score reports of format v1 (``tests/golden/v1/``, written
by the release before format v2 and committed as they were) read into the same records as a
v2 report of the same scoring, validate, compare with a v2 report with one note, verify
against their inputs, and give the API's rows by question id unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT, as_v1, report_rows, run_cli
from ragspan.api import query_rows, read_score_report
from ragspan.base.canonical import canonical_dumps
from ragspan.records.envelope import PREDICATE_TYPE, PREDICATE_TYPE_V1

V1 = ROOT / "tests" / "golden" / "v1"
F = ROOT / "tests" / "fixtures" / "gate"
EXAMPLE = ROOT / "examples" / "cuad"


def _score(out: Path, *args: str) -> dict:
    res = run_cli("score", *args, "--out", out)
    assert res.exit_code == 0, res.stderr
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fixture_v2(tmp_path_factory) -> Path:
    """The gate fixture's baseline scored now (v2), as the v1 golden was scored."""
    out = tmp_path_factory.mktemp("v2") / "score-baseline.json"
    _score(out, "--eval-set", str(F / "eval.jsonl"), "--run", str(F / "run-baseline.jsonl"),
           "--corpus", str(F / "corpus.jsonl"), "--k", "1", "--k", "3")
    return out


def test_the_v1_goldens_are_v1_and_validate():
    for path in sorted(V1.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert doc["predicateType"] == PREDICATE_TYPE_V1 and "queries" in \
            doc["predicate"]["details"], path
        res = run_cli("validate-report", "--report", path)
        assert res.exit_code == 0, (path, res.stderr)


def test_a_v1_report_reads_into_the_records_of_the_v2_report_of_the_same_scoring(fixture_v2):
    """The same scoring in both formats: the same ids, metric values and rows by question id
    (the v1 rows byte for byte what the v2 columns read back as), the same summary."""
    v1_doc = json.loads((V1 / "score-baseline.json").read_text(encoding="utf-8"))
    v2_doc = json.loads(fixture_v2.read_text(encoding="utf-8"))
    assert v2_doc["predicateType"] == PREDICATE_TYPE
    assert v1_doc["predicate"]["summary"] == v2_doc["predicate"]["summary"]
    assert canonical_dumps(query_rows(V1 / "score-baseline.json")) == \
        canonical_dumps(query_rows(fixture_v2))
    old, new = read_score_report(V1 / "score-baseline.json"), read_score_report(fixture_v2)
    assert (old.ids, old.names, old.format, new.format) == (new.ids, new.names, 1, 2)
    assert (old.values == new.values).all()
    for a, b in zip(old.rows, new.rows):
        assert (a.id, a.query, a.tags, a.failure, a.doc_id) == \
            (b.id, b.query, b.tags, b.failure, b.doc_id)
        assert {k: a.lost(k) for k in a.failure} == {k: b.lost(k) for k in b.failure}


def test_a_v1_report_with_a_manifest_reads_as_its_v2_rescoring(tmp_path):
    """Failure evidence from a chunk manifest (chunk ids, ranks, ceilings): the bundled
    example's v1 golden (its run and manifest are goldens too), its rows what the v2 columns
    of the same scoring read back as."""
    v1_doc = json.loads((V1 / "score-bm25-chunks.json").read_text(encoding="utf-8"))
    made = ROOT / "tests" / "golden" / "files"
    v2_doc = _score(tmp_path / "v2.json", "--eval-set", str(EXAMPLE / "eval.jsonl"), "--run",
                    str(made / "run-retriever-bm25--run-bm25.jsonl"), "--corpus",
                    str(EXAMPLE / "corpus.jsonl"), "--chunks",
                    str(made / "run-retriever-bm25--chunks-bm25.jsonl"), "--k", "1", "--k", "5")
    evidence = [e for r in report_rows(v1_doc) for e in r.get("failure_evidence", [])]
    assert evidence and any("chunk_ceiling" in e for e in evidence)
    assert any(c.get("chunk_id") for e in evidence for c in e["chunks"])
    assert canonical_dumps(report_rows(v1_doc)) == canonical_dumps(report_rows(v2_doc))
    assert v1_doc["predicate"]["summary"] == v2_doc["predicate"]["summary"]


def test_a_v1_baseline_compares_with_a_v2_candidate_with_one_note(tmp_path):
    """The stored v1 baseline against a v2 candidate: the verdict, numbers and exit code of
    the same comparison in v2, and one note more, naming the baseline's format."""
    cand = F / "candidate-fail.json"

    def gate(base: Path, *flags: str) -> tuple[int, dict]:
        res = run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                      "--format", "json", *flags)
        assert res.exit_code in (0, 4), res.stderr
        return res.exit_code, res.json()["predicate"]

    old_code, old = gate(V1 / "fixture-baseline.json")
    new_code, new = gate(F / "baseline.json")
    assert (old_code, old["verdict"]) == (new_code, new["verdict"]) == (4, "fail")
    assert old["summary"]["metrics"] == new["summary"]["metrics"]
    extra = [w for w in old["summary"]["warnings"] if w not in new["summary"]["warnings"]]
    assert len(extra) == 1 and "baseline report is in report format v1" in extra[0], extra
    assert not any("format v1" in w for w in new["summary"]["warnings"])


def test_a_v1_baseline_is_verified_against_its_inputs(tmp_path):
    """Verification re-scores a v1 report and compares it row for row; a v1 row edited by
    hand is refused naming its query."""
    flags = ("--eval-set", F / "eval.jsonl", "--corpus", F / "corpus.jsonl",
             "--baseline-run", F / "run-baseline.jsonl", "--candidate-run",
             F / "run-fail.jsonl")
    res = run_cli("compare", "--baseline", V1 / "fixture-baseline.json", "--candidate",
                  F / "candidate-fail.json", "--no-config", *flags)
    assert res.exit_code == 4, res.stderr
    doc = json.loads((V1 / "fixture-baseline.json").read_text(encoding="utf-8"))
    doc["predicate"]["details"]["queries"][4]["query"] = "What does clause 40 say?"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", edited, "--candidate", F / "candidate-fail.json",
                  "--no-config", *flags)
    assert res.exit_code == 3 and "row of query 'q04'" in res.stderr, res.stderr


def test_a_report_converted_to_v1_reads_as_it_was(fixture_v2):
    """``as_v1`` (the tests' own converter) writes what v1 held: the same rows and matrix."""
    doc = json.loads(fixture_v2.read_text(encoding="utf-8"))
    old = read_score_report(as_v1(doc))
    new = read_score_report(doc)
    assert old.format == 1 and new.format == 2 and (old.values == new.values).all()


@pytest.mark.parametrize("name", ["score-baseline.json", "fixture-baseline.json",
                                  "score-bm25-chunks.json"])
def test_a_v1_report_reads_into_its_v1_record_and_writes_back_byte_for_byte(name):
    """The v1 records (``records.kinds.V1_KINDS``) hold every field a v1 report has."""
    from ragspan.records.envelope import decode, encode
    from ragspan.records.kinds import V1_KINDS

    text = (V1 / name).read_text(encoding="utf-8")
    doc = json.loads(text)
    record = decode(doc["predicate"], V1_KINDS[doc["predicate"]["kind"]])
    assert canonical_dumps({**doc, "predicate": encode(record)}) == text


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_a_v1_report_renders_as_the_v2_report_of_the_same_scoring(fixture_v2, fmt):
    """The renderers read a score report's parameters and summary, the same in both
    formats: the same text."""
    from ragspan.report.render import render

    v1_doc = json.loads((V1 / "score-baseline.json").read_text(encoding="utf-8"))
    v2_doc = json.loads(fixture_v2.read_text(encoding="utf-8"))
    assert render(v1_doc, fmt) == render(v2_doc, fmt)


def test_a_crafted_v2_report_is_an_input_error_wherever_it_is_read(fixture_v2, tmp_path):
    """A failure label at a cutoff the gold table has no fraction for, or a span report
    without its grounding threshold: refused by name (compare, the API's rows), never a
    traceback."""
    from ragspan.base.errors import InputError

    doc = json.loads(fixture_v2.read_text(encoding="utf-8"))
    doc["predicate"]["details"]["failure"]["7"] = doc["predicate"]["details"]["failure"]["1"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", F / "baseline.json", "--candidate", bad,
                  "--no-config")
    assert res.exit_code == 3 and "failure and gold.covered must name the same cutoffs" in \
        res.stderr and "Traceback" not in res.stderr, res.stderr
    with pytest.raises(InputError, match="same cutoffs"):
        query_rows(bad)
    doc = json.loads(fixture_v2.read_text(encoding="utf-8"))
    del doc["predicate"]["parameters"]["grounding_threshold"]
    with pytest.raises(InputError, match="grounding_threshold"):
        query_rows(doc)
