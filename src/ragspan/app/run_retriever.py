"""``ragspan run-retriever``: corpus + eval set + (config | user retriever) -> span run."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from msgspec import UNSET, UnsetType

from ragspan.app.output import CommandResult
from ragspan.base.errors import InputError, UsageError, present
from ragspan.base.options import RUN_RETRIEVER_OPTIONS
from ragspan.base.progress import Progress
from ragspan.base.records import InputRef
from ragspan.base.voice import setting
from ragspan.io.corpus import Corpus, read_corpus
from ragspan.io.evalset import EvalQuery, EvalSet, query_digests, read_eval_set
from ragspan.io.files import read_bytes, sha256_hex
from ragspan.io.qrels import read_qrels
from ragspan.io.runs.docs import write_doc_rows
from ragspan.io.serialize import jsonl
from ragspan.records.envelope import encode
from ragspan.records.retrieval import retrieving
from ragspan.records.run_rows import RunRow
from ragspan.records.score_facts import Latency, Percentiles
from ragspan.report.envelope import statement
from ragspan.retrieval.agents import is_agent, run_agent
from ragspan.retrieval.config import PipelineConfig, config_of_bytes
from ragspan.retrieval.edge_live import run_edge
from ragspan.retrieval.embed import Embedder, default_cache_dir
from ragspan.retrieval.filters import unscoped_rows
from ragspan.retrieval.live import LiveSpec, run_live
from ragspan.retrieval.pipeline import Pipeline, manifest_rows
from ragspan.retrieval.user import load_retriever, run_user_retriever

__all__ = ["RUN_RETRIEVER_OPTIONS", "run"]

log = logging.getLogger("ragspan")


@dataclass(frozen=True)
class ReadInputs:
    """Inputs read once for several runs: the corpus, the eval set, and per configuration
    path its parsed configuration and the sha256 of its bytes."""

    corpus: Corpus
    evalset: EvalSet
    configs: dict[str, tuple[PipelineConfig, str]]


def read_config(path: str) -> tuple[PipelineConfig, str]:
    """The configuration in ``path`` and the sha256 of the bytes it was parsed from."""
    data = read_bytes(path)
    return config_of_bytes(data, path), sha256_hex(data)


def cache_line(execution: Mapping[str, object]) -> str:
    """The embedding cache's use, for the log line: ``; embedded 12, 190 from the cache``."""
    if "embedded" not in execution:
        return ""
    return (f"; embedded {execution['embedded']:,}, {execution['embeddings_from_cache']:,} from "
            "the cache")


def latency_summary(latencies: Sequence[float],
                    stage_ms: Sequence[Mapping[str, float]] = ()) -> Latency:
    """p50 / p95 of the queries' times (ms per query, to the microsecond) and of each
    stage's (``stage_ms``: per query, its time by stage), for the run-retriever report."""
    lat = np.array(latencies, dtype=float)
    if not lat.size:
        return Latency(rows=0)

    def ms(values: np.ndarray, q: int) -> float:
        return round(float(np.percentile(values, q)), 3)

    names = sorted({s for row in stage_ms for s in row})
    stages = {s: np.array([row[s] for row in stage_ms if s in row])
              for s in names}  # per stage (embed, search, fusion, rerank): the rows it ran for
    return Latency(rows=int(lat.size), p50=ms(lat, 50), p95=ms(lat, 95),
                   stages={s: Percentiles(ms(v, 50), ms(v, 95)) for s, v in stages.items()}
                   if names else UNSET)


def _times(rows: Sequence[RunRow]) -> tuple[list[float], list[dict[str, float]]]:
    """The rows' ``latency_ms`` (those that have one) and their ``stage_ms``."""
    return ([r.latency_ms for r in rows if not isinstance(r.latency_ms, UnsetType)],
            [r.stage_ms for r in rows if not isinstance(r.stage_ms, UnsetType)])


@dataclass
class Retrieved:
    """What one way of retrieving gave: the run's rows; what it adds to the run's header, to
    the report's inputs, summary and parameters; the files written beside the run (a
    doc-level run, a chunk manifest); the chunker's notes (the report's details); and a
    doc-level user run's per-query times."""

    rows: list[RunRow]
    header: dict[str, Any]
    summary: dict[str, Any]
    parameters: dict[str, Any]
    inputs: list[InputRef] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    notes: dict[str, dict[str, str | int]] = field(default_factory=dict)
    doc_latency: list[float] = field(default_factory=list)
    # how this execution went, not what the inputs give: timings and the embedding cache's
    # use (``--record-latency`` writes them into the report's summary.execution)
    execution: dict[str, int | float] = field(default_factory=dict)


