"""Runs with steps scored as documented, checked against a reference written from the docs
alone (docs/formats.md, "Runs with steps"; docs/metrics.md): sets of characters, no code of
the scorer. ``@k`` is the first k results of each step, laid end to end; ``@Nc`` the first N
characters of the steps end to end (results counted as returned, the crossing one cut);
an exact repeat (same document and offsets) is removed only among what the cutoff keeps,
the first kept, its slot still used; ``retrieved_chars`` counts the characters of what is
kept, so a repeat's once. Hundreds of generated runs with repeats inside and across steps,
overlaps, several gold spans, ``match: all`` and ``any``."""

from __future__ import annotations

import json
import random

import pytest

from conftest import report_rows, run_cli, write_jsonl

TAU = 0.5
METRICS = ("complete_grounding", "span_coverage", "span_recall", "retrieved_chars",
           "precision", "hit_rate", "mrr", "char_precision_merged")


def context(steps: list[list[tuple]], cutoff: str) -> tuple[list[tuple], int]:
    """The results a cutoff keeps, in context order, each (doc, start, end, original end)
    with its position, and the slots it gives: before repeats are removed."""
    if cutoff.endswith("c"):
        budget, used, out = int(cutoff[:-1]), 0, []
        flat = [r for step in steps for r in step]
        for pos, (d, s, e) in enumerate(flat):
            if used >= budget:
                break
            kept = min(e - s, budget - used)
            used += e - s
            if kept > 0:
                out.append((d, s, s + kept, e, pos))
        return out, len(out)
    k = int(cutoff)
    out, pos = [], 0
    for step in steps:
        for d, s, e in step[:k]:
            out.append((d, s, e, e, pos))
            pos += 1
    return out, k * len(steps)


def reference(gold: list[tuple], match: str, steps: list[list[tuple]], cutoff: str
              ) -> dict[str, float]:
    cut, slots = context(steps, cutoff)
    seen, kept = set(), []
    for d, s, e, orig, pos in cut:  # a repeat removed among what the cut keeps
        if (d, s, orig) in seen:
            continue
        seen.add((d, s, orig))
        kept.append((d, s, e, pos))
    chars = {(d, i) for d, s, e, _ in kept for i in range(s, e)}
    gold_chars = {(d, i) for d, s, e in gold for i in range(s, e)}
    fracs = [len({(d, i) for i in range(s, e)} & chars) / (e - s) for d, s, e in gold]
    relevant = [pos for d, s, e, pos in kept
                if any(gd == d and s < ge and gs < e for gd, gs, ge in gold)]
    reached = [f >= TAU for f in fracs]
    union_r = len(chars)
    out = {
        "complete_grounding": float(any(reached) if match == "any" else all(reached)),
        "span_coverage": max(fracs) if match == "any" else len(gold_chars & chars) / len(gold_chars),
        "span_recall": max(fracs) if match == "any" else sum(fracs) / len(fracs),
        "retrieved_chars": float(sum(e - s for _, s, e, _ in kept)),
        "precision": len(relevant) / slots if slots else 0.0,
        "hit_rate": float(bool(relevant)),
        "mrr": 1.0 / (1 + min(relevant)) if relevant else 0.0,
        "char_precision_merged": len(gold_chars & chars) / union_r if union_r else 0.0,
    }
    return out


def _steps(rnd: random.Random, docs: dict[str, str], gold: list[tuple]) -> list[list[tuple]]:
    """Steps whose results repeat inside a step and across steps, overlap, hit gold."""
    pool = []
    steps = []
    for _ in range(rnd.randint(1, 4)):
        step = []
        for _ in range(rnd.randint(0, 4)):
            roll = rnd.random()
            if pool and roll < 0.35:  # an exact repeat of an earlier result
                item = rnd.choice(pool)
            elif roll < 0.6:  # around a gold span
                d, s, e = rnd.choice(gold)
                a = max(0, s - rnd.randint(0, 30))
                item = (d, a, min(len(docs[d]), a + rnd.randint(1, 80)))
            else:
                d = rnd.choice(sorted(docs))
                a = rnd.randrange(0, len(docs[d]) - 2)
                item = (d, a, min(len(docs[d]), a + rnd.randint(1, 90)))
            pool.append(item)
            step.append(item)
        steps.append(step)
    return steps


def test_the_minimal_case_of_a_later_call_refinding_a_result():
    """Gold [50, 60); step 1 returns [0, 10) then [45, 65); step 2 returns [45, 65). @1 is the
    first result of each step: [0, 10) and [45, 65), grounded (the last round said 0.0, and
    10 characters)."""
    gold = [("d", 50, 60)]
    steps = [[("d", 0, 10), ("d", 45, 65)], [("d", 45, 65)]]
    ref = reference(gold, "all", steps, "1")
    assert ref["complete_grounding"] == 1.0 and ref["retrieved_chars"] == 30.0
    got = _scored({"d": "x" * 100}, [("q0", gold, "all", steps)], ["1"])
    assert got[0]["complete_grounding@1"] == 1.0 and got[0]["retrieved_chars@1"] == 30.0


def _scored(docs, questions, cutoffs):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus = write_jsonl(tmp / "c.jsonl", [{"id": d, "text": t} for d, t in docs.items()])
        ev = write_jsonl(tmp / "e.jsonl", [
            {"id": q, "query": "?", "match": match,
             "gold_spans": [{"doc_id": d, "start": s, "end": e} for d, s, e in gold]}
            for q, gold, match, _ in questions])
        run = write_jsonl(tmp / "r.jsonl", [
            {"id": q, "steps": [{"retrieved": [{"doc_id": d, "start": s, "end": e}
                                               for d, s, e in step]} for step in steps]}
            for q, _, _, steps in questions])
        args = [a for c in cutoffs for a in ("--k", c)]
        res = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", corpus, *args,
                      "--no-budget-grid", "--min-coverage", "0", "--format", "json")
        assert res.exit_code == 0, res.stderr
        return [r["metrics"] for r in report_rows(json.loads(res.stdout))]


@pytest.mark.parametrize("seed", range(12))
def test_step_metrics_equal_the_reference_on_generated_runs(seed):
    """12 batches of 25 questions each (300 generated runs), at counts 1, 2, 3 and at 60c and
    150c."""
    rnd = random.Random(seed)
    docs = {f"d{i}": "".join(rnd.choice("abcdefgh ") for _ in range(600)) for i in range(3)}
    questions = []
    for q in range(25):
        gold = []
        for _ in range(rnd.randint(1, 3)):
            d = rnd.choice(sorted(docs))
            a = rnd.randrange(0, 560)
            span = (d, a, a + rnd.randint(5, 40))
            if all(not (g[0] == d and g[1] < span[2] and span[1] < g[2]) for g in gold):
                gold.append(span)
        questions.append((f"q{q}", gold, rnd.choice(["all", "any"]), _steps(rnd, docs, gold)))
    cutoffs = ["1", "2", "3", "60c", "150c"]
    got = _scored(docs, questions, cutoffs)
    for (qid, gold, match, steps), row in zip(questions, got):
        for c in cutoffs:
            ref = reference(gold, match, steps, c)
            for name in METRICS:
                assert row[f"{name}@{c}"] == pytest.approx(ref[name], abs=1e-9), \
                    (qid, name, c, steps, gold, match, row[f"{name}@{c}"], ref[name])
