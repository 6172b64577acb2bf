"""Where a text may stand in a document, for fuzzy placement: the candidate places
(``candidates``), each a half-open ``[start, end)`` of the normalised document, whose
similarity the placer then measures.

The work per text is bounded, whether or not the text is there:

- a text of up to ``SHORT_TEXT`` characters is aligned along the whole document
  (``rapidfuzz.fuzz.partial_ratio_alignment``, fast for short texts): the best alignment,
  and the best before and after it (where an equally good second place would be);
- a longer text is looked for only where it shares ``SEED``-character runs with the
  document (seed and extend): every run of the text is looked up in the document's sorted
  run hashes (``Seeds``, built once per document), the hits vote for a diagonal (document
  offset minus text offset) in bands of ``SEED + (1 - threshold) x len(text)``, and the
  ``MAX_CANDIDATES`` best-supported bands each give one place, from the first to the last
  shared run, extended by the text's ends and aligned on its first and last ``END``
  characters. A run found more than ``MAX_SEED_HITS`` times in the document is not used:
  a text made of repeats is refused rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHORT_TEXT = 256  # normalised texts up to this long are aligned along the whole document
SEED = 12  # characters of a seed: a run the text and a place share
MAX_SEED_HITS = 64  # a seed found more often in one document is not used (repetitive text)
MAX_CANDIDATES = 8  # seeded places measured per document
END = 64  # characters of a long text's ends, aligned to place its ends exactly
_BASE = np.uint64(1_000_003)


def seed_hashes(text: str, k: int = SEED) -> np.ndarray:
    """A 64-bit polynomial hash of every ``k``-character run of ``text``, by start offset
    (equal runs hash equal; different runs collide rarely, so a caller that needs certainty
    compares the characters)."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    n = codes.size - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    h = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k):
            h = h * _BASE + codes[j:j + n]
    return h


@dataclass(frozen=True)
class Seeds:
    """A normalised document's runs: their hashes sorted, and each one's start offset."""

    hashes: np.ndarray
    starts: np.ndarray

    @classmethod
    def of(cls, text: str) -> Seeds:
        h = seed_hashes(text)
        order = np.argsort(h, kind="stable")
        return cls(h[order], order.astype(np.int64))


def candidates(needle: str, norm: str, threshold: float,
               seeds: Seeds | None = None) -> list[tuple[int, int]]:
    """The places of ``needle`` in the normalised document ``norm`` worth measuring (see the
    module docstring); ``seeds``: ``Seeds.of(norm)``, needed for a long text."""
    if len(needle) <= SHORT_TEXT:
        return _aligned(needle, norm, threshold)
    return _seeded(needle, norm, threshold, seeds if seeds is not None else Seeds.of(norm))


def _aligned(needle: str, norm: str, threshold: float) -> list[tuple[int, int]]:
    """A short text: its best alignment along the document, and the best before and after
    that one (where an equally good second place would be)."""
    from rapidfuzz import fuzz

    a = fuzz.partial_ratio_alignment(needle, norm, score_cutoff=threshold * 100.0)
    if a is None or a.dest_end <= a.dest_start:
        return []
    out = [(a.dest_start, a.dest_end)]
    for lo, hi in ((0, a.dest_start), (a.dest_end, len(norm))):
        if hi - lo >= threshold * len(needle):
            b = fuzz.partial_ratio_alignment(needle, norm[lo:hi], score_cutoff=a.score)
            if b is not None and b.dest_end > b.dest_start:
                out.append((lo + b.dest_start, lo + b.dest_end))
    return out


def _seeded(needle: str, norm: str, threshold: float, seeds: Seeds) -> list[tuple[int, int]]:
    """A long text: the places where it shares the most runs with the document, at most
    ``MAX_CANDIDATES``."""
    mine = seed_hashes(needle)
    lo = np.searchsorted(seeds.hashes, mine, "left")
    count = np.searchsorted(seeds.hashes, mine, "right") - lo
    use = (count > 0) & (count <= MAX_SEED_HITS)
    if not use.any():
        return []
    offs, count, lo = np.flatnonzero(use), count[use], lo[use]
    total = int(count.sum())
    first = np.repeat(lo - (np.cumsum(count) - count), count) + np.arange(total)
    text_at = np.repeat(offs, count)  # each hit: where the run starts in the text
    doc_at = seeds.starts[first]  # ... and in the document
    diagonal = doc_at - text_at
    band = SEED + int(len(needle) * (1.0 - threshold))
    bins = diagonal // band
    low = int(bins.min())
    votes = np.bincount(bins - low)
    support = np.convolve(votes, np.ones(3, dtype=np.int64), mode="same")  # with neighbours
    chosen: list[int] = []
    for x in np.lexsort((np.arange(support.size), -support)).tolist():
        if len(chosen) == MAX_CANDIDATES or support[x] == 0:
            break
        if all(abs(x - c) > 2 for c in chosen):
            chosen.append(x)
    out = []
    for x in chosen:
        sel = np.abs(bins - (low + x)) <= 1
        d, t, p = diagonal[sel], text_at[sel], doc_at[sel]
        mid = np.sort(d)[d.size // 2]  # the median diagonal: off-diagonal hits left out
        keep = np.abs(d - mid) <= band
        t, p = t[keep], p[keep]
        i, j = int(np.argmin(t)), int(np.argmax(t))
        start = max(0, int(p[i] - t[i]))
        end = min(len(norm), int(p[j] + len(needle) - t[j]))
        if end > start:
            out.append(_refined(needle, norm, start, end, band))
    return out


def _refined(needle: str, norm: str, start: int, end: int, band: int) -> tuple[int, int]:
    """A seeded place's ends moved to where the text's first and last ``END`` characters
    align best within ``band`` of them (a shared run near the start may belong to a repeat
    of the text's opening words)."""
    from rapidfuzz import fuzz

    lo = max(0, start - band)
    head = fuzz.partial_ratio_alignment(needle[:END], norm[lo:min(len(norm), start + band + END)])
    if head is not None and head.dest_end > head.dest_start:
        start = lo + head.dest_start
    lo = max(start, end - band - END)
    tail = fuzz.partial_ratio_alignment(needle[-END:], norm[lo:min(len(norm), end + band)])
    if tail is not None and tail.dest_end > tail.dest_start:
        end = lo + tail.dest_end
    return start, max(end, start + 1)
