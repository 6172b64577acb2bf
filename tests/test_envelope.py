"""Canonical JSON, the in-toto envelope, SOURCE_DATE_EPOCH and schema validation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragspan.base.errors import InputError
from ragspan.records.envelope import PREDICATE_TYPE_V1
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


def columns(n=0, metric="span_coverage@5"):
    """A span score's details in format v2: ``n`` questions, one metric column."""
    return {"questions": {"id": [f"q{i}" for i in range(n)], "in_run": [True] * n},
            "metrics": {metric: [i / 10 for i in range(n)]},
            "failure": {"5": [None] * n},
            "gold": {"question": list(range(n)), "doc_id": ["d"] * n, "start": [0] * n,
                     "end": [5] * n, "covered": {"5": [1.0] * n}, "first_rank": [1] * n},
            "evidence": {"gold": [], "start": [], "end": [], "chunk_id": [], "rank": []}}


def _doc(**kw):
    """A score report; one whose details hold rows (``queries``) says it is in format v1."""
    ref = InputRef("run", "run.jsonl", "a" * 64)
    args = dict(kind="score.span", subject=[ref], inputs=[ref], parameters={"k": [5]},
                summary={"queries": 1, "metrics": {"span_coverage@5": 0.5}},
                details=columns())
    args.update(kw)
    doc = json.loads(canonical_dumps(statement(**args)))
    if "queries" in doc["predicate"]["details"]:
        doc["predicateType"] = PREDICATE_TYPE_V1
    return doc


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
    _set(["predicate", "summary", "queries"], -1),
    _set(["predicate", "parameters", "k"], []),
    _set(["predicate", "verdict"], "maybe"),
    _set([*ROWS, 3, "failure_evidence"], [{"doc_id": "d", "start": 1.5, "end": 2}]),
    _set([*ROWS, 10, "metrics", "span_coverage@5"], True),
])
def test_a_typed_kind_is_checked_by_its_records_with_the_full_answer(mutate):
    """A score report is decoded into its records in one pass and the envelope checked
    with its rows left out: the answer, path included, is the one a full validation
    against the published schema gives."""
    rows = [{"id": f"q{i}", "metrics": {"span_coverage@5": i / 10}} for i in range(12)]
    doc = _doc(details={"queries": rows})
    mutate(doc)
    assert validation_error(doc) == _full_validation_error(doc)


COLUMNS = ["predicate", "details"]


@pytest.mark.parametrize("mutate", [
    lambda d: None,
    _set([*COLUMNS, "questions", "id", 7], 7),
    _set([*COLUMNS, "metrics", "span_coverage@5", 3], "x"),
    _set([*COLUMNS, "metrics", "span_coverage@5", 3], True),
    _set([*COLUMNS, "metrics", "it's a\\b"], [0.5]),
    _set([*COLUMNS, "metrics", "span_coverage@5"], {"q0": 0.5}),
    lambda d: d["predicate"]["details"].pop("gold"),
    _set([*COLUMNS, "gold", "start", 2], -1),
    _set([*COLUMNS, "gold", "first_rank", 2], 0),
    _set([*COLUMNS, "failure", "5", 1], 4),
    _set([*COLUMNS, "evidence"], []),
    _set([*COLUMNS, "questions"], [["q0", True]]),
    _set(["predicateType"], "https://ragspan.dev/report/v3"),
    _set(["predicate", "parameters", "run_config"], {"config_digest": "ab", "mine": [1]}),
    _set(["predicate", "parameters", "run_config"], {"config_digest": 5}),
    _set(["predicate", "parameters", "run_config"], {"config": "fast", "corpus_sha256": 1}),
    _set(["predicate", "tool", "name"], "other"),
    _set(["predicate", "exit_code"], 4),
])
def test_a_v2_score_report_is_checked_by_its_records_with_the_full_answer(mutate):
    """Format v2's columns, as v1's rows: decoded into their records in one pass, the
    envelope checked with each array cut to its first entry, the answer the one a full
    validation against the published schema gives."""
    doc = _doc(details=columns(12))
    mutate(doc)
    assert validation_error(doc) == _full_validation_error(doc)


@pytest.mark.parametrize("mutate,said", [
    (lambda d: d["questions"]["in_run"].pop(), "questions.in_run has 11 entries for 12"),
    (lambda d: d["metrics"]["span_coverage@5"].append(0.5),
     "metrics.span_coverage@5 has 13 entries for 12"),
    (lambda d: d["failure"]["5"].pop(), "failure.5 has 11 entries"),
    (lambda d: d["gold"]["covered"]["5"].pop(), "gold.covered.5 has 11 entries for 12"),
    (lambda d: d["gold"].update(question=[0] * 11 + [12]), "gold.question"),
    (lambda d: d["gold"].update(question=list(range(12))[::-1]), "gold.question"),
    (lambda d: d["gold"].update(end=[0] * 11 + [5], start=[0] * 11 + [6]),
     "a span ends before it starts"),
    (lambda d: d["evidence"].update(gold=[12], start=[0], end=[1], chunk_id=[None], rank=[1]),
     "evidence.gold names a gold span beyond"),
    (lambda d: d["evidence"].update(gold=[0], start=[0, 1], end=[1], chunk_id=[None],
                                    rank=[1]), "evidence.start has 2 entries for 1"),
    (lambda d: d["failure"].update({"3": [None] * 12}),
     "failure and gold.covered must name the same cutoffs"),
])
def test_v2_columns_of_other_lengths_than_their_table_are_refused(mutate, said):
    """What no schema can say (an array's length, an index in range) is the reader's
    check: a report whose columns disagree is invalid, naming the array."""
    doc = _doc(details=columns(12))
    mutate(doc["predicate"]["details"])
    assert _full_validation_error(doc) is None
    problem = validation_error(doc)
    assert problem is not None and problem.startswith("$.predicate.details: ") and said in \
        problem, problem


def test_an_integral_float_where_an_integer_belongs_is_refused_by_the_records():
    """The one place the published schema is looser than the reader: JSON Schema's
    ``integer`` admits 1.0; the records, as ragspan writes, want an integer (the decode
    names the path)."""
    rows = [{"id": "q0", "metrics": {"span_coverage@5": 0.5},
             "failure_evidence": [{"doc_id": "d", "start": 1.0, "end": 2}]}]
    doc = _doc(details={"queries": rows})
    assert _full_validation_error(doc) is None
    assert validation_error(doc) == (
        "$.predicate.details.queries[0].failure_evidence[0].start: Expected `int`, got `float`")


def test_schema_file_at_repository_root_is_the_packaged_one():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert (root / "schemas" / "report-envelope.v2.json").read_bytes() == (
        root / "src" / "ragspan" / "schemas" / "report-envelope.v2.json").read_bytes()


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


def test_report_text_writes_a_typed_kind_as_built_and_refuses_a_kind_without_record():
    """Every kind is built from its records (their shape is the schema's, generated from
    them): written as it is, numpy values made plain. A kind with no record is a bug."""
    from ragspan.report.envelope import report_text

    rows = [{"id": f"q{i}", "metrics": {"span_coverage@5": np.float64(i / 10)}}
            for i in range(6)]
    doc = _memory_doc(rows)
    assert report_text(doc) == canonical_dumps(doc)
    ref = InputRef("run", "run.jsonl", "a" * 64)
    other = statement(kind="nonsense", subject=[ref], inputs=[ref], parameters={},
                      summary={}, details={})
    with pytest.raises(RuntimeError, match="report kind 'nonsense' has no record"):
        report_text(other)


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
