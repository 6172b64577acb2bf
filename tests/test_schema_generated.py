"""The published report schema's part for every typed kind is generated from the records
(``report.schema_build``, ``make schema``): the committed file is what the generator writes, every
golden report validates against it with jsonschema, and a typed kind's field of the wrong
type fails it where it did not before (the hand-written schema left those kinds' summaries
unchecked)."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from conftest import golden_reports as statements
from ragspan.records.kinds import TYPED_KINDS
from ragspan.report.envelope import validation_error
from ragspan.report.schema_build import SCHEMA_PATH, generated, schema_text


def test_the_committed_schema_is_the_generated_one():
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert schema_text(generated(json.loads(committed))) == committed, \
        "run `make schema` and commit the schema"


def test_every_golden_report_validates_against_the_schema():
    validator = Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    found = statements()
    assert {doc["predicate"]["kind"] for _, doc in found} >= {"validate", "leakage", "overlap",
                                                              "migrate", "plan", "score.span",
                                                              "compare"}
    for path, doc in found:
        errors = list(validator.iter_errors(doc))
        assert not errors, f"{path.name}: {errors[0].message} at {list(errors[0].path)}"


@pytest.mark.parametrize("kind, edit, where", [
    ("validate", lambda p: p["summary"].update(errors="3"), "$.predicate.summary.errors"),
    ("leakage", lambda p: p["details"]["leaks"][0].update(passage=[]),
     "$.predicate.details.leaks[0].passage"),
    ("migrate", lambda p: p["summary"]["spans"].pop("moved"), "$.predicate.summary.spans"),
    ("plan", lambda p: p["summary"].update(queries_to_pass=-0.5),
     "$.predicate.summary.queries_to_pass"),
    ("adapt", lambda p: p["details"]["derived_ids"].append({"line": "7", "id": "q-1"}),
     "$.predicate.details.derived_ids[0].line"),
])
def test_a_typed_kind_out_of_shape_fails_the_schema(kind, edit, where):
    assert kind in TYPED_KINDS
    doc = next(doc for _, doc in statements() if doc["predicate"]["kind"] == kind)
    edit(doc["predicate"])
    problem = validation_error(doc)
    assert problem is not None and problem.startswith(where), problem
