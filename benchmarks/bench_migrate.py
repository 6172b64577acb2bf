"""Benchmark: ``ragspan migrate`` (``evalsets.migrate.locate_all``) on a large edited corpus.

A seeded synthetic corpus of 10 documents x 1,000,000 characters (contract-like words with
numbers, so long passages do not repeat) and 10,000 gold spans of 50 to 600 characters
(1,000 per document). The new corpus edits every document the way releases do: a preamble
added, 500 passages of 20 to 2,000 characters inserted between spans, 300 stretches between
spans deleted, one word changed inside 10% of the spans, 5% of the spans deleted, and one
section of ~5,000 characters moved to the end. Target: under 60 s on 2 cores.

Beside it, in the same run, what a user without ``migrate`` would do: look every old gold
text up again in the new corpus (``str.find``, the exact step of ``adapt``); it is faster but
finds no edited span, cannot tell a copy from the span's own place, and says nothing about
what it lost. Each result is checked: every span whose text stayed is ``unchanged`` or
``moved`` to exactly that text.

    python benchmarks/bench_migrate.py [n_docs]
"""

from __future__ import annotations

import random
import resource
import sys
import time

from ragspan.evalsets.migrate import locate_all
from ragspan.io.corpus import Corpus, Document

DOC_LEN, SPANS_PER_DOC = 1_000_000, 1_000
WORDS = ("licensee", "shall", "pay", "royalties", "agreement", "termination", "notice",
         "confidential", "party", "warrants", "product", "territory", "supplier", "term")


def words(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        w = f"{rng.choice(WORDS)}{rng.randrange(100_000)}" if rng.random() < 0.3 \
            else rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def make(rng: random.Random, n_docs: int):
    old, new, spans = {}, {}, []
    for d in range(n_docs):
        doc_id = f"doc{d:03d}"
        text = words(rng, DOC_LEN)
        starts = sorted(rng.sample(range(0, DOC_LEN - 700, 900), SPANS_PER_DOC))
        mine = [(s, s + rng.randint(50, 600)) for s in starts]
        spans += [(doc_id, s, e) for s, e in mine]
        old[doc_id] = text
        # edits, applied from the end so earlier offsets stay put
        gaps = [(mine[i][1], mine[i + 1][0]) for i in range(len(mine) - 1)]
        edits: list[tuple[int, int, str]] = []  # (start, end, replacement)
        for a, b in rng.sample(gaps, 500):
            at = rng.randint(a, b)
            edits.append((at, at, " " + words(rng, rng.randint(20, 2000)) + " "))
        for a, b in rng.sample(gaps, 300):
            if b - a > 10:
                x = rng.randint(a, b - 5)
                edits.append((x, min(b, x + rng.randint(5, 200)), ""))
        for s, e in rng.sample(mine, len(mine) // 10):  # one word changed inside
            m = (s + e) // 2
            edits.append((m, m + 1, "#"))
        for s, e in rng.sample(mine, len(mine) // 20):  # deleted
            edits.append((s, e, ""))
        edits.sort(key=lambda x: (x[0], x[1]))
        kept, pos = [], 0
        for a, b, rep in edits:  # drop overlapping edits
            if a >= pos:
                kept.append((a, b, rep))
                pos = max(b, a + 1)
        out = text
        for a, b, rep in reversed(kept):
            out = out[:a] + rep + out[b:]
        cut = rng.randrange(0, len(out) - 6_000)  # a section moved to the end
        section = out[cut:cut + 5_000]
        out = out[:cut] + out[cut + 5_000:] + "\n\n" + section
        new[doc_id] = "AMENDED AND RESTATED.\n\n" + out
    return old, new, spans


def corpus(texts: dict[str, str]) -> Corpus:
    return Corpus("bench", "0", {d: Document(id=d, text=t) for d, t in texts.items()})


def main() -> None:
    n_docs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    rng = random.Random(20261203)
    t0 = time.perf_counter()
    old, new, spans = make(rng, n_docs)
    print(f"corpus: {n_docs} documents x {DOC_LEN:,} characters, {len(spans):,} gold spans "
          f"(made in {time.perf_counter() - t0:.1f} s)")
    t0 = time.perf_counter()
    found = 0
    for doc_id, s, e in spans:
        found += new[doc_id].find(old[doc_id][s:e]) >= 0
    peer = time.perf_counter() - t0
    t0 = time.perf_counter()
    moved = locate_all(corpus(old), corpus(new), spans)
    took = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts: dict[str, int] = {}
    for m in moved:
        counts[m.status] = counts.get(m.status, 0) + 1
    for (doc_id, s, e), m in zip(spans, moved):
        if m.status in ("unchanged", "moved"):
            assert new[doc_id][m.start:m.end] == old[doc_id][s:e]
    print(f"{'':34}{'seconds':>9}  result")
    print(f"{'exact lookup of each old text':34}{peer:9.2f}  {found:,} of {len(spans):,} "
          "found (edited spans lost, copies not told apart)")
    print(f"{'ragspan migrate (locate_all)':34}{took:9.2f}  "
          + ", ".join(f"{counts.get(k, 0):,} {k}" for k in
                      ("unchanged", "moved", "edited", "deleted", "ambiguous")))
    print(f"peak memory {peak:,.0f} MB; target: migrate under 60 s "
          f"({'met' if took < 60 else 'NOT met'})")


if __name__ == "__main__":
    main()
