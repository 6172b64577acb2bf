"""The gate's error rates, by simulation through ``gate.compare`` itself (seeded).

Complete grounding per query is Bernoulli(0.6) in the baseline. A candidate changes each
query with probability ``churn`` (either way, as re-chunking or a model update does) and,
in the drop scenarios, breaks a further share of grounded queries so that the true mean
drops by ``drop``. Budget 2pt (the default). For each n and scenario the default
configuration (interval mode, alpha 0.05, on-inconclusive pass) is run on ``DRAWS`` draws
and the shares of fail / pass / inconclusive printed, with the Monte Carlo standard error of
the fail rate. Then: the same with 5 gated slices (family adjusted by max-T), the drift
scenario with an anchor, the minimum detectable drop at each n, and interval coverage.

``RAGSPAN_CALIBRATION_DRAWS`` sets the draws per cell (default 4,000; the table in
docs/gate.md used 20,000). Not a test: it prints figures.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ragspan.gate.compare import compare
from ragspan.gate.inputs import Documents, QueryRow, ScoreReport  # noqa: E402
from ragspan.gate.options import GateOptions

DRAWS = int(os.environ.get("RAGSPAN_CALIBRATION_DRAWS", "4000"))
NS = (20, 50, 100, 300, 1000)
BASE_RATE = 0.6
NAMES = ("complete_grounding@5", "retrieved_chars@5")
FAST = {"permutations": 2_000, "bootstrap": 200}  # only the reported p / CI use these


def report(values: np.ndarray, ids: tuple[str, ...], rows: tuple[QueryRow, ...], tag: str
           ) -> ScoreReport:
    """An in-memory score report: complete grounding per query, 500 characters each."""
    matrix = np.stack([values, np.full(values.shape, 500.0)], axis=1)
    return ScoreReport(path=tag, sha256=tag, kind="score.span",
                       parameters={"k": [5], "grounding_threshold": 0.5},
                       eval_sha256="e", corpus_sha256=None, ids=ids, names=NAMES,
                       values=matrix, rows=rows)


def draw(rng: np.random.Generator, n: int, churn: float, drop: float
         ) -> tuple[np.ndarray, np.ndarray]:
    """Baseline and candidate complete grounding: churn both ways, then ``drop`` of the
    queries broken (grounded in the baseline and not fixed)."""
    base = (rng.random(n) < BASE_RATE).astype(float)
    u = rng.random(n)
    cand = base.copy()
    # churn: P(broken) = P(fixed) = churn / 2, then the true drop from grounded queries
    p_break = (churn / 2 + drop) / BASE_RATE
    p_fix = (churn / 2) / (1 - BASE_RATE)
    cand[(base == 1) & (u < p_break)] = 0.0
    cand[(base == 0) & (u < p_fix)] = 1.0
    return base, cand


def rates(n: int, churn: float, drop: float, draws: int, seed: int, slices: int = 0,
          extra: dict | None = None) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    ids = tuple(f"q{i}" for i in range(n))
    rows = tuple(QueryRow(q, "", {"part": str(i % slices)} if slices else {}, {}, {}, {})
                 for i, q in enumerate(ids))
    opts = GateOptions(**FAST, top=0, gate_slices=("part",) if slices else (),
                       **(extra or {}))
    got = {"fail": 0, "pass": 0, "inconclusive": 0}
    for i in range(draws):
        b, c = draw(rng, n, churn, drop)
        res = compare(report(b, ids, rows, f"b{i}"), report(c, ids, rows, f"c{i}"), opts)
        got[res.decision.verdict] += 1
    return got["fail"] / draws, got["pass"] / draws, got["inconclusive"] / draws


def se(p: float, draws: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / draws)


def table(title: str, cells: list[tuple[str, float, float, int]]) -> None:
    print(f"\n{title}")
    print("| scenario | " + " | ".join(f"n={n}" for n in NS) + " |")
    print("|---|" + "---:|" * len(NS))
    for name, churn, drop, slices in cells:
        out = []
        for n in NS:
            draws = DRAWS if not slices else max(DRAWS // 4, 250)
            f, p, inc = rates(n, churn, drop, draws, seed=hash((name, n)) % 2**32,
                              slices=slices)
            out.append(f"{f:.3f} / {p:.3f} / {inc:.3f}")
        print(f"| {name} | " + " | ".join(out) + " |")


def former() -> None:
    """The former default (threshold mode, alpha unset: any over-budget drop fails) on the
    same neutral draws, through ``gate.metric_fails``."""
    from ragspan.gate.decision import metric_fails

    print("\nthe former default (threshold mode, alpha unset), neutral 20% churn: fail rate")
    cells = []
    for n in NS:
        rng = np.random.default_rng(n)
        fails = 0
        for _ in range(DRAWS):
            b, c = draw(rng, n, 0.20, 0.0)
            drop = float(b.mean() - c.mean())
            fails += metric_fails(gated=True, over_budget=drop > 0.02 + 1e-12, n=n, alpha=None,
                                  p=None, mode="threshold", upper_drop=None,
                                  allowed_drop=0.02)[0]
        cells.append(f"{fails / DRAWS:.3f}")
    print("| " + " | ".join(f"n={n}" for n in NS) + " |")
    print("|" + "---:|" * len(NS))
    print("| " + " | ".join(cells) + " |")


def drift() -> None:
    """Ten merges of -1.5pt each (deterministic: 3 of 200 queries broken per merge),
    budget 2pt against the previous main, 5pt cumulative against the anchor."""
    n = 200
    ids = tuple(f"q{i}" for i in range(n))
    rows = tuple(QueryRow(q, "", {}, {}, {}, {}) for q in ids)
    values = np.ones(n)
    values[:40] = 0.0
    anchor = report(values.copy(), ids, rows, "anchor")
    opts = GateOptions(**FAST, top=0, anchor_budget="5pt")
    print("\ndrift: ten merges of -1.5pt (n = 200, budget 2pt, anchor budget 5pt)")
    prev = anchor
    for merge in range(1, 11):
        values[40 + 3 * (merge - 1): 40 + 3 * merge] = 0.0
        cand = report(values.copy(), ids, rows, f"m{merge}")
        alone = compare(prev, cand, GateOptions(**FAST, top=0)).decision.verdict
        res = compare(prev, cand, opts, anchor=anchor)
        print(f"  merge {merge:2d}: {100 * (values.mean() - anchor.values[:, 0].mean()):+.1f}pt "
              f"from the anchor; without the anchor {alone}, with it {res.decision.verdict}")
        if res.decision.verdict == "fail":
            print(f"  -> fails at merge {merge}")
            return
        prev = cand


def power() -> None:
    from ragspan.gate.stats import minimum_detectable_drop, queries_needed

    print("\nminimum detectable drop (alpha 0.05 one-sided, power 0.8), binary metric:")
    print("| changed share | " + " | ".join(f"n={n}" for n in NS) + " |")
    print("|---|" + "---:|" * len(NS))
    for churn in (0.05, 0.10, 0.20):
        print(f"| {churn:.0%} | " + " | ".join(
            f"{100 * minimum_detectable_drop(math.sqrt(churn), n, 0.05):.1f}pt"
            for n in NS) + " |")
    from scipy.special import ndtr, ndtri

    print("  normal-theory power of a one-sided alpha 0.05 test for a true 4pt drop at "
          "n = 300 (the ceiling any test of this level can reach):")
    for churn in (0.0, 0.05, 0.20):
        broken, fixed = churn / 2 + 0.04, churn / 2
        sd = math.sqrt(broken + fixed - 0.04 ** 2)
        ceiling = float(ndtr(0.04 / (sd / math.sqrt(300)) - ndtri(0.95)))
        print(f"    churn {churn:.0%}: {ceiling:.2f}")
    for churn in (0.05, 0.20):
        q = queries_needed(churn, 0.02, 0.04, 0.05)
        print(f"  flip rate {churn:.0%}, budget 2pt: {q['to_fail']} queries for a 4pt drop to "
              f"fail with power 0.8, {q['to_pass']} for a neutral change to pass")


def coverage() -> None:
    """Two-sided 95% coverage (each bound at 97.5%) of the true mean drop."""
    from ragspan.gate.bounds import bootstrap_t_drop, paired_binary_drop

    rng = np.random.default_rng(11)
    reps = max(DRAWS // 2, 1000)
    print(f"\ninterval coverage, two-sided 95% ({reps} draws per cell):")
    print("| deltas | n=30 | n=50 | n=100 | n=300 |")
    print("|---|---:|---:|---:|---:|")
    for kind in ("binary (20% churn, 4pt drop)", "zero-inflated (80% zero)",
                 "skewed (exponential)"):
        cells = []
        for n in (30, 50, 100, 300):
            if kind.startswith("binary"):
                hit = 0
                for _ in range(reps):
                    b, c = draw(rng, n, 0.2, 0.04)
                    b1, c1 = b >= 0.5, c >= 0.5
                    lo, hi = paired_binary_drop(int((b1 & ~c1).sum()), int((~b1 & c1).sum()),
                                                n, 0.025)
                    hit += lo <= 0.04 <= hi
                cells.append(hit / reps)
                continue
            if kind.startswith("zero"):
                zero = rng.random((n, reps)) < 0.8
                d = np.where(zero, 0.0, rng.normal(0.1, 0.3, (n, reps)).clip(-1, 1))
                truth = 0.2 * float(np.clip(rng.normal(0.1, 0.3, 2_000_000), -1, 1).mean())
            else:
                d = rng.exponential(0.2, (n, reps)) - 0.2
                truth = 0.0
            lo, hi, _ = bootstrap_t_drop(d, 0.025, 2_000, 0)
            cells.append(float(((lo <= truth) & (truth <= hi)).mean()))
        print(f"| {kind} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")


# ---- real clustered data: the shared CUAD contracts ---------------------------------------

CUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "cuad_dev"
REAL_DRAWS = int(os.environ.get("RAGSPAN_CLUSTERED_DRAWS", "1000"))
# The shared contracts are a sample of CUAD v1's 510: the corpus users query is larger than
# what the eval set asks about, at every subset size (what the default must recognise).
CUAD_CONTRACTS = 510
REAL_METRICS = ("complete_grounding@5", "complete_grounding@10", "span_recall@5",
                "span_recall@10", "retrieved_chars@5", "retrieved_chars@10")
REAL_CONFIGS = {  # two real BM25 pipelines: fixed 500-character chunks and clause chunks
    "fixed-500": 'name = "fixed-500"\ndepth = 10\n[chunker]\nkind = "fixed"\nsize = 500\n'
                 '[sparse]\nbackend = "bm25s"\ndepth = 50\n[filter]\nscope = "doc_id"\n',
    "clause": 'name = "clause"\ndepth = 10\n[chunker]\nkind = "clause"\nsize = 1000\n'
              '[sparse]\nbackend = "bm25s"\ndepth = 50\n[filter]\nscope = "doc_id"\n',
}


def cuad_values() -> tuple[list[str], list[str], dict[str, np.ndarray]] | None:
    """Per query of the shared CUAD subset: its contract and, per configuration, the
    REAL_METRICS (queries x metrics)."""
    import tempfile

    from ragspan.evalsets.importers.cuad import import_cuad_csv
    from ragspan.io.corpus import Corpus
    from ragspan.io.evalset import EvalQuery, EvalSet, GoldSpan
    from ragspan.io.runs.spans import read_span_run
    from ragspan.retrieval.config import load_config
    from ragspan.retrieval.pipeline import Pipeline
    from ragspan.scoring.span_scoring import compute_span_report

    if not CUAD.is_dir():
        print(f"\n[clustered] skipped: {CUAD} not found")
        return None
    build = import_cuad_csv(str(CUAD / "master_clauses_subset.csv"), str(CUAD / "contracts"),
                            str(CUAD / "category_descriptions.csv"))
    corpus = Corpus("cuad", "", {d.id: d for d in build.documents})
    queries = tuple(EvalQuery(r["id"], r["query"], tuple(GoldSpan(sp["doc_id"], sp["start"],
                                                                   sp["end"])
                                                         for sp in r["gold_spans"]), r["doc_id"])
                    for r in build.rows)
    evalset = EvalSet("cuad", "e", queries)
    values = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in REAL_CONFIGS.items():
            cfg_path = Path(tmp) / f"{name}.toml"
            cfg_path.write_text(text, encoding="utf-8")
            pipe = Pipeline(load_config(str(cfg_path)), corpus)
            rows = pipe.run(list(queries))
            run_path = Path(tmp) / f"{name}.jsonl"
            run_path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            rep = compute_span_report(evalset, read_span_run(run_path), corpus, (5, 10), 0.5)
            vals = rep.values()
            values[name] = np.stack([np.asarray(vals[m], dtype=float) for m in REAL_METRICS],
                                    axis=1)
    return [q.id for q in queries], [q.doc_id for q in queries], values


def real_report(ids, docs, matrix, corpus_docs: int, tag: str) -> ScoreReport:
    rows = tuple(QueryRow(q, "", {}, {}, {}, {}, d) for q, d in zip(ids, docs))
    return ScoreReport(path=tag, sha256=tag, kind="score.span",
                       parameters={"k": [5, 10], "grounding_threshold": 0.5},
                       eval_sha256="e", corpus_sha256=None, ids=tuple(ids), names=REAL_METRICS,
                       values=matrix, rows=rows,
                       documents=Documents(corpus_docs, len(set(docs))))


def clustered() -> None:
    """A harmless change built the way documents vary: for each contract a coin decides
    which real configuration is the baseline (so the expected difference is zero and each
    contract's questions move together). Subsets of 5, 10, 20 and all contracts of the
    corpus; the share of draws in which each gated metric fails, per-query inference
    (``--cluster-by none``) beside the default (``auto``: the subset is a sample of the
    corpus's contracts, so by ``doc_id``). Then power: the worse configuration against the
    better on every contract of the subset (a real drop)."""
    got = cuad_values()
    if got is None:
        return
    ids, docs, values = got
    names = list(values)
    contracts = sorted(set(docs))
    by_doc = {d: np.array([i for i, x in enumerate(docs) if x == d]) for d in contracts}
    a, b = values[names[0]], values[names[1]]
    means = {m: (float(a[:, j].mean()), float(b[:, j].mean())) for j, m in enumerate(REAL_METRICS)}
    print(f"\n[clustered] shared CUAD: {len(ids)} questions over {len(contracts)} contracts; "
          f"{REAL_DRAWS} draws per cell")
    for m in REAL_METRICS[:4]:
        print(f"  {m}: {names[0]} {means[m][0]:.4f}, {names[1]} {means[m][1]:.4f}")
    gates = {"complete grounding (default budgets)": {},
             "span recall (2pt)": {"complete_grounding": "off", "span_recall": "2pt"}}
    sizes = [s for s in (5, 10, 20) if s < len(contracts)] + [len(contracts)]
    from ragspan.gate.budgets import parse_budget_value

    for title, budgets in gates.items():
        watch = [m for m in REAL_METRICS[:4] if (m.startswith("span") == ("span" in title))]
        print(f"\n{title}: false-fail share of harmless changes, per-query | clustered "
              "(default); alpha 0.05")
        print("| contracts (questions) | " + " | ".join(watch) + " |")
        print("|---|" + "---:|" * len(watch))
        for size in sizes:
            cells = {m: [0, 0] for m in watch}
            rng = np.random.default_rng(1000 + size)
            n_q = 0
            for i in range(REAL_DRAWS):
                chosen = rng.choice(len(contracts), size=size, replace=False)
                rows = np.concatenate([by_doc[contracts[c]] for c in sorted(chosen)])
                coin = {contracts[c]: rng.random() < 0.5 for c in chosen}
                flip = np.array([coin[docs[r]] for r in rows])
                base = np.where(flip[:, None], a[rows], b[rows])
                cand = np.where(flip[:, None], b[rows], a[rows])
                sub_ids = [ids[r] for r in rows]
                sub_docs = [docs[r] for r in rows]
                n_q = len(rows)
                rb = real_report(sub_ids, sub_docs, base, CUAD_CONTRACTS, f"b{i}")
                rc = real_report(sub_ids, sub_docs, cand, CUAD_CONTRACTS, f"c{i}")
                for k, mode in enumerate(("none", "auto")):
                    opts = GateOptions(**FAST, top=0, allow_budget_change=True, cluster_by=mode,
                                       budgets={n: parse_budget_value(v)
                                                for n, v in budgets.items()})
                    res = compare(rb, rc, opts)
                    for o in res.outcomes:
                        if o.name in cells and o.failed:
                            cells[o.name][k] += 1
            out = [f"{cells[m][0] / REAL_DRAWS:.3f} \\| {cells[m][1] / REAL_DRAWS:.3f}"
                   for m in watch]
            print(f"| {size} (~{n_q}) | " + " | ".join(out) + " |")
    print(f"  Monte Carlo standard error near 0.05: {se(0.05, REAL_DRAWS):.4f}; alpha + 2 SE = "
          f"{0.05 + 2 * se(0.05, REAL_DRAWS):.3f}")
    worse, better = (names[0], names[1]) if means["complete_grounding@10"][0] < \
        means["complete_grounding@10"][1] else (names[1], names[0])
    gap = {m: 100 * abs(means[m][0] - means[m][1]) for m in REAL_METRICS[:2]}
    print(f"\npower: {worse} as the candidate against {better} on every contract of the "
          f"subset (a real drop of {gap['complete_grounding@5']:.1f}pt at k=5 and "
          f"{gap['complete_grounding@10']:.1f}pt at k=10 on all contracts); fail share, "
          "per-query | clustered")
    print("| contracts | complete_grounding@5 | complete_grounding@10 |")
    print("|---|---:|---:|")
    for size in sizes:
        rng = np.random.default_rng(2000 + size)
        cells = {m: [0, 0] for m in REAL_METRICS[:2]}
        for i in range(REAL_DRAWS // 4):
            chosen = rng.choice(len(contracts), size=size, replace=False)
            rows = np.concatenate([by_doc[contracts[c]] for c in sorted(chosen)])
            sub_ids, sub_docs = [ids[r] for r in rows], [docs[r] for r in rows]
            rb = real_report(sub_ids, sub_docs, values[better][rows], CUAD_CONTRACTS, f"b{i}")
            rc = real_report(sub_ids, sub_docs, values[worse][rows], CUAD_CONTRACTS, f"c{i}")
            for k, mode in enumerate(("none", "auto")):
                res = compare(rb, rc, GateOptions(**FAST, top=0, allow_budget_change=True,
                                                  cluster_by=mode))
                for o in res.outcomes:
                    if o.name in cells and o.failed:
                        cells[o.name][k] += 1
        draws = REAL_DRAWS // 4
        print(f"| {size} | " + " | ".join(f"{cells[m][0] / draws:.3f} \\| {cells[m][1] / draws:.3f}"
                                           for m in REAL_METRICS[:2]) + " |")


FEW = (2, 3, 4, 6, 10)  # contracts in a subset: below 5 the default decides per question


def few() -> None:
    """Few clusters: subsets of 2, 3, 4, 6 and 10 contracts with the default settings
    (``auto``: by document, unless there are fewer clusters than an exact randomization test
    needs to reach alpha, 5 at 0.05; then per question). For each size, the share of
    harmless changes (a coin per contract, as in ``clustered``) that fail, and of real drops
    (the worse pipeline on every contract) that fail; with the unit each draw was decided
    by."""
    got = cuad_values()
    if got is None:
        return
    ids, docs, values = got
    names = list(values)
    contracts = sorted(set(docs))
    by_doc = {d: np.array([i for i, x in enumerate(docs) if x == d]) for d in contracts}
    a, b = values[names[0]], values[names[1]]
    j10 = REAL_METRICS.index("complete_grounding@10")
    worse, better = (a, b) if a[:, j10].mean() < b[:, j10].mean() else (b, a)
    print(f"\n[few] shared CUAD, default settings (auto), {REAL_DRAWS} draws per cell: "
          "fail share of harmless changes | of real drops, complete_grounding@5 / @10; the "
          "unit decided")
    print("| contracts (questions) | unit | harmless @5 | harmless @10 | drop @5 | drop @10 |")
    print("|---|---|---:|---:|---:|---:|")
    watch = ("complete_grounding@5", "complete_grounding@10")
    for size in FEW:
        rng = np.random.default_rng(3000 + size)
        harmless = {m: 0 for m in watch}
        real = {m: 0 for m in watch}
        units, n_q = set(), 0
        for i in range(REAL_DRAWS):
            chosen = rng.choice(len(contracts), size=size, replace=False)
            rows = np.concatenate([by_doc[contracts[c]] for c in sorted(chosen)])
            coin = {contracts[c]: rng.random() < 0.5 for c in chosen}
            flip = np.array([coin[docs[r]] for r in rows])
            sub_ids, sub_docs = [ids[r] for r in rows], [docs[r] for r in rows]
            n_q += len(rows)
            opts = GateOptions(**FAST, top=0, allow_budget_change=True)
            pairs = ((harmless, np.where(flip[:, None], a[rows], b[rows]),
                      np.where(flip[:, None], b[rows], a[rows])),
                     (real, better[rows], worse[rows]))
            for tally, base, cand in pairs:
                res = compare(real_report(sub_ids, sub_docs, base, CUAD_CONTRACTS, f"b{i}"),
                              real_report(sub_ids, sub_docs, cand, CUAD_CONTRACTS, f"c{i}"),
                              opts)
                units.add((res.clusters or {}).get("by"))
                for o in res.outcomes:
                    if o.name in tally and o.failed:
                        tally[o.name] += 1
        cells = [f"{harmless[m] / REAL_DRAWS:.3f}" for m in watch] + \
                [f"{real[m] / REAL_DRAWS:.3f}" for m in watch]
        print(f"| {size} (~{n_q // REAL_DRAWS}) | {', '.join(sorted(map(str, units)))} | "
              + " | ".join(cells) + " |")
    print(f"  Monte Carlo standard error near 0.05: {se(0.05, REAL_DRAWS):.4f}")


def main() -> None:
    """``python bench_gate_calibration.py [single] [slices] [former] [drift] [power]
    [coverage] [clustered] [few]``
    (default: all)."""
    t0 = time.perf_counter()
    parts = set(sys.argv[1:]) or {"single", "slices", "former", "drift", "power", "coverage",
                                  "clustered", "few"}
    print(f"gate calibration: {DRAWS} draws per cell (slices: a quarter), fail / pass / "
          "inconclusive; default configuration; budget 2pt")
    if "single" in parts:
        single()
    if "slices" in parts:
        table("5 gated slices (min-slice-size 10), family adjusted by max-T", [
            ("neutral, 20% churn", 0.20, 0.0, 5),
        ])
    print(f"\nMonte Carlo standard error of a rate near 0.05: {se(0.05, DRAWS):.4f} "
          f"({DRAWS} draws), {se(0.05, max(DRAWS // 4, 250)):.4f} (slices)")
    if "former" in parts:
        former()
    if "drift" in parts:
        drift()
    if "power" in parts:
        power()
    if "coverage" in parts:
        coverage()
    if "clustered" in parts:
        clustered()
    if "few" in parts:
        few()
    print(f"\n{time.perf_counter() - t0:.0f} s")


def single() -> None:
    table("one gated metric (complete_grounding@5)", [
        ("neutral, 20% churn", 0.20, 0.0, 0),
        ("neutral, 5% churn", 0.05, 0.0, 0),
        ("true drop 4pt, 20% churn", 0.20, 0.04, 0),
        ("true drop 4pt, 5% churn", 0.05, 0.04, 0),
        ("true drop 4pt, no churn", 0.0, 0.04, 0),
    ])


if __name__ == "__main__":
    main()
