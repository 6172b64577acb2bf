"""Canonical JSON, the in-toto envelope, SOURCE_DATE_EPOCH and schema validation."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragspan.base.errors import InputError
from ragspan.report.envelope import (
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    InputRef,
    canonical_dumps,
    created_at,
    statement,
    validation_error,
)


def test_canonical_dumps_is_sorted_compact_utf8():
    text = canonical_dumps({"b": 1, "a": [1.5, np.float64(0.1), np.int64(3)], "é": "ü"})
    assert text == '{"a":[1.5,0.1,3],"b":1,"é":"ü"}\n'


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), np.float64("nan")])
def test_canonical_dumps_refuses_non_finite(bad):
    with pytest.raises(ValueError):
        canonical_dumps({"x": bad})


def test_created_at_honours_source_date_epoch(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    assert created_at() == "1970-01-01T00:00:00Z"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "soon")
    with pytest.raises(InputError):
        created_at()


def _doc(**kw):
    ref = InputRef("run", "run.jsonl", "a" * 64)
    args = dict(kind="score.span", subject=[ref], inputs=[ref], parameters={"k": [5]},
                summary={"queries": 1, "metrics": {"span_coverage@5": 0.5}},
                details={"queries": []})
    args.update(kw)
    return json.loads(canonical_dumps(statement(**args)))


def test_statement_shape_validates():
    doc = _doc()
    assert doc["_type"] == STATEMENT_TYPE and doc["predicateType"] == PREDICATE_TYPE
    assert doc["subject"] == [{"name": "run.jsonl", "digest": {"sha256": "a" * 64}}]
    assert validation_error(doc) is None


@pytest.mark.parametrize("mutate,where", [
    (lambda d: d.pop("subject"), "$"),
    (lambda d: d["predicate"].update(verdict="maybe"), "$.predicate.verdict"),
    (lambda d: d["predicate"].update(verdict="fail", exit_code=0), "$.predicate.exit_code"),
    (lambda d: d["subject"][0]["digest"].update(sha256="xyz"), "$.subject[0].digest.sha256"),
    (lambda d: d["predicate"]["summary"]["metrics"].update({"Bad Name": 1}),
     "$.predicate.summary.metrics"),
])
def test_schema_errors_name_the_json_path(mutate, where):
    doc = _doc()
    mutate(doc)
    problem = validation_error(doc)
    assert problem is not None and problem.startswith(where), problem


def _full_validation_error(doc):
    from jsonschema import Draft202012Validator

    from ragspan.report.envelope import schema

    errors = sorted(Draft202012Validator(schema()).iter_errors(doc),
                    key=lambda e: (list(e.absolute_path), e.message))
    return f"{errors[0].json_path}: {errors[0].message}" if errors else None


def _set(path, value):
    def mutate(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


ROWS = ["predicate", "details", "queries"]


@pytest.mark.parametrize("mutate", [
    lambda d: None,
    _set([*ROWS, 7, "id"], 7),
    _set([*ROWS, 7, "metrics", "span_coverage@5"], "x"),
    _set([*ROWS, 8, "metrics", "it's a\\b"], "x"),
    _set([*ROWS, 9, "metrics"], [0.5]),
    lambda d: d["predicate"]["details"]["queries"][9].pop("metrics"),
    _set([*ROWS, 10], ["not", "a", "row"]),
    lambda d: (_set([*ROWS, 9, "id"], None)(d), _set([*ROWS, 4, "id"], 4.5)(d)),
    _set(ROWS, "rows"),
    _set(["predicate", "details"], []),
])
def test_rows_checked_once_per_type_shape_give_the_full_answer(mutate):
    """Query rows are validated once per type shape: the answer, path included, is the one
    a full validation gives, naming the original row."""
    rows = [{"id": f"q{i}", "metrics": {"span_coverage@5": i / 10}} for i in range(12)]
    doc = _doc(details={"queries": rows})
    mutate(doc)
    assert validation_error(doc) == _full_validation_error(doc)


def _evidence_rows():
    return [{"id": f"q{i}", "metrics": {"span_coverage@5": [0.0, 1.0, 0.25][i % 3],
                                        "complete_grounding@5": float(i % 2)},
             "failure_evidence": [{"doc_id": "d", "start": 1.0, "end": 2, "chunks": [],
                                   "first_rank": None, "chunk_ceiling": [1.0, 0.5][i % 2]}]}
            for i in range(12)]


@pytest.mark.parametrize("mutate", [
    lambda d: None,
    _set([*ROWS, 7, "failure_evidence", 0, "start"], 1.5),
    _set([*ROWS, 8, "failure_evidence", 0, "first_rank"], 2.5),
    _set([*ROWS, 9, "failure_evidence", 0, "chunk_ceiling"], "x"),
    _set([*ROWS, 10, "metrics", "span_coverage@5"], True),
])
def test_integrality_counts_only_under_integer_keys(mutate):
    """A float's integrality splits shapes only under the keys the schema types as
    integers: metrics of 0.0, 1.0 and 0.25 are one shape, and a start of 1.5 among starts of
    1.0 is still found, in its own row."""
    from ragspan.report.shapes import _distinct_rows, _integer_keys

    assert {"start", "end", "rank", "first_rank"} <= _integer_keys()
    assert "covered" not in _integer_keys()
    doc = _doc(details={"queries": _evidence_rows()})
    mutate(doc)
    assert validation_error(doc) == _full_validation_error(doc)
    if validation_error(doc) is None:  # unmutated: one shape for all 12 rows
        assert len(_distinct_rows(doc)[1]) == 1


def test_row_shortcut_only_for_type_only_schemas():
    from ragspan.report.shapes import _row_schemas, _rows_checked_by_type, _type_only

    assert _rows_checked_by_type()
    schema = {"properties": {"summary": {"properties": {"queries": {"minimum": 0}}},
                             "details": {"properties": {"queries": {
                                 "items": {"properties": {"x": {"type": "number"}}}}}}}}
    rows = list(_row_schemas(schema))
    assert len(rows) == 1 and _type_only(rows[0])  # summary.queries is not a row schema
    assert not _type_only({"items": {"properties": {"x": {"type": "number", "minimum": 0}}}})


def test_schema_file_at_repository_root_is_the_packaged_one():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert (root / "schemas" / "report-envelope.v1.json").read_bytes() == (
        root / "src" / "ragspan" / "schemas" / "report-envelope.v1.json").read_bytes()


def test_canonical_dumps_is_one_text_whatever_the_path():
    """The C encoder path and the exact walk give the same text: integer keys sort as
    strings, numpy values become plain, tuples lists; NaN is refused either way."""
    import numpy as np

    from ragspan.base.canonical import _plain

    for value in ({5: 1, 10: 2}, {"b": np.int64(3), "a": (1, np.float64(0.1), np.bool_(True))},
                  {"x": [{"z": 1.0, "y": [np.arange(3)]}]}):
        walked = json.dumps(_plain(value), sort_keys=True, separators=(",", ":"),
                            ensure_ascii=False, allow_nan=False) + "\n"
        assert canonical_dumps(value) == walked
    with pytest.raises(ValueError):
        canonical_dumps({"a": [np.float64("nan")]})


def _memory_doc(rows):
    ref = InputRef("run", "run.jsonl", "a" * 64)
    return statement(kind="score.span", subject=[ref], inputs=[ref], parameters={"k": [5]},
                     summary={"queries": len(rows), "metrics": {"span_coverage@5": 0.5}},
                     details={"queries": rows})


@pytest.mark.parametrize("odd", [np.float64(0.25), (0.25,), {1: 0.25}, True])
def test_report_text_reads_back_what_it_cannot_shape_in_memory(odd):
    """Rows with a value JSON gives back as another type (numpy, a tuple, an integer key)
    are checked on the whole text read back: the error, if any, is the one a full
    validation of the written report gives, naming the original row."""
    from ragspan.report.envelope import report_text

    rows = [{"id": f"q{i}", "metrics": {"span_coverage@5": i / 10}} for i in range(6)]
    rows[4]["metrics"] = {"span_coverage@5": odd}
    doc = _memory_doc(rows)
    expected = _full_validation_error(json.loads(canonical_dumps(doc)))
    if expected is None:
        assert report_text(doc) == canonical_dumps(doc)
    else:
        with pytest.raises(RuntimeError, match=re.escape(expected)):
            report_text(doc)


@pytest.mark.parametrize("bad_row", [1, 5, 9])
def test_report_text_names_the_row_that_breaks_the_schema(bad_row):
    """Plain rows are shaped in memory and only one row per shape is written and read
    back; the error still names the original row, as a full validation does."""
    from ragspan.report.envelope import report_text

    rows = [{"id": f"q{i}", "metrics": {"span_coverage@5": i / 10}} for i in range(10)]
    rows[bad_row]["metrics"]["span_coverage@5"] = "high"
    doc = _memory_doc(rows)
    expected = _full_validation_error(json.loads(canonical_dumps(doc)))
    assert f"[{bad_row}]" in expected
    with pytest.raises(RuntimeError, match=re.escape(expected)):
        report_text(doc)
    rows[bad_row]["metrics"]["span_coverage@5"] = 0.5
    assert report_text(doc) == canonical_dumps(doc)


JSON_LEAVES = (st.none() | st.booleans() | st.integers(-(2 ** 63), 2 ** 64 - 1)
               | st.floats(allow_nan=False, allow_infinity=False)
               | st.text(st.characters(exclude_categories=("Cs",)), max_size=12))
JSON_VALUES = st.recursive(
    JSON_LEAVES, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=6), inner,
                      max_size=4), max_leaves=20)


@given(JSON_VALUES)
def test_canonical_text_reads_back_to_the_value_and_matches_the_standard_encoder(value):
    """Any JSON value reads back from its canonical text as itself; the text is what
    Python's own encoder writes (sorted keys, compact, UTF-8) except for a float's
    spelling, which differs only below 1e-4 and from 1e16 on (docs/report-envelope.md)."""
    text = canonical_dumps(value)
    assert text.endswith("\n") and json.loads(text) == value
    standard = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False) + "\n"

    def floats(v):
        if isinstance(v, float):
            yield v
        elif isinstance(v, dict):
            for x in v.values():
                yield from floats(x)
        elif isinstance(v, list):
            for x in v:
                yield from floats(x)

    if all(x == 0 or 1e-4 <= abs(x) < 1e16 for x in floats(value)):
        assert text == standard


@pytest.mark.parametrize(("value", "text"), [
    (1e-05, "0.00001"), (1.5e-07, "1.5e-7"), (1e16, "1e16"), (0.0001, "0.0001"),
    (0.30000000000000004, "0.30000000000000004"), (123456789012345.0, "123456789012345.0"),
    (-2.5e-10, "-2.5e-10"), (0.0, "0.0"), (-0.0, "-0.0"),
])
def test_float_spelling_is_the_stated_one(value, text):
    assert canonical_dumps([value]) == f"[{text}]\n"
    assert json.loads(text) == value


def test_non_plain_values_take_the_exact_walk():
    """An int subclass is its int, a numpy array its list, an integer key its string (sorted
    as strings); a non-finite value anywhere is refused by name, never written as null."""
    from ragspan.scoring.metrics.registry import Chars

    assert canonical_dumps({"k": [Chars(500), 5]}) == '{"k":[500,5]}\n'
    assert canonical_dumps({10: 1, 9: np.arange(2)}) == '{"10":1,"9":[0,1]}\n'
    for bad in ({"a": [1.0, float("inf")]}, {"a": {"b": np.float32("nan")}}, [float("-inf")]):
        with pytest.raises(ValueError, match="non-finite number"):
            canonical_dumps(bad)
