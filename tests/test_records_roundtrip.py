"""Each report kind typed in ``records`` reads its goldens into records and writes them back
byte for byte (``records.envelope``: one decode that validates, one encode through the
canonical encoder), and a value of the wrong type is refused naming its JSON path."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from conftest import golden_reports
from ragspan.base.canonical import canonical_dumps
from ragspan.records.contamination import LeakagePredicate, OverlapPredicate
from ragspan.records.envelope import Statement, decode, encode
from ragspan.records.error import ErrorPredicate
from ragspan.records.evalbuild import AdaptPredicate
from ragspan.records.migrate import MigratePredicate
from ragspan.records.plan import PlanPredicate
from ragspan.records.score import DocPredicate, SpanPredicate
from ragspan.records.validate import ValidatePredicate
from ragspan.report.render import TYPED

KINDS = {"validate": ValidatePredicate, "leakage": LeakagePredicate,
         "overlap": OverlapPredicate, "migrate": MigratePredicate, "plan": PlanPredicate,
         "adapt": AdaptPredicate}


def goldens(kind: str) -> list[Path]:
    """The golden files that are reports of ``kind``."""
    return [path for path, doc in golden_reports() if doc["predicate"].get("kind") == kind]


def test_every_typed_kind_is_rendered_from_its_record():
    from ragspan.records.compare import ComparePredicate
    from ragspan.records.imported import ImportPredicate
    from ragspan.records.readout import ReadoutPredicate
    from ragspan.records.retrieval import RetrievalPredicate
    from ragspan.records.sweep import SweepPredicate
    from ragspan.report.render.score import DocView, SpanView

    # error and sweep have no golden: their round trips are in this file and test_sweep.py;
    # a score report's renderer reads its parameters and summary (its rows left as read)
    assert {kind: record for kind, (record, _) in TYPED.items()} == {
        **KINDS, "error": ErrorPredicate, "sweep": SweepPredicate,
        "score.span": SpanView, "score.doc": DocView, "compare": ComparePredicate,
        "report": Statement[ReadoutPredicate], "import": ImportPredicate,
        "run-retriever": RetrievalPredicate}


def test_an_error_report_reads_into_records_and_writes_back(tmp_path):
    """A failed command's error report (no golden: made here, from an input error)."""
    from conftest import run_cli

    out = tmp_path / "r.json"
    res = run_cli("score", "--eval-set", tmp_path / "missing.jsonl", "--run",
                  tmp_path / "run.jsonl", "--out", out)
    assert res.exit_code == 3
    text = out.read_text(encoding="utf-8")
    record = decode(json.loads(text), Statement[ErrorPredicate])
    assert record.predicate.summary.command == "score"
    assert canonical_dumps(encode(record)) == text


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_golden_reads_into_records_and_writes_back_byte_for_byte(kind):
    paths = goldens(kind)
    assert paths, f"no golden of kind {kind}"
    for path in paths:
        text = path.read_text(encoding="utf-8")
        record = decode(json.loads(text), Statement[KINDS[kind]])
        assert record.predicate.kind == kind
        assert canonical_dumps(encode(record)) == text, path.name


def test_a_wrong_type_is_refused_naming_its_json_path():
    doc = json.loads(goldens("validate")[0].read_text(encoding="utf-8"))
    doc["predicate"]["summary"]["errors"] = "3"
    with pytest.raises(msgspec.ValidationError, match=r"\$\.predicate\.summary\.errors"):
        decode(doc, Statement[ValidatePredicate])
    doc["predicate"]["summary"]["errors"] = True  # a boolean is no count
    with pytest.raises(msgspec.ValidationError, match=r"\$\.predicate\.summary\.errors"):
        decode(doc, Statement[ValidatePredicate])
    doc["predicate"]["summary"]["errors"] = 0
    doc["predicate"]["details"]["findings"][0]["severity"] = "fatal"
    with pytest.raises(msgspec.ValidationError,
                       match=r"\$\.predicate\.details\.findings\[0\]\.severity"):
        decode(doc, Statement[ValidatePredicate])


SCORE_KINDS = {"score.span": SpanPredicate, "score.doc": DocPredicate}


def _score_reports(tmp_path: Path) -> list[Path]:
    """The span score goldens, and a doc score with the duplicate rule stated (its skipped
    rows counted), which no golden holds, made from TREC files written here."""
    from conftest import run_cli

    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d9 1\n", encoding="utf-8")
    run.write_text("q1 Q0 d2 1 0.9 r\nq1 Q0 d1 2 0.8 r\nq1 Q0 d7 3 0.7 r\n"
                   "q2 Q0 d3 1 0.5 r\nq4 Q0 d4 1 0.5 r\n", encoding="utf-8")
    doc = tmp_path / "doc.json"
    res = run_cli("score", "--qrels", qrels, "--run", run, "--on-duplicate", "first",
                  "--out", doc)
    assert res.exit_code == 0, res.stderr
    return [*(path for kind in SCORE_KINDS for path in goldens(kind)), doc]


