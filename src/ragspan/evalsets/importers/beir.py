"""BEIR (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) -> a doc-level eval set:
one row per judged query with its graded ``relevance``. Corpus offsets index ``text``."""

from __future__ import annotations

from pathlib import Path

from ragspan.base.errors import InputError
from ragspan.evalsets.adapt import provenance
from ragspan.evalsets.build import EvalBuild
from ragspan.io.corpus import read_corpus
from ragspan.io.files import decode_records, iter_json_lines, read_bytes
from ragspan.io.qrels import read_qrels
from ragspan.io.rows import parse_id
from ragspan.records.evalbuild import BuiltRow
from ragspan.records.imported import ImportDetails


def import_beir(root: str, split: str = "test") -> EvalBuild:
    base = Path(root)
    corpus = read_corpus(base / "corpus.jsonl")
    qpath = base / "queries.jsonl"
    queries: dict[str, str] = {}
    first: dict[str, int] = {}
    for line, obj in iter_json_lines(decode_records(read_bytes(qpath), qpath), str(qpath)):
        qid = parse_id(obj.get("_id", obj.get("id")), str(qpath), line, "_id")
        if qid in first:
            raise InputError(f"repeated query id '{qid}' (first on line {first[qid]})",
                             str(qpath), line)
        first[qid] = line
        if not isinstance(obj.get("text"), str):
            raise InputError("'text' must be a string", str(qpath), line)
        queries[qid] = obj["text"]
    qrels_path = base / "qrels" / f"{split}.tsv"
    judgments = read_qrels(qrels_path, "beir").judgments
    missing_q = sorted(q for q in judgments if q not in queries)
    if missing_q:
        raise InputError(f"{len(missing_q)} judged queries are not in queries.jsonl: "
                         f"{missing_q[:5]}", str(qrels_path))
    missing_d = sorted({d for g in judgments.values() for d in g if d not in corpus.documents})
    if missing_d:
        raise InputError(f"{len(missing_d)} judged documents are not in corpus.jsonl: "
                         f"{missing_d[:5]}", str(qrels_path))
    rows = [BuiltRow(id=q, query=queries[q], relevance=dict(sorted(judgments[q].items())))
            for q in sorted(judgments)]
    counts = {"judgments": sum(len(g) for g in judgments.values()),
              "queries_in_file": len(queries)}
    documents = [corpus.documents[d] for d in sorted(corpus.documents)]
    head = provenance(corpus, "beir", split=split)
    return EvalBuild(head, rows, documents, counts, ImportDetails())
