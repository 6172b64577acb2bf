"""Where a report was made, and the audited override.

A score report made in a git work tree records its commit, branch, the commit's own date and
whether tracked files had changes (``parameters.provenance``), never the wall-clock time;
``compare`` states both reports' commits, which base the baseline is and its age at compare
time, warning past ``max-baseline-age`` (3 days by default), in JSON, markdown, the table and
JUnit. An override exists only where the trusted config names its label: the verdict stays
FAIL, and every output says who set which label and what it overrode."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import ROOT, run_cli
from ragspan.base.errors import UsageError

FIX = ROOT / "tests" / "fixtures" / "gate"
EPOCH = 1700000000  # 2023-11-14T22:13:20Z, the compare's clock (conftest)


def _git(repo, *args, date=None):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
           "HOME": str(repo), "PATH": "/usr/bin:/bin"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git work tree holding the gate fixtures' inputs, one commit on main dated
    2023-11-01; provenance recorded (conftest turns it off for every other test)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("eval.jsonl", "corpus.jsonl", "run-baseline.jsonl", "run-fail.jsonl",
                 "run-pass.jsonl"):
        shutil.copy(FIX / name, root / name)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "base", date="2023-11-01T12:00:00+00:00")
    monkeypatch.chdir(root)
    monkeypatch.delenv("RAGSPAN_NO_PROVENANCE")
    return root


def _score(root, run, out):
    res = run_cli("score", "--eval-set", root / "eval.jsonl", "--run", root / run, "--corpus",
                  root / "corpus.jsonl", "--k", "1", "--no-budget-grid", "--out", out)
    assert res.exit_code == 0, res.stderr
    return json.loads(out.read_text(encoding="utf-8"))["predicate"]["parameters"]


def _pair(repo, tmp_path, candidate="run-fail.jsonl"):
    """The baseline scored at the base commit, the candidate at a newer commit."""
    base = tmp_path / "base.json"
    _score(repo, "run-baseline.jsonl", base)
    _git(repo, "checkout", "-q", "-b", "feature")
    (repo / "note.txt").write_text("a change\n", encoding="utf-8")
    _git(repo, "add", "note.txt")
    _git(repo, "commit", "-q", "-m", "change", date="2023-11-14T12:00:00+00:00")
    cand = tmp_path / "cand.json"
    _score(repo, candidate, cand)
    return base, cand


def test_a_score_report_records_its_commit_never_the_clock(repo, tmp_path, monkeypatch):
    first = _score(repo, "run-baseline.jsonl", tmp_path / "a.json")
    head = _git(repo, "rev-parse", "HEAD")
    assert first["provenance"] == {"commit": head, "ref": "main", "dirty": False,
                                   "committed_at": "2023-11-01T12:00:00+00:00"}
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH + 86_400))  # another day, same bytes
    run_cli("score", "--eval-set", repo / "eval.jsonl", "--run", repo / "run-baseline.jsonl",
            "--corpus", repo / "corpus.jsonl", "--k", "1", "--no-budget-grid", "--out",
            tmp_path / "b.json")
    a, b = (json.loads((tmp_path / f"{n}.json").read_text())["predicate"] for n in "ab")
    assert a["parameters"] == b["parameters"] and a["summary"] == b["summary"]
    # a tracked file changed: dirty; a detached head: no branch
    (repo / "run-pass.jsonl").write_text((repo / "run-pass.jsonl").read_text() + "\n")
    assert _score(repo, "run-baseline.jsonl", tmp_path / "c.json")["provenance"]["dirty"]
    _git(repo, "checkout", "-q", "--", "run-pass.jsonl")
    _git(repo, "checkout", "-q", "--detach")
    assert _score(repo, "run-baseline.jsonl", tmp_path / "d.json")["provenance"]["ref"] is None


def test_no_provenance_outside_a_repository_or_when_turned_off(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSPAN_NO_PROVENANCE", "1")
    assert "provenance" not in _score(repo, "run-baseline.jsonl", tmp_path / "a.json")
    monkeypatch.delenv("RAGSPAN_NO_PROVENANCE")
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert "provenance" not in _score(repo, "run-baseline.jsonl", tmp_path / "b.json")


def test_the_verdict_states_both_commits_the_base_and_the_age(repo, tmp_path):
    base, cand = _pair(repo, tmp_path)
    base_sha = json.loads(base.read_text())["predicate"]["parameters"]["provenance"]["commit"]
    out, junit = tmp_path / "compare.json", tmp_path / "junit.xml"
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                  "--baseline-is", "merge-base", "--out", out, "--junit", junit,
                  "--format", "markdown")
    assert res.exit_code == 4
    s = json.loads(out.read_text())["predicate"]["summary"]
    p = s["provenance"]
    assert (p["baseline"]["commit"], p["baseline"]["ref"]) == (base_sha, "main")
    assert p["candidate"]["ref"] == "feature"
    assert (p["baseline_is"], p["baseline_age_days"], p["max_baseline_age_days"]) == \
        ("merge-base", 13.43, 3.0)
    (warned,) = [w for w in s["warnings"] if "days before this compare" in w]
    assert f"commit {base_sha[:12]} (main), committed 13.4 days" in warned
    assert f"provenance: baseline: commit {base_sha[:12]} on main, committed " \
           "2023-11-01T12:00:00+00:00" in res.stdout
    assert "the baseline is the merge base; its commit is 13.43 days old" in res.stdout
    text = junit.read_text()
    assert f'name="baseline_commit" value="{base_sha}"' in text
    assert 'name="baseline_age_days" value="13.43"' in text
    assert 'name="baseline_is" value="merge-base"' in text
    # a trusted config's max-baseline-age: no warning
    cfg = tmp_path / "base-pyproject.toml"
    cfg.write_text("[tool.ragspan]\nmax-baseline-age = 30\n", encoding="utf-8")
    run_cli("compare", "--baseline", base, "--candidate", cand, "--config", cfg,
            "--out", out)
    s = json.loads(out.read_text())["predicate"]["summary"]
    assert not [w for w in s.get("warnings", []) if "days before this compare" in w]
    assert s["provenance"]["max_baseline_age_days"] == 30


def test_provenance_changes_no_number_and_verifies(repo, tmp_path):
    """Two reports of one run made at different commits compare as identical inputs would,
    and a verified compare re-scores them (provenance is not a scoring parameter)."""
    base, cand = _pair(repo, tmp_path, candidate="run-baseline.jsonl")
    res = run_cli("compare", "--baseline", base, "--candidate", cand, "--no-config",
                  "--eval-set", repo / "eval.jsonl", "--corpus", repo / "corpus.jsonl",
                  "--baseline-run", repo / "run-baseline.jsonl", "--candidate-run",
                  repo / "run-baseline.jsonl", "--format", "json")
    assert res.exit_code == 0, res.stderr
    summary = json.loads(res.stdout)["predicate"]["summary"]
    assert summary["verification"]["verified"] is True
    assert summary["metrics"]["complete_grounding@1"]["delta"] == 0


def test_a_report_without_provenance_is_said(tmp_path):
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "candidate-pass.json", "--no-config", "--baseline-is", "base-tip",
                  "--format", "json")
    s = json.loads(res.stdout)["predicate"]["summary"]
    assert s["provenance"] == {"baseline": None, "candidate": None, "baseline_is": "base-tip"}
    assert any("records no provenance" in w for w in s["warnings"])
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "candidate-pass.json", "--no-config", "--format", "json")
    assert "provenance" not in json.loads(res.stdout)["predicate"]["summary"]


def _config(tmp_path, label="ragspan-override"):
    cfg = tmp_path / "base-pyproject.toml"
    cfg.write_text(f'[tool.ragspan]\noverride-label = "{label}"\n', encoding="utf-8")
    return cfg


def _override(tmp_path, candidate, *flags, cfg=True):
    out, junit = tmp_path / "compare.json", tmp_path / "junit.xml"
    settings = ("--config", _config(tmp_path)) if cfg else ("--no-config",)
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", candidate,
                  *settings, "--out", out, "--junit", junit, "--format", "markdown",
                  "--annotations", "github", *flags)
    return res, json.loads(out.read_text())["predicate"], junit.read_text()


def test_an_override_keeps_the_fail_and_says_who_and_what(tmp_path):
    res, pred, junit = _override(tmp_path, FIX / "candidate-fail.json", "--pr-label", "docs",
                                 "--pr-label", "Ragspan-Override ", "--pr-actor", "alice")
    assert (res.exit_code, pred["verdict"], pred["exit_code"]) == (4, "fail", 4)
    o = pred["summary"]["override"]
    assert (o["label"], o["actor"], o["applied"]) == ("Ragspan-Override", "alice", True)
    assert o["overrode"]["verdict"] == "fail" and o["overrode"]["exit_code"] == 4
    assert o["overrode"]["reasons"] == pred["summary"]["reasons"]
    assert pred["parameters"]["override_label"] == "ragspan-override"
    assert res.stdout.startswith("### ragspan gate: ❌ FAIL (overridden)\n\n**Overridden:** "
                                 "OVERRIDDEN by the label 'Ragspan-Override' (set by alice)")
    assert "the verdict stays FAIL (exit 4) and the job passes; it overrode: complete" \
        in res.stdout
    assert 'name="override_actor" value="alice"' in junit
    assert "message=\"[OVERRIDDEN by the label 'Ragspan-Override' (set by alice)] " \
           "complete_grounding@1 dropped" in junit
    first = res.stderr.splitlines()[0]
    assert first.startswith("::notice title=ragspan override::OVERRIDDEN by the label")


def test_no_override_without_the_trusted_label(tmp_path):
    # the pull request carries the label, but the trusted config names none
    res, pred, junit = _override(tmp_path, FIX / "candidate-fail.json", "--pr-label",
                                 "ragspan-override", cfg=False)
    assert "override" not in pred["summary"] and "OVERRIDDEN" not in res.stdout + junit
    # the label is no flag: only the base branch's config names it
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "candidate-fail.json", "--no-config", "--override-label", "x")
    assert res.exit_code == 2 and "No such option '--override-label'" in res.stderr
    # a label the config does not name overrides nothing
    res, pred, _ = _override(tmp_path, FIX / "candidate-fail.json", "--pr-label", "other")
    assert "override" not in pred["summary"]


def test_a_label_on_a_passing_verdict_overrides_nothing(tmp_path):
    res, pred, _ = _override(tmp_path, FIX / "candidate-pass.json", "--budget",
                             "complete_grounding=7pt", "--pr-label", "ragspan-override")
    assert res.exit_code == 0
    o = pred["summary"]["override"]
    assert (o["applied"], o["overrode"], o["actor"]) == (False, None, None)
    assert "**Override:** override label 'ragspan-override' (who set it is not known): the " \
           "verdict is PASS, nothing to override" in res.stdout


@pytest.mark.parametrize(("flags", "said"), [
    (["--pr-label", "a\nb"], "--pr-label: a name of 1 to 100 printable characters"),
    (["--pr-label", " "], "--pr-label: a name of 1 to 100 printable characters"),
    (["--pr-actor", "x" * 101], "--pr-actor: a name of 1 to 100 printable characters"),
    ([arg for i in range(101) for arg in ("--pr-label", f"l{i}")],
     "--pr-label: at most 100 labels, got 101"),
])
def test_crafted_labels_are_refused(tmp_path, flags, said):
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "candidate-fail.json", "--config", _config(tmp_path), *flags)
    assert res.exit_code == 2 and said in res.stderr


@pytest.mark.parametrize(("toml", "said"), [
    ('override-label = ""', "override-label"),
    ("override-label = 3", "override-label"),
    ("max-baseline-age = -1", "max-baseline-age"),
    ('max-baseline-age = "3"', "max-baseline-age"),
])
def test_wrongly_typed_settings_are_refused(tmp_path, toml, said):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(f"[tool.ragspan]\n{toml}\n", encoding="utf-8")
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "candidate-fail.json", "--config", cfg)
    assert res.exit_code == 3 and said in res.stderr, res.stderr  # the file is an input


def test_the_python_api_takes_the_same_override(tmp_path):
    import ragspan

    cfg = _config(tmp_path)
    result = ragspan.compare(FIX / "baseline.json", FIX / "candidate-fail.json", config=cfg,
                             pr_labels=["ragspan-override"], pr_actor="alice",
                             baseline_is="merge-base")
    summary = result.summary()
    assert (summary["verdict"], summary["override"]["applied"]) == ("fail", True)
    assert summary["provenance"]["baseline_is"] == "merge-base"
    with pytest.raises(UsageError, match="pr_labels: a list of label names, got str"):
        ragspan.compare(FIX / "baseline.json", FIX / "candidate-fail.json", config=cfg,
                        pr_labels="ragspan-override")
    with pytest.raises(UsageError, match="baseline_is must be one of base-tip"):
        ragspan.compare(FIX / "baseline.json", FIX / "candidate-fail.json", baseline_is="tip")
