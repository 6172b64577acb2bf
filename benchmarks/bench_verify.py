"""Benchmark: what verifying the two score reports costs ``compare``.

``compare --eval-set E --corpus C --baseline-run B --candidate-run R`` re-scores both sides
from their files and refuses a report that is not what its files score to (docs/gate.md,
"Reports are checked"). Printed: compare without verification, with it, and one ``score``
for scale, on synthetic span runs (2,000 and 10,000 queries x top-10 over 200 documents).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from pathlib import Path


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def data(folder: Path, n: int) -> dict[str, Path]:
    rng = random.Random(0)
    docs = [{"id": f"d{i}", "text": "".join(rng.choice("abcdefgh ") for _ in range(20_000))}
            for i in range(200)]
    evalset, base, cand = [], [], []
    for q in range(n):
        doc = rng.randrange(200)
        start = rng.randrange(100, 14_000)
        evalset.append({"id": f"q{q}", "query": f"question {q}", "doc_id": f"d{doc}",
                        "gold_spans": [[start, start + 300]]})
        for rows, hit in ((base, 0.7), (cand, 0.65)):
            first = start - 100 if rng.random() < hit else rng.randrange(0, 14_000)
            hits = [{"doc_id": f"d{doc}", "start": max(0, first + 500 * r),
                     "end": max(0, first + 500 * r) + 500} for r in range(10)]
            rows.append({"id": f"q{q}", "retrieved": hits})
    return {"corpus": write(folder / "corpus.jsonl", docs),
            "eval": write(folder / "eval.jsonl", evalset),
            "base": write(folder / "run-base.jsonl", base),
            "cand": write(folder / "run-cand.jsonl", cand)}


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def main() -> None:
    from ragspan.app import compare, score
    from ragspan.report.envelope import report_text

    os.environ.setdefault("SOURCE_DATE_EPOCH", "1700000000")
    for n in (2_000, 10_000):
        with tempfile.TemporaryDirectory() as tmp:
            f = data(Path(tmp), n)
            reports = {}
            t_score = 0.0
            for side in ("base", "cand"):
                t_score, res = timed(score.run, eval_set=str(f["eval"]), run=str(f[side]),
                                     corpus=str(f["corpus"]),
                                     settings=score.ScoreSettings(ks=(5, 10)))
                reports[side] = Path(tmp) / f"score-{side}.json"
                reports[side].write_text(report_text(res.report), encoding="utf-8")
            common = {"baseline": str(reports["base"]), "candidate": str(reports["cand"]),
                      "no_config": True}
            t_plain, _ = timed(compare.run, **common)
            sources = compare.Sources(eval_set=str(f["eval"]), corpus=str(f["corpus"]),
                                      baseline_run=str(f["base"]), candidate_run=str(f["cand"]))
            t_verified, _ = timed(compare.run, sources=sources, **common)
            print(f"{n:>6,} queries x top-10: score {t_score:.2f} s; compare {t_plain:.2f} s, "
                  f"verified {t_verified:.2f} s (+{t_verified - t_plain:.2f} s, "
                  f"x{t_verified / t_plain:.1f})")


if __name__ == "__main__":
    main()
