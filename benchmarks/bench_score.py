"""Benchmark: span scoring of 10,000 queries x top-100 spans x 3 gold spans (seeded synthetic).

Prints queries/second for the metric computation alone and for the whole command (JSONL
parsing, scoring, report building and writing). Targets: metrics < 1 s, command < 10 s.
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
        gs = rng.integers(0, DOC_LEN - 400, GOLD)
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
    return e, r


def main() -> None:
    from ragspan.commands import score
    from ragspan.envelope import report_text
    from ragspan.io.evalset import read_eval_set
    from ragspan.io.runs import read_span_run
    from ragspan.scoring import compute_span_report

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        e, r = make_files(tmp)
        print(f"run file: {os.path.getsize(r) / 1e6:.1f} MB, {N_QUERIES * TOP:,} spans")
        evalset, run = read_eval_set(e), read_span_run(r)
        t0 = time.perf_counter()
        compute_span_report(evalset, run, None, (1, 5, 10, 100), 0.5)
        metric_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = score.run(eval_set=str(e), run=str(r), ks=(1, 5, 10, 100))
        (tmp / "report.json").write_text(report_text(result.report), encoding="utf-8")
        total_s = time.perf_counter() - t0
    print(f"metric computation (4 cutoffs): {metric_s:.3f} s = {N_QUERIES / metric_s:,.0f} "
          f"queries/s (target < 1 s)")
    print(f"whole command (parse + score + doc-level view + report): {total_s:.3f} s = "
          f"{N_QUERIES / total_s:,.0f} queries/s (target < 10 s)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
