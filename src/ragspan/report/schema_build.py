"""The published report schema (``schemas/report-envelope.v1.json``), its part for every
typed kind generated from the records (``make schema``): JSON at the edge, so it lives with
the report layer, not in ``records``.

The envelope, the score kinds and the kinds not yet typed are written by hand in the file;
``generated`` keeps those and replaces, for each kind of ``records.kinds.TYPED_KINDS``, one
``if kind == K then <its predicate record's schema>`` clause of the predicate's ``allOf``,
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

from ragspan.records.kinds import TYPED_KINDS

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "report-envelope.v1.json"
HAND_DEFS = ("digestSet",)  # $defs written by hand; every other one is generated


def _typed_clause(clause: Any) -> bool:
    """An ``allOf`` clause this module wrote: ``if`` one typed kind, ``then`` its record."""
    kind = clause.get("if", {}).get("properties", {}).get("kind", {})
    return isinstance(kind, dict) and kind.get("const") in TYPED_KINDS


def _any_json(kind: type) -> dict[str, Any]:
    """The schema of a record field holding a user's JSON as given (``object``, a run's
    header's values): any value (msgspec needs a keyword to write, so it says so). A record
    field of any other type msgspec cannot describe is a record to type, not to let through:
    TypeError."""
    if kind is object:
        return {"description": "any JSON value, kept as given"}
    raise TypeError(f"no JSON Schema for {kind!r}: type the record's field")


def generated(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its typed kinds' clauses and definitions made anew from the records."""
    out = copy.deepcopy(schema)
    predicate = out["properties"]["predicate"]
    clauses = [c for c in predicate.get("allOf", []) if not _typed_clause(c)]
    schemas, components = msgspec.json.schema_components(
        list(TYPED_KINDS.values()), ref_template="#/$defs/{name}", schema_hook=_any_json)
    clauses += [{"if": {"properties": {"kind": {"const": kind}}}, "then": s}
                for kind, s in zip(TYPED_KINDS, schemas)]
    predicate["allOf"] = clauses
    hand = {k: v for k, v in out.get("$defs", {}).items() if k in HAND_DEFS}
    out["$defs"] = {**hand, **dict(sorted(components.items()))}
    return out


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
