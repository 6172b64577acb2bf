"""Benchmark: span-level scoring at scale, 1,000,000 questions x top-20 (seeded synthetic),
as the whole ``ragspan score`` process a pipeline runs, time and peak memory printed.

Each question has 2 gold spans in one of 20,000 documents of 100,000 characters; its 20
results are 512-character chunks, about half of them from its own document. The command:
``ragspan score --eval-set E --run R --k 1 --k 5 --k 20 --no-budget-grid --out report.json``
(count cutoffs only: a character-budget grid adds 8 cutoffs to every row of the report).
``--questions N`` scales it down (the figures printed say how many). The index side of
scale (100,000 chunks searched through Qdrant's engine, exact and HNSW) is
``benchmarks/bench_edge.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from processes import wall

TOP, GOLD, N_DOCS, DOC_LEN, CHUNK = 20, 2, 20_000, 100_000, 512
BLOCK = 10_000  # questions generated at a time (the generator never holds a whole file)


def make(tmp: Path, n: int, seed: int = 0) -> tuple[Path, Path]:
    """Write the eval set and the run, ``BLOCK`` questions at a time."""
    rng = np.random.default_rng(seed)
    e, r = tmp / "eval.jsonl", tmp / "run.jsonl"
    with open(e, "w", encoding="utf-8") as fe, open(r, "w", encoding="utf-8") as fr:
        for lo in range(0, n, BLOCK):
            m = min(BLOCK, n - lo)
            doc = rng.integers(N_DOCS, size=m)
            half = DOC_LEN // GOLD  # one gold span in each half: overlapping spans are refused
            gs = np.arange(GOLD) * half + rng.integers(0, half - 400, (m, GOLD))
            gl = rng.integers(20, 400, (m, GOLD))
            own = rng.random((m, TOP)) < 0.5
            other = rng.integers(N_DOCS, size=(m, TOP))
            rdoc = np.where(own, doc[:, None], other)
            rs = rng.integers(0, DOC_LEN // CHUNK, (m, TOP)) * CHUNK
            ev, ru = [], []
            for i in range(m):
                q = lo + i
                ev.append(json.dumps({"id": f"q{q}", "query": "x", "doc_id": f"d{doc[i]}",
                                      "gold_spans": [[int(s), int(s + g)]
                                                     for s, g in zip(gs[i], gl[i])]}))
                ru.append(json.dumps({"id": f"q{q}", "retrieved": [
                    {"doc_id": f"d{d}", "start": int(s), "end": int(s + CHUNK),
                     "score": round(1 - j / TOP, 4)}
                    for j, (d, s) in enumerate(zip(rdoc[i], rs[i]))]}))
            fe.write("\n".join(ev) + "\n")
            fr.write("\n".join(ru) + "\n")
    return e, r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1_000_000)
    n = parser.parse_args().questions
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t0 = time.perf_counter()
        e, r = make(tmp, n)
        made = time.perf_counter() - t0
        out = tmp / "report.json"
        cmd = [sys.executable, "-m", "ragspan", "-q", "score", "--eval-set", str(e),
               "--run", str(r), "--k", "1", "--k", "5", "--k", "20", "--no-budget-grid",
               "--out", str(out)]
        seconds, peak = wall(cmd)
        report_mb = out.stat().st_size / 1e6
        summary = json.loads(out.read_text(encoding="utf-8"))["predicate"]["summary"]
        print(f"{n:,} questions x top-{TOP} ({n * TOP:,} results): eval set "
              f"{os.path.getsize(e) / 1e6:.0f} MB, run {os.path.getsize(r) / 1e6:.0f} MB "
              f"(written in {made:.0f} s)")
        print(f"ragspan score (whole process): {seconds:.1f} s = {n / seconds:,.0f} questions/s, "
              f"peak memory {peak:.2f} GB, report {report_mb:.0f} MB")
        print(f"complete_grounding@20 = {summary['metrics']['complete_grounding@20']:.4f} over "
              f"{summary['queries']:,} questions")


if __name__ == "__main__":
    main()
