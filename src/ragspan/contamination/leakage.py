"""``ragspan leakage``: eval items whose text sits in a corpus document.

Containment, not Jaccard: for an item field, the share of its distinct word n-grams that occur
in one document (after normalisation, ``normalize.py``). A 12-word question pasted into a
300-word document has containment 1.0 while its Jaccard similarity is about 0.03. Items
shorter than ``n`` words use their whole token sequence as one gram. An item leaks when a field
reaches the threshold in some document.

The texts checked (``query``, ``gold``, ``answer``) are read by ``contamination.items``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path

import numpy as np
from msgspec import UNSET

from ragspan.contamination.items import Item
from ragspan.contamination.ngrams import GramCoder, GramIndex, Vocabulary, gram_matrix, longest_shared_run
from ragspan.contamination.normalize import aligned_tokens, tokens
from ragspan.io.corpus import Corpus
from ragspan.records.contamination import Leak, Passage
from ragspan.retrieval.chunkers import ChunkerSpec, chunk_document
from ragspan.retrieval.embed import Embedder, default_cache_dir

log = logging.getLogger("ragspan")
DEFAULT_MAX_RECORDS = 1_000_000


class ContainmentIndex:
    """Exact containment of item token sequences in corpus documents."""

    def __init__(self, corpus: Corpus, n: int):
        self.n = n
        self.doc_ids = sorted(corpus.documents)
        # ids in first-seen order, assigned at C speed: a missing key gets len(vocabulary)
        grow: defaultdict[str, int] = defaultdict()
        grow.default_factory = grow.__len__
        per_doc = [np.fromiter(map(grow.__getitem__, tokens(corpus.text(d))), dtype=np.int64)
                   for d in self.doc_ids]
        self.vocab = Vocabulary()
        self.vocab.ids = dict(grow)
        self.flat = np.concatenate(per_doc) if per_doc else np.zeros(0, dtype=np.int64)
        self.lengths = np.fromiter(map(len, per_doc), dtype=np.int64, count=len(per_doc))
        self.size = len(self.vocab.ids)  # frozen: items look tokens up, never add them
        self.position = {d: i for i, d in enumerate(self.doc_ids)}
        self._coders: dict[int, GramCoder] = {}
        self._indexes: dict[int, GramIndex] = {}

    def _coder(self, m: int) -> GramCoder:
        if m not in self._coders:
            self._coders[m] = GramCoder(self.size, m)
        return self._coders[m]

    def index(self, m: int) -> GramIndex:
        """The index of m-grams (built lazily: m = n, or shorter for short items). Windows are
        taken over all documents at once; those crossing a document boundary are dropped."""
        if m not in self._indexes:
            doc_of = np.repeat(np.arange(self.lengths.size, dtype=np.int64), self.lengths)
            windows = gram_matrix(self.flat, m)
            count = windows.shape[0]
            inside = doc_of[:count] == doc_of[m - 1:m - 1 + count]
            grams = self._coder(m).ids(windows)[inside]
            self._indexes[m] = GramIndex.from_pairs(grams, doc_of[:count][inside], self.lengths.size)
        return self._indexes[m]

    def containment(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """``(containment per document, item token ids)``; all zeros for an empty item."""
        ids = self.vocab.lookup(tokens(text))
        if ids.size == 0:
            return np.zeros(len(self.doc_ids)), ids
        m = min(self.n, ids.size)
        windows = gram_matrix(ids, m)
        distinct = np.unique(windows, axis=0).shape[0]
        known = windows[(windows < self.size).all(axis=1)]  # a gram with an unknown word matches nothing
        found = self.index(m).counts(self._coder(m).ids(known)) if known.shape[0] else 0
        return np.zeros(len(self.doc_ids)) + found / distinct, ids


def passage(corpus: Corpus, doc_id: str, item_ids: np.ndarray, index: ContainmentIndex) -> Passage:
    """The longest shared passage, as character offsets into the document (empty when no
    run of words is shared)."""
    text = corpus.text(doc_id)
    toks, spans = aligned_tokens(text)
    doc_ids = index.vocab.lookup(toks)
    a, b, _ = longest_shared_run(item_ids, doc_ids, index.n)
    if b <= a:
        return Passage()
    start, end = spans[a][0], spans[b - 1][1]
    return Passage(start=start, end=end, words=b - a, text=text[start:end][:300])


def exact_leaks(items: list[Item], corpus: Corpus, n: int, threshold: float
                ) -> tuple[list[Leak], int]:
    """The items whose word n-grams the corpus contains to ``threshold`` or more, each at its
    best document, and the vocabulary's size."""
    index = ContainmentIndex(corpus, n)
    findings: list[Leak] = []
    for it in items:
        cont, ids = index.containment(it.text)
        if it.exclude_doc is not None and it.exclude_doc in index.position:
            cont[index.position[it.exclude_doc]] = -1.0
        best = int(np.argmax(cont)) if cont.size else 0
        if cont.size and cont[best] >= threshold:
            doc = index.doc_ids[best]
            findings.append(Leak(
                id=it.id, field=it.field, document=doc, containment=float(cont[best]),
                words=int(ids.size), documents_over_threshold=int((cont >= threshold).sum()),
                passage=passage(corpus, doc, ids, index),
                gold_span=it.index if it.field == "gold" else UNSET))
    return findings, len(index.vocab.ids)


def embedding_leaks(items: list[Item], corpus: Corpus, similarity: float, model: str,
                    chunk_size: int, cache_dir: str | None) -> tuple[list[Leak], int, str]:
    """Cosine similarity of each item with every corpus chunk (sentence chunks up to
    ``chunk_size`` characters) with a sentence-transformers model. Approximate and slower.
    The leaks, the chunks compared and the model's id."""
    chunks = []
    for d in sorted(corpus.documents):
        part, _ = chunk_document(d, corpus.text(d), ChunkerSpec("sentence", chunk_size))
        chunks.extend(part)
    emb = Embedder(model, Path(cache_dir) if cache_dir else default_cache_dir())
    cvecs = emb.embed([corpus.text(c.doc_id)[c.start:c.end] for c in chunks])
    ivecs = emb.embed_queries([it.text for it in items])
    doc_of = np.array([c.doc_id for c in chunks], dtype=object)
    findings: list[Leak] = []
    for it, v in zip(items, ivecs):
        sims = cvecs @ v
        if it.exclude_doc is not None:
            sims = np.where(doc_of == it.exclude_doc, -1.0, sims)
        best = int(np.argmax(sims))
        if sims[best] >= similarity:
            c = chunks[best]
            findings.append(Leak(
                id=it.id, field=it.field, document=c.doc_id,
                similarity=round(float(sims[best]), 6),
                passage=Passage(start=c.start, end=c.end,
                                text=corpus.text(c.doc_id)[c.start:c.end][:300]),
                gold_span=it.index if it.field == "gold" else UNSET))
    return findings, len(chunks), emb.model_id
