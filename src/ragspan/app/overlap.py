"""``ragspan overlap``: documents shared by two corpora."""

from __future__ import annotations

from msgspec import UNSET

from ragspan.app.output import CommandResult
from ragspan.base.errors import UsageError
from ragspan.base.records import InputRef
from ragspan.base.verdicts import findings_verdict
from ragspan.base.voice import setting
from ragspan.contamination.overlap import SHINGLE, exact_pairs, minhash_pairs
from ragspan.io.corpus import read_corpus
from ragspan.records.contamination import OverlapDetails, OverlapParameters, OverlapSummary
from ragspan.report.envelope import statement


def run(*, a: str, b: str, method: str = "exact", threshold: float = 0.8,
        max_records: int = 1_000_000, max_duplicates: int = 0,
        shingle: int | None = None) -> CommandResult:
    """Exit 4 when more than ``max_duplicates`` pairs are found (``ragspan.base.verdicts``).
    ``shingle``: MinHash's word n-gram size (default 5)."""
    if shingle is not None and method != "minhash":
        raise UsageError(f"{setting('shingle')} sets the word n-gram size of {setting('method')} minhash")
    ca, cb = read_corpus(a, max_records=max_records), read_corpus(b, max_records=max_records)
    minhash = None
    if method == "exact":
        pairs = exact_pairs(ca, cb)
        params = OverlapParameters(method="exact", max_records=max_records)
    else:
        if not 0 < threshold <= 1:
            raise UsageError(f"{setting('threshold')} must be in (0, 1]")
        size = SHINGLE if shingle is None else shingle
        pairs, minhash = minhash_pairs(ca, cb, threshold, size)
        params = OverlapParameters(
            method="minhash", max_records=max_records, threshold=threshold,
            shingle_words=size, bands=minhash.bands, rows=minhash.rows,
            permutations=minhash.permutations,
            miss_probability_at_threshold=minhash.miss_probability_at_threshold,
            candidates_verified=minhash.candidates_verified)
    verdict = findings_verdict(len(pairs), max_duplicates)
    summary = OverlapSummary(
        documents_a=len(ca), documents_b=len(cb), duplicate_pairs=len(pairs),
        documents_a_duplicated=len({p.a for p in pairs}), max_duplicates=max_duplicates,
        miss_probability_at_threshold=UNSET if minhash is None
        else minhash.miss_probability_at_threshold)
    return CommandResult(statement(
        kind="overlap", subject=[InputRef("b", b, cb.sha256)],
        inputs=[InputRef("a", a, ca.sha256), InputRef("b", b, cb.sha256)],
        parameters=params, summary=summary,
        details=OverlapDetails(pairs),
        verdict=verdict.verdict, exit_code=verdict.exit_code,
    ))
