"""Evaluate the index you run, offline: a Qdrant edge shard your pipeline built
(``run-retriever --edge-shard PATH``) or a snapshot of a production collection
(``--snapshot FILE``), searched by Qdrant's own engine in-process (``qdrant-edge-py``).

Read-only by construction: the shard folder is copied into a temporary folder
(``io.readonly.copy_tree``: every file opened read-only, a link's target copied in its
place and never the link, holes kept, pipes and devices refused) and the copy is loaded and
searched; a snapshot's members are checked first (``io.readonly.check_archive``: links,
special files and paths outside refused, declared sizes bounded by ``max_unpacked_bytes``
before a byte is unpacked) and it is unpacked there (``EdgeShard.unpack_snapshot``). The
user's files are never opened for writing, and the copy is removed afterwards. Whatever the
engine does with a file it cannot read (a corrupt segment or payload: an error, or a panic
inside its Rust code) is an InputError naming the file: the engine's own stderr is held
while it works, so no panic text reaches the terminal. The search is
exact by default (``SearchParams(exact=True)``); with ``--hnsw-ef`` the shard's HNSW graph is
searched with that beam, and every query is searched exactly too, so ``ann_recall`` is
reported. Payloads map to run items as for ``--collection`` (``retrieval.live``:
``--doc-key``, ``--start-key``, ``--end-key``, ``--text-key``; a text without offsets is
placed in the corpus).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ragspan.base.errors import InputError, UsageError
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalQuery
from ragspan.io.readonly import check_archive, copy_tree
from ragspan.io.runs.anchoring import Anchor
from ragspan.retrieval.edge_index import edge_module, query_recall, recall_summary
from ragspan.retrieval.filters import query_filters
from ragspan.retrieval.index import payload_filter
from ragspan.retrieval.live import LiveSpec, _item
from ragspan.retrieval.user import span_row

T = TypeVar("T")


class _Held:
    """Native stderr (file descriptor 2) held in a temporary file for the block: what
    Rust's panic hook prints never reaches the terminal."""

    def __enter__(self) -> _Held:
        sys.stderr.flush()
        self._saved = os.dup(2)
        self._file = tempfile.TemporaryFile()
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.close()