def run(*, corpus: str, eval_set: str, out: str, config: str | None = None,
        retriever: str | None = None, chunks_out: str | None = None,
        cache_dir: str | None = None, no_cache: bool = False, qdrant_path: str | None = None,
        qdrant_url: str | None = None, depth: int | None = None, id_key: str | None = None,
        framework: str | None = None, qrels: str | None = None, to: str | None = None, tag: str | None = None,
        collection: str | None = None, edge_shard: str | None = None,
        snapshot: str | None = None, max_unpacked_bytes: int | None = None,
        vector_name: str | None = None,
        hnsw_ef: int | None = None, doc_key: str | None = None, start_key: str | None = None,
        end_key: str | None = None,
        text_key: str | None = None, model: str | None = None, scope: str | None = None,
        keep_collection: bool = False, strict_cache: bool = False,
        record_latency: bool = False, progress: bool | None = None,
        read: ReadInputs | None = None) -> CommandResult:
    """The run-retriever report and its files (run, chunk manifest), which ``deliver``
    writes together with the report or not at all. ``read``: the corpus, eval set and
    configuration already read from those paths (``sweep`` reads each once)."""
    _refuse_combinations(
        config=config, retriever=retriever,
        collection=collection if collection is not None else edge_shard if edge_shard
        is not None else snapshot, live_only={
            setting("vector-name"): vector_name, setting("hnsw-ef"): hnsw_ef, setting("doc-key"): doc_key,
            setting("start-key"): start_key, setting("end-key"): end_key, setting("text-key"): text_key,
            setting("model"): model, setting("scope"): scope},
        snapshot_only={setting("max-unpacked-bytes"): max_unpacked_bytes} if snapshot is None
        else {},
        keep_collection=keep_collection, on_qdrant=bool(qdrant_url or qdrant_path),
        chunks_out=chunks_out, id_key=id_key, to=to, tag=tag)
    framework = framework or "auto"  # the declared default (the command line passes None)
    if framework != "auto" and retriever is None:
        raise UsageError(f"{setting('framework')} names what {setting('retriever')}'s object "
                         f"is: give it with {setting('retriever')}")
    t0 = time.perf_counter()
    bar = Progress(progress)
    corp = read.corpus if read is not None else read_corpus(corpus)
    evalset = read.evalset if read is not None else read_eval_set(eval_set)
    inputs = [InputRef("corpus", corpus, corp.sha256), InputRef("eval_set", eval_set, evalset.sha256)]
    queries, summary = _judged_queries(evalset, qrels, inputs)
    summary["documents"] = len(corp)
    cache = None if no_cache else Path(cache_dir) if cache_dir else default_cache_dir()
    if config is not None:
        cfg, config_sha = read.configs[config] if read is not None else read_config(config)
        inputs.append(InputRef("config", config, config_sha))
        got = _by_pipeline(cfg, queries, corp, eval_set, depth=depth, qdrant_path=qdrant_path,
                           qdrant_url=qdrant_url, cache=cache, bar=bar,
                           strict_cache=strict_cache, keep_collection=keep_collection,
                           chunks_out=chunks_out)
    elif edge_shard is not None or snapshot is not None:
        if edge_shard is not None and snapshot is not None:
            raise UsageError(f"give {setting('edge-shard')} or {setting('snapshot')}, not both")
        if qdrant_url or qdrant_path or collection:
            raise UsageError(f"{setting('edge-shard')} and {setting('snapshot')} are searched "
                             f"in-process: drop {setting('collection')}, {setting('qdrant-url')} "
                             f"and {setting('qdrant-path')}")
        source = present(edge_shard or snapshot, f"{setting('edge-shard')} or {setting('snapshot')}")
        spec = LiveSpec(source, vector_name=vector_name, hnsw_ef=hnsw_ef,
                        doc_key=doc_key or "doc_id", start_key=start_key or "start",
                        end_key=end_key or "end", text_key=text_key or "text",
                        depth=depth or 10, scope=scope or "doc_id")
        embedder = Embedder(model or "all-MiniLM-L6-v2", cache, progress=bar,
                            strict_cache=strict_cache)
        got = _by_edge(spec, source, snapshot is not None, queries, corp, eval_set, embedder,
                       bar, max_unpacked_bytes)
    elif collection is not None:
        spec = LiveSpec(collection, url=qdrant_url, path=qdrant_path, vector_name=vector_name,
                        hnsw_ef=hnsw_ef, doc_key=doc_key or "doc_id", start_key=start_key or "start",
                        end_key=end_key or "end", text_key=text_key or "text",
                        depth=depth or 10, scope=scope or "doc_id")
        embedder = Embedder(model or "all-MiniLM-L6-v2", cache, progress=bar,
                            strict_cache=strict_cache)
        got = _by_collection(spec, queries, corp, eval_set, embedder, bar)
    else:
        got = _by_user(present(retriever, setting("retriever")), queries, corp, bar, depth=depth,
                       id_key=id_key, to=to, tag=tag, out=out, framework=framework)
    summary.update(got.summary)
    asked = {x.id for x in queries}  # built once: a set per item was ~5 s at 10k questions
    header = {"corpus_sha256": corp.sha256, "eval_set_sha256": evalset.sha256,
              "queries": {q: d for q, d in query_digests(evalset).items() if q in asked},
              **got.header}
    outputs = got.outputs
    rows = got.rows
    execution = {**got.execution, "latency_ms": encode(
        latency_summary(*_times(rows)) if rows
        else latency_summary([round(x, 3) for x in got.doc_latency]))}
    if not record_latency:  # a wall time in the run would change every digest downstream
        rows = [msgspec.structs.replace(row, latency_ms=UNSET, stage_ms=UNSET) for row in rows]
    if out not in outputs:
        outputs[out] = jsonl([{"_header": header}, *rows])
    elapsed = time.perf_counter() - t0
    execution["elapsed_s"] = round(elapsed, 3)
    if record_latency:  # asked for: the report then differs from run to run
        summary["execution"] = execution
    log.info("%s chunks, %d queries, %.1f s -> %s%s", summary.get("chunks", "user"),
             len(queries), elapsed, out, cache_line(execution))
    subject = [InputRef("run", out, sha256_hex(outputs[out].encode("utf-8")))]
    if chunks_out:
        subject.append(InputRef("chunks", chunks_out, sha256_hex(outputs[chunks_out].encode("utf-8"))))
    given, said, listed = retrieving(got.parameters, summary, {"chunker_notes": got.notes})
    doc = statement(kind="run-retriever", subject=subject, inputs=inputs,
                    parameters=given, summary=said, details=listed)
    return CommandResult(doc, outputs)


