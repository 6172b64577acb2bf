"""The client readout (``--audience client``): four sections and nothing else.

1. Where retrieval stands today: the baseline's complete grounding, in words.
2. Top failure patterns: the baseline's most frequent failure labels, each with two real
   queries (the first two in the eval set's order) and the text of the clauses they missed,
   sliced from the corpus by the gold span's offsets (at most ``QUOTE_CHARS`` characters,
   then `` […]``).
3. Fix backlog: the levers ranked by how many failing questions each can move, with the
   effect measured by a pair isolating it, or "not measured".
4. Scope: what was measured and what was not.
"""

from __future__ import annotations

from ragspan.io.corpus import Corpus
from ragspan.report.readout.build import Readout
from ragspan.report.readout.document import Block, Document, Para, Quote, Section, Table
from ragspan.report.readout.levers import LEVERS
from ragspan.report.render.text import f3, pval, signed

QUOTE_CHARS = 600
ELLIPSIS = " […]"
PATTERNS = 3
EXAMPLES = 2
CLAUSES_PER_QUERY = 2

SAID = {
    "ceiling-bound": "part of the clause's text was dropped when the documents were split "
                     "into chunks, so no retrieval could cover it",
    "chunk-severance": "the clause was split across chunks, so no single retrieved chunk "
                       "holds all of it",
    "retrieval-miss": "nothing the retriever returned touched the clause",
    "rank-miss": "the clause was retrieved, but ranked below the results passed on",
    "partial-grounding": "a result passed on touched the clause but covered too little of it",
}
LEVER_SAID = {
    "chunker": "chunking (how documents are split before retrieval)",
    "dense model": "the embedding model",
    "sparse": "keyword retrieval (BM25)",
    "fusion": "how keyword and embedding results are merged",
    "rerank": "reranking the top results",
    "filter scope": "which documents a question may retrieve from",
    "k": "how many results are passed on",
}


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def quote_of(corpus: Corpus, doc_id: str, start: int, end: int) -> str:
    """The clause's text as the corpus holds it, cut at ``QUOTE_CHARS``."""
    text = corpus.text(doc_id)[start:end]
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + ELLIPSIS


def today(r: Readout) -> Section:
    base, k, n = r.base, r.k, r.base.report.values.shape[0]
    grounded = int(round(float(base.report.column(r.cg).sum())))
    low, high = r.intervals[r.baseline]
    return Section("Where retrieval stands today", [Para(
        f"With today's configuration ({base.name}), {grounded} of {n} questions are completely "
        f"grounded: every clause the answer needs is among the first {plural(k, 'result')} "
        "retrieved. "
        f"That is a complete grounding of {f3(base.metric(r.cg))} (95% interval {f3(low)} to "
        f"{f3(high)}); the other {plural(n - grounded, 'question')} would be answered from "
        f"partial evidence or none. Each question retrieves {base.metric(f'retrieved_chars@{k}'):,.0f} "
        "characters on average.")])


def patterns(r: Readout, corpus: Corpus) -> Section:
    k = str(r.k)
    rows = r.base.report.rows
    counts: dict[str, int] = {}
    for row in rows:
        label = row.failure.get(k)
        if label is not None:
            counts[label] = counts.get(label, 0) + 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:PATTERNS]
    if not top:
        return Section("Top failure patterns", [Para(
            f"No question failed at {plural(int(k), 'result')} with today's configuration.")])
    blocks: list[Block] = []
    for label, count in top:
        blocks.append(Para(f"{label} ({plural(count, 'question')}): {SAID[label]}."))
        for row in [x for x in rows if x.failure.get(k) == label][:EXAMPLES]:
            tags = ", ".join(f"{key} {value}" for key, value in sorted(row.tags.items()))
            blocks.append(Para(f"Question {row.id}" + (f" ({tags})" if tags else "")
                               + f": {row.query}"))
            for span in row.missing_spans.get(k, [])[:CLAUSES_PER_QUERY]:
                doc, start, end = span.doc_id, span.start, span.end
                blocks.append(Quote(quote_of(corpus, doc, start, end),
                                    f"{doc}, characters {start}–{end}, missed"))
    return Section("Top failure patterns", blocks)


def fix_backlog(r: Readout) -> Section:
    rows = []
    for rank, row in enumerate(r.backlog, 1):
        effects = []
        for e in row.effects:
            a, b = r.configs[e.pair.a], r.configs[e.pair.b]
            o = e.outcome(r.cg)
            effects.append(f"{b.lever(row.lever)} instead of {a.lever(row.lever)}: complete "
                           f"grounding {f3(o.baseline)} → {f3(o.candidate)} ({signed(o.delta)}, "
                           f"p = {pval(o.p_value)}; {o.fixed} fixed, {o.broken} broken)")
        rows.append([str(rank), LEVER_SAID[row.lever], str(row.accounts_for),
                     "; ".join(effects) or "not measured"])
    return Section("Fix backlog", [Table(
        ["rank", "what to change", "failing questions it can move", "measured effect"], rows,
        caption="Ranked by the failing questions whose failure this lever can address. An "
        "effect is shown only where two configurations differ in that lever alone; a negative "
        "change made things worse.", left=(1, 3), wide=(3,))])


def scope(r: Readout, corpus: Corpus) -> Section:
    base = r.base
    eval_name = r.eval_name
    n = base.report.values.shape[0]
    measured = [row.lever for row in r.backlog if row.effects]
    in_mixed = {lv for p in r.pairs if not p.isolates for lv in p.levers}
    blocks: list[Block] = [Para(
        f"Measured: {plural(n, 'question')} of {eval_name} over "
        f"{plural(len(corpus), 'document')}, retrieval only (the first "
        f"{plural(r.k, 'result')}), with {plural(len(r.configs), 'configuration')}: "
        f"{', '.join(c.name for c in r.configs)}."),
        Para("Levers measured by two configurations that differ in that lever alone: "
             + (", ".join(lv for lv in LEVERS if lv in measured) or "none") + ".")]
    missing = [f"{lv}: not measured" + (" (varied only together with another lever)"
                                        if lv in in_mixed else "")
               for lv in LEVERS if lv not in measured]
    if missing:
        blocks.append(Para("; ".join(missing) + "."))
    blocks.append(Para("Not in scope: the answers a model writes from these results; this "
                       "measures whether the evidence for them was retrieved."))
    return Section("Scope: what was and was not measured", blocks)


def document(r: Readout, corpus: Corpus, title: str | None = None) -> Document:
    return Document(title or "Retrieval readout", [], [
        today(r), patterns(r, corpus), fix_backlog(r), scope(r, corpus)])
