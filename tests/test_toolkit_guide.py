"""docs/toolkit.md's examples, run as written: the Python block makes the files, and each
command of the shell block runs with the exit code (and verdict or message) its comment
states; and the rules a toolkit job ported as written is judged by."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from conftest import ROOT, run_cli

GUIDE = ROOT / "docs" / "toolkit.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def test_the_guide_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (python,) = _blocks("python")
    exec(compile(python, str(GUIDE), "exec"), {})  # noqa: S102 - the guide's own example
    (shell,) = _blocks("sh")
    checked = 0
    for line in shell.strip().splitlines():
        command, _, said = line.partition("  # ")
        argv = shlex.split(command)
        assert argv[0] == "ragspan"
        res = run_cli(*argv[1:])
        if not said:
            assert res.exit_code == 0, (line, res.stderr)
            continue
        code, _, words = said.partition(": ")
        assert res.exit_code == int(code.removeprefix("exit ")), (line, res.stderr)
        if res.exit_code == 2:
            assert words in res.stderr, (line, res.stderr)
        else:
            assert json.loads(res.stdout)["predicate"]["verdict"] == words.lower(), line
        checked += 1
    assert checked == 6


def test_the_toolkit_rules_gate_its_six_metrics_and_say_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(_blocks("python")[0], str(GUIDE), "exec"), {})  # noqa: S102
    for name in ("base", "cand"):
        assert run_cli("score", "--queries", "qrels.trec", "--retrieved", f"{name}.jsonl",
                       "--k", "3", "--out", f"{name}.json").exit_code == 0
    cfg = tmp_path / "base-pyproject.toml"
    cfg.write_text('[tool.ragspan]\nprofile = "toolkit"\n', encoding="utf-8")
    res = run_cli("compare", "--baseline", "base.json", "--candidate", "cand.json",
                  "--config", cfg, "--format", "json")
    assert res.exit_code == 4
    pred = json.loads(res.stdout)["predicate"]
    gated = {n for n, m in pred["summary"]["metrics"].items() if m["gated"]}
    assert gated == {f"doc_{m}@3" for m in ("recall", "precision", "ndcg", "mrr", "map",
                                            "hit_rate")}
    assert {m["budget"] for n, m in pred["summary"]["metrics"].items() if n in gated} == {"2%"}
    assert pred["parameters"]["profile"] == "toolkit"
    assert pred["parameters"]["mode"] == "threshold"
    assert any(f"profile toolkit, from {cfg}" in w for w in pred["summary"]["warnings"])
    assert "5.00% of the baseline's mean" in pred["summary"]["reasons"][0]
    # the plan names where the toolkit's default budgets came from: the settings file
    assert all(g["from"].startswith("settings file") for g in pred["summary"]["plan"]["gated"])


@pytest.mark.parametrize("flags", [
    ("--profile", "ragspan", "--max-recall-regression-pct", "2"),
    ("--profile", "ragspan", "--budget", "ndcg_at_3=off"),
    ("--profile", "nobody"),
])
def test_a_choice_that_contradicts_itself_is_refused(tmp_path, monkeypatch, flags):
    monkeypatch.chdir(tmp_path)
    exec(compile(_blocks("python")[0], str(GUIDE), "exec"), {})  # noqa: S102
    for name in ("base", "cand"):
        assert run_cli("score", "--qrels", "qrels.trec", "--run", f"{name}.jsonl",
                       "--k", "3", "--out", f"{name}.json").exit_code == 0
    res = run_cli("compare", "--baseline", "base.json", "--candidate", "cand.json", *flags)
    assert res.exit_code == 2 and "profile" in res.stderr, res.stderr


def test_reports_scored_the_ragspan_way_are_judged_by_ragspan_rules(tmp_path, monkeypatch):
    """No toolkit spelling anywhere: ragspan's gate, with no question asked."""
    monkeypatch.chdir(tmp_path)
    exec(compile(_blocks("python")[0], str(GUIDE), "exec"), {})  # noqa: S102
    for name in ("base", "cand"):
        assert run_cli("score", "--qrels", "qrels.trec", "--run", f"{name}.jsonl",
                       "--k", "3", "--out", f"{name}.json").exit_code == 0
    res = run_cli("compare", "--baseline", "base.json", "--candidate", "cand.json",
                  "--format", "json")
    pred = json.loads(res.stdout)["predicate"]
    assert (res.exit_code, pred["verdict"], pred["parameters"]["profile"]) == \
        (0, "inconclusive", "auto")
