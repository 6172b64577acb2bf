"""Eval sets, corpora and spans as text (JSONL, one object per line, UTF-8, deterministic).
Serialising only: writing files, all or nothing, is ``io.outputs``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ragspan.io.corpus import Document


def jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(", ", ": ")) + "\n" for r in rows)


def eval_set_text(header: dict[str, Any], rows: Iterable[dict[str, Any]]) -> str:
    """An eval set: the ``_header`` provenance record, then one query per line."""
    return jsonl([{"_header": header}, *rows])


def corpus_text(documents: Iterable[Document]) -> str:
    out = []
    for doc in documents:
        row: dict[str, Any] = {"id": doc.id}
        if doc.title:
            row["title"] = doc.title
        row["text"] = doc.text
        if doc.metadata:
            row["metadata"] = doc.metadata
        out.append(row)
    return jsonl(out)


def span_json(doc_id: str, start: int, end: int, text: str) -> dict[str, Any]:
    return {"doc_id": doc_id, "start": start, "end": end, "text": text}
