"""A score report read in one pass (``records.score_read``): its details (v2's columns, v1's
rows) decoded and checked as typed records, the rest of the envelope against the report
schema. The one-pass reader and the general one (``report.envelope.load_report`` then
``gate.inputs.score_report_of``) give the same report; what the one pass cannot read goes
to the general reader, whose error names the file and the JSON path."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import ROOT, as_v1, assert_input_error, patch_everywhere, run_cli

FIX = ROOT / "tests" / "fixtures" / "gate"


def _both(path):
    from ragspan.app import score_reports
    from ragspan.gate.inputs import score_report_of
    from ragspan.report.envelope import load_report

    fast = score_reports.load_score_report(path, "baseline")
    doc, sha = load_report(path)
    slow = score_report_of(doc, sha, str(path), "baseline")
    return fast, slow


@pytest.mark.parametrize("path", [FIX / "baseline.json", FIX / "candidate-fail.json",
                                  ROOT / "tests" / "golden" / "v1" / "fixture-baseline.json"])
def test_one_pass_and_the_general_reader_give_the_same_report(path, tmp_path):
    fast, slow = _both(path)
    assert (fast.ids, fast.names, fast.kind, fast.sha256) == (slow.ids, slow.names, slow.kind,
                                                              slow.sha256)
    assert np.array_equal(fast.values, slow.values)
    assert fast.parameters == slow.parameters and fast.warnings == slow.warnings
    for a, b in zip(fast.rows, slow.rows):
        assert (a.id, a.query, a.tags, a.failure, a.doc_id) == (b.id, b.query, b.tags,
                                                                b.failure, b.doc_id)
        for k in a.failure:
            assert a.lost(k) == b.lost(k)


@pytest.mark.parametrize("path", [
    FIX / "baseline.json", ROOT / "tests" / "golden" / "v1" / "fixture-baseline.json",
    ROOT / "tests" / "golden" / "files" / "score-bm25-chunks.json--score-bm25-chunks.json"])
def test_ragspans_own_report_takes_the_one_pass(monkeypatch, path):
    """The general reader (a JSON parse and the schema, then the records) is not run on a
    well-formed score report, v2 or v1, evidence and manifest included."""
    from ragspan.app import score_reports

    calls = []
    real = score_reports.load_report
    patch_everywhere(monkeypatch, score_reports, "load_report",
                     lambda path: calls.append(path) or real(path))
    score_reports.load_score_report(path, "baseline")
    assert calls == []


@pytest.mark.parametrize("edit, fragment", [
    (lambda r: r.update(metrics={**r["metrics"], "complete_grounding@1": "1"}),
     "$.predicate.details.queries[0].metrics['complete_grounding@1']: '1' is not of type"),
    (lambda r: r["metrics"].update({"complete_grounding@1": True}), "is not of type 'number'"),
    (lambda r: r.update(tags={"part": 3}), "$.predicate.details.queries[0].tags.part"),
    (lambda r: r.update(failure={"1": "a-new-label"}), "one of ceiling-bound"),
    (lambda r: r.update(missing_spans={"1": [{"doc_id": "manual", "start": 1.5, "end": 2}]}),
     "missing_spans"),
])
def test_a_malformed_row_is_one_line_naming_the_file_and_path(tmp_path, edit, fragment):
    doc = as_v1(json.loads((FIX / "baseline.json").read_text()))
    edit(doc["predicate"]["details"]["queries"][0])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", bad, "--candidate", FIX / "candidate-pass.json",
                  "--no-config")
    assert_input_error(res, "bad.json", fragment)


@pytest.mark.parametrize("edit, fragment", [
    (lambda d: d["metrics"]["complete_grounding@1"].__setitem__(0, "1"),
     "$.predicate.details.metrics['complete_grounding@1'][0]: '1' is not of type"),
    (lambda d: d["metrics"]["complete_grounding@1"].__setitem__(0, True),
     "is not of type 'number'"),
    (lambda d: d["questions"]["tags"]["part"].__setitem__(0, 3),
     "$.predicate.details.questions.tags.part[0]"),
    (lambda d: d["failure"]["1"].__setitem__(0, "a-new-label"), "one of ceiling-bound"),
    (lambda d: d["gold"]["start"].__setitem__(0, 1.5), "details.gold.start[0]"),
    (lambda d: d["gold"]["question"].pop(), "gold.doc_id has 30 entries for 29 gold spans"),
    (lambda d: d["gold"]["question"].reverse(), "gold.question must list question indices in "
     "order"),
    (lambda d: d["gold"].update(start=[e + 1 for e in d["gold"]["end"]]),
     "gold: a span ends before it starts"),
])
def test_a_malformed_column_is_one_line_naming_the_file_and_path(tmp_path, edit, fragment):
    """Format v2: a value of the wrong type in a column, or a column of another length,
    named by its path."""
    doc = json.loads((FIX / "baseline.json").read_text())
    edit(doc["predicate"]["details"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", bad, "--candidate", FIX / "candidate-pass.json",
                  "--no-config")
    assert_input_error(res, "bad.json", fragment)


def test_an_integral_float_where_an_integer_belongs_is_refused(tmp_path):
    """The schema's ``integer`` takes 2.0; ragspan writes integers as integers, and the
    typed rows hold them to it: a report whose offsets became floats was edited."""
    doc = as_v1(json.loads((FIX / "baseline.json").read_text()))
    rows = doc["predicate"]["details"]["queries"]
    row = next(r for r in rows if r.get("missing_spans"))
    k = next(iter(row["missing_spans"]))
    row["missing_spans"][k][0]["start"] = float(row["missing_spans"][k][0]["start"])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", bad, "--candidate", FIX / "candidate-pass.json",
                  "--no-config")
    assert_input_error(res, "bad.json", "Expected `int`, got `float`",
                       "$.predicate.details.queries[")
    doc = json.loads((FIX / "baseline.json").read_text())  # format v2: in the gold table
    doc["predicate"]["details"]["gold"]["end"][0] = float(doc["predicate"]["details"]["gold"]
                                                         ["end"][0])
    bad.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", bad, "--candidate", FIX / "candidate-pass.json",
                  "--no-config")
    assert_input_error(res, "bad.json", "Expected `int`, got `float`",
                       "$.predicate.details.gold.end[0]")


def test_an_escaped_surrogate_in_a_report_is_read_as_the_general_reader_reads_it(tmp_path):
    """A lone surrogate escape anywhere in a report is refused by name (the one pass cannot
    decode it and hands the file to the general reader); a pair is its character, the same
    report as with the character written out."""
    doc = json.loads((FIX / "baseline.json").read_text())
    doc["predicate"]["details"]["questions"]["query"][0] = "\U0001f600 q"
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    escaped = tmp_path / "escaped.json"
    escaped.write_text(json.dumps(doc), encoding="utf-8")  # \ud83d\ude00
    assert b"\\ud83d" in escaped.read_bytes()
    from ragspan.app.score_reports import load_score_report

    a, b = load_score_report(plain, "baseline"), load_score_report(escaped, "baseline")
    assert a.rows[0].query == b.rows[0].query == "\U0001f600 q"
    assert a.ids == b.ids and (a.values == b.values).all()
    lone = tmp_path / "lone.json"
    lone.write_text(escaped.read_text(encoding="utf-8").replace("\\ude00", "", 1),
                    encoding="utf-8")
    res = run_cli("compare", "--baseline", lone, "--candidate", FIX / "candidate-pass.json",
                  "--no-config")
    assert_input_error(res, "lone.json", "surrogate")
