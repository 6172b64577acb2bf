"""``ragspan import traces``: the traces of an application's retrieval, read whatever their
shape (``io.runs.trace_files``) into a run with steps (``io.runs.trace_steps``), written with
a header that records the corpus, the eval set and each question's digests (what ``score``
checks a run against)."""

from __future__ import annotations

import logging

from ragspan.app.eval_build import input_ref
from ragspan.app.output import CommandResult
from ragspan.base.errors import InputError
from ragspan.base.placement import anchoring
from ragspan.base.records import InputRef
from ragspan.io.chunks import read_chunks
from ragspan.io.corpus import read_corpus
from ragspan.io.evalset import query_digests, read_eval_set
from ragspan.io.files import sha256_hex
from ragspan.io.runs.trace_files import read_trace_file
from ragspan.io.runs.trace_steps import TraceOptions, trace_run
from ragspan.io.serialize import jsonl
from ragspan.records.imported import importing
from ragspan.report.envelope import statement

log = logging.getLogger("ragspan")


def run(*, otlp: str, eval_set: str, corpus: str, out: str,
        query_id_attribute: str | None = None, on_ambiguous: str | None = None,
        fuzzy_threshold: float | None = None, chunks: str | None = None,
        doc_key: str | None = None, offset_key: str | None = None,
        max_inflated_bytes: int | None = None) -> CommandResult:
    placed = anchoring({"on_ambiguous": on_ambiguous, "fuzzy_threshold": fuzzy_threshold})
    on_ambiguous, fuzzy_threshold = placed["on_ambiguous"], placed["threshold"]
    evalset, corp = read_eval_set(eval_set), read_corpus(corpus)
    manifest = read_chunks(chunks) if chunks else None
    traces = read_trace_file(otlp, max_inflated_bytes)
    opts = TraceOptions(query_id_attribute, on_ambiguous == "first", fuzzy_threshold,
                        doc_key, offset_key, manifest)
    got = trace_run(traces.spans, otlp, evalset, corp, opts)
    if not got.rows:
        raise InputError(f"no trace matches a question of the eval set ({got.counts['traces']} "
                         f"traces read as {traces.shape}; match them by --query-id-attribute, "
                         "or by the root span's question equal to the question's text)", otlp)
    c = got.counts
    for note in traces.notes:
        log.warning("import traces: %s: %s", otlp, note)
    log.warning("import traces: %s read as %s: %d of %d questions have a trace (%d steps; "
                "%d nested retriever calls folded, %d steps reranked); %d traces match no "
                "question", otlp, traces.shape, c["questions_with_a_trace"],
                len(evalset.queries), c["steps"], c["nested_calls_folded"],
                c["reranked_steps"], c["traces_without_a_question"])
    if c["doc_ids_from_paths"]:
        log.warning("import traces: %d document ids were file paths, each read as the corpus "
                    "document of its file name without extension", c["doc_ids_from_paths"])
    if c["offsets_disagreed"]:
        log.warning("import traces: %d documents gave offsets whose corpus text is not their "
                    "content; their text placed them instead", c["offsets_disagreed"])
    if c["placed_by_document_id"]:
        log.warning("import traces: %d documents gave no content, only an id naming a corpus "
                    "document: each is that whole document (its characters count against the "
                    "budget)", c["placed_by_document_id"])
    if c["rerankers_without_a_step"]:
        log.warning("import traces: %d reranker spans consume no retriever step (none before "
                    "them with their input documents or their parent): left out",
                    c["rerankers_without_a_step"])
    asked = {row.id for row in got.rows}
    header = {"source": "otlp-traces", "corpus_sha256": corp.sha256,
              "eval_set_sha256": evalset.sha256,
              "queries": {q: d for q, d in query_digests(evalset).items() if q in asked}}
    text = jsonl([{"_header": header}, *got.rows])
    inputs = [input_ref("traces", otlp), InputRef("eval_set", eval_set, evalset.sha256),
              InputRef("corpus", corpus, corp.sha256)]
    if manifest is not None:
        inputs.append(InputRef("chunks", chunks or "", manifest.sha256))
    parameters = {"source": "traces", "on_ambiguous": on_ambiguous,
                  "threshold": fuzzy_threshold, "query_id_attribute": query_id_attribute,
                  "doc_key": doc_key, "offset_key": offset_key}
    given, summary, details = importing(
        {k: v for k, v in parameters.items() if v is not None},
        {"queries": len(evalset.queries), "shape": traces.shape, "notes": traces.notes, **c},
        got.details)
    doc = statement(
        kind="import", subject=[InputRef("run", out, sha256_hex(text.encode("utf-8")))],
        inputs=inputs, parameters=given, summary=summary,
        details=details)
    return CommandResult(doc, {out: text})
