"""Benchmark: the span metrics at the default cutoffs (5, 10 and the character grid's eight)
on 10,000 questions x top-100 (1,000,000 results), this checkout against another checkout
of ragspan (``--vs PATH``: its ``src`` folder, e.g. a ``git worktree`` of an earlier commit),
in alternating processes, 3 each; in each process the best of 5 of the span family alone
(``score_spans``, its columns built once), of the whole span report
(``compute_span_report``: the family, the failure labels, the run facts), and of the family
with no cutoff asked (the work done once for all cutoffs). Prints each process's figures
and the medians (docs/metrics.md, "The cutoffs read off one order of the run").

    python benchmarks/bench_span_cutoffs.py [--vs ../ragspan-old/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

TIMED = """
import sys, time
from ragspan.app.score import BUDGET_GRID
from ragspan.base import collector
from ragspan.io.evalset import read_eval_set
from ragspan.io.runs.spans import read_span_run
from ragspan.scoring import span_scoring as ss
try:
    from ragspan.scoring.metrics.span_scores import score_spans
except ImportError:  # a checkout from before the module was split
    from ragspan.scoring.metrics.span import score_spans
evalset, run = read_eval_set(sys.argv[1]), read_span_run(sys.argv[2])
ks = tuple(dict.fromkeys((5, 10, *BUDGET_GRID)))
codes = ss.DocCodes()
gold = ss.gold_columns(evalset, codes)
rows, _ = ss._map_rows(evalset, run.spans)
ranked = ss.ranked_columns(run.spans, rows, codes, len(evalset.queries))

def fresh():
    return type(ranked)(ranked.query, ranked.doc, ranked.start, ranked.end, ranked.rank)

def best(work):
    times = []
    for _ in range(5):
        columns = fresh()
        with collector.paused():
            start = time.perf_counter()
            work(columns)
            times.append(time.perf_counter() - start)
    return min(times)

family = best(lambda columns: score_spans(gold, columns, ks, 0.5))
report = best(lambda columns: ss.compute_span_report(evalset, run, None, ks, 0.5))
alone = best(lambda columns: score_spans(gold, columns, (), 0.5))
print(family, report, alone)
"""


def timed(src: Path, e: Path, r: Path) -> tuple[float, float, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", TIMED, str(e), str(r)], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vs", type=Path, help="another checkout's src folder")
    args = parser.parse_args()
    from bench_score import make_files

    here = Path(__file__).resolve().parent.parent / "src"
    trees = {"this checkout": here} | ({"--vs": args.vs.resolve()} if args.vs else {})
    with tempfile.TemporaryDirectory() as d:
        e, r = make_files(Path(d))
        got: dict[str, list[tuple[float, float, float]]] = {name: [] for name in trees}
        for _ in range(3):
            for name, src in trees.items():
                got[name].append(timed(src, e, r))
    for name, runs in got.items():
        each = ", ".join(f"{f:.3f}/{w:.3f}" for f, w, _ in runs)
        family, fixed = (statistics.median(x[i] for x in runs) for i in (0, 2))
        print(f"{name:14s} span family / span report per process (s): {each}; medians "
              f"{family:.3f} / {statistics.median(x[1] for x in runs):.3f}; the family's "
              f"work done once for all cutoffs (no cutoff asked) {fixed:.3f} s, then "
              f"{(family - fixed) / 10 * 1000:.0f} ms per cutoff")


if __name__ == "__main__":
    main()
