"""Eval sets, corpora and spans as text (JSONL, one object per line, UTF-8, deterministic).
Serialising only: writing files, all or nothing, is ``io.outputs``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import msgspec

from ragspan.io.corpus import Document
from ragspan.records.evalbuild import BuiltRow, BuiltSpan, SquadRow


def jsonl(rows: Iterable[Mapping[str, object] | msgspec.Struct]) -> str:
    """One JSON object per line, keys in their order: JSON values (what ``json.dumps``
    takes) or records (a field left unset left out), records inside values too."""
    return "".join(json.dumps(r, ensure_ascii=False, separators=(", ", ": "), default=_plain)
                   + "\n" for r in rows)


def _plain(value: object) -> object:
    """A record as JSON values, its fields in their order (``json.dumps`` asks for what it
    cannot write itself)."""
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def eval_set_text(header: Mapping[str, object],
                  rows: Iterable[BuiltRow | SquadRow | Mapping[str, object]]) -> str:
    """An eval set: the ``_header`` provenance record, then one query per line (a row as a
    record, its keys in the record's order and those left unset left out, or as JSON
    values whose gold spans may be records)."""
    return jsonl([{"_header": header}, *rows])


def corpus_text(documents: Iterable[Document]) -> str:
    out = []
    for doc in documents:
        row: dict[str, object] = {"id": doc.id}
        if doc.title:
            row["title"] = doc.title
        row["text"] = doc.text
        if doc.metadata:
            row["metadata"] = doc.metadata
        out.append(row)
    return jsonl(out)


def built_span(doc_id: str, start: int, end: int, text: str) -> BuiltSpan:
    """A gold span as an eval set writes it (its anchor is added when written)."""
    return BuiltSpan(doc_id=doc_id, start=start, end=end, text=text)
