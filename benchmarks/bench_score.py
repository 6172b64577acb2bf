"""Benchmark: span scoring of 10,000 queries x top-100 spans x 3 gold spans (seeded synthetic).

Prints queries/second for the metric computation alone and for the whole command (JSONL
parsing, scoring, report building and writing). Targets: metrics < 1 s, command < 10 s.
Then the floor, side by side in one run: the fastest parse of the inputs available (pyarrow's
JSON reader into columns, no checks, on the run and the eval set), the metric computation
(span metrics and the doc-level view) and writing the report's canonical JSON; the whole
command, with the ``fast`` extra and without, against it, both with the cyclic garbage
collector paused as the command line pauses it (``base.collector``). Target: the whole
command within 2x the floor.
Then the whole command as a process (``ragspan score --eval-set E --run R --out F``, its
imports included), with the ``fast`` extra and as the default install runs it (the plain
reader, ``RAGSPAN_NO_FAST=1``), against a process that parses the run with orjson, line by
line (the fastest Python parse of JSONL; nothing checked, nothing scored), alternating, each
with its peak resident memory. Targets: within x8 as the default install runs it (report
format v2), x4 with the extra.
Then the failure labels: the labelling alone (the facts of every gold span and the labels at
4 cutoffs, with a chunk manifest of 512-character chunks tiling every document), and the
whole command with ``--chunks`` against without. Target: labelling adds < 0.5 s.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_QUERIES, TOP, GOLD, N_DOCS, DOC_LEN = 10_000, 100, 3, 2_000, 50_000


def make_files(tmp: Path, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    evalset, run = [], []
    for q in range(N_QUERIES):
        doc = f"d{rng.integers(N_DOCS)}"
        third = DOC_LEN // GOLD  # one gold span in each third: overlapping spans are refused
        gs = np.arange(GOLD) * third + rng.integers(0, third - 400, GOLD)
        gl = rng.integers(20, 400, GOLD)
        evalset.append(json.dumps({"id": f"q{q}", "query": "x", "doc_id": doc,
                                   "gold_spans": [[int(s), int(s + n)] for s, n in zip(gs, gl)],
                                   "tags": {"group": f"g{q % 7}"}}))
        docs = np.where(rng.random(TOP) < 0.5, doc, [f"d{x}" for x in rng.integers(N_DOCS, size=TOP)])
        rs = rng.integers(0, DOC_LEN - 600, TOP)
        run.append(json.dumps({"id": f"q{q}", "retrieved": [
            {"doc_id": str(d), "start": int(s), "end": int(s + 512), "score": float(1 - i / TOP),
             "chunk_id": f"{d}:{s}"} for i, (d, s) in enumerate(zip(docs, rs))]}))
    e, r = tmp / "eval.jsonl", tmp / "run.jsonl"
    e.write_text("\n".join(evalset) + "\n")
    r.write_text("\n".join(run) + "\n")
    with open(tmp / "chunks.jsonl", "w") as fh:
        for doc in range(N_DOCS):
            for s in range(0, DOC_LEN, 512):
                fh.write(json.dumps({"chunk_id": f"d{doc}:{s}", "doc_id": f"d{doc}",
                                     "start": s, "end": min(s + 512, DOC_LEN)}) + "\n")
    return e, r


def main() -> None:
    from ragspan.app import score
    from ragspan.base import collector
    from ragspan.io.chunks import read_chunks
    from ragspan.io.evalset import read_eval_set
    from ragspan.io.runs.spans import read_span_run
    from ragspan.report.envelope import report_text
    from ragspan.scoring.metrics.failures import label_failures, span_facts
    from ragspan.scoring.span_scoring import (
        DocCodes,
        chunk_columns,
        compute_span_report,
        gold_columns,
        ranked_columns,
    )

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        e, r = make_files(tmp)
        print(f"run file: {os.path.getsize(r) / 1e6:.1f} MB, {N_QUERIES * TOP:,} spans")
        evalset, run = read_eval_set(e), read_span_run(r)
        _default_cutoffs(evalset, run, e, r)
        t0 = time.perf_counter()
        compute_span_report(evalset, run, None, (1, 5, 10, 100), 0.5)
        metric_s = time.perf_counter() - t0
        report = compute_span_report(evalset, run, None, (1, 5, 10, 100), 0.5)
        from ragspan.scoring.metrics.registry import Chars

        budgets = tuple(Chars(b) for b in (512, 2560, 5120, 51200))  # the same depths in chars
        timing = {}
        for name, ks in (("count", (1, 5, 10, 100)), ("chars", budgets)):
            best_t = None
            for _ in range(3):
                t0 = time.perf_counter()
                compute_span_report(evalset, run, None, ks, 0.5)
                dt = time.perf_counter() - t0
                best_t = dt if best_t is None else min(best_t, dt)
            timing[name] = best_t
        manifest = read_chunks(tmp / "chunks.jsonl")
        codes = DocCodes()
        gold = gold_columns(evalset, codes)
        index = {q.id: i for i, q in enumerate(evalset.queries)}
        rows = np.array([index.get(x, -1) for x in run.spans.ids], dtype=np.int64)
        ranked = ranked_columns(run.spans, rows, codes)
        chunks = chunk_columns(manifest, codes)
        grounded = {k: report.scores.values[f"complete_grounding@{k}"] >= 1 for k in report.ks}
        best = None
        for _ in range(3):
            t0 = time.perf_counter()
            labels = label_failures(gold, span_facts(gold, ranked, chunks),
                                    report.scores.gold_fraction, grounded, 0.5)
            elapsed = time.perf_counter() - t0
            best = elapsed if best is None else min(best, elapsed)
        label_s = best
        totals = {}
        for name, extra, fast in (("without --chunks", {}, "1"),
                                  ("with --chunks", {"chunks": str(tmp / "chunks.jsonl")}, "1"),
                                  ("plain reader", {}, "")):
            os.environ["RAGSPAN_NO_FAST"] = "" if fast else "1"
            best_t = None
            for _ in range(3):
                t0 = time.perf_counter()
                with collector.paused():  # as the command line runs it (cli.common)
                    result = score.run(eval_set=str(e), run=str(r),
                                       settings=score.ScoreSettings(ks=(1, 5, 10, 100)),
                                       **extra)
                    (tmp / "report.json").write_text(report_text(result.report),
                                                     encoding="utf-8")
                dt = time.perf_counter() - t0
                best_t = dt if best_t is None else min(best_t, dt)
            totals[name] = best_t
        os.environ.pop("RAGSPAN_NO_FAST")
        total_s = totals["without --chunks"]
        floor = _floor(r, e, evalset, run, result.report, tmp)
        processes = _against_orjson(e, r, tmp)
    print(f"metric computation (4 cutoffs): {metric_s:.3f} s = {N_QUERIES / metric_s:,.0f} "
          f"queries/s (target < 1 s)")
    print(f"4 character cutoffs ({', '.join(map(str, budgets))}): {timing['chars']:.3f} s "
          f"against 4 count cutoffs {timing['count']:.3f} s = x{timing['chars'] / timing['count']:.2f}"
          " (target <= x1.5)")
    print(f"whole command (parse + score + doc-level view + report): {total_s:.3f} s = "
          f"{N_QUERIES / total_s:,.0f} queries/s (target < 10 s)")
    print(f"failure labels alone (4 cutoffs, {len(manifest.chunks):,} chunks): {label_s:.3f} s "
          f"(target < 0.5 s); failing queries at @10: {sum(labels.counts(10).values()):,}")
    print(f"whole command with --chunks: {totals['with --chunks']:.3f} s "
          f"(+{totals['with --chunks'] - total_s:.3f} s over without)")
    parse_s, metrics_s, write_s = floor
    floor_s = sum(floor)
    print(f"floor: fastest parse {parse_s:.3f} s + metrics {metrics_s:.3f} s + write "
          f"{write_s:.3f} s = {floor_s:.3f} s")
    print(f"whole command {total_s:.3f} s = x{total_s / floor_s:.2f} the floor (target <= x2); "
          f"with the plain reader (no fast extra) {totals['plain reader']:.3f} s = "
          f"x{totals['plain reader'] / floor_s:.2f}")
    if processes is None:
        print("orjson not installed (the dev extra has it): no process comparison")
    else:
        for name, (t, peak) in processes.items():
            print(f"{name:32s} median {t:.3f} s, peak memory {peak:.2f} GB")
        ratio = processes["ragspan score (process)"][0] / processes["orjson parse of the run"][0]
        print(f"ragspan score = x{ratio:.2f} an orjson parse of its run (target <= x4, the "
              "road past format v2)")
        plain = processes["ragspan score, default install"][0] / \
            processes["orjson parse of the run"][0]
        print(f"ragspan score on the default install (no fast extra) = x{plain:.2f} an orjson "
              "parse of its run (target <= x8)")
    sys.stdout.flush()


def _default_cutoffs(evalset: object, run: object, e: Path, r: Path) -> None:
    """The span metrics at the default cutoffs (5, 10 and the character grid) against the
    whole command as the default install runs it (no fast extra), best of 3 each; and the
    span family alone (``score_spans``: every cutoff read off one order of the run,
    docs/metrics.md)."""
    from ragspan.app import score
    from ragspan.base import collector
    from ragspan.report.envelope import report_text
    from ragspan.scoring.metrics.span_scores import score_spans
    from ragspan.scoring.span_scoring import (
        DocCodes,
        compute_span_report,
        gold_columns,
        ranked_columns,
    )

    ks = tuple(dict.fromkeys((5, 10, *score.BUDGET_GRID)))

    def best(work) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            with collector.paused():
                work()
            times.append(time.perf_counter() - t0)
        return min(times)

    metrics = best(lambda: compute_span_report(evalset, run, None, ks, 0.5))
    codes = DocCodes()
    gold = gold_columns(evalset, codes)
    index = {q.id: i for i, q in enumerate(evalset.queries)}
    rows = np.array([index.get(x, -1) for x in run.spans.ids], dtype=np.int64)
    family = best(lambda: score_spans(gold, ranked_columns(run.spans, rows, codes), ks, 0.5))
    os.environ["RAGSPAN_NO_FAST"] = "1"
    try:
        whole = best(lambda: report_text(score.run(eval_set=str(e), run=str(r),
                                                   settings=score.ScoreSettings(ks=(5, 10))).report))
    finally:
        os.environ.pop("RAGSPAN_NO_FAST")
    print(f"span metrics at the default cutoffs ({len(ks)}): {metrics:.3f} s of the default "
          f"install's whole command {whole:.3f} s ({100 * metrics / whole:.0f}%); the span "
          f"family alone (score_spans, its columns built) {family:.3f} s")


ORJSON_PARSE = """
import sys, orjson
with open(sys.argv[1], "rb") as fh:
    rows = [orjson.loads(line) for line in fh]
