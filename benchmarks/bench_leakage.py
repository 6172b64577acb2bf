"""Benchmark: leakage on 50,000 documents (about 200 words each, Zipf vocabulary) and 1,000
eval questions, 100 of them planted verbatim. Prints index build and query time and peak
memory; target: the whole check (normalise, index, containment) in < 7 s. Also the
overlap check (exact and MinHash) on 5,000 x 5,000 documents."""

from __future__ import annotations

import resource
import time

import numpy as np

N_DOCS, WORDS, N_ITEMS, PLANTED = 50_000, 200, 1_000, 100


def corpus(rng: np.random.Generator):
    from ragspan.io.corpus import Corpus, Document

    vocab = np.array([f"w{i}" for i in range(60_000)])
    p = 1.0 / np.arange(1, vocab.size + 1) ** 1.1
    p /= p.sum()
    words = vocab[rng.choice(vocab.size, size=(N_DOCS, WORDS), p=p)]
    texts = [" ".join(row) for row in words]
    items = [" ".join(vocab[rng.choice(vocab.size, size=12, p=p)]) for _ in range(N_ITEMS)]
    for i in range(PLANTED):
        texts[i * 7] = texts[i * 7][:400] + " " + items[i].upper() + ". " + texts[i * 7][400:]
    docs = {f"d{i}": Document(f"d{i}", t) for i, t in enumerate(texts)}
    return Corpus("bench", "", docs), items


def main() -> None:
    from ragspan.contamination.leakage import Item, exact_leaks
    from ragspan.contamination.overlap import exact_pairs, minhash_pairs
    from ragspan.io.corpus import Corpus

    rng = np.random.default_rng(0)
    corp, items = corpus(rng)
    t0 = time.perf_counter()
    findings, info = exact_leaks([Item(f"q{i}", "query", t) for i, t in enumerate(items)], corp, 3, 0.6)
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"leakage: {N_DOCS:,} docs x {WORDS} words, {N_ITEMS:,} items: {elapsed:.2f} s "
          f"(target < 7 s), {len(findings)} leaks found ({PLANTED} planted), "
          f"vocabulary {info['vocabulary']:,}, peak RSS {peak:,.0f} MiB")
    small_a = Corpus("a", "", dict(list(corp.documents.items())[:5_000]))
    small_b = Corpus("b", "", dict(list(corp.documents.items())[2_500:7_500]))
    t0 = time.perf_counter()
    pairs = exact_pairs(small_a, small_b)
    t_exact = time.perf_counter() - t0
    t0 = time.perf_counter()
    mpairs, minfo = minhash_pairs(small_a, small_b, 0.8)
    t_min = time.perf_counter() - t0
    print(f"overlap 5,000 x 5,000: exact {t_exact:.2f} s ({len(pairs)} pairs), minhash "
          f"{t_min:.2f} s ({len(mpairs)} pairs, {minfo['candidates_verified']} candidates, "
          f"{minfo['bands']}x{minfo['rows']} bands, miss probability "
          f"{minfo['miss_probability_at_threshold']:.4f})")


if __name__ == "__main__":
    main()
