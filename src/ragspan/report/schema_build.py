"""The published report schema (``schemas/report-envelope.v2.json``), its part for every
typed kind generated from the records (``make schema``): JSON at the edge, so it lives with
the report layer, not in ``records``.

The envelope is written by hand in the file; ``generated`` keeps it and replaces, for each
kind of ``records.kinds.TYPED_KINDS``, one ``if kind == K then <its predicate record's
schema>`` clause of the predicate's ``allOf`` (the score kinds: a clause at the root by
format, v1 or v2),
with the records' schemas under ``$defs`` (msgspec's JSON Schema of each record: field
types, ranges, which fields are required, the docstrings as descriptions). Running it on the
committed file gives the committed file (``tests/test_schema_generated.py``)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from ragspan.records.envelope import PREDICATE_TYPE, PREDICATE_TYPE_V1
from ragspan.records.kinds import TYPED_KINDS, V1_KINDS

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "report-envelope.v2.json"
HAND_DEFS = ("digestSet",)  # $defs written by hand; every other one is generated


def _typed_clause(clause: Any) -> bool:
    """An ``allOf`` clause this module wrote: ``if`` one typed kind, ``then`` its record."""
    kind = clause.get("if", {}).get("properties", {}).get("kind", {})
    return isinstance(kind, dict) and kind.get("const") in TYPED_KINDS


def envelope_only(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the clauses ``generated`` writes (each typed kind's predicate
    record, the score kinds' at the root): what is left is the envelope written by hand,
    what a report is checked against once its predicate has been decoded into its kind's
    record (those clauses are that record's schema: the decode checked them)."""
    out = copy.deepcopy(schema)
    out.pop("allOf", None)
    predicate = out["properties"]["predicate"]
    predicate["allOf"] = [c for c in predicate.get("allOf", []) if not _typed_clause(c)]
    return out


def _any_json(kind: type) -> dict[str, Any]:
    """The schema of a record field holding a user's JSON as given (``object``, a run's
    header's values): any value (msgspec needs a keyword to write, so it says so). A record
    field of any other type msgspec cannot describe is a record to type, not to let through:
    TypeError."""
    if kind is object:
        return {"description": "any JSON value, kept as given"}
    raise TypeError(f"no JSON Schema for {kind!r}: type the record's field")


def generated(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its typed kinds' clauses and definitions made anew from the records.
    A kind whose format v1 differs (``records.kinds.V1_KINDS``, the score reports) is checked
    by a clause at the root, where ``predicateType`` says which format its predicate is in:
    v1's record for a report that names v1, v2's for any other."""
    out = copy.deepcopy(schema)
    out["properties"]["predicateType"] = {"enum": [PREDICATE_TYPE_V1, PREDICATE_TYPE]}
    predicate = out["properties"]["predicate"]
    clauses = [c for c in predicate.get("allOf", []) if not _typed_clause(c)]
    records = list(TYPED_KINDS.values()) + list(V1_KINDS.values())
    schemas, components = msgspec.json.schema_components(
        records, ref_template="#/$defs/{name}", schema_hook=_any_json)
    of = dict(zip(TYPED_KINDS, schemas))
    clauses += [{"if": {"properties": {"kind": {"const": kind}}}, "then": s}
                for kind, s in of.items() if kind not in V1_KINDS]
    predicate["allOf"] = clauses
    out["allOf"] = [_by_format(kind, v1, of[kind])
                    for kind, v1 in zip(V1_KINDS, schemas[len(TYPED_KINDS):])]
    hand = {k: v for k, v in out.get("$defs", {}).items() if k in HAND_DEFS}
    out["$defs"] = {**hand, **dict(sorted(components.items()))}
    return out


def _by_format(kind: str, v1: dict[str, Any], v2: dict[str, Any]) -> dict[str, Any]:
    """The root clause of a kind read in two formats: its v1 record when ``predicateType``
    names v1, else its v2 record."""
    def of_kind(extra: dict[str, Any]) -> dict[str, Any]:
        return {"properties": {**extra, "predicate": {"properties": {"kind": {"const": kind}}}}}

    return {"if": {**of_kind({"predicateType": {"const": PREDICATE_TYPE_V1}}),
                   "required": ["predicateType"]},
            "then": {"properties": {"predicate": v1}},
            "else": {"if": of_kind({}), "then": {"properties": {"predicate": v2}}}}


def schema_text(schema: dict[str, Any]) -> str:
    """The file's text: two-space indents, keys in the order given, a final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    """``make schema``: rewrite the committed schema with its generated part."""
    current = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    text = schema_text(generated(current))
    changed = text != SCHEMA_PATH.read_text(encoding="utf-8")
    SCHEMA_PATH.write_text(text, encoding="utf-8")
    sys.stdout.write(f"{SCHEMA_PATH}: {'rewritten' if changed else 'unchanged'}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
