"""Placing a trace's documents in the corpus (``Places``): by the document and offset
their metadata give (when the corpus text there is their content), by their id (a chunk of a
manifest, a corpus document), else by their text (``io.placement``), each counted; the rules
are ``io.runs.trace_steps``'s docstring's."""

from __future__ import annotations

import os
from typing import Any

from msgspec import UNSET

from ragspan.base.errors import InputError
from ragspan.io.corpus import Corpus
from ragspan.io.placement import Placer, Unplaced, preview
from ragspan.io.runs.trace_documents import Doc
from ragspan.records.run_rows import TracedItem

DOC_KEYS = ("doc_id", "document_id", "source", "file_name", "file_path")
START_KEYS = ("start_index", "start", "start_char_idx")
END_KEYS = ("end", "end_char_idx")


class Places:
    """Places documents in the corpus (module docstring), counting how."""

    def __init__(self, corpus: Corpus, opts: Any, path: str):
        self.corpus, self.opts, self.path = corpus, opts, path
        self.placer = Placer(corpus, opts.threshold)
        self.by_chunk = {c.chunk_id: c for c in opts.chunks.chunks} if opts.chunks else {}
        self.counts = {k: 0 for k in ("placed_exact", "placed_normalized", "placed_fuzzy",
                                      "placed_by_offsets", "placed_by_chunk_id",
                                      "placed_by_document_id", "offsets_disagreed",
                                      "doc_ids_from_paths")}
        self.unplaceable: list[str] = []

    def document(self, value: Any) -> str | None:
        """The corpus document a metadata value or id names: itself, or the file name
        without extension of a path."""
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            return None
        name = str(value)
        if name in self.corpus.documents:
            return name
        stem = os.path.splitext(os.path.basename(name.replace("\\", "/")))[0]
        if stem and stem in self.corpus.documents:
            self.counts["doc_ids_from_paths"] += 1
            return stem
        return None

    def place(self, doc: Doc, scope: str | None, where: str) -> TracedItem | None:
        meta = doc.metadata
        keys = (self.opts.doc_key,) if self.opts.doc_key else DOC_KEYS
        named = None
        for key in keys:
            if key in meta:
                named = self.document(meta[key])
                if named is not None:
                    break
        if named is None and doc.id is not None:
            named = self.document(doc.id)
        by_offsets = self._offsets(doc, named)
        if by_offsets is not None:
            return by_offsets
        if doc.content is None or not doc.content.strip():
            return self._by_id(doc, where)
        docs = [named] if named is not None else [scope] if scope in self.corpus.documents \
            else sorted(self.corpus.documents)
        try:
            p = self.placer.place(doc.content, docs, first=self.opts.first)
        except Unplaced as exc:
            raise InputError(f"{where}: {preview(doc.content)} cannot be placed in the "
                             f"corpus: {exc.reason}", self.path) from None
        self.counts[f"placed_{p.method}"] += 1
        return self._item(p.doc_id, p.start, p.end, doc)

    def _offsets(self, doc: Doc, named: str | None) -> TracedItem | None:
        meta = doc.metadata
        if named is None:
            return None
        keys = (self.opts.offset_key,) if self.opts.offset_key else START_KEYS
        start = next((meta[k] for k in keys if _is_int(meta.get(k))), None)
        if start is None:
            return None
        end = next((meta[k] for k in END_KEYS if _is_int(meta.get(k))), None)
        if end is None and doc.content is not None:
            end = start + len(doc.content)
        text = self.corpus.text(named)
        if end is None or not 0 <= start < end <= len(text) or (
                doc.content is not None and text[start:end] != doc.content):
            self.counts["offsets_disagreed"] += 1
            return None
        self.counts["placed_by_offsets"] += 1
        return self._item(named, start, end, doc)

    def _by_id(self, doc: Doc, where: str) -> TracedItem | None:
        chunk = self.by_chunk.get(doc.id) if doc.id is not None else None
        if chunk is not None:
            self.counts["placed_by_chunk_id"] += 1
            return self._item(chunk.doc_id, chunk.start, chunk.end, doc)
        named = self.document(doc.id) if doc.id is not None else None
        if named is not None:
            self.counts["placed_by_document_id"] += 1
            return self._item(named, 0, len(self.corpus.text(named)), doc)
        self.unplaceable.append(f"{where} (id {doc.id!r})")
        return None

    def _item(self, doc_id: str, start: int, end: int, doc: Doc) -> TracedItem:
        score = doc.score
        return TracedItem(doc_id=doc_id, start=start, end=end,
                          text=self.corpus.text(doc_id)[start:end],
                          score=float(score) if isinstance(score, (int, float))
                          and not isinstance(score, bool) else UNSET)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