def engine(call: Callable[[], T], source: str, what: str, copy: str | None = None) -> T:
    """``call()`` into qdrant-edge, with its stderr held; anything it raises (its errors,
    and the ``PanicException`` a Rust panic becomes, which is no ``Exception``) is an
    InputError naming ``source``: ``what`` failed, in one line, without the panic's text
    (the private ``copy``'s path, where the engine names it, said as ``source``)."""
    try:
        with _Held():
            return call()
    except (KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except BaseException as exc:  # noqa: BLE001 - a panic is a BaseException
        panic = type(exc).__name__ == "PanicException"
        said = "Qdrant's engine stopped on it (a corrupt or incompatible file)" if panic \
            else " ".join(str(exc).split())[:300] or type(exc).__name__
        if copy is not None:
            said = said.replace(copy, source)
        raise InputError(f"{what}: {said}", source) from None


def _loaded(source: str, snapshot: bool, folder: str,
            max_unpacked_bytes: int | None = None) -> Any:
    """The shard of ``source`` (a shard folder, or a snapshot file) loaded from a copy in
    ``folder``."""
    qe = edge_module()
    target = os.path.join(folder, "shard")
    if snapshot:
        if not os.path.isfile(source):
            raise InputError("--snapshot: no such file", source)
        check_archive(source, max_unpacked_bytes)
        engine(lambda: qe.EdgeShard.unpack_snapshot(source, target), source,
               "--snapshot cannot be unpacked", target)
    else:
        if not os.path.isdir(source):
            raise InputError("--edge-shard: no such folder (a shard is evaluated read-only, "
                             "so none is created)", source)
        copy_tree(source, target)
    return engine(lambda: qe.EdgeShard.load(target), source, "not a Qdrant edge shard",
                  target)


def _search(shard: Any, spec: LiveSpec, queries: list[EvalQuery], vectors: np.ndarray,
            exact: bool) -> list[list[Any]]:
    qe = edge_module()
    params = qe.SearchParams(exact=True) if exact else qe.SearchParams(hnsw_ef=spec.hnsw_ef)
    out: list[list[Any]] = []
    for lo in range(0, len(queries), spec.batch):
        part = queries[lo:lo + spec.batch]
        requests = [qe.QueryRequest(
            limit=spec.depth,
            query=qe.Query.Nearest(vectors[lo + i].tolist(), using=spec.vector_name),
            filter=payload_filter(qe, query_filters(spec.scope, q.doc_id, q.filters),
                                  {"doc_id": spec.doc_key}),
            params=params, with_payload=True) for i, q in enumerate(part)]
        for points in shard.query_batch(qe.QueryBatchRequest(requests)):
            out.append(sorted(points, key=lambda p: (-p.score, str(p.id))))
    return out


def _searched(shard: Any, spec: LiveSpec, queries: list[EvalQuery], vectors: np.ndarray,
              exact: bool, source: str, copy: str) -> list[list[Any]]:
    """``_search`` through ``engine``: a vector size or name the shard refuses, a payload it
    cannot read, a panic, each an InputError naming the shard."""
    return engine(lambda: _search(shard, spec, queries, vectors, exact), source,
                  "the shard cannot be searched", copy)


def run_edge(spec: LiveSpec, source: str, snapshot: bool, queries: list[EvalQuery],
             corpus: Corpus, embedder: Any, progress: Any = None,
             max_unpacked_bytes: int | None = None
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The span run of the shard (or snapshot) ``source`` over ``queries``, and what the
    report records of it (its points, the search, ``ann_recall`` with ``--hnsw-ef``, the
    placement counts)."""
    if spec.hnsw_ef is not None and spec.hnsw_ef < spec.depth:
        raise UsageError(f"--hnsw-ef {spec.hnsw_ef} is below --depth {spec.depth}: the search "
                         "beam must hold the results it returns")
    folder = tempfile.mkdtemp(prefix="ragspan-edge-copy-")
    try:
        shard = _loaded(source, snapshot, folder, max_unpacked_bytes)
        try:
            vectors = embedder.embed([q.query for q in queries], "embedding queries")
            copy = os.path.join(folder, "shard")
            found = _searched(shard, spec, queries, vectors, spec.hnsw_ef is None, source, copy)
            recall = None
            if spec.hnsw_ef is not None:
                truth = _searched(shard, spec, queries, vectors, True, source, copy)
                recall = {**recall_summary([query_recall([str(p.id) for p in f],
                                                         [str(p.id) for p in t])
                                            for f, t in zip(found, truth)], spec.depth),
                          "ef": spec.hnsw_ef}
            points = int(engine(lambda: shard.info().points_count, source,
                                "the shard cannot be read", copy))
        finally:
            with contextlib.suppress(InputError):  # the copy is removed next whatever it says
                engine(shard.close, source, "the shard cannot be closed", folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if progress:
        progress("querying", len(queries), len(queries))
    results = [[_item(p, spec, q.id, r) for r, p in enumerate(pts, start=1)]
               for q, pts in zip(queries, found)]
    anchor = Anchor(corpus, {q.id: q.doc_id for q in queries}, suggest_flags=False)
    rows = [span_row(q, raw, 0.0, corpus, anchor, None, spec.doc_key, False)
            for q, raw in zip(queries, results)]
    for row in rows:
        row.pop("latency_ms", None)
    info: dict[str, Any] = {
        "source": source, "kind": "snapshot" if snapshot else "edge shard", "points": points,
        "search": {"exact": spec.hnsw_ef is None, "limit": spec.depth, "batch": spec.batch,
                   **({} if spec.hnsw_ef is None else {"hnsw_ef": spec.hnsw_ef}),
                   "payload_keys": {"doc_id": spec.doc_key, "start": spec.start_key,
                                    "end": spec.end_key, "text": spec.text_key}},
        "placement": anchor.summary() or {}}
    if recall is not None:
        info["ann_recall"] = recall
    return rows, info