def test_a_score_report_reads_into_records_and_writes_back_byte_for_byte(tmp_path):
    paths = _score_reports(tmp_path)
    assert {json.loads(p.read_text(encoding="utf-8"))["predicate"]["kind"]
            for p in paths} == set(SCORE_KINDS)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        kind = json.loads(text)["predicate"]["kind"]
        record = decode(json.loads(text), Statement[SCORE_KINDS[kind]])
        assert canonical_dumps(encode(record)) == text, path.name


def test_a_compare_report_reads_into_records_and_writes_back_byte_for_byte():
    from ragspan.records.compare import ComparePredicate

    paths = goldens("compare")
    assert len(paths) >= 3  # pass, fail, non-inferiority
    for path in paths:
        text = path.read_text(encoding="utf-8")
        record = decode(json.loads(text), Statement[ComparePredicate])
        assert record.predicate.summary.verdict in ("pass", "fail", "inconclusive")
        assert canonical_dumps(encode(record)) == text, path.name


def test_a_readout_report_reads_into_records_and_writes_back_byte_for_byte():
    from ragspan.records.readout import ReadoutPredicate

    paths = goldens("report")
    assert paths
    for path in paths:
        text = path.read_text(encoding="utf-8")
        record = decode(json.loads(text), Statement[ReadoutPredicate])
        assert record.predicate.summary.configurations
        assert canonical_dumps(encode(record)) == text, path.name


def test_every_golden_report_reads_into_its_kinds_records_byte_for_byte():
    """Every report kind has a record (records.kinds), and every golden report, whatever its
    kind, reads into it and writes back byte for byte."""
    from ragspan.records.kinds import TYPED_KINDS
    from ragspan.report.envelope import schema

    assert set(TYPED_KINDS) == set(
        schema()["properties"]["predicate"]["properties"]["kind"]["enum"])
    seen = set()
    for path, doc in golden_reports():
        kind = doc["predicate"]["kind"]
        text = path.read_text(encoding="utf-8")
        record = decode(json.loads(text), Statement[TYPED_KINDS[kind]])
        assert canonical_dumps(encode(record)) == text, path.name
        seen.add(kind)
    assert {"score.span", "compare", "report", "run-retriever", "validate"} <= seen


def test_an_import_report_reads_into_records_and_writes_back_byte_for_byte(tmp_path):
    """No golden is an import report: one made here from CUAD's own CSV (its tallies, its
    ambiguous pieces and missing contracts listed)."""
    from conftest import run_cli, shared
    from ragspan.records.imported import ImportPredicate

    base = shared("cuad_dev")
    out = tmp_path / "r.json"
    res = run_cli("import", "cuad", "--csv", base / "master_clauses_subset.csv",
                  "--contracts", base / "contracts",
                  "--categories", base / "category_descriptions.csv",
                  "--out", tmp_path / "e.jsonl", "--corpus-out", tmp_path / "c.jsonl",
                  "--report", out)
    assert res.exit_code == 0, res.stderr
    text = out.read_text(encoding="utf-8")
    record = decode(json.loads(text), Statement[ImportPredicate])
    assert record.predicate.parameters.source == "cuad" and record.predicate.summary.queries
    assert canonical_dumps(encode(record)) == text


def test_a_metric_that_is_not_finite_is_refused_on_the_matrix():
    """The metric columns are checked before any is written; a NaN in one (a metric's bug)
    is an internal error naming the metric and the query."""
    from types import SimpleNamespace

    import numpy as np

    from ragspan.scoring.report_columns import metric_columns

    report = SimpleNamespace(evalset=SimpleNamespace(queries=[SimpleNamespace(id="q0"),
                                                              SimpleNamespace(id="q1")]))
    values = {"complete_grounding@1": np.array([1.0, 0.0]),
              "char_recall@1": np.array([0.5, float("nan")])}
    with pytest.raises(RuntimeError, match="char_recall@1 of query 'q1' is nan, not finite"):
        metric_columns(report, values)  # type: ignore[arg-type]


def _leaves(value, path=()):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, (*path, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value[:3]):
            yield from _leaves(inner, (*path, i))
    else:
        yield path, value


@pytest.mark.slow
def test_a_value_of_the_wrong_type_anywhere_in_a_golden_is_an_input_error_by_its_path():
    """Drawn leaves of every golden report (a fixed seed, 40 a report) replaced by an object:
    each is refused as an input error naming the report given, never a crash; the one place
    a report may hold any value is a run's header (``parameters.run_config``), the user's
    JSON as given."""
    import copy
    import random

    from ragspan.base.errors import InputError
    from ragspan.report.envelope import report_of_mapping

    rng = random.Random(1)
    refused = 0
    for path, doc in golden_reports():
        leaves = list(_leaves(doc))
        for where, _ in rng.sample(leaves, min(40, len(leaves))):
            bad = copy.deepcopy(doc)
            node = bad
            for key in where[:-1]:
                node = node[key]
            node[where[-1]] = {"wrong": 1}
            try:
                report_of_mapping(bad)
            except InputError as exc:
                assert "the report given" in str(exc) and "$" in str(exc), (path.name, where)
                refused += 1
            else:
                assert where[:3] == ("predicate", "parameters", "run_config"), (path.name, where)
    assert refused > 500
