"""``ragspan overlap``: documents shared by two corpora (train/test contamination).

- ``exact``: identical after normalisation (``normalize.py``).
- ``minhash``: word n-gram shingles (n = ``shingle``, 5 unless given; at most
  ``MAX_SHINGLE``), MinHash signatures (multiply-shift hashing, numpy) and
  LSH banding. The banding (``bands`` x ``rows`` <= ``permutations``) is the one with the most
  rows per band whose probability of finding a pair exactly at the threshold,
  ``1 - (1 - t**rows)**bands``, is at least 99.5%; the report states the actual miss
  probability. Every candidate pair is verified with exact Jaccard on the shingle sets, so
  there are no false positives.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ragspan.base.errors import UsageError
from ragspan.contamination.normalize import tokens
from ragspan.io.corpus import Corpus
from ragspan.records.contamination import MinHash, Pair

SHINGLE = 5
MAX_SHINGLE = 50
PERMUTATIONS = 128
MIN_RECALL = 0.995
_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def banding(threshold: float, permutations: int = PERMUTATIONS,
            min_recall: float = MIN_RECALL) -> tuple[int, int, float]:
    """``(bands, rows, miss probability at the threshold)``."""
    for rows in range(permutations, 0, -1):
        bands = permutations // rows
        found = 1.0 - (1.0 - threshold ** rows) ** bands
        if found >= min_recall:
            return bands, rows, 1.0 - found
    raise UsageError(f"no banding of {permutations} permutations reaches {min_recall} at {threshold}")


def _token_hash(tok: str) -> int:
    return int.from_bytes(hashlib.blake2b(tok.encode("utf-8"), digest_size=8).digest(), "little")


def shingles(text: str, cache: dict[str, int], size: int = SHINGLE
             ) -> tuple[set[tuple[str, ...]], np.ndarray]:
    """Exact set of word ``size``-grams (for verification; a text shorter than ``size``
    words is one shingle) and their 64-bit hashes (for MinHash)."""
    toks = tokens(text)
    k = min(size, len(toks))
    grams = {tuple(toks[i:i + k]) for i in range(len(toks) - k + 1)} if k else set()
    hashes = np.fromiter((hash_gram(g, cache) for g in grams), dtype=np.uint64, count=len(grams))
    return grams, hashes


def hash_gram(gram: tuple[str, ...], cache: dict[str, int]) -> int:
    h = 1469598103934665603
    for t in gram:
        if t not in cache:
            cache[t] = _token_hash(t)
        h = ((h ^ cache[t]) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def signatures(hash_sets: list[np.ndarray], permutations: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2 ** 63, permutations, dtype=np.uint64) | np.uint64(1)
    b = rng.integers(0, 2 ** 63, permutations, dtype=np.uint64)
    out = np.full((len(hash_sets), permutations), np.iinfo(np.uint64).max, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i, h in enumerate(hash_sets):
            if h.size:
                out[i] = ((h[:, None] * a[None, :] + b[None, :]) & _MASK).min(axis=0)
    return out


def exact_pairs(a: Corpus, b: Corpus) -> list[Pair]:
    keys: dict[str, list[str]] = {}
    for d in sorted(b.documents):
        keys.setdefault(" ".join(tokens(b.text(d))), []).append(d)
    pairs: list[Pair] = []
    for d in sorted(a.documents):
        for other in keys.get(" ".join(tokens(a.text(d))), []):
            pairs.append(Pair(d, other, 1.0))
    return pairs


def minhash_pairs(a: Corpus, b: Corpus, threshold: float, shingle: int = SHINGLE
                  ) -> tuple[list[Pair], MinHash]:
    """Pairs whose shingle sets (word ``shingle``-grams) have Jaccard >= ``threshold``, and
    the banding that found them."""
    if not 1 <= shingle <= MAX_SHINGLE:
        raise UsageError(f"--shingle must be in [1, {MAX_SHINGLE}] words, got {shingle}")
    bands, rows, miss = banding(threshold)
    cache: dict[str, int] = {}
    ids_a, ids_b = sorted(a.documents), sorted(b.documents)
    sh_a = [shingles(a.text(d), cache, shingle) for d in ids_a]
    sh_b = [shingles(b.text(d), cache, shingle) for d in ids_b]
    sig_a = signatures([h for _, h in sh_a], PERMUTATIONS)
    sig_b = signatures([h for _, h in sh_b], PERMUTATIONS)
    candidates: set[tuple[int, int]] = set()
    for band in range(bands):
        cols = slice(band * rows, (band + 1) * rows)
        buckets: dict[bytes, list[int]] = {}
        for j in range(len(ids_b)):
            if sh_b[j][0]:
                buckets.setdefault(sig_b[j, cols].tobytes(), []).append(j)
        for i in range(len(ids_a)):
            if sh_a[i][0]:
                for j in buckets.get(sig_a[i, cols].tobytes(), ()):
                    candidates.add((i, j))
    pairs: list[Pair] = []
    for i, j in sorted(candidates):
        sa, sb = sh_a[i][0], sh_b[j][0]
        jac = len(sa & sb) / len(sa | sb)
        if jac >= threshold:
            pairs.append(Pair(ids_a[i], ids_b[j], jac))
    return pairs, MinHash(bands=bands, rows=rows, permutations=PERMUTATIONS,
                          miss_probability_at_threshold=miss,
                          candidates_verified=len(candidates))
