"""``ragspan import traces``: OpenTelemetry traces of an application's retrieval, read into a
run with steps (``evalsets.importers.traces``), written with a header that records the
corpus, the eval set and each question's digests (what ``score`` checks a run against)."""

from __future__ import annotations

import logging

from ragspan.app.eval_build import input_ref
from ragspan.app.output import CommandResult
from ragspan.base.errors import InputError
from ragspan.base.records import InputRef
from ragspan.evalsets.importers.traces import import_traces
from ragspan.io.corpus import read_corpus
from ragspan.io.evalset import query_digests, read_eval_set
from ragspan.io.files import sha256_hex
from ragspan.io.serialize import jsonl
from ragspan.report.envelope import statement

log = logging.getLogger("ragspan")


def run(*, otlp: str, eval_set: str, corpus: str, out: str,
        query_id_attribute: str | None = None, on_ambiguous: str = "error",
        fuzzy_threshold: float = 0.9) -> CommandResult:
    evalset, corp = read_eval_set(eval_set), read_corpus(corpus)
    got = import_traces(otlp, evalset, corp, query_id_attribute, on_ambiguous == "first",
                        fuzzy_threshold)
    if not got.rows:
        raise InputError(f"no trace matches a question of the eval set ({got.counts['traces']} "
                         "traces; match them by --query-id-attribute, or by the root span's "
                         "input.value equal to the question's text)", otlp)
    c = got.counts
    log.warning("import traces: %d of %d questions have a trace (%d steps); %d traces match "
                "no question", c["questions_with_a_trace"], len(evalset.queries), c["steps"],
                c["traces_without_a_question"])
    asked = {row["id"] for row in got.rows}
    header = {"source": "otlp-traces", "corpus_sha256": corp.sha256,
              "eval_set_sha256": evalset.sha256,
              "queries": {q: d for q, d in query_digests(evalset).items() if q in asked}}
    text = jsonl([{"_header": header}, *got.rows])
    doc = statement(
        kind="import", subject=[InputRef("run", out, sha256_hex(text.encode("utf-8")))],
        inputs=[input_ref("traces", otlp), InputRef("eval_set", eval_set, evalset.sha256),
                InputRef("corpus", corpus, corp.sha256)],
        parameters={"source": "traces", "query_id_attribute": query_id_attribute,
                    "on_ambiguous": on_ambiguous, "threshold": fuzzy_threshold}
        if query_id_attribute is not None else
        {"source": "traces", "on_ambiguous": on_ambiguous, "threshold": fuzzy_threshold},
        summary={"queries": len(evalset.queries), **c}, details=got.details)
    return CommandResult(doc, {out: text})