def _refuse_combinations(*, config: str | None, retriever: str | None, collection: str | None,
                         live_only: dict[str, Any], keep_collection: bool, on_qdrant: bool,
                         chunks_out: str | None, id_key: str | None, to: str | None,
                         tag: str | None, snapshot_only: dict[str, Any] | None = None) -> None:
    """A UsageError for options that do not go together (``live_only``: the options of
    ``--collection``, by flag; ``snapshot_only``: those of ``--snapshot``, given without
    it)."""
    if sum(x is not None for x in (config, retriever, collection)) != 1:
        raise UsageError(f"give exactly one of {setting('config')} (a pipeline), "
                         f"{setting('retriever')} (your own), {setting('collection')} (your "
                         f"Qdrant collection, read-only), {setting('edge-shard')} or "
                         f"{setting('snapshot')} (your index offline, read-only)")
    given = [k for k, v in live_only.items() if v is not None]
    if given and collection is None:
        raise UsageError(f"{given[0]} applies to {setting('collection')}")
    stray = [k for k, v in (snapshot_only or {}).items() if v is not None]
    if stray:
        raise UsageError(f"{stray[0]} applies to {setting('snapshot')}")
    if keep_collection and not (config and on_qdrant):
        raise UsageError(f"{setting('keep-collection')} keeps the collection a pipeline makes on Qdrant: "
                         f"give it with {setting('config')} and {setting('qdrant-url')} or "
                         f"{setting('qdrant-path')}")
    if chunks_out and retriever:
        raise UsageError(f"{setting('chunks-out')} needs {setting('config')}: a user retriever's "
                         "chunks are its own")
    if id_key and config:
        raise UsageError(f"{setting('id-key')} names the doc id key of {setting('retriever')}'s "
                         "results: a pipeline's chunks carry their doc ids")
    if to and config:
        raise UsageError(f"{setting('to')} writes a doc-level run, which a {setting('retriever')} "
                         "returning doc ids alone gives: a pipeline writes a span run")
    if tag is not None and to != "trec":
        raise UsageError(f"{setting('tag')} names the run of a TREC file: give it with {setting('to')} trec")


