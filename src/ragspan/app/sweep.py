"""``ragspan sweep``: several pipeline configurations over one eval set, side by side.

Each configuration runs as ``run-retriever`` would, with the process's one loaded model and
the one embedding cache (a chunk embedded once, in any configuration or earlier sweep, is
read from the cache), and is scored as ``score --chunks`` would, labels included. Its files
go to ``OUT_DIR/<config name>/``: ``run.jsonl``, ``chunks.jsonl``, ``run-retriever.json``,
``score.json``, written together or not at all. A configuration that fails stops the sweep
with its error, the finished configurations' files complete; with ``keep_going`` the error
is recorded in the sweep report and the sweep goes on, and it ends with exit 3.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from msgspec import UNSET

from ragspan.app import run_retriever
from ragspan.app.output import CommandResult
from ragspan.app.report import render
from ragspan.app.run_retriever import ReadInputs, read_config
from ragspan.app.score import ScoreSettings, eval_set_body, with_warnings
from ragspan.base.errors import ExitCode, RagspanError, UsageError
from ragspan.base.progress import Progress
from ragspan.base.records import InputRef
from ragspan.base.voice import setting
from ragspan.gate.inputs import score_report_of
from ragspan.io.corpus import read_corpus
from ragspan.io.evalset import read_eval_set
from ragspan.io.files import sha256_hex
from ragspan.io.outputs import check_outputs, write_files
from ragspan.records.sweep import (
    Configuration,
    Execution,
    SweepDetails,
    SweepParameters,
    SweepSummary,
    Totals,
)
from ragspan.report.envelope import report_text, statement, statement_of
from ragspan.report.readout.build import build, config_of
from ragspan.report.readout.query_csv import query_csv
from ragspan.retrieval.config import PipelineConfig
from ragspan.scoring.span_scoring import DEFAULT_KS

log = logging.getLogger("ragspan")
FILES = ("run.jsonl", "chunks.jsonl", "run-retriever.json", "score.json")
# the developer report and the per-query table (``readout.query_csv``), written last
REPORTS = {"markdown": "md", "html": "html", "csv": "csv"}


def plan(configs: Sequence[str], out_dir: str
         ) -> tuple[list[tuple[str, str, dict[str, str]]], dict[str, tuple[PipelineConfig, str]]]:
    """``(config path, name, {file: path})`` per configuration, names read from the
    configurations (each must be unique: it names the folder), and each configuration as
    read, once (``run_retriever.read_config``: parsed, and the sha256 of its bytes)."""
    seen: dict[str, str] = {}
    out = []
    read: dict[str, tuple[PipelineConfig, str]] = {}
    for path in configs:
        read[path] = read.get(path) or read_config(path)
        name = read[path][0].name
        if name in seen:
            raise UsageError(f"configurations {seen[name]} and {path} share the name "
                             f"'{name}': each names its own folder under {setting('out-dir')}")
        if name in (".", "..") or os.sep in name or (os.altsep and os.altsep in name):
            raise UsageError(f"configuration name '{name}' ({path}) cannot name a folder")
        seen[name] = path
        folder = os.path.join(out_dir, name)
        out.append((path, name, {f: os.path.join(folder, f) for f in FILES}))
    return out, read


def run(*, configs: Sequence[str], eval_set: str, corpus: str, out_dir: str,
        ks: Sequence[int] = (), tau: float = 0.5, cache_dir: str | None = None,
        no_cache: bool = False, keep_going: bool = False, baseline: str | None = None,
        record_latency: bool = False) -> CommandResult:
    """Run, score and report every configuration. ``record_latency``: each configuration's
    timings and embedding-cache use go into its run-retriever report and the sweep's rows
    (``execution``), which then differ from sweep to sweep; by default they are logged."""
    planned, read_configs, reports = _prepared(configs, out_dir, baseline, eval_set, corpus)
    ks = tuple(ks) or DEFAULT_KS
    read = ReadInputs(read_corpus(corpus), read_eval_set(eval_set), read_configs)
    rows: list[Configuration] = []
    scored: list[Any] = []  # readout.build.Config of each finished configuration
    failed = 0
    t0 = time.perf_counter()
    progress = Progress()
    for i, (config, name, files) in enumerate(planned):
        progress("sweep: configurations", i, len(planned))
        elapsed = time.perf_counter() - t0
        eta = f", about {elapsed / i * (len(planned) - i):.0f} s left" if i else ""
        log.info("sweep: configuration %d of %d (%s), %.0f s so far%s", i + 1, len(planned),
                 name, elapsed, eta)
        try:
            rr, score_doc, score_text = _run_one(config, files, eval_set, corpus, ks, tau,
                                                 cache_dir, no_cache, read, record_latency)
        except RagspanError as exc:
            if not keep_going:
                raise
            failed += 1
            log.warning("sweep: configuration %s failed: %s", name, exc)
            rows.append(Configuration(name=name, config=config, error=str(exc),
                                      exit_code=int(exc.exit_code)))
            continue
        rows.append(_row(name, config, files, rr.report, score_doc, ks,
                         sha256_hex(score_text.encode("utf-8"))))
        scored.append(_config(score_text, files["score.json"]))
    progress("sweep: configurations", len(planned), len(planned))
    written_reports = _write_reports(scored, baseline, reports)
    inputs = [InputRef("eval_set", eval_set, read.evalset.sha256),
              InputRef("corpus", corpus, read.corpus.sha256),
              *(InputRef("config", c, read_configs[c][1]) for c in configs)]
    subject = [InputRef("score", r.files["score.json"], r.score_sha256) for r in rows
               if r.files is not UNSET and r.score_sha256 is not UNSET] or inputs[:1]
    code = ExitCode.INPUT if failed else ExitCode.OK
    parameters = SweepParameters(k=list(ks), grounding_threshold=tau, keep_going=keep_going,
                                 cache=not no_cache,
                                 record_latency=True if record_latency else UNSET)
    doc = statement(
        kind="sweep", subject=subject, inputs=inputs, parameters=parameters,
        # no wall time: the same inputs give the same sweep report
        summary=_totals(rows, len(planned), failed),
        details=SweepDetails(configurations=rows, reports=written_reports),
        verdict="error" if failed else "pass", exit_code=code)
    return CommandResult(doc)


def _prepared(configs: Sequence[str], out_dir: str, baseline: str | None, eval_set: str,
              corpus: str) -> tuple[list[tuple[str, str, dict[str, str]]],
                                    dict[str, tuple[PipelineConfig, str]], dict[str, str]]:
    """The sweep's plan (``plan``), checked before any work: at least one configuration, an
    out-dir that is a folder, a baseline that names one; the folders made and every output
    checked against the inputs. Returns the plan, the configurations read and the report
    paths by format."""
    if not configs:
        raise UsageError(f"give at least one {setting('config')}")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError(f"{setting('out-dir')} {out_dir} is not a folder")
    planned, read_configs = plan(configs, out_dir)
    if baseline is not None and baseline not in [name for _, name, _ in planned]:
        raise UsageError(f"{setting('baseline')} '{baseline}' names no configuration; the configurations "
                         f"are {', '.join(name for _, name, _ in planned)}")
    reports = {fmt: os.path.join(out_dir, f"report.{ext}") for fmt, ext in REPORTS.items()}
    outputs = {f"{setting('out-dir')} ({name}/{f})": p for _, name, files in planned
               for f, p in files.items()}
    outputs.update({f"{setting('out-dir')} (report.{REPORTS[fmt]})": p for fmt, p in reports.items()})
    _make_folders([out_dir, *(os.path.dirname(f["run.jsonl"]) for _, _, f in planned)],
                  outputs, [eval_set, corpus, *configs])
    return planned, read_configs, reports


def _totals(rows: list[Configuration], configurations: int, failed: int) -> SweepSummary:
    """The sweep's summary: configurations planned and failed and, where the rows recorded
    their execution, the chunks embedded and taken from the cache over all of them (by
    default never reported: the same inputs give the same sweep report)."""
    ran = [r.execution for r in rows if r.execution is not UNSET]
    return SweepSummary(
        configurations=configurations, failed=failed,
        execution=Totals(embedded=sum(e.embedded for e in ran),
                         embeddings_from_cache=sum(e.embeddings_from_cache for e in ran))
        if ran else UNSET)


def _make_folders(folders: Sequence[str], outputs: dict[str, str], inputs: Sequence[str]
                  ) -> None:
    """Create the sweep's folders that do not exist yet, then check its outputs against
    its inputs (``check_outputs``); a refused sweep removes the folders it made."""
    made = [d for d in dict.fromkeys(folders) if not os.path.isdir(d)]
    for folder in made:
        os.makedirs(folder)
    try:
        check_outputs(outputs, list(inputs))
    except RagspanError:
        for folder in reversed(made):  # leave no trace of a refused sweep
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise


def _run_one(config: str, files: dict[str, str], eval_set: str, corpus: str,
             ks: Sequence[int], tau: float, cache_dir: str | None, no_cache: bool,
             read: ReadInputs, record_latency: bool = False
             ) -> tuple[CommandResult, dict[str, Any], str]:
    """One configuration run, written and scored: its run-retriever result, its score
    report and that report's canonical text. On an error nothing of it stays behind."""
    written: list[str] = []
    try:
        rr = run_retriever.run(corpus=corpus, eval_set=eval_set, out=files["run.jsonl"],
                               config=config, chunks_out=files["chunks.jsonl"],
                               cache_dir=cache_dir, no_cache=no_cache, read=read,
                               record_latency=record_latency)
        write_files(dict(rr.files))  # scored from where they lie, so reports name them
        written = list(rr.files)
        settings = ScoreSettings(ks=tuple(ks), tau=tau, run_format="span", min_coverage=0.0)
        body = with_warnings(lambda: eval_set_body(
            eval_set, files["run.jsonl"], corpus, files["chunks.jsonl"], settings,
            read=(read.evalset, read.corpus)))
        score_doc = statement_of(body)
        score_text = report_text(score_doc)
        write_files({files["run-retriever.json"]: report_text(rr.report),
                     files["score.json"]: score_text})
    except RagspanError:
        for path in written:
            if os.path.exists(path):
                os.unlink(path)
        raise
    return rr, score_doc, score_text


