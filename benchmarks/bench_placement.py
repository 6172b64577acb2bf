"""Benchmark: placing retrieved texts in the corpus (runs anchored by text, ``io.placement``).

A seeded synthetic corpus of 500 documents x 100,000 characters (50 MB) and 100,000
retrieved texts of ~1,000 characters, each naming its document: placed as given (exact), and
again rewritten as a logger or PDF extractor would (NFKC, whitespace runs collapsed,
line-break hyphenation), which the normalised placement finds. Target: each under 60 s on 2
cores. Then fuzzy placement of 1,000 texts with a typo every ~50 characters (bounded per item).

    python benchmarks/bench_placement.py [n_texts]
"""

from __future__ import annotations

import random
import sys
import time

from ragspan.io.corpus import Corpus, Document
from ragspan.io.placement import Placer

N_DOCS, DOC_LEN, TEXT_LEN = 500, 100_000, 1_000
WORDS = ("licensee", "shall", "pay", "royalties", "agreement", "termination", "notice",
         "confidential", "party", "warrants", "\u201cProduct\u201d", "co\u00adoperation")


def make_corpus(rng: random.Random) -> dict[str, str]:
    docs = {}
    for d in range(N_DOCS):
        parts, n = [], 0
        while n < DOC_LEN:
            w = f"{rng.choice(WORDS)}{rng.randrange(100_000)}"
            sep = "\n" if rng.random() < 0.05 else " "
            parts.append(w + sep)
            n += len(w) + 1
        docs[f"doc{d}"] = "".join(parts)[:DOC_LEN]
    return docs


def mangle(text: str, rng: random.Random) -> str:
    import unicodedata

    words = " ".join(unicodedata.normalize("NFKC", text).split()).split(" ")
    for i in range(2, len(words), 13):
        w = words[i]
        if len(w) > 6 and w[:3].isalpha():
            words[i] = f"{w[:3]}-\n{w[3:]}"
    return " ".join(words)


def typos(text: str, rng: random.Random) -> str:
    chars = list(text)
    for i in range(10, len(chars), 50):
        chars[i] = "#"
    return "".join(chars)


def main() -> None:
    n_texts = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = random.Random(0)
    t0 = time.perf_counter()
    texts = make_corpus(rng)
    corpus = Corpus("bench", "0" * 64, {d: Document(d, t) for d, t in texts.items()})
    items = []
    for _ in range(n_texts):
        d = f"doc{rng.randrange(N_DOCS)}"
        lo = rng.randrange(0, DOC_LEN - TEXT_LEN)
        items.append((d, lo, lo + TEXT_LEN))
    print(f"corpus: {N_DOCS} documents, {N_DOCS * DOC_LEN / 1e6:.0f} MB of text; "
          f"{n_texts:,} texts of {TEXT_LEN:,} characters (built in {time.perf_counter() - t0:.1f} s)")

    placer = Placer(corpus)
    t0 = time.perf_counter()
    wrong = sum(placer.place(texts[d][lo:hi], [d]).start != lo for d, lo, hi in items)
    dt = time.perf_counter() - t0
    print(f"exact placement: {dt:.1f} s = {n_texts / dt:,.0f} texts/s (target < 60 s); "
          f"misplaced: {wrong}")

    mangled = [(d, lo, hi, mangle(texts[d][lo:hi], rng)) for d, lo, hi in items]
    placer = Placer(corpus)  # the normalised documents are built inside the timing
    t0 = time.perf_counter()
    methods: dict[str, int] = {}
    off = 0
    for d, lo, _hi, text in mangled:
        p = placer.place(text, [d])
        methods[p.method] = methods.get(p.method, 0) + 1
        off += abs(p.start - lo) > 1
    dt = time.perf_counter() - t0
    print(f"normalised placement (NFKC, whitespace, hyphenation): {dt:.1f} s = "
          f"{n_texts / dt:,.0f} texts/s (target < 60 s); methods {methods}; start off by > 1: {off}")

    few = items[:1000]
    t0 = time.perf_counter()
    sims = [placer.place(typos(texts[d][lo:hi], rng), [d]).similarity for d, lo, hi in few]
    dt = time.perf_counter() - t0
    print(f"fuzzy placement (a typo every 50 characters): {dt:.2f} s for {len(few):,} texts = "
          f"{dt / len(few) * 1000:.1f} ms per text; mean similarity {sum(sims) / len(sims):.3f}")


if __name__ == "__main__":
    main()
