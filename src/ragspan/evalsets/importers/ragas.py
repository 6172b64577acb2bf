"""Ragas-style rows -> an eval set and a span run, against a corpus the user gives.

A row (JSONL or a JSON array, as ``EvaluationDataset.to_jsonl`` writes) holds the question
(``user_input``, else ``question``), ``reference_contexts`` (the gold evidence, texts),
``retrieved_contexts`` (what the retriever returned, best first, texts) and optionally
``reference`` (the answer) and ``id``. Each context is placed in the corpus (``io.placement``:
exact, normalised, fuzzy; searched in the row's ``doc_id`` when it gives one, else the whole
corpus): a reference context becomes a gold span (its text the corpus slice), a retrieved one
a run item with offsets and that text (so ``score --corpus`` checks it again). A row's
reference contexts placed twice at one place count once; overlapping ones become their union
(``overlapping_merged``, as every importer does). A context that
cannot be placed is an InputError naming the row and the context; an ambiguous one too,
unless ``on_ambiguous = "first"``. ``reference`` and any other field are kept as tags (as
``adapt`` keeps them). Queries without an ``id`` are ``ragas-<n>`` (1-based).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec import UNSET

from ragspan.base.errors import InputError
from ragspan.base.placement import PLACEMENT_DEFAULTS
from ragspan.evalsets.adapt import flatten_tags, provenance, resolve_doc
from ragspan.evalsets.build import EvalBuild, OverlapMerges
from ragspan.io.corpus import Corpus
from ragspan.io.files import decode_records, iter_json_records, read_bytes
from ragspan.io.placement import DEFAULT_THRESHOLD, Placed, Placer, Unplaced, preview
from ragspan.io.rows import parse_id
from ragspan.io.serialize import built_span
from ragspan.records.evalbuild import BuiltRow
from ragspan.records.imported import ImportDetails
from ragspan.records.run_rows import RankPlaced, RunItem, RunRow

KNOWN = ("id", "user_input", "question", "doc_id", "reference_contexts", "retrieved_contexts")


def _contexts(obj: dict[str, Any], key: str, path: str, line: int,
              required: bool) -> list[str]:
    raw = obj.get(key)
    if raw is None and not required:
        return []
    if not isinstance(raw, list) or (required and not raw) or \
            not all(isinstance(t, str) and t.strip() for t in raw):
        raise InputError(f"'{key}' must be a {'non-empty ' if required else ''}list of "
                         "non-empty strings", path, line)
    return raw


class _Placing:
    def __init__(self, corpus: Corpus, on_ambiguous: str, threshold: float):
        self.corpus = corpus
        self.placer = Placer(corpus, threshold)
        self.first = on_ambiguous == "first"
        self.all_docs = sorted(corpus.documents)
        self.counts: dict[str, int] = {}

    def place(self, text: str, docs: list[str], what: str, path: str,
              line: int) -> Placed:
        try:
            p = self.placer.place(text, docs, first=self.first)
        except Unplaced as exc:
            hint = "--on-ambiguous first takes the first" if exc.places else \
                "is it from this corpus?"
            raise InputError(f"{what}: cannot place {preview(text)}: {exc.reason} ({hint})",
                             path, line) from None
        key = f"{what.split('[', 1)[0]}_{p.method}"
        self.counts[key] = self.counts.get(key, 0) + 1
        if p.ambiguous:
            self.counts["ambiguous_first"] = self.counts.get("ambiguous_first", 0) + 1
        return p


def _run_row(qid: str, retrieved: list[Placed], corpus: Corpus) -> RunRow:
    """A span-run row of placed retrieved contexts; ``placed`` names the ranks placed other
    than exactly (left out when every one was exact)."""
    placed = [RankPlaced(rank=i + 1, method=p.method, similarity=p.similarity)
              for i, p in enumerate(retrieved) if p.method != "exact"]
    return RunRow(id=qid, retrieved=[RunItem(doc_id=p.doc_id, start=p.start, end=p.end,
                                             text=corpus.text(p.doc_id)[p.start:p.end])
                                     for p in retrieved], placed=placed or UNSET)


def import_ragas(rows_path: str, corpus: Corpus, *,
                 on_ambiguous: str = PLACEMENT_DEFAULTS["on_ambiguous"],
                 threshold: float = DEFAULT_THRESHOLD
                 ) -> tuple[EvalBuild, list[RunRow]]:
    """The eval set and the span run of a Ragas-style file over ``corpus``."""
    path = str(rows_path)
    text = decode_records(read_bytes(rows_path), path)
    placing = _Placing(corpus, on_ambiguous, threshold)
    rows: list[BuiltRow] = []
    run: list[RunRow] = []
    seen: set[str] = set()
    kept: dict[str, int] = {}
    merges = OverlapMerges()
    for n, (line, obj) in enumerate(iter_json_records(text, path), start=1):
        qid = parse_id(obj["id"], path, line) if "id" in obj else f"ragas-{n:04d}"
        if qid in seen:
            raise InputError(f"repeated query id '{qid}'", path, line)
        seen.add(qid)
        query = obj.get("user_input", obj.get("question"))
        if not isinstance(query, str) or not query.strip():
            raise InputError("'user_input' (or 'question') must be a non-empty string", path,
                             line)
        scope = resolve_doc(corpus, obj["doc_id"], path, line, "doc_id") if "doc_id" in obj \
            else None
        docs = [scope] if scope is not None else placing.all_docs
        gold = [placing.place(t, docs, f"reference_contexts[{i}]", path, line)
                for i, t in enumerate(_contexts(obj, "reference_contexts", path, line, True))]
        unique = {(g.doc_id, g.start, g.end): g for g in gold}
        spans = merges.merge(qid, [built_span(g.doc_id, g.start, g.end,
                                             corpus.text(g.doc_id)[g.start:g.end])
                                   for g in unique.values()], corpus.text)
        extra = flatten_tags({k: v for k, v in obj.items() if k not in KNOWN})
        for key in extra:
            kept[key] = kept.get(key, 0) + 1
        rows.append(BuiltRow(id=qid, query=query, doc_id=UNSET if scope is None else scope,
                             gold_spans=spans, tags=dict(extra) if extra else UNSET))
        run.append(_run_row(qid, [placing.place(t, docs, f"retrieved_contexts[{i}]", path, line)
                                  for i, t in enumerate(_contexts(obj, "retrieved_contexts",
                                                                  path, line, False))],
                            corpus))
    if not rows:
        raise InputError("the file holds no rows", path)
    counts: dict[str, Any] = {"rows": len(rows), **dict(sorted(placing.counts.items()))}
    counts["overlapping_merged"] = merges.count
    if kept:
        counts["kept_as_tags"] = dict(sorted(kept.items()))
    asked = sorted({g.doc_id for r in rows for g in r.spans()})
    documents = [corpus.documents[d] for d in sorted(corpus.documents)]
    header = provenance(corpus, "ragas", rows=Path(path).name, documents_asked=len(asked),
                        on_ambiguous=on_ambiguous, threshold=threshold)
    return EvalBuild(header, rows, documents, counts,
                     ImportDetails(overlapping_merged=merges.listed)), run