def _judged_queries(evalset: EvalSet, qrels: str | None, inputs: list[InputRef]
                    ) -> tuple[list[EvalQuery], dict[str, Any]]:
    """The queries to run (with ``qrels``, only the judged ones; the qrels join ``inputs``)
    and the summary's query counts."""
    queries = list(evalset.queries)
    if qrels is None:
        return queries, {"queries": len(queries)}
    judged = read_qrels(qrels)
    inputs.append(InputRef("qrels", qrels, judged.sha256))
    kept = [q for q in queries if q.id in judged.judgments]
    if not kept:
        raise InputError("no query of the eval set is judged in the qrels", qrels)
    return kept, {"queries": len(kept), "queries_not_judged": len(queries) - len(kept)}


def _by_pipeline(cfg: PipelineConfig, queries: list[EvalQuery], corp: Corpus, eval_set: str,
                 *, depth: int | None, qdrant_path: str | None, qdrant_url: str | None,
                 cache: Path | None, bar: Progress, strict_cache: bool, keep_collection: bool,
                 chunks_out: str | None) -> Retrieved:
    """``--config``: ragspan's own pipeline (on Qdrant when a URL or path is given)."""
    if depth is not None:
        cfg = dataclasses.replace(cfg, depth=depth)
    summary: dict[str, Any] = {}
    unscoped = unscoped_rows(cfg.scope, queries, eval_set)
    if unscoped:
        summary["unscoped_queries"] = unscoped
        log.warning("%d of %d queries have no doc_id: searched corpus-wide "
                    "(scope = \"doc_id-or-all\")", unscoped, len(queries))
    if cfg.dense is not None and (qdrant_path or qdrant_url):
        cfg = dataclasses.replace(cfg, dense=dataclasses.replace(
            cfg.dense, backend="qdrant", qdrant_path=qdrant_path, qdrant_url=qdrant_url))
    pipe = Pipeline(cfg, corp, cache_dir=cache, progress=bar, strict_cache=strict_cache,
                    keep_collection=keep_collection)
    if keep_collection and getattr(pipe.dense, "collection", None):
        log.warning(f"keeping Qdrant collection '%s' ({setting('keep-collection')})", pipe.dense.collection)
        summary["kept_collection"] = pipe.dense.collection
    try:
        t_query = time.perf_counter()
        rows = pipe.run(queries)
        query_s = time.perf_counter() - t_query
    except InputError as exc:
        if exc.path is not None:
            raise
        raise InputError(exc.reason, eval_set) from None  # a query's filters: name the file
    finally:
        pipe.close()
    recall = pipe.dense.ann_recall(cfg.dense.depth) if cfg.dense is not None and \
        hasattr(pipe.dense, "ann_recall") else None
    if recall is not None:  # what the approximate search cost: the exact top k it missed
        summary["ann_recall"] = recall
    notes = {d: pipe.table.notes[d] for d in sorted(pipe.table.notes)}
    fallback = [d for d, n in notes.items() if n.get("fallback")]
    dropped = sum(int(n.get("dropped_invisible", 0)) for n in pipe.table.notes.values())
    summary.update({
        "config": cfg.name, "config_digest": cfg.digest, "chunks": len(pipe.table.chunks),
        "chunker_fallback_documents": len(fallback), "invisible_chunks_dropped": dropped,
    })
    execution: dict[str, int | float] = {"queries_per_second": round(len(queries) / max(query_s, 1e-9),
                                                             2)}
    if pipe.embedder is not None:
        summary.update(encode(pipe.embedder.describe()))
        execution.update({"embedded": pipe.chunk_counts[0],
                          "embeddings_from_cache": pipe.chunk_counts[1],
                          "queries_embedded": pipe.query_counts[0],
                          "queries_from_cache": pipe.query_counts[1],
                          **pipe.embedder.cache_use()})
    outputs: dict[str, str] = {}
    if chunks_out:
        chunk_header = {"config": cfg.as_json(), "config_digest": cfg.digest,
                        "corpus_sha256": corp.sha256, "notes": notes}
        outputs[chunks_out] = jsonl([{"_header": chunk_header}, *manifest_rows(pipe.table)])
    settings = {"config": cfg.as_json(), "config_digest": cfg.digest}
    return Retrieved(rows, dict(settings), summary, dict(settings), outputs=outputs, notes=notes,
                     execution=execution)


