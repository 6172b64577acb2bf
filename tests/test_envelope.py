"""Canonical JSON, the in-toto envelope, SOURCE_DATE_EPOCH and schema validation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragspan.envelope import (
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    InputRef,
    canonical_dumps,
    created_at,
    statement,
    validation_error,
)
from ragspan.errors import InputError


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


def test_schema_file_at_repository_root_is_the_packaged_one():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert (root / "schemas" / "report-envelope.v1.json").read_bytes() == (
        root / "src" / "ragspan" / "schemas" / "report-envelope.v1.json").read_bytes()
