"""Benchmark: doc-level scoring of 10,000 queries x 1,000 docs (seeded synthetic TREC run),
ragspan vs pytrec_eval in the same process, parsing included for both.

Prints both times, the ratio and ragspan's peak resident memory (measured first, so the
process maximum is ragspan's). Measures: P, recall, ndcg_cut, map_cut, recip_rank, success at
k = 10 and 100.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

import numpy as np

NQ, ND, POOL = 10_000, 1_000, 200_000


def make(tmp: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    run_lines, qrel_lines = [], []
    for q in range(NQ):
        docs = rng.choice(POOL, ND, replace=False)
        scores = np.round(rng.random(ND) * 100, 3)
        run_lines.append("".join(f"{q} Q0 D{d} {i + 1} {s} run\n"
                                 for i, (d, s) in enumerate(zip(docs, scores))))
        judged = np.concatenate([rng.choice(docs, 20, replace=False),
                                 rng.choice(POOL, 5, replace=False)])
        grades = rng.integers(0, 3, judged.size)
        seen = set()
        for d, g in zip(judged, grades):
            if d not in seen:
                seen.add(d)
                qrel_lines.append(f"{q} 0 D{d} {g}\n")
    run, qrels = tmp / "run.trec", tmp / "qrels.trec"
    run.write_text("".join(run_lines))
    qrels.write_text("".join(qrel_lines))
    return run, qrels


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    import pytrec_eval

    from ragspan.doclevel import score_doc_run
    from ragspan.io.docruns import read_doc_run
    from ragspan.io.qrels import read_qrels

    with tempfile.TemporaryDirectory() as d:
        run, qrels = make(Path(d))
        mb = run.stat().st_size / 1e6
        before = peak_mib()
        t0 = time.perf_counter()
        ours = score_doc_run(read_doc_run(run), read_qrels(qrels).judgments, (10, 100), 1, False)
        t_ours = time.perf_counter() - t0
        mem = peak_mib()
        t0 = time.perf_counter()
        with open(qrels) as fq:
            q = pytrec_eval.parse_qrel(fq)
        with open(run) as fr:
            r = pytrec_eval.parse_run(fr)
        t_parse = time.perf_counter() - t0
        res = pytrec_eval.RelevanceEvaluator(
            q, {"P.10,100", "recall.10,100", "ndcg_cut.10,100", "map_cut.10,100", "recip_rank",
                "success.10"}).evaluate(r)
        t_ref = time.perf_counter() - t0
    ndcg_ref = float(np.mean([v["ndcg_cut_10"] for v in res.values()]))
    print(f"run: {NQ:,} queries x {ND:,} docs ({mb:.0f} MB)")
    print(f"ragspan (plain Python parser): {t_ours:.2f} s, peak RSS {mem:.0f} MiB "
          f"(before: {before:.0f} MiB)")
    print(f"pytrec_eval: {t_ref:.2f} s (parse {t_parse:.2f} s)")
    print(f"ratio pytrec_eval / ragspan: {t_ref / t_ours:.2f}x")
    print(f"check: ndcg_cut_10 ragspan {ours.values['doc_ndcg@10'].mean():.6f} "
          f"pytrec_eval {ndcg_ref:.6f}")


if __name__ == "__main__":
    main()
