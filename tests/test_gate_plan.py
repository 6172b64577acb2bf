"""The trusted side fixes the plan (docs/gate.md, "The plan"): the cutoffs, the gated metrics
and slices, each budget with where it came from, and the cutoff that decides each count
cutoff at equal budget come from the baseline and the settings, never from the candidate's
report. A candidate that ends early, or a report scored at fewer cutoffs, cannot choose where
it is judged."""

from __future__ import annotations

import json
import random

import pytest

from conftest import assert_input_error, run_cli, write_jsonl

N = 30


@pytest.fixture
def data(tmp_path):
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
    docs = [{"id": f"d{i}", "text": " ".join(rng.choice(words) for _ in range(800))}
            for i in range(N)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"id": f"q{i}", "query": "?", "doc_id": f"d{i}", "gold_spans": [[650, 700]],
         "tags": {"part": "a" if i % 2 else "b"}} for i in range(N)])
    return tmp_path, corpus, evalset


def _run(tmp, name, spans_of):
    return write_jsonl(tmp / f"run-{name}.jsonl", [
        {"id": f"q{i}", "retrieved": [{"doc_id": f"d{i}", "start": s, "end": e}
                                      for s, e in spans_of(i)]} for i in range(N)])


def _score(tmp, corpus, evalset, name, spans_of, *extra):
    run = _run(tmp, name, spans_of)
    out = tmp / f"score-{name}.json"
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k", "1",
                  "--k", "5", *extra, "--out", out)
    assert res.exit_code == 0, res.stderr
    return out


def _compare(base, cand, *flags):
    return run_cli("compare", "--baseline", base, "--candidate", cand, "--format", "json",
                   *flags)


def _ten(i):
    """A depth-10 run: ten 100-character chunks, the answer in the third."""
    return [(s, s + 100) for s in (0, 1000, 600, 2000, 2100, 2200, 2300, 2400, 2500, 2600)]


def test_a_run_that_ends_early_is_judged_at_the_baselines_budget(data):
    """The pull request that changes only depth = 10 to depth = 1: complete grounding@5
    falls from 1.00 to 0.00. The last round decided at 250c, "which both sides reached",
    where the baseline misses too, and passed. Now k = 5 is decided at the cutoff nearest
    the baseline's 500 characters there, the candidate measured with its whole run, and it
    fails; with --no-budget-grid it fails too."""
    tmp, corpus, evalset = data
    base = _score(tmp, corpus, evalset, "b", _ten)
    cand = _score(tmp, corpus, evalset, "c", lambda i: _ten(i)[:1])
    res = _compare(base, cand, "--no-config", "--eval-set", evalset, "--corpus", corpus,
                   "--baseline-run", tmp / "run-b.jsonl", "--candidate-run", tmp / "run-c.jsonl")
    assert res.exit_code == 4, res.stdout + res.stderr
    summary = res.json()["predicate"]["summary"]
    assert summary["retrieval_budget"]["decided_at"] == {"5": "500c"}
    assert summary["metrics"]["complete_grounding@500c"]["failed"]
    assert summary["plan"]["equal_budget"]["5"] == {"baseline_median_chars": 500.0,
                                                    "at": "500c"}
    assert any("the candidate's run ends before 500c for most questions (median 100 "
               "characters in all)" in w for w in summary["warnings"]), summary["warnings"]
    base = _score(tmp, corpus, evalset, "b2", _ten, "--no-budget-grid")
    cand = _score(tmp, corpus, evalset, "c2", lambda i: _ten(i)[:1], "--no-budget-grid")
    assert _compare(base, cand, "--no-config").exit_code == 4


def test_a_cheaper_candidate_that_holds_passes(data):
    """The other side of the rule: a candidate with the answer first, at half the budget,
    decided at the baseline's 500c with its whole run, passes."""
    tmp, corpus, evalset = data
    base = _score(tmp, corpus, evalset, "b", _ten)
    cand = _score(tmp, corpus, evalset, "c", lambda i: [_ten(i)[2], *_ten(i)[:2]])
    res = _compare(base, cand, "--no-config")
    assert res.exit_code == 0, res.stdout + res.stderr
    assert res.json()["predicate"]["summary"]["retrieval_budget"]["decided_at"] == {"5": "500c"}


