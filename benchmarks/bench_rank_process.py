"""Benchmark: doc-level scoring of 10,000 queries x 1,000 docs (the TREC run of
``bench_rank``, 10 million lines) as whole processes, the way a pipeline runs them:
``ragspan score --qrels Q --run R --k 10 --k 100 --out report.json`` against a Python
process that parses the same files with pytrec_eval and evaluates the same measures
(P, recall, ndcg_cut, map_cut at 10 and 100, recip_rank, success at 10).

Each side runs ``ROUNDS`` times, alternating (so a slow spell of the machine hits both);
the median and the best wall time of each are printed with their ratio. Target: ragspan
with the ``fast`` extra at least 6x pytrec_eval end to end (median against median). The
reference process writes nothing, ragspan writes its whole report: the comparison leans
against ragspan. Each side's peak memory is printed too.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_rank import make

ROUNDS = 5
REFERENCE = """
import sys, pytrec_eval
with open(sys.argv[1]) as fq:
    q = pytrec_eval.parse_qrel(fq)
with open(sys.argv[2]) as fr:
    r = pytrec_eval.parse_run(fr)
pytrec_eval.RelevanceEvaluator(q, {"P.10,100", "recall.10,100", "ndcg_cut.10,100",
    "map_cut.10,100", "recip_rank", "success.10"}).evaluate(r)
"""


def wall(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident memory (GB) of one process running ``cmd``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return elapsed, usage.ru_maxrss / 1e6  # ru_maxrss is in KiB on Linux


def main() -> None:
    if importlib.util.find_spec("pytrec_eval") is None:
        print("pytrec_eval not installed (the dev extra has it): nothing to compare")
        return
    fast = importlib.util.find_spec("pyarrow") is not None
    with tempfile.TemporaryDirectory() as d:
        run, qrels, _ = make(Path(d))
        size_mb = run.stat().st_size / 1e6
        out = Path(d) / "report.json"
        ours = [sys.executable, "-m", "ragspan", "-q", "score", "--qrels", str(qrels),
                "--run", str(run), "--k", "10", "--k", "100", "--out", str(out)]
        ref = [sys.executable, "-c", REFERENCE, str(qrels), str(run)]
        times: dict[str, list[float]] = {"ragspan": [], "pytrec_eval": []}
        peaks: dict[str, float] = {}
        for _ in range(ROUNDS):
            for name, cmd in (("ragspan", ours), ("pytrec_eval", ref)):
                t, peak = wall(cmd)
                times[name].append(t)
                peaks[name] = max(peaks.get(name, 0.0), peak)
    print(f"run: {size_mb:.0f} MB TREC, "
          f"{ROUNDS} rounds each, alternating; ragspan {'with' if fast else 'without'} "
          "the fast extra")
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, v in times.items():
        print(f"{name:12s} median {med[name]:.2f} s, best {min(v):.2f} s "
              f"({', '.join(f'{x:.2f}' for x in v)}), peak memory {peaks[name]:.2f} GB")
    print(f"speed-up over pytrec_eval as a whole process: median x{med['pytrec_eval'] / med['ragspan']:.2f}, "
          f"best x{min(times['pytrec_eval']) / min(times['ragspan']):.2f} (target >= x6)")


if __name__ == "__main__":
    main()