def _by_collection(spec: LiveSpec, queries: list[EvalQuery], corp: Corpus, eval_set: str,
                   embedder: Embedder, bar: Progress) -> Retrieved:
    """``--collection``: the user's own Qdrant collection, read-only."""
    summary: dict[str, Any] = {}
    unscoped = unscoped_rows(spec.scope, queries, eval_set, flag=True)
    if unscoped:
        summary["unscoped_queries"] = unscoped
    rows, live = run_live(spec, queries, corp, embedder, bar)
    described = msgspec.structs.replace(live, calls=UNSET, placement=UNSET)
    summary["collection"] = live
    return Retrieved(rows, {"collection": described}, summary,
                     {"collection": described, **encode(embedder.describe())},
                     execution=dict(embedder.cache_use()))


def _by_edge(spec: LiveSpec, source: str, snapshot: bool, queries: list[EvalQuery],
             corp: Corpus, eval_set: str, embedder: Embedder, bar: Progress,
             max_unpacked_bytes: int | None = None) -> Retrieved:
    """``--edge-shard`` / ``--snapshot``: the user's index, offline and read-only."""
    summary: dict[str, Any] = {}
    unscoped = unscoped_rows(spec.scope, queries, eval_set, flag=True)
    if unscoped:
        summary["unscoped_queries"] = unscoped
    rows, info = run_edge(spec, source, snapshot, queries, corp, embedder, bar,
                          max_unpacked_bytes)
    summary["edge_shard"] = info
    if not isinstance(info.ann_recall, UnsetType):
        summary["ann_recall"] = info.ann_recall
    described = msgspec.structs.replace(info, placement=UNSET, ann_recall=UNSET)
    return Retrieved(rows, {"edge_shard": described}, summary,
                     {"edge_shard": described, **encode(embedder.describe())},
                     execution=dict(embedder.cache_use()))


def _by_user(retriever: str, queries: list[EvalQuery], corp: Corpus, bar: Progress, *,
             depth: int | None, id_key: str | None, to: str | None, tag: str | None,
             out: str, framework: str = "auto") -> Retrieved:
    """``--retriever``: the user's own retriever; a doc-level one writes ``out`` as a doc
    run (``to``: its format, ``tag``: a TREC run's name). ``framework``: what the object
    must be (``auto``: told by its methods); recorded when named."""
    obj = load_retriever(retriever)
    result = run_agent(obj, queries, corp, bar, depth, id_key) if is_agent(obj, framework) \
        else run_user_retriever(obj, queries, corp, bar, depth, id_key, framework)
    summary: dict[str, Any] = {}
    if result.placement is not None:
        summary["placement"] = encode(result.placement)
    if result.steps is not None:
        summary["agent_steps"] = result.steps
    parameters: dict[str, Any] = {"retriever": retriever}
    if framework != "auto":
        parameters["framework"] = framework
    outputs: dict[str, str] = {}
    if result.level == "doc":
        fmt = to or "jsonl"
        parameters.update(level="doc", format=fmt, **({"tag": tag} if tag else {}))
        outputs[out] = write_doc_rows(result.doc_rows, fmt, tag or "ragspan")
        summary["level"] = "doc"
    elif to:
        raise InputError(f"{setting('to')} {to} writes a doc-level run, but '{retriever}' returned "
                         f"spans: leave {setting('to')} out for a span run")
    return Retrieved(result.rows, {"retriever": retriever}, summary, parameters,
                     outputs=outputs,
                     doc_latency=result.latency_ms if result.level == "doc" else [])