def test_the_plan_names_where_each_item_came_from(data, tmp_path, monkeypatch):
    tmp, corpus, evalset = data
    base = _score(tmp, corpus, evalset, "b", _ten)
    cand = _score(tmp, corpus, evalset, "c", lambda i: [_ten(i)[1], _ten(i)[0], *_ten(i)[2:]])
    config = tmp_path / "base-pyproject.toml"
    config.write_text('[tool.ragspan]\ngate-slices = ["part"]\n[tool.ragspan.budgets]\n'
                      'span_coverage = "5pt"\n', encoding="utf-8")
    res = _compare(base, cand, "--config", config, "--config-origin",
                   "main@abc123:pyproject.toml", "--budget", "hit_rate@5=3pt")
    assert res.exit_code in (0, 4), res.stderr
    plan = res.json()["predicate"]["summary"]["plan"]
    origin = f"settings file {config} (main@abc123:pyproject.toml)"
    by_metric = {m["metric"]: m for m in plan["gated"]}
    assert by_metric["complete_grounding@1"]["from"] == "default"
    assert by_metric["span_coverage@5"] == {"metric": "span_coverage@5", "budget": "5pt",
                                            "from": origin, "at_equal_budget": "500c"}
    assert by_metric["hit_rate@5"]["from"] == "command line"
    assert plan["slices"] == [{"tag": "part", "from": origin}]
    assert plan["cutoffs"][:2] == ["1", "5"]
    assert plan["from"].startswith("the baseline report and the settings")
    # the Action names its own inputs (a label: RAGSPAN_SETTINGS_FROM changes no setting)
    monkeypatch.setenv("RAGSPAN_SETTINGS_FROM", "action")
    res = _compare(base, cand, "--no-config", "--budget", "hit_rate@5=3pt")
    by_metric = {m["metric"]: m for m in res.json()["predicate"]["summary"]["plan"]["gated"]}
    assert by_metric["hit_rate@5"]["from"] == "action input"
    md = _compare(base, cand, "--no-config", "--budget", "hit_rate@5=3pt", "--format",
                  "markdown").stdout
    assert "<summary>The plan: 3 gated metrics, from the baseline and the settings</summary>" \
        in md
    assert "- hit_rate at 5: 3pt (action input); at equal budget 5 -&gt; 500c" in md, md


def _edit(path, change):
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc["predicate"])
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_the_candidate_must_answer_every_item(data):
    """A gated metric at its cutoff of equal budget, or a gated slice, that the candidate's
    report lacks or changed is refused naming it: the candidate answers the plan."""
    tmp, corpus, evalset = data
    base = _score(tmp, corpus, evalset, "b", _ten)
    cand = _score(tmp, corpus, evalset, "c", lambda i: [_ten(i)[1], _ten(i)[0], *_ten(i)[2:]])

    def drop(pred):
        name = "complete_grounding@500c"
        del pred["summary"]["metrics"][name]
        del pred["details"]["metrics"][name]

    assert_input_error(_compare(base, _edit(cand, drop), "--no-config"), "candidate",
                       "lacks the gated metric 'complete_grounding@500c'", "the gate's plan")
    cand = _score(tmp, corpus, evalset, "c2", lambda i: [_ten(i)[1], _ten(i)[0], *_ten(i)[2:]])

    def retag(pred):
        pred["details"]["questions"]["tags"]["part"][0] = "z"

    assert_input_error(_compare(base, _edit(cand, retag), "--no-config", "--gate-slices",
                                "part"),
                       "does not carry the gated slice part='b' of the baseline")


def test_compare_names_what_the_runs_were_made_with(data):
    """Runs from the same shard with --scope doc_id and --scope none had byte-identical
    headers; the FAIL was then explained by characters alone. Their headers' settings are
    named when they differ."""
    tmp, corpus, evalset = data
    out = {}
    for name, scope in (("b", "doc_id"), ("c", "none")):
        run = _run(tmp, name, _ten)
        lines = run.read_text().splitlines()
        header = {"_header": {"edge_shard": {"sha256": "a" * 64, "search": {
            "scope": scope, "limit": 10}}}}
        run.write_text("\n".join([json.dumps(header), *lines]) + "\n", encoding="utf-8")
        res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus, "--k",
                      "1", "--k", "5", "--out", tmp / f"s-{name}.json")
        assert res.exit_code == 0, res.stderr
        out[name] = tmp / f"s-{name}.json"
    res = _compare(out["b"], out["c"], "--no-config", "--allow-identical")
    warnings = res.json()["predicate"]["summary"]["warnings"]
    assert "the runs' settings differ (the retrieval under test): edge_shard.search.scope " \
           '"doc_id" -> "none"' in warnings, warnings
