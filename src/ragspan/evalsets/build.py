"""What ``adapt`` and the importers produce, and how it is written: an eval set with its
provenance header plus the corpus its offsets index, written together or not at all."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ragspan.base.errors import InputError
from ragspan.io.corpus import Document
from ragspan.io.writers import corpus_text, eval_set_text

SHOW_MISMATCHES = 5


@dataclass
class EvalBuild:
    """Eval rows (each span verified), the documents they index, counts and listed findings."""

    header: dict[str, Any]
    rows: list[dict[str, Any]]
    documents: list[Document]
    counts: dict[str, int] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


def verify_slices(rows: list[dict[str, Any]], documents: list[Document], what: str,
                  path: str) -> None:
    """Every gold span must slice back to its recorded text; mismatches fail with the count
    and the first five examples (never silently dropped)."""
    texts = {d.id: d.text for d in documents}
    bad = []
    for row in rows:
        for s in row.get("gold_spans", []):
            got = texts.get(s["doc_id"], "")[s["start"]:s["end"]]
            if got != s["text"]:
                bad.append(f"{row['id']} {s['doc_id']}[{s['start']}:{s['end']}]={got[:40]!r} "
                           f"!= {s['text'][:40]!r}")
    if bad:
        shown = "; ".join(bad[:SHOW_MISMATCHES])
        raise InputError(f"{len(bad)} {what} spans do not slice back to their answer text: "
                         f"{shown}", path)


def build_files(build: EvalBuild, out: str, corpus_out: str | None) -> dict[str, str]:
    """The eval set's text (and the corpus's), by output path, to be written together."""
    texts = {out: eval_set_text(build.header, build.rows)}
    if corpus_out:
        texts[corpus_out] = corpus_text(build.documents)
    return texts


def sha256_of(texts: dict[str, str]) -> dict[str, str]:
    return {p: hashlib.sha256(t.encode("utf-8")).hexdigest() for p, t in texts.items()}