"""


def _against_orjson(e: Path, r: Path, tmp: Path) -> dict[str, tuple[float, float]] | None:
    """Median wall time and peak memory (GB) of 5 alternating rounds of: the whole
    ``ragspan score`` process, and a Python process parsing the run with orjson."""
    import importlib.util
    import statistics

    from processes import wall

    if importlib.util.find_spec("orjson") is None:
        return None
    score = [sys.executable, "-m", "ragspan", "-q", "score", "--eval-set", str(e), "--run",
             str(r), "--out", str(tmp / "process.json")]
    cmds = {"ragspan score (process)": score,
            "ragspan score, default install": score,  # the plain reader: no pyarrow
            "orjson parse of the run": [sys.executable, "-c", ORJSON_PARSE, str(r)]}
    envs = {name: {**os.environ, "RAGSPAN_NO_FAST": "1"} if "default" in name else None
            for name in cmds}
    times: dict[str, list[float]] = {k: [] for k in cmds}
    peaks: dict[str, float] = dict.fromkeys(cmds, 0.0)
    for _ in range(5):
        for name, cmd in cmds.items():
            seconds, peak = wall(cmd, envs[name])
            times[name].append(seconds)
            peaks[name] = max(peaks[name], peak)
    return {k: (statistics.median(v), peaks[k]) for k, v in times.items()}


def _floor(run_path: Path, eval_path: Path, evalset, run, report,
           tmp: Path) -> tuple[float, float, float]:
    """The best of three of: pyarrow's JSON reader on the run file and on the eval set
    (columns, nothing checked); the metric computation (the span metrics and the doc-level
    view, whose metrics the report holds too); the canonical JSON of the report written to a
    file."""
    import pyarrow as pa
    import pyarrow.json as pj

    from ragspan.base import collector
    from ragspan.base.canonical import canonical_dumps
    from ragspan.scoring.doc_scoring import span_doc_projection
    from ragspan.scoring.span_scoring import compute_span_report

    def best(fn) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            with collector.paused():  # the same collector setting as the whole command
                fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    def metrics() -> None:
        scored = compute_span_report(evalset, run, None, (1, 5, 10, 100), 0.5)
        span_doc_projection(scored, (1, 5, 10, 100))

    data, eval_data = run_path.read_bytes(), eval_path.read_bytes()
    parse = best(lambda: (pj.read_json(pa.BufferReader(data)),
                          pj.read_json(pa.BufferReader(eval_data))))
    metric_s = best(metrics)
    write = best(lambda: (tmp / "floor.json").write_text(canonical_dumps(report),
                                                          encoding="utf-8"))
    return parse, metric_s, write


if __name__ == "__main__":
    main()
