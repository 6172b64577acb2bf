"""Benchmark: doc-level scoring of 10,000 queries x 1,000 docs (the TREC run of
``bench_rank``, 10 million lines) as whole processes, the way a pipeline runs them.

Two references, each evaluating the same measures with pytrec_eval:
- ``plain loop``: a Python process that reads the qrels and the run with a plain
  ``str.split()`` loop into dicts (the fastest reasonable use of pytrec_eval: its own
  ``parse_run`` is about twice as slow), against ``ragspan score --k 10``; measures P,
  recall, ndcg_cut and map_cut at 10, recip_rank. Target: ragspan at least x4.
- ``parse_run``: pytrec_eval's own parsers, against ``ragspan score --k 10 --k 100``;
  measures P, recall, ndcg_cut, map_cut at 10 and 100, recip_rank, success at 10.
  Target: ragspan at least x6.

Each side runs ``ROUNDS`` times, alternating (so a slow spell of the machine hits both);
the median and the best wall time of each are printed with their ratio, and each process's
peak resident memory beside it. The references write nothing, ragspan writes its whole
report: the comparison leans against ragspan.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import tempfile
from pathlib import Path

from bench_rank import make
from processes import wall

ROUNDS = 5
PLAIN_LOOP = """
import sys, pytrec_eval
q, r = {}, {}
with open(sys.argv[1]) as fq:
    for line in fq:
        qid, _, doc, rel = line.split()
        q.setdefault(qid, {})[doc] = int(rel)
with open(sys.argv[2]) as fr:
    for line in fr:
        qid, _, doc, _, score, _ = line.split()
        r.setdefault(qid, {})[doc] = float(score)
pytrec_eval.RelevanceEvaluator(q, {"P.10", "recall.10", "ndcg_cut.10", "map_cut.10",
    "recip_rank"}).evaluate(r)
"""
REFERENCE = """
import sys, pytrec_eval
with open(sys.argv[1]) as fq:
    q = pytrec_eval.parse_qrel(fq)
with open(sys.argv[2]) as fr:
    r = pytrec_eval.parse_run(fr)
pytrec_eval.RelevanceEvaluator(q, {"P.10,100", "recall.10,100", "ndcg_cut.10,100",
    "map_cut.10,100", "recip_rank", "success.10"}).evaluate(r)
"""


def main() -> None:
    if importlib.util.find_spec("pytrec_eval") is None:
        print("pytrec_eval not installed (the dev extra has it): nothing to compare")
        return
    fast = importlib.util.find_spec("pyarrow") is not None
    with tempfile.TemporaryDirectory() as d:
        run, qrels, _ = make(Path(d))
        size_mb = run.stat().st_size / 1e6
        out = Path(d) / "report.json"
        base = [sys.executable, "-m", "ragspan", "-q", "score", "--qrels", str(qrels),
                "--run", str(run), "--out", str(out)]
        print(f"run: {size_mb:.0f} MB TREC, {ROUNDS} rounds each, alternating; ragspan "
              f"{'with' if fast else 'without'} the fast extra")
        duel("plain loop", base + ["--k", "10"],
             [sys.executable, "-c", PLAIN_LOOP, str(qrels), str(run)], 4)
        duel("parse_run", base + ["--k", "10", "--k", "100"],
             [sys.executable, "-c", REFERENCE, str(qrels), str(run)], 6)


def duel(name: str, ours: list[str], ref: list[str], target: float) -> None:
    """Time ``ours`` against the reference ``ref``, alternating, and print both."""
    times: dict[str, list[float]] = {"ragspan": [], name: []}
    peaks: dict[str, float] = {}
    for _ in range(ROUNDS):
        for who, cmd in (("ragspan", ours), (name, ref)):
            t, peak = wall(cmd)
            times[who].append(t)
            peaks[who] = max(peaks.get(who, 0.0), peak)
    print(f"-- against pytrec_eval with {name} ({' '.join(ours[ours.index('--k'):])})")
    med = {k: statistics.median(v) for k, v in times.items()}
    for who, v in times.items():
        print(f"  {who:12s} median {med[who]:.2f} s, best {min(v):.2f} s "
              f"({', '.join(f'{x:.2f}' for x in v)}), peak memory {peaks[who]:.2f} GB")
    print(f"  speed-up: median x{med[name] / med['ragspan']:.2f}, "
          f"best x{min(times[name]) / min(times['ragspan']):.2f} (target >= x{target:g})")


if __name__ == "__main__":
    main()
