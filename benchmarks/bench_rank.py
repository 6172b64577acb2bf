"""Benchmark: doc-level scoring of 10,000 queries x 1,000 docs (seeded synthetic TREC run,
10 million lines), ragspan vs pytrec_eval in the same process, parsing included for both.

Order: ragspan with the ``fast`` extra (pyarrow) first, so the process's peak resident
memory at that point is its own; then ragspan without pyarrow; then pytrec_eval. Libraries
are imported before timing; each contender runs twice and the better time is reported (the
machine's timings vary by tens of percent between runs).
Measures: P, recall, ndcg_cut, map_cut, recip_rank, success at k = 10 and 100. Targets:
plain >= pytrec_eval's speed; fast >= 4x pytrec_eval and < 1.5 GiB peak. Then the same run
as JSONL (``retrieved_ids`` listed in trec_eval's order, with scores), with and without
pyarrow; every variant's nDCG@10 is checked against pytrec_eval's.

Per layer (the run's top 100 read alone, best of two): each TREC parser with and without the
byte-key layer (doc ids of at most 8 bytes kept as uint64 keys, the top selection made on
the keys and only the survivors named), so the keys are kept only where they pay.
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

NQ, ND, POOL = 10_000, 1_000, 200_000


def make(tmp: Path) -> tuple[Path, Path, Path]:
    """Write the run (as TREC, and as JSONL listed in trec_eval's order) and the qrels query
    by query (the generator never holds a whole file)."""
    rng = np.random.default_rng(0)
    run, qrels, run_jsonl = tmp / "run.trec", tmp / "qrels.trec", tmp / "run.jsonl"
    with open(run, "w") as fr, open(qrels, "w") as fq, open(run_jsonl, "w") as fj:
        for q in range(NQ):
            docs = rng.choice(POOL, ND, replace=False)
            scores = np.round(rng.random(ND) * 100, 3)
            fr.write("".join(f"{q} Q0 D{d} {i + 1} {s} run\n"
                             for i, (d, s) in enumerate(zip(docs, scores))))
            ranked = sorted(zip(scores.tolist(), (f"D{d}" for d in docs)), reverse=True)
            fj.write(json.dumps({"id": str(q), "retrieved_ids": [d for _, d in ranked],
                                 "scores": [s for s, _ in ranked]}) + "\n")
            judged = np.concatenate([rng.choice(docs, 20, replace=False),
                                     rng.choice(POOL, 5, replace=False)])
            grades = rng.integers(0, 3, judged.size)
            seen = set()
            for d, g in zip(judged, grades):
                if d not in seen:
                    seen.add(d)
                    fq.write(f"{q} 0 D{d} {g}\n")
    return run, qrels, run_jsonl


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_ragspan(run: Path, qrels: Path, fast: bool):
    """What `ragspan score --qrels Q --run R --k 10 --k 100` does before writing its report:
    the run (its top 100 per query) read on a worker thread while the qrels are read, then
    the metrics. The parse time is the run's alone, read again without the qrels."""
    from ragspan.io.runs.docs import read_doc_run
    from ragspan.scoring.doc_scoring import read_and_score

    os.environ.pop("RAGSPAN_NO_FAST", None)
    if not fast:
        os.environ["RAGSPAN_NO_FAST"] = "1"
    try:
        t0 = time.perf_counter()
        _, _, ours = read_and_score(str(qrels), str(run), "auto", "auto", (10, 100), 1, False)
        total = time.perf_counter() - t0
        t0 = time.perf_counter()
        read_doc_run(run, top=100)
        t_parse = time.perf_counter() - t0
    finally:
        os.environ.pop("RAGSPAN_NO_FAST", None)
    return total, t_parse, ours


def layers(run: Path) -> list[tuple[str, float, object]]:
    """The run's top 100 read by each TREC parser, with and without the byte keys; each
    result goes through the one ``assemble``."""
    import importlib.util

    from ragspan.io.files import read_bytes, sha256_hex
    from ragspan.io.runs import fast_docs
    from ragspan.io.runs.columns import assemble

    def numpy_parser(keys: bool):
        data = read_bytes(run)
        return assemble(fast_docs.numpy_trec(data, str(run), sha256_hex(data), keys=keys), 100)

    rows = []
    variants = [("numpy bytes + ranking", lambda: numpy_parser(False)),
                ("numpy bytes + byte keys + ranking", lambda: numpy_parser(True))]
    if importlib.util.find_spec("pyarrow"):
        variants = [("pyarrow CSV + dictionary codes + ranking",
                     lambda: fast_docs.fast_read(str(run), "trec", 100, keys=False)),
                    ("pyarrow CSV + byte keys + ranking",
                     lambda: fast_docs.fast_read(str(run), "trec", 100, keys=True)), *variants]
    for name, fn in variants:
        best = None
        for _ in range(2):
            t0 = time.perf_counter()
            got = fn()
            elapsed = time.perf_counter() - t0
            best = elapsed if best is None else min(best, elapsed)
        rows.append((name, best, got))
    return rows


def best_of_two(fn):
    first = fn()
    second = fn()
    return first if first[0] <= second[0] else second


def reference(run: Path, qrels: Path):
    import pytrec_eval

    t0 = time.perf_counter()
    with open(qrels) as fq:
        q = pytrec_eval.parse_qrel(fq)
    with open(run) as fr:
        r = pytrec_eval.parse_run(fr)
    t_parse = time.perf_counter() - t0
    res = pytrec_eval.RelevanceEvaluator(
        q, {"P.10,100", "recall.10,100", "ndcg_cut.10,100", "map_cut.10,100", "recip_rank",
            "success.10"}).evaluate(r)
    return time.perf_counter() - t0, t_parse, res


def main() -> None:
    import importlib.util

    import pytrec_eval  # noqa: F401  (imported before timing, like ragspan's modules)

    import ragspan.io.runs.docs  # noqa: F401
    import ragspan.scoring.doc_scoring  # noqa: F401

    with tempfile.TemporaryDirectory() as d:
        run, qrels, run_jsonl = make(Path(d))
        mb = run.stat().st_size / 1e6
        print(f"run: {NQ:,} queries x {ND:,} docs ({mb:.0f} MB)")
        before = peak_mib()
        results = {}
        if importlib.util.find_spec("pyarrow"):
            import pyarrow.compute  # noqa: F401
            import pyarrow.csv  # noqa: F401
            import pyarrow.json  # noqa: F401

            t_fast, p_fast, fast = best_of_two(lambda: run_ragspan(run, qrels, True))
            results["fast"] = fast
            print(f"ragspan fast (pyarrow): {t_fast:.2f} s (run read alone {p_fast:.2f} s), "
                  f"peak RSS {peak_mib():.0f} MiB (before: {before:.0f} MiB)")
        else:
            print("ragspan fast: pyarrow not installed (pip install 'ragspan[fast]')")
        t_plain, p_plain, plain = best_of_two(lambda: run_ragspan(run, qrels, False))
        print(f"ragspan without pyarrow: {t_plain:.2f} s (run read alone {p_plain:.2f} s)")
        layer_rows = layers(run)
        print("per layer, the run's top 100 read alone:")
        for name, t_layer, _ in layer_rows:
            print(f"  {name:45s} {t_layer:.2f} s")
        t_ref, t_parse, res = best_of_two(lambda: reference(run, qrels))
        jsonl = {}
        for fast in ([True] if "fast" in results else []) + [False]:
            t_j, p_j, jsonl[fast] = best_of_two(
                lambda fast=fast: run_ragspan(run_jsonl, qrels, fast))
            print(f"same run as JSONL ({run_jsonl.stat().st_size / 1e6:.0f} MB), "
                  f"{'fast' if fast else 'without pyarrow'}: {t_j:.2f} s "
                  f"(run read alone {p_j:.2f} s)")
    ndcg_ref = float(np.mean([v["ndcg_cut_10"] for v in res.values()]))
    print(f"pytrec_eval:            {t_ref:.2f} s (parse {t_parse:.2f} s)")
    print(f"speed-up over pytrec_eval: plain {t_ref / t_plain:.2f}x"
          + (f", fast {t_ref / t_fast:.2f}x" if "fast" in results else ""))
    results.update({f"jsonl {'fast' if k else 'plain'}": v for k, v in jsonl.items()})
    for name, rep in [("plain", plain), *results.items()]:
        print(f"check ({name}): ndcg_cut_10 ragspan {rep.values['doc_ndcg@10'].mean():.9f} "
              f"pytrec_eval {ndcg_ref:.9f}")
    first = layer_rows[0][2]
    for name, _, got in layer_rows[1:]:
        same = (got.qids == first.qids and got.docs == first.docs
                and all(np.array_equal(getattr(got, f), getattr(first, f))
                        for f in ("query", "doc", "rank", "score")))
        print(f"check (layer {name}): the same run as '{layer_rows[0][0]}': {same}")


if __name__ == "__main__":
    main()
