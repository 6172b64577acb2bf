"""Chroma's chunking evaluation (``questions_df.csv`` + ``corpora/<corpus_id>.md``).

Each row is ``question``, ``references`` (a JSON list of ``{"content", "start_index",
"end_index"}``) and ``corpus_id`` (the stem of a file in ``corpora/``). Every reference must
slice back (``text[start_index:end_index] == content``, the files read as UTF-8 without
newline translation) or the import fails naming the count and the first five. Rows become
queries ``chroma-<row>`` (1-based CSV data row) scoped to their corpus, tagged
``corpus_id``; each reference one gold span with its text.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ragspan.base.errors import InputError
from ragspan.evalsets.adapt import provenance
from ragspan.evalsets.build import EvalBuild, OverlapMerges, verify_slices
from ragspan.io.corpus import Corpus, Document
from ragspan.io.files import decode_records, decode_utf8, read_bytes
from ragspan.io.rows import check_offsets
from ragspan.io.serialize import built_span
from ragspan.records.evalbuild import BuiltRow
from ragspan.records.imported import ImportDetails

COLUMNS = ("question", "references", "corpus_id")


def _references(raw: str, name: str, line: int) -> list[dict[str, Any]]:
    try:
        refs = json.loads(raw)
    except ValueError as exc:
        raise InputError(f"'references' is not JSON: {exc}", name, line) from None
    if not isinstance(refs, list) or not refs:
        raise InputError("'references' must be a non-empty JSON list", name, line)
    for j, r in enumerate(refs):
        if not isinstance(r, dict) or not isinstance(r.get("content"), str):
            raise InputError(f"references[{j}] needs 'content', 'start_index', 'end_index'",
                             name, line)
        check_offsets(r.get("start_index"), r.get("end_index"), name, line, f"references[{j}]")
    return refs


def import_chroma(root: str) -> EvalBuild:
    """The eval set and corpus of Chroma's evaluation folder ``root``."""
    base = Path(root)
    qpath, corpora = base / "questions_df.csv", base / "corpora"
    if not qpath.is_file() or not corpora.is_dir():
        raise InputError("expected 'questions_df.csv' and a 'corpora/' folder", root)
    name = str(qpath)
    reader = csv.DictReader(io.StringIO(decode_records(read_bytes(qpath), name), newline=""))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", name, 1)
    texts: dict[str, str] = {}
    rows: list[BuiltRow] = []
    counts = {"questions": 0, "references": 0, "duplicate_references": 0}
    merges = OverlapMerges()
    for number, rec in enumerate(reader, start=1):
        line = reader.line_num
        corpus_id = rec["corpus_id"]
        if not corpus_id or "/" in corpus_id or "\\" in corpus_id or corpus_id.startswith("."):
            raise InputError(f"'corpus_id' {corpus_id!r} is not a file name", name, line)
        if corpus_id not in texts:
            path = corpora / f"{corpus_id}.md"
            if not path.is_file():
                raise InputError(f"corpus '{corpus_id}' has no file {path.name} in corpora/",
                                 name, line)
            texts[corpus_id] = decode_utf8(read_bytes(path), path)
        refs = _references(rec["references"], name, line)
        unique = {(r["start_index"], r["end_index"]): r for r in refs}
        counts["duplicate_references"] += len(refs) - len(unique)
        spans = [built_span(corpus_id, r["start_index"], r["end_index"], r["content"])
                 for r in unique.values()]
        qid = f"chroma-{number:04d}"
        spans = merges.merge(qid, spans, texts.__getitem__)
        rows.append(BuiltRow(id=qid, query=rec["question"], doc_id=corpus_id, gold_spans=spans,
                             tags={"corpus_id": corpus_id}))
        counts["questions"] += 1
        counts["references"] += len(spans)
    if not rows:
        raise InputError("no questions", name)
    documents = [Document(d, texts[d]) for d in sorted(texts)]
    verify_slices(rows, documents, "Chroma", name)
    corpus = Corpus(root, "", {d.id: d for d in documents})
    counts["overlapping_merged"] = merges.count
    return EvalBuild(provenance(corpus, "chroma"), rows, documents, counts,
                     ImportDetails(overlapping_merged=merges.listed))
