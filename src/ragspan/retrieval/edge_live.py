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
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
import numpy as np
from msgspec import UNSET

from ragspan.base.errors import InputError, UsageError
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalQuery
from ragspan.io.files import file_sha256, tree_sha256
from ragspan.io.readonly import check_archive, copy_tree
from ragspan.io.runs.anchoring import Anchor
from ragspan.records.retrieval import (
    AnnRecall,
    EdgeShard,
    Recall,
    TextPlacement,
)
from ragspan.records.run_rows import RunRow
from ragspan.retrieval.edge_index import (
    FULL_SCAN_KB,
    edge_module,
    query_recall,
    recall_summary,
)
from ragspan.retrieval.filters import query_filters
from ragspan.retrieval.index import payload_filter
from ragspan.retrieval.live import LiveSpec, _item, searched_with
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
            max_unpacked_bytes: int | None = None) -> tuple[Any, str]:
    """The shard of ``source`` (a shard folder, or a snapshot file) loaded from a copy in
    ``folder``, and its identity: the snapshot file's sha256, or the shard folder's
    (``io.files.tree_sha256`` of the copy, before the engine opens it)."""
    qe = edge_module()
    target = os.path.join(folder, "shard")
    if snapshot:
        if not os.path.isfile(source):
            raise InputError("--snapshot: no such file", source)
        facts = check_archive(source, max_unpacked_bytes)
        if len(facts.shards) > 1:
            raise InputError(f"--snapshot is a collection's snapshot of {len(facts.shards)} "
                             f"shards ({', '.join(facts.shards[:8])}): searching one would "
                             "score part of the corpus; take one shard's snapshot of a "
                             "single-shard collection (docs/retrieval.md, \"Your index, "
                             "offline\")", source)
        identity = file_sha256(source)
        engine(lambda: qe.EdgeShard.unpack_snapshot(source, target), source,
               "--snapshot cannot be unpacked", target)
    else:
        if not os.path.isdir(source):
            raise InputError("--edge-shard: no such folder (a shard is evaluated read-only, "
                             "so none is created)", source)
        copy_tree(source, target)
        identity = tree_sha256(target)
    return engine(lambda: qe.EdgeShard.load(target), source, "not a Qdrant edge shard",
                  target), identity


def _search(shard: Any, spec: LiveSpec, queries: list[EvalQuery], vectors: np.ndarray,
            exact: bool, full_precision: bool = False) -> list[list[Any]]:
    """Every query's top ``spec.depth``: exact, or through the graph with ``spec.hnsw_ef``
    (``full_precision``: quantized vectors ignored, the graph's own loss alone)."""
    qe = edge_module()
    params = qe.SearchParams(exact=True) if exact else qe.SearchParams(
        hnsw_ef=spec.hnsw_ef, quantization=qe.QuantizationSearchParams(ignore=True)
        if full_precision else None)
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
              exact: bool, source: str, copy: str, full_precision: bool = False
              ) -> list[list[Any]]:
    """``_search`` through ``engine``: a vector size or name the shard refuses, a payload it
    cannot read, a panic, each an InputError naming the shard."""
    return engine(lambda: _search(shard, spec, queries, vectors, exact, full_precision),
                  source, "the shard cannot be searched", copy)


def shard_config(copy: str) -> tuple[int, bool]:
    """What the shard's own ``edge_config.json`` says of its search: its full-scan threshold
    (KB; Qdrant's default where it says none) and whether its vectors are quantized."""
    try:
        with open(os.path.join(copy, "edge_config.json"), encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        config = {}
    hnsw = config.get("hnsw_config") if isinstance(config, dict) else None
    threshold = hnsw.get("full_scan_threshold") if isinstance(hnsw, dict) else None
    vectors = config.get("vectors") if isinstance(config, dict) else None
    quantized = isinstance(config, dict) and config.get("quantization_config") is not None \
        or isinstance(vectors, dict) and any(isinstance(v, dict) and v.get("quantization_config")
                                             for v in vectors.values())
    return threshold if isinstance(threshold, int) else FULL_SCAN_KB, bool(quantized)


def _recall(spec: LiveSpec, found: list[list[Any]], truth: list[list[Any]],
            graph: list[list[Any]] | None) -> AnnRecall:
    """``ann_recall``: the graph's results against the exact search's. With quantized
    vectors, ``graph`` (the graph searched at full precision) splits the loss: ``hnsw`` its
    own, ``quantization`` what the quantized vectors lose against it."""
    def of(a: list[list[Any]], b: list[list[Any]]) -> Recall:
        return recall_summary([query_recall([str(p.id) for p in x], [str(p.id) for p in y])
                               for x, y in zip(a, b)], spec.depth)

    return AnnRecall(**msgspec.structs.asdict(of(found, truth)), ef=spec.hnsw_ef,
                     hnsw=UNSET if graph is None else of(graph, truth),
                     quantization=UNSET if graph is None else of(found, graph))


def _placed(summary: TextPlacement | None) -> TextPlacement:
    """The texts' placement as the report records it (empty when no result gave one)."""
    return TextPlacement() if summary is None else summary


def run_edge(spec: LiveSpec, source: str, snapshot: bool, queries: list[EvalQuery],
             corpus: Corpus, embedder: Any, progress: Any = None,
             max_unpacked_bytes: int | None = None
             ) -> tuple[list[RunRow], EdgeShard]:
    """The span run of the shard (or snapshot) ``source`` over ``queries``, and what the
    report records of it (its points, the search, ``ann_recall`` with ``--hnsw-ef``, the
    placement counts)."""
    if spec.hnsw_ef is not None and spec.hnsw_ef < spec.depth:
        raise UsageError(f"--hnsw-ef {spec.hnsw_ef} is below --depth {spec.depth}: the search "
                         "beam must hold the results it returns")
    folder = tempfile.mkdtemp(prefix="ragspan-edge-copy-")
    try:
        shard, identity = _loaded(source, snapshot, folder, max_unpacked_bytes)
        try:
            vectors = embedder.embed([q.query for q in queries], "embedding queries")
            copy = os.path.join(folder, "shard")
            found = _searched(shard, spec, queries, vectors, spec.hnsw_ef is None, source, copy)
            stats = engine(shard.info, source, "the shard cannot be read", copy)
            points = int(stats.points_count)
            recall = None
            if spec.hnsw_ef is not None:
                threshold, quantized = shard_config(copy)
                truth = _searched(shard, spec, queries, vectors, True, source, copy)
                graph = _searched(shard, spec, queries, vectors, False, source, copy,
                                  full_precision=True) if quantized else None
                in_graph = int(stats.indexed_vectors_count)
                kb = points * int(vectors.shape[1]) * 4 / 1024
                recall = msgspec.structs.replace(
                    _recall(spec, found, truth, graph), points_in_graph=in_graph,
                    points_scanned=points - in_graph, full_scan_threshold_kb=threshold,
                    vectors_kb=round(kb), quantized=quantized,
                    note=(f"the shard's {round(kb):,} KB of vectors are under its full-scan "
                          f"threshold ({threshold:,} KB): Qdrant scans them exactly, so this "
                          "recall says nothing of its graph") if kb < threshold else UNSET)
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
    rows = [span_row(q, raw, None, corpus, anchor, None, spec.doc_key, False)
            for q, raw in zip(queries, results)]
    return rows, EdgeShard(source=source, kind="snapshot" if snapshot else "edge shard",
                           points=points, sha256=identity, search=searched_with(spec),
                           placement=_placed(anchor.summary()),
                           ann_recall=UNSET if recall is None else recall)