def _config(score_text: str, path: str) -> Any:
    """A finished configuration as ``ragspan report`` reads its score report: from the
    canonical text just written (parsed once; its sha256 is the file's)."""
    doc = json.loads(score_text)
    return config_of(score_report_of(doc, sha256_hex(score_text.encode("utf-8")), path,
                                     "score"), doc["predicate"])


def _write_reports(scored: Sequence[Any], baseline: str | None, paths: dict[str, str]
                   ) -> dict[str, str]:
    """The developer report of the finished configurations (``ragspan report``), in each
    format; none when no configuration finished, or the baseline is not among them."""
    if not scored or (baseline is not None and baseline not in [c.name for c in scored]):
        if scored:
            log.warning("sweep: the baseline %s did not finish: no report written", baseline)
        return {}
    readout = build(scored, baseline)
    write_files({p: query_csv(readout.configs) if fmt == "csv"
                 else render(readout, fmt, "developer") for fmt, p in paths.items()})
    return dict(paths)


def _row(name: str, config: str, files: dict[str, str], rr: dict[str, Any],
         score: dict[str, Any], ks: Sequence[int], score_sha256: str) -> Configuration:
    """What the sweep report keeps of one finished configuration."""
    rr_s, sc = rr["predicate"]["summary"], score["predicate"]["summary"]
    metrics = sc["metrics"]
    keep = ("complete_grounding", "span_coverage", "span_recall", "precision", "hit_rate",
            "mrr", "retrieved_chars")
    ran = rr_s.get("execution")  # --record-latency
    return Configuration(
        name=name, config=config, config_digest=rr_s.get("config_digest"), files=files,
        chunks=rr_s.get("chunks"),
        metrics={f"{m}@{k}": metrics[f"{m}@{k}"] for m in keep for k in ks},
        failure_labels=sc["failure_labels"]["by_k"], score_sha256=score_sha256,
        execution=UNSET if ran is None else Execution(
            embedded=ran.get("embedded", 0),
            embeddings_from_cache=ran.get("embeddings_from_cache", 0),
            elapsed_s=ran.get("elapsed_s", 0)))
