"""``ragspan leakage``: eval items whose text sits in a corpus document."""

from __future__ import annotations

import logging

from msgspec import UNSET, UnsetType

from ragspan.app.output import CommandResult
from ragspan.base.errors import UsageError
from ragspan.base.records import InputRef
from ragspan.base.verdicts import findings_verdict
from ragspan.base.voice import setting
from ragspan.base.warned import said
from ragspan.contamination.items import FIELDS, read_items
from ragspan.contamination.leakage import embedding_leaks, exact_leaks
from ragspan.io.corpus import read_corpus
from ragspan.records.contamination import LeakageDetails, LeakageParameters, LeakageSummary
from ragspan.report.envelope import statement

log = logging.getLogger("ragspan")


def run(*, eval_set: str, corpus: str, fields: tuple[str, ...] = (), ngram: int = 3,
        threshold: float = 0.6, method: str = "exact", similarity: float = 0.9,
        model: str = "all-MiniLM-L6-v2", chunk_size: int = 1000, cache_dir: str | None = None,
        max_records: int = 1_000_000, max_leaks: int = 0) -> CommandResult:
    """Exit 4 when more than ``max_leaks`` items leak (``ragspan.base.verdicts``).
    ``fields`` empty: ``query``, and ``answer`` when the items carry one
    (``contamination.items``)."""
    asked = tuple(dict.fromkeys(fields)) or None
    bad = [f for f in asked or () if f not in FIELDS]
    if bad:
        raise UsageError(f"{setting('field')} must be one of {', '.join(FIELDS)}, got {bad}")
    if ngram < 1:
        raise UsageError(f"{setting('ngram')} must be >= 1")
    corp = read_corpus(corpus, max_records=max_records)
    read = read_items(eval_set, corp, asked, max_records)
    items, items_sha, fields = read.items, read.sha256, read.fields
    for name, missing in read.without.items():
        log.warning("%d of the %d items have no %s text: checked on their other fields", missing,
                    read.count, name, extra=said(f"items_without_{name}", missing))
    vocabulary: int | UnsetType = UNSET
    chunks: int | UnsetType = UNSET
    if method == "exact":
        leaks, vocabulary = exact_leaks(items, corp, ngram, threshold)
        params = LeakageParameters(method="exact", ngram=ngram, threshold=threshold,
                                   fields=list(fields), max_records=max_records)
    else:
        leaks, chunks, model_id = embedding_leaks(items, corp, similarity, model, chunk_size,
                                                  cache_dir)
        params = LeakageParameters(method="embedding", similarity=similarity, model=model_id,
                                   chunk_size=chunk_size, approximate=True,
                                   fields=list(fields), max_records=max_records)
    leaking = sorted({f.id for f in leaks})
    verdict = findings_verdict(len(leaking), max_leaks)
    summary = LeakageSummary(
        items=read.count, texts_checked=len(items), documents=len(corp),
        leaking_items=len(leaking),
        findings_by_field={f: sum(1 for x in leaks if x.field == f) for f in fields},
        max_leaks=max_leaks, vocabulary=vocabulary, chunks=chunks,
        items_without_field=dict(read.without) if read.without else UNSET)
    return CommandResult(statement(
        kind="leakage",
        subject=[InputRef("eval_set", eval_set, items_sha)],
        inputs=[InputRef("eval_set", eval_set, items_sha),
                InputRef("corpus", corpus, corp.sha256)],
        parameters=params, summary=summary,
        details=LeakageDetails(leaks),
        verdict=verdict.verdict, exit_code=verdict.exit_code,
    ))
