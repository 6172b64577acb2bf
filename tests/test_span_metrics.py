"""Span metrics against independent references.

* ``char_precision`` / ``char_recall``: a direct transcription of LegalBench-RAG's
  ``QAResult.precision`` / ``QAResult.recall`` (zeroentropy-ai/legalbenchrag,
  ``legalbenchrag/run_benchmark.py``): per retrieved snippet, per gold snippet, same file,
  accumulate the overlap; no merging.
* ``span_coverage``, ``span_recall``, ``complete_grounding``, ``char_precision_merged``,
  ``retrieved_chars``, ``precision``, ``hit_rate``, ``mrr``: brute force over Python sets of
  ``(doc_id, character index)``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ragspan.io.evalset import EvalQuery, EvalSet, GoldSpan
from ragspan.io.runs.spans import SpanList, SpanRun
from ragspan.scoring.span_scoring import compute_span_report


def legalbench_precision(retrieved, gold):
    total_retrieved_len = 0
    relevant_retrieved_len = 0
    for r_file, r_start, r_end in retrieved:
        total_retrieved_len += r_end - r_start
        for g_file, g_start, g_end in gold:
            if r_file == g_file:
                common_min = max(r_start, g_start)
                common_max = min(r_end, g_end)
                if common_max > common_min:
                    relevant_retrieved_len += common_max - common_min
    if total_retrieved_len == 0:
        return 0
    return relevant_retrieved_len / total_retrieved_len


def legalbench_recall(retrieved, gold):
    total_relevant_len = 0
    relevant_retrieved_len = 0
    for g_file, g_start, g_end in gold:
        total_relevant_len += g_end - g_start
        for r_file, r_start, r_end in retrieved:
            if r_file == g_file:
                common_min = max(r_start, g_start)
                common_max = min(r_end, g_end)
                if common_max > common_min:
                    relevant_retrieved_len += common_max - common_min
    if total_relevant_len == 0:
        return 0
    return relevant_retrieved_len / total_relevant_len


def chars(spans):
    return {(d, c) for d, s, e in spans for c in range(s, e)}


def brute(gold, ranked, k, tau, match_any=False):
    """Every span metric by character sets; ``ranked`` may hold repeats."""
    top, seen = [], set()
    for item in ranked[:k]:
        if item not in seen:
            seen.add(item)
            top.append(item)
    rc = chars(top)
    gc = chars(gold)
    fracs = [len(chars([g]) & rc) / (g[2] - g[1]) for g in gold]
    relevant = [bool(chars([r]) & gc) for r in ranked[:k]]
    first = next((i for i, r in enumerate(ranked) if r in set(top) and chars([r]) & gc), None)
    out = {
        "span_coverage": max(fracs) if match_any else len(gc & rc) / len(gc),
        "span_recall": max(fracs) if match_any else sum(fracs) / len(fracs),
        "complete_grounding": float(any(f >= tau for f in fracs) if match_any
                                    else all(f >= tau for f in fracs)),
        "char_precision": legalbench_precision(top, gold),
        "char_recall": legalbench_recall(top, gold),
        "char_precision_merged": len(gc & rc) / len(rc) if rc else 0.0,
        "retrieved_chars": float(sum(e - s for _, s, e in top)),
        "hit_rate": float(any(relevant)),
        "mrr": 1.0 / (first + 1) if first is not None and first < k else 0.0,
    }
    # precision counts relevant distinct spans in the first k slots, over k
    distinct_rel = sum(1 for r in top if chars([r]) & gc)
    out["precision"] = distinct_rel / k
    return out


def make_case(rng: random.Random):
    docs = ["a", "b", "c"]
    n_gold = rng.randint(1, 4)
    gold = []
    for _ in range(n_gold):
        s = rng.randint(0, 150)
        gold.append((rng.choice(docs[:2]), s, s + rng.randint(1, 40)))
    ranked = []
    for _ in range(rng.randint(0, 12)):
        if ranked and rng.random() < 0.15:
            ranked.append(rng.choice(ranked))  # exact repeat
            continue
        s = rng.randint(0, 170)
        ranked.append((rng.choice(docs), s, s + rng.randint(1, 60)))
    return gold, ranked


def build(cases, match_any=None):
    queries, ids, offsets, doc, start, end = [], [], [0], [], [], []
    for i, (gold, ranked) in enumerate(cases):
        queries.append(EvalQuery(
            id=f"q{i}", query="", gold_spans=tuple(GoldSpan(*g) for g in gold),
            match="any" if match_any and match_any[i] else "all", line=i + 1))
        ids.append(f"q{i}")
        for d, s, e in ranked:
            doc.append(d)
            start.append(s)
            end.append(e)
        offsets.append(len(doc))
    n = len(doc)
    spans = SpanList(ids, np.asarray(offsets, np.int64), doc, np.asarray(start, np.int64),
                     np.asarray(end, np.int64), np.full(n, np.nan), [None] * n)
    return EvalSet("e.jsonl", "0" * 64, tuple(queries)), SpanRun("r.jsonl", "0" * 64, spans,
                                                                   list(range(len(ids))))


@pytest.mark.parametrize("k", [1, 3, 10])
def test_500_random_cases_match_references(k):
    rng = random.Random(20261129 + k)
    cases = [make_case(rng) for _ in range(500)]
    match_any = [rng.random() < 0.3 for _ in cases]
    tau = 0.5
    evalset, run = build(cases, match_any)
    report = compute_span_report(evalset, run, None, (k,), tau)
    values = report.scores.values
    for i, (gold, ranked) in enumerate(cases):
        expected = brute(gold, ranked, k, tau, match_any[i])
        for name, value in expected.items():
            assert values[f"{name}@{k}"][i] == pytest.approx(value, abs=1e-12), (name, i)


def test_char_precision_can_exceed_one_with_overlapping_retrievals():
    # two identical-extent but distinct chunks can't repeat exactly, so overlap them by offset
    gold = [("a", 0, 10)]
    ranked = [("a", 0, 10), ("a", 0, 9)]
    evalset, run = build([(gold, ranked)])
    v = compute_span_report(evalset, run, None, (2,), 0.5).scores.values
    assert v["char_recall@2"][0] == pytest.approx(19 / 10)
    assert v["span_coverage@2"][0] == 1.0
    assert legalbench_recall(ranked, gold) == pytest.approx(1.9)


def test_grounding_disagrees_with_pooled_coverage_both_ways():
    """One fully retrieved span + one missed: coverage 0.5, grounding 0.
    Two spans each 60% covered: coverage 0.6, grounding 1 (tau 0.5)."""
    case_a = ([("a", 0, 100), ("a", 200, 300)], [("a", 0, 100)])
    case_b = ([("a", 0, 100), ("a", 200, 300)], [("a", 0, 60), ("a", 200, 260)])
    evalset, run = build([case_a, case_b])
    v = compute_span_report(evalset, run, None, (5,), 0.5).scores.values
    assert v["span_coverage@5"].tolist() == [0.5, 0.6]
    assert v["complete_grounding@5"].tolist() == [0.0, 1.0]


def test_overlap_only_counts_within_the_same_document():
    evalset, run = build([([("a", 0, 10)], [("b", 0, 10)])])
    v = compute_span_report(evalset, run, None, (1,), 0.5).scores.values
    assert v["span_coverage@1"][0] == 0.0
    assert v["hit_rate@1"][0] == 0.0
    assert v["retrieved_chars@1"][0] == 10.0


def test_repeat_uses_its_slot_but_counts_once():
    gold = [("a", 0, 10)]
    ranked = [("a", 0, 10), ("a", 0, 10), ("a", 50, 60)]
    evalset, run = build([(gold, ranked)])
    v = compute_span_report(evalset, run, None, (2, 3), 0.5).scores.values
    assert v["retrieved_chars@2"][0] == 10.0
    assert v["precision@2"][0] == 0.5
    assert v["retrieved_chars@3"][0] == 20.0


def test_threshold_is_inclusive_and_configurable():
    gold = [("a", 0, 10)]
    evalset, run = build([(gold, [("a", 0, 5)])])
    assert compute_span_report(evalset, run, None, (1,), 0.5).scores.values[
        "complete_grounding@1"][0] == 1.0
    assert compute_span_report(evalset, run, None, (1,), 0.51).scores.values[
        "complete_grounding@1"][0] == 0.0


def truncate_to_budget(ranked, budget):
    """The definition, written out: results in rank order while their lengths (as returned,
    repeats counted) fit the budget; the crossing one cut at the budget; later ones dropped."""
    out, used, first = [], 0, {}
    for d, s, e in ranked:
        if used >= budget:
            break
        keep = min(e - s, budget - used)
        # a repeat uses up its budget and counts once: it stands as its first occurrence
        out.append(first.setdefault((d, s, e), (d, s, s + keep)))
        used += e - s
    return out


def brute_budget(gold, ranked, budget, tau, match_any=False):
    """Every span metric at a character budget, by character sets: the budget's results are
    the truncated list; the count-based reference then applies to all of them, except that
    precision divides by the results the budget reaches."""
    cut = truncate_to_budget(ranked, budget)
    out = brute(gold, cut, len(cut), tau, match_any) if cut else {
        name: 0.0 for name in ("span_coverage", "span_recall", "complete_grounding",
                               "char_precision", "char_recall", "char_precision_merged",
                               "retrieved_chars", "hit_rate", "mrr", "precision")}
    return out


@pytest.mark.parametrize("budget", [1, 25, 60, 150, 400])
def test_character_budgets_match_the_definition(budget):
    """Truncation at the budget, overlapping results, results in other documents, exact
    repeats (which use up budget), a budget smaller than the first result."""
    from ragspan.scoring.metrics.registry import Chars

    rng = random.Random(7 + budget)
    cases = [make_case(rng) for _ in range(500)]
    match_any = [rng.random() < 0.3 for _ in cases]
    evalset, run = build(cases, match_any)
    k = Chars(budget)
    report = compute_span_report(evalset, run, None, (3, k), 0.5)
    values = report.scores.values
    for i, (gold, ranked) in enumerate(cases):
        expected = brute_budget(gold, ranked, budget, 0.5, match_any[i])
        for name, value in expected.items():
            assert values[f"{name}@{budget}c"][i] == pytest.approx(value, abs=1e-12), (name, i)
        assert values[f"retrieved_chars@{budget}c"][i] <= budget


def test_a_budget_is_never_the_count_of_the_same_number():
    from ragspan.scoring.metrics.registry import Chars, cutoff_json, parse_cutoff, parse_name

    assert Chars(5) != 5 and 5 != Chars(5) and len({5, Chars(5)}) == 2  # noqa: SIM300
    assert str(Chars(2000)) == "2000c" and f"{Chars(2000)}" == "2000c"
    assert parse_cutoff("2000c") == Chars(2000) and parse_cutoff("7") == 7
    assert cutoff_json(Chars(3)) == "3c" and cutoff_json(3) == 3
    assert parse_name("complete_grounding@2000c").k == Chars(2000)
    assert parse_name("doc_ndcg@2000c").k == Chars(2000)  # a document within 2,000 chars
    with pytest.raises(ValueError, match="token budget is a cutoff of span metrics only"):
        parse_name("doc_ndcg@512t")
    for bad in ("0c", "c", "5cc", "-5", "2.5c", True):
        with pytest.raises(ValueError):
            parse_cutoff(bad)


# --- Chroma's chunking-evaluation metrics, against their own algorithm ---------------------

def _union_ranges(ranges):  # chunking_evaluation's union_ranges, as published
    sorted_ranges = sorted(ranges, key=lambda x: x[0])
    merged = [sorted_ranges[0]]
    for cur_start, cur_end in sorted_ranges[1:]:
        last_start, last_end = merged[-1]
        if cur_start <= last_end:
            merged[-1] = (last_start, max(last_end, cur_end))
        else:
            merged.append((cur_start, cur_end))
    return merged


def _intersect(r1, r2):
    start, end = max(r1[0], r2[0]), min(r1[1], r2[1])
    return (start, end) if start <= end else None


def _difference(ranges, target):
    result, (t_start, t_end) = [], target
    for start, end in ranges:
        if end < t_start or start > t_end:
            result.append((start, end))
        elif start < t_start and end > t_end:
            result += [(start, t_start), (t_end, end)]
        elif start < t_start:
            result.append((start, t_start))
        elif end > t_end:
            result.append((t_end, end))
    return result


def chroma_reference(gold, retrieved):
    """Chroma's per-question loop (``_scores_from_dataset_and_retrievals``), with the corpus id
    of each reference its own document."""
    numerator = {}
    unused = {i: [(s, e)] for i, (_, s, e) in enumerate(gold)}
    for d, cs, ce in retrieved:
        for i, (gd, gs, ge) in enumerate(gold):
            if d != gd:
                continue
            inter = _intersect((cs, ce), (gs, ge))
            if inter is not None:
                unused[i] = _difference(unused[i], inter)
                numerator[d] = _union_ranges([inter] + numerator.get(d, []))
    num = sum(e - s for ranges in numerator.values() for s, e in ranges)
    recall_den = sum(e - s for _, s, e in gold)
    precision_den = sum(e - s for _, s, e in retrieved)
    iou_den = precision_den + sum(e - s for ranges in unused.values() for s, e in ranges)
    return {"chroma_recall": num / recall_den if recall_den else 0.0,
            "chroma_precision": num / precision_den if precision_den else 0.0,
            "iou": num / iou_den if iou_den else 0.0}


@pytest.mark.parametrize("k", [1, 5, 12])
def test_chroma_metrics_match_their_algorithm(k):
    rng = random.Random(4242 + k)
    cases = [make_case(rng) for _ in range(500)]
    evalset, run = build(cases)
    report = compute_span_report(evalset, run, None, (k,), 0.5, chroma=True)
    values = report.scores.values
    for i, (gold, ranked) in enumerate(cases):
        top = list(dict.fromkeys(ranked[:k]))  # R_k: exact repeats removed
        for name, value in chroma_reference(gold, top).items():
            assert values[f"{name}@{k}"][i] == pytest.approx(value, abs=1e-12), (name, i)


def full_precision_reference(gold, chunks):
    """chunking_evaluation's ``_full_precision_score`` for one question (references in
    several documents handled per document): |∪ intersections| / |∪(chunks + unused)|."""
    numerator, denominator = {}, {}
    unused = {i: [(s, e)] for i, (_, s, e) in enumerate(gold)}
    for d, cs, ce in chunks:
        for i, (gd, gs, ge) in enumerate(gold):
            if d != gd:
                continue
            inter = _intersect((cs, ce), (gs, ge))
            if inter is not None:
                unused[i] = _difference(unused[i], inter)
                numerator[d] = _union_ranges([inter] + numerator.get(d, []))
                denominator[d] = _union_ranges([(cs, ce)] + denominator.get(d, []))
    num = sum(e - s for r in numerator.values() for s, e in r)
    den = 0
    for d in {g[0] for g in gold}:
        left = [r for i, (gd, _, _) in enumerate(gold) if gd == d for r in unused[i]]
        ranges = denominator.get(d, []) + left
        den += sum(e - s for s, e in _union_ranges(ranges)) if ranges else 0
    return num / den if num else 0.0


def test_precision_omega_is_the_iou_of_every_chunk_meeting_a_reference():
    from ragspan.scoring.metrics.failures import ChunkColumns
    from ragspan.scoring.metrics.span import GoldColumns
    from ragspan.scoring.span_scoring import precision_omega

    rng = random.Random(9)
    chunks = [(d, s, s + w) for d in (0, 1) for w in (25, 40) for s in range(0, 300, 25)]
    cases = []
    for _ in range(200):
        gold = [(rng.randint(0, 1), s, s + rng.randint(1, 60))
                for s in (rng.randint(0, 230) for _ in range(rng.randint(1, 3)))]
        cases.append(gold)
    q = np.array([i for i, g in enumerate(cases) for _ in g], dtype=np.int64)
    flat = [x for g in cases for x in g]
    gold_cols = GoldColumns(q, np.array([d for d, _, _ in flat], dtype=np.int64),
                            np.array([s for _, s, _ in flat], dtype=np.int64),
                            np.array([e for _, _, e in flat], dtype=np.int64),
                            np.zeros(len(cases), dtype=bool), len(cases))
    cols = ChunkColumns(np.array([d for d, _, _ in chunks]), np.array([s for _, s, _ in chunks]),
                        np.array([e for _, _, e in chunks]), tuple(map(str, range(len(chunks)))))
    got = precision_omega(gold_cols, cols)
    for i, gold in enumerate(cases):
        hit = [c for c in chunks if any(c[0] == d and c[1] < e and c[2] > s for d, s, e in gold)]
        assert got[i] == pytest.approx(full_precision_reference(gold, hit), abs=1e-12), i


def truncate_to_token_budget(ranked, budget, texts, tokenizer):
    """The token budget, written out: results in rank order while their token counts (each
    result's text alone) fit the budget; the crossing one keeps the characters of its first
    tokens up to the budget; later ones dropped."""
    out, used = [], 0
    for d, s, e in ranked:
        if used >= budget:
            break
        text = texts[d][s:e]
        n = tokenizer.count(text)
        keep = e - s if used + n <= budget else tokenizer.offsets(text)[budget - used]
        out.append((d, s, s + keep))
        used += n
    return out


@pytest.mark.parametrize("budget", [1, 9, 30, 120])
def test_token_budgets_match_the_definition(budget):
    """``score --k Nt``: each result measured in cl100k_base tokens of its own text (words,
    punctuation and multi-byte characters), the crossing one cut after its last whole token
    within the budget, repeats and overlaps counted as returned."""
    pytest.importorskip("tiktoken", reason="the tokens extra is not installed")
    from ragspan.io.corpus import Corpus, Document
    from ragspan.retrieval.tokens import load_tokenizer
    from ragspan.scoring.metrics.registry import Tokens

    rng = random.Random(11 + budget)
    words = ["the", "licensee", "shall", "pay", "royalties", "of", "5%", "within", "thirty",
             "(30)", "days;", "Grundstück", "naïve", "—", "€1,000", "\n\n", "Section", "7.2"]
    texts = {d: " ".join(rng.choice(words) for _ in range(120)) for d in "abc"}
    corpus = Corpus("c.jsonl", "0" * 64, {d: Document(d, t) for d, t in texts.items()})
    cases = [make_case(rng) for _ in range(200)]
    cases = [(gold, [r for i, r in enumerate(ranked) if r not in ranked[:i]])  # no repeats:
             for gold, ranked in cases]  # a cut repeat would stand apart from its original
    evalset, run = build(cases)
    tok = load_tokenizer("cl100k_base")
    k = Tokens(budget)
    report = compute_span_report(evalset, run, corpus, (3, k), 0.5, tokenizer=tok)
    assert report.tokenizer == "cl100k_base"
    values = report.scores.values
    for i, (gold, ranked) in enumerate(cases):
        cut = truncate_to_token_budget(ranked, budget, texts, tok)
        expected = brute(gold, cut, len(cut), 0.5) if cut else {}
        for name in ("span_coverage", "span_recall", "complete_grounding", "char_precision",
                     "char_recall", "char_precision_merged", "retrieved_chars", "hit_rate",
                     "mrr"):
            assert values[f"{name}@{budget}t"][i] == pytest.approx(expected.get(name, 0.0),
                                                                  abs=1e-12), (name, i)


def test_a_token_budget_needs_the_corpus_and_is_its_own_cutoff(tmp_path):
    from conftest import run_cli, write_jsonl
    from ragspan.scoring.metrics.registry import Chars, Tokens, parse_cutoff, parse_name

    assert Tokens(5) != Chars(5) and Tokens(5) != 5 and len({5, Chars(5), Tokens(5)}) == 3
    assert parse_cutoff("512t") == Tokens(512) and str(Tokens(512)) == "512t"
    with pytest.raises(ValueError, match="a token budget is a cutoff of span metrics only"):
        parse_name("doc_ndcg@10t")
    evalset = write_jsonl(tmp_path / "e.jsonl", [
        {"id": "q", "query": "x", "doc_id": "d", "gold_spans": [[0, 5]]}])
    run = write_jsonl(tmp_path / "r.jsonl", [
        {"id": "q", "retrieved": [{"doc_id": "d", "start": 0, "end": 9}]}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--k", "4t")
    assert res.exit_code == 2 and "token budget (--k 512t)" in res.stderr
    res = run_cli("score", "--qrels", evalset, "--run", run, "--k", "4t")
    assert res.exit_code == 2 and "--k 4t is a token budget" in res.stderr


def test_a_token_budget_is_recorded_with_its_tokenizer(tmp_path):
    pytest.importorskip("tiktoken", reason="the tokens extra is not installed")
    import json

    from conftest import run_cli, write_jsonl

    text = "The licensee shall pay royalties within thirty days of each quarter."
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": text}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [
        {"id": "q", "query": "x", "doc_id": "d", "gold_spans": [[4, 12]]}])
    run = write_jsonl(tmp_path / "r.jsonl", [
        {"id": "q", "retrieved": [{"doc_id": "d", "start": 0, "end": len(text)}]}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k",
                  "3t", "--k", "1", "--no-budget-grid", "--out", tmp_path / "s.json")
    assert res.exit_code == 0, res.stderr
    pred = json.loads((tmp_path / "s.json").read_text())["predicate"]
    assert pred["parameters"]["tokenizer"] == "cl100k_base"
    assert pred["parameters"]["k"] == [1, "3t"]
    # "The licensee shall": three tokens, 18 characters, covering the gold [4, 12) whole
    assert pred["summary"]["metrics"]["retrieved_chars@3t"] == 18.0
    assert pred["summary"]["metrics"]["complete_grounding@3t"] == 1.0
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k",
                  "3t", "--tokenizer", "no-such-tokenizer", "--out", tmp_path / "t.json")
    assert res.exit_code == 2 and "cannot load tokenizer 'no-such-tokenizer'" in res.stderr


@pytest.mark.parametrize("layout", ["run", "shuffled", "two groups"])
def test_chars_before_sums_the_earlier_results_whatever_the_layout(layout):
    """``RankedColumns.chars_before`` equals a brute-force sum for entries laid out as a run
    gives them (summed in place), shuffled, or with a query's results in two groups (both
    sorted first)."""
    from ragspan.scoring.metrics.span import RankedColumns

    rng = np.random.default_rng(7)
    for _ in range(200):
        sizes = rng.integers(0, 6, rng.integers(1, 8))
        query = np.repeat(np.arange(sizes.size), sizes)
        rank = np.concatenate([np.arange(n) for n in sizes]).astype(np.int64)
        if layout == "two groups" and query.size > 2:
            query = np.concatenate([query, query[:1]])  # its next rank, after another query
            rank = np.concatenate([rank, [int((query[:-1] == query[0]).sum())]])
        order = rng.permutation(query.size) if layout == "shuffled" else np.arange(query.size)
        query, rank = query[order], rank[order]
        start = rng.integers(0, 100, query.size)
        end = start + rng.integers(0, 50, query.size)
        cols = RankedColumns(query, np.zeros(query.size, np.int64), start, end, rank)
        expect = [sum(int(end[j] - start[j]) for j in range(query.size)
                      if query[j] == query[i] and rank[j] < rank[i])
                  for i in range(query.size)]
        assert cols.chars_before.tolist() == expect
