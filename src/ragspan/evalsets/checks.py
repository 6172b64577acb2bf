"""``ragspan validate``: is this eval set trustworthy against this corpus (and this chunking)?

Checks, each finding naming the query (and the span):

- every gold span lies inside its document, and a recorded answer ``text`` slices back;
- no query without gold evidence (no spans and no doc-level judgments);
- no gold span listed twice in a query (an error: it counts twice in the LegalBench-RAG
  character metrics, the duplicate-annotation bug that reads as 200% recall), and no two gold
  spans of a query that overlap (an error too: their shared characters count twice in those
  metrics; every importer merges them into their union, spans that only touch stay two);
- no gold answer text that appears verbatim in its own query (a warning: the question holds
  its answer, so retrieval by the question's words finds it trivially); an answer under 20
  characters counts when it stands as whole words ("$45" in "Was it $45?");
- the provenance digests in the eval set's ``_header`` match the corpus texts;
- with a chunk manifest, the **coverage gate**: gold spans that no single chunk contains whole
  (severed by the chunker; the contained share is the chunker's *span integrity*), and gold
  spans that cannot reach the grounding threshold tau even if every chunk were retrieved.

Errors make the report's verdict ``error`` (exit 3); severed spans are warnings unless
``min_span_integrity`` is set and not met.
"""

from __future__ import annotations

import re

from ragspan.base.errors import InputError
from ragspan.io.chunks import ChunkManifest, chunks_outside_documents
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalSet, corpus_drift
from ragspan.records.validate import Finding, Severity, SpanIntegrity
from ragspan.scoring.chunking import DocChunks, check_chunks


def gold_findings(evalset: EvalSet) -> list[Finding]:
    """What needs no corpus: queries without gold evidence, gold spans listed twice in a
    query, and two gold spans of a query that overlap (each an error)."""
    findings: list[Finding] = []
    for q in evalset.queries:
        if not q.gold_spans and not q.relevance:
            findings.append(Finding("empty_gold", "error", q.id,
                                     "no gold spans and no doc-level judgments"))
        seen: dict[tuple[str, int, int], int] = {}
        for i, s in enumerate(q.gold_spans):
            key = (s.doc_id, s.start, s.end)
            if key in seen:
                findings.append(Finding(
                    "duplicate_gold_span", "error", q.id,
                    f"gold_spans[{i}] repeats gold_spans[{seen[key]}] ('{s.doc_id}' "
                    f"[{s.start}, {s.end})): merge them"))
            seen.setdefault(key, i)
        spans = sorted({(s.doc_id, s.start, s.end) for s in q.gold_spans})
        for (d1, s1, e1), (d2, s2, e2) in zip(spans, spans[1:]):
            if d1 == d2 and s2 < e1:
                findings.append(Finding(
                    "overlapping_gold_spans", "error", q.id,
                    f"gold spans '{d1}' [{s1}, {e1}) and [{s2}, {e2}) share "
                    f"{min(e1, e2) - s2} characters: merge them into [{s1}, {max(e1, e2)})"))
    return findings


def _leaked(answer: str, query: str) -> bool:
    """Whether a gold answer is written in its query: verbatim (case-folded) for an answer of
    20 characters or more; a shorter one of at least 3 characters ("$45", "12 patents") as a
    whole word sequence, so "12" in "2012" or "net" in "network" is no leak."""
    if len(answer) >= 20:
        return answer.casefold() in query.casefold()
    if len(answer) < 3:
        return False
    return re.search(r"(?<!\w)" + re.escape(answer.casefold()) + r"(?!\w)",
                     query.casefold()) is not None


def check_eval_set(evalset: EvalSet, corpus: Corpus) -> list[Finding]:
    findings = gold_findings(evalset)

    def add(check: str, severity: Severity, qid: str | None, message: str) -> None:
        findings.append(Finding(check, severity, qid, message))

    for q in evalset.queries:
        for i, s in enumerate(q.gold_spans):
            doc = corpus.documents.get(s.doc_id)
            if doc is None:
                add("unknown_document", "error", q.id, f"gold_spans[{i}]: no document '{s.doc_id}'")
            elif s.end > len(doc.text):
                add("span_outside_document", "error", q.id,
                    f"gold_spans[{i}]: end={s.end} past the end of '{s.doc_id}' ({len(doc.text)})")
            elif s.text is not None and doc.text[s.start:s.end] != s.text:
                add("text_mismatch", "error", q.id,
                    f"gold_spans[{i}]: '{s.doc_id}'[{s.start}:{s.end}] does not slice back to "
                    f"its text {s.text[:40]!r}")
        for i, s in enumerate(q.gold_spans):
            doc = corpus.documents.get(s.doc_id)
            answer = (s.text if s.text is not None else
                      doc.text[s.start:s.end] if doc is not None else "").strip()
            if _leaked(answer, q.query):
                add("gold_in_query", "warning", q.id,
                    f"gold_spans[{i}]'s text appears verbatim in the query: {answer[:40]!r}")
        for d in q.relevance:
            if d not in corpus.documents:
                add("unknown_document", "error", q.id, f"judged document '{d}' is not in the corpus")
    recorded = (evalset.header or {}).get("documents") or {}
    for doc_id in sorted(recorded):
        if doc_id not in corpus.documents:
            add("provenance", "error", None, f"document '{doc_id}' of the header is not in the corpus")
    drifted, intact = corpus_drift(evalset, corpus)
    for drifted_doc in drifted:
        add("corpus_drift", "error", drifted_doc.query, drifted_doc.message)
    for doc_id in intact:
        add("provenance", "warning", None,
            f"document '{doc_id}' changed since the eval set was made; the gold spans in it "
            "are intact (each anchored span still matches its anchor)")
    return findings


def refuse_errors(evalset: EvalSet, corpus: Corpus | None) -> None:
    """What ``validate`` calls an error is an error wherever the eval set is scored: the
    first is an InputError naming the eval set, its line and the query, with the count
    (``gold_findings`` without a corpus, every check of ``check_eval_set`` with one)."""
    found = check_eval_set(evalset, corpus) if corpus is not None else gold_findings(evalset)
    errors = sorted((f for f in found if f.severity == "error"),
                    key=lambda f: f.check != "corpus_drift")  # drift explains the rest
    if not errors:
        return
    first = errors[0]
    line = next((q.line for q in evalset.queries if q.id == first.query), None)
    more = f" ({len(errors)} errors; ragspan validate lists them)" if len(errors) > 1 else ""
    where = f"query '{first.query}': " if first.query is not None else ""
    raise InputError(f"{where}{first.message}{more}", evalset.path, line)


def chunk_findings(manifest: ChunkManifest, evalset: EvalSet, corpus: Corpus, tau: float,
                   min_span_integrity: float | None
                   ) -> tuple[list[Finding], SpanIntegrity]:
    """The coverage gate of a chunk manifest: its findings and its coverage summary; a span
    integrity below ``min_span_integrity`` is an error finding."""
    chunks_outside_documents(manifest, corpus)
    findings: list[Finding] = []
    by_doc = {d: DocChunks(cs) for d, cs in manifest.by_doc().items()}
    found, coverage = check_chunks(evalset, by_doc, tau)
    findings += found
    if min_span_integrity is not None and coverage.span_integrity < min_span_integrity:
        findings.append(Finding("span_integrity", "error", None,
                                f"span integrity {coverage.span_integrity:.4f} < "
                                f"--min-span-integrity {min_span_integrity}"))
    return findings, coverage
