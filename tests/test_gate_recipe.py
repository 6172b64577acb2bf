"""The gate recipe (``examples/workflows/ragspan-gate.yml``), its steps run as the runner runs
them (``bash --noprofile --norc -e -o pipefail FILE`` with GITHUB_OUTPUT and RUNNER_TEMP) in a
pull request's checkout of a real git repository: the trusted inputs come from the base
branch into a folder the run made, a fetch that fails fails the job, and only what the run
wrote is commented. ``gh`` (the GitHub API) is a script that answers as the API does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from test_action import GITHUB_BASH, read_outputs

yaml = pytest.importorskip("yaml")
RECIPE = ROOT / "examples" / "workflows" / "ragspan-gate.yml"
BASE_PYPROJECT = '[tool.ragspan]\nalpha = 0.05\n'


def step(name: str) -> dict:
    steps = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))["jobs"]["gate"]["steps"]
    return next(s for s in steps if s.get("name", "").startswith(name))


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def repository(tmp: Path, base_files: dict[str, str], pr_files: dict[str, str]) -> Path:
    """A bare origin whose main holds ``base_files``, and a pull request's checkout of it
    with ``pr_files`` committed on top."""
    work = tmp / "base"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for rel, text in base_files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text, encoding="utf-8")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    git(tmp, "clone", "-q", "--bare", str(work), str(tmp / "origin.git"))
    checkout = tmp / "checkout"
    git(tmp, "clone", "-q", str(tmp / "origin.git"), str(checkout))
    for rel, text in pr_files.items():
        (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
        (checkout / rel).write_text(text, encoding="utf-8")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-qm", "pr")
    return checkout


EVAL = {"ragspan-eval/pipeline.toml": "name = 'base'\n", "ragspan-eval/eval.jsonl": "{}\n",
        "ragspan-eval/corpus.jsonl": "{}\n"}
# what a pull request commits under the names the recipe used to write in the checkout
HOSTILE = {"gate/base-pyproject.toml/x": "a folder where the config went\n",
           "gate/eval-changed.md": "## Ignore the gate: this PR is fine\n",
           "gate/ragspan-anchor.json": "{}\n"}


def run(tmp: Path, checkout: Path, name: str, env: dict[str, str]):
    out = tmp / f"out-{name.split()[0]}"
    out.touch()
    spec = step(name)
    with open(tmp / "step.sh", "w", encoding="utf-8") as fh:
        fh.write(spec["run"])
    res = subprocess.run([*GITHUB_BASH, str(tmp / "step.sh")], cwd=checkout, text=True,
                         capture_output=True,
                         env={**os.environ, "RUNNER_TEMP": str(tmp / "runner"),
                              "GITHUB_OUTPUT": str(out), "GITHUB_REPOSITORY": "o/r", **env})
    return res, read_outputs(out)


@pytest.fixture
def runner_temp(tmp_path: Path) -> Path:
    (tmp_path / "runner").mkdir()
    return tmp_path


def test_the_trusted_inputs_come_from_the_base_branch_into_a_fresh_folder(runner_temp):
    """A pull request that commits a folder named gate/base-pyproject.toml made the recipe's
    `git show ... >` fail inside an `if`, and the gate ran with --no-config."""
    checkout = repository(runner_temp, {**EVAL, "pyproject.toml": BASE_PYPROJECT}, HOSTILE)
    res, out = run(runner_temp, checkout, "Fetch the base branch", {"BASE_REF": "main"})
    assert res.returncode == 0, res.stderr
    folder = Path(out["dir"])
    assert folder.parent == runner_temp / "runner" and folder.name.startswith("ragspan-gate.")
    assert Path(out["config"]).read_text() == BASE_PYPROJECT
    assert out["config-origin"].startswith("main@") and out["config"].startswith(out["dir"])
    for name, source in (("base.toml", "pipeline.toml"), ("eval-base.jsonl", "eval.jsonl"),
                         ("corpus-base.jsonl", "corpus.jsonl")):
        assert (folder / name).read_text() == EVAL[f"ragspan-eval/{source}"]


def test_no_settings_file_on_the_base_branch_is_said(runner_temp):
    checkout = repository(runner_temp, EVAL, HOSTILE)
    res, out = run(runner_temp, checkout, "Fetch the base branch", {"BASE_REF": "main"})
    assert res.returncode == 0, res.stderr
    assert "config" not in out and "no pyproject.toml" in res.stdout


@pytest.mark.parametrize("base", [
    {k: v for k, v in EVAL.items() if not k.endswith("corpus.jsonl")},  # a trusted file gone
    {**EVAL, "pyproject.toml/x": "a folder\n"},  # the settings are not a file
])
def test_a_trusted_input_that_cannot_be_fetched_fails_the_job(runner_temp, base):
    checkout = repository(runner_temp, base, {"README": "pr\n"})
    res, out = run(runner_temp, checkout, "Fetch the base branch", {"BASE_REF": "main"})
    assert res.returncode != 0
    assert "config" not in out


FAKE_GH = r"""#!/bin/bash
# answers as GitHub's API does, per FAKE_GH (none | no-asset | ok | broken-download | down)
if [ "$1" = api ]; then
  case "$FAKE_GH" in
    none) echo "gh: Not Found (HTTP 404)" >&2; exit 1 ;;
    down) echo "gh: Server Error (HTTP 502)" >&2; exit 1 ;;
  esac
  case "$*" in
    *tag_name*) echo v1.2.0 ;;
    *) echo notes.txt; [ "$FAKE_GH" = no-asset ] || echo ragspan-anchor.json ;;
  esac
  exit 0
fi
if [ "$1 $2" = "release download" ]; then
  [ "$FAKE_GH" = broken-download ] && { echo "gh: connection reset" >&2; exit 1; }
  while [ $# -gt 0 ]; do [ "$1" = --dir ] && dir="$2"; shift; done
  mkdir -p "$dir" && echo '{"anchor": true}' > "$dir/ragspan-anchor.json"
  exit 0
fi
exit 2
"""


@pytest.mark.parametrize("mode,code,anchored", [
    ("none", 0, False), ("no-asset", 0, False), ("ok", 0, True),
    ("broken-download", 1, False), ("down", 1, False)])
def test_the_anchor_is_fetched_or_absent_and_a_failed_fetch_fails_the_job(runner_temp, mode,
                                                                         code, anchored):
    """`gh release download` failing for any reason used to read as "no anchor yet"; the
    anchor the PR committed in gate/ was the one the gate read when the download failed."""
    checkout = repository(runner_temp, EVAL, HOSTILE)
    bin_dir = runner_temp / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    folder = runner_temp / "runner" / "ragspan-gate.test"
    folder.mkdir()
    res, out = run(runner_temp, checkout, "Fetch the anchor", {
        "FAKE_GH": mode, "GATE_DIR": str(folder), "GH_TOKEN": "x",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert (res.returncode != 0) == bool(code), (res.stdout, res.stderr)
    if anchored:
        assert out["path"] == str(folder / "anchor" / "ragspan-anchor.json")
        assert Path(out["path"]).read_text() == '{"anchor": true}\n'
    else:
        assert "path" not in out


def test_only_what_this_run_wrote_is_commented(runner_temp):
    """A pull request that committed gate/eval-changed.md had its text appended to the
    gate's comment."""
    checkout = repository(runner_temp, EVAL, HOSTILE)
    folder = runner_temp / "runner" / "ragspan-gate.test"
    folder.mkdir()
    (folder / "comment.md").write_text("### ragspan gate: FAIL\n")
    res, _ = run(runner_temp, checkout, "Keep the pull request number",
                 {"PR_NUMBER": "7", "VERDICT": "fail", "GATE_DIR": str(folder)})
    assert res.returncode == 0, res.stderr
    assert (folder / "comment.md").read_text() == "### ragspan gate: FAIL\n"
    assert (folder / "verdict.txt").read_text() == "fail\n"
    (folder / "eval-changed.md").write_text("### The pull request also changes the eval set\n")
    res, _ = run(runner_temp, checkout, "Keep the pull request number",
                 {"PR_NUMBER": "7", "VERDICT": "fail", "GATE_DIR": str(folder)})
    assert "also changes the eval set" in (folder / "comment.md").read_text()


def test_what_is_uploaded_lies_in_the_folder_the_run_made():
    steps = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))["jobs"]["gate"]["steps"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    paths = [p for p in upload["with"]["path"].splitlines() if p.strip()]
    assert paths and all(p.startswith("${{ steps.fetch.outputs.dir }}/") for p in paths)
    gate = next(s for s in steps if s.get("id") == "gate")
    files = {k: v for k, v in gate["with"].items() if k in (
        "baseline", "candidate", "eval-set", "corpus", "baseline-run", "candidate-run",
        "baseline-chunks", "candidate-chunks", "comment")}
    assert all(v.startswith("${{ steps.fetch.outputs.dir }}/") for v in files.values())
    assert "gate/" not in RECIPE.read_text(encoding="utf-8").replace("ragspan-gate", "")


CLAUSE = "The Supplier shall deliver the Goods within thirty days of each written order."
CORPUS = json.dumps({"id": "msa", "text": "Master agreement. " + CLAUSE + " End."}) + "\n"
EVAL_SET = json.dumps({"id": "q1", "query": "When are the Goods delivered?", "doc_id": "msa",
                       "gold_spans": [[18, 18 + len(CLAUSE)]]}) + "\n"
REAL = {"ragspan-eval/pipeline.toml": "name = 'base'\n", "ragspan-eval/eval.jsonl": EVAL_SET,
        "ragspan-eval/corpus.jsonl": CORPUS}


def _carry(runner_temp: Path, pr_files: dict[str, str]):
    """The fetch step, then the migration step, with ``python`` the test's interpreter."""
    checkout = repository(runner_temp, REAL, pr_files)
    res, out = run(runner_temp, checkout, "Fetch the base branch", {"BASE_REF": "main"})
    assert res.returncode == 0, res.stderr
    bin_dir = runner_temp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    res, moved = run(runner_temp, checkout, "Carry the eval set over", {
        "GATE_DIR": out["dir"], "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    return res, moved, Path(out["dir"])


def test_a_pull_request_that_edits_the_corpus_is_gated_across_the_edit(runner_temp):
    edited = json.dumps({"id": "msa", "text": "Amended. Master agreement. " + CLAUSE
                         + " End."}) + "\n"
    res, out, folder = _carry(runner_temp, {"ragspan-eval/corpus.jsonl": edited})
    assert res.returncode == 0, res.stderr
    assert out["migration"] == str(folder / "migrate.json")
    assert out["candidate-eval-set"] == str(folder / "eval-pr.jsonl")
    assert (folder / "corpus-pr.jsonl").read_text() == edited
    row = [json.loads(x) for x in (folder / "eval-pr.jsonl").read_text().splitlines()][1]
    assert row["gold_spans"][0]["start"] == 18 + len("Amended. ")
    report = json.loads((folder / "migrate.json").read_text())
    assert report["predicate"]["summary"]["spans"]["moved"] == 1
    assert "gold spans moved" in (folder / "migration.md").read_text()
    # the comment step appends the migration, from the run's own folder
    (folder / "comment.md").write_text("### ragspan gate: PASS\n")
    checkout = runner_temp / "checkout"
    res, _ = run(runner_temp, checkout, "Keep the pull request number",
                 {"PR_NUMBER": "7", "VERDICT": "pass", "GATE_DIR": str(folder)})
    assert res.returncode == 0, res.stderr
    assert "The pull request edits the corpus" in (folder / "comment.md").read_text()


@pytest.mark.parametrize("pr_files", [
    {"README": "no data change\n"},  # the corpus is the base's
    {"ragspan-eval/corpus.jsonl": CORPUS.replace("End.", "Fin."),  # the eval set changed too
     "ragspan-eval/eval.jsonl": EVAL_SET.replace("q1", "q2")},
])
def test_no_migration_when_the_corpus_is_kept_or_the_eval_set_changes(runner_temp, pr_files):
    res, out, folder = _carry(runner_temp, pr_files)
    assert res.returncode == 0, res.stderr
    assert "migration" not in out and not (folder / "migrate.json").exists()
    assert (folder / "eval-pr.jsonl").read_text() == EVAL_SET
    assert (folder / "corpus-pr.jsonl").read_text() == CORPUS


def test_a_corpus_that_cannot_be_migrated_fails_the_job(runner_temp):
    res, out, _ = _carry(runner_temp, {"ragspan-eval/corpus.jsonl": json.dumps(
        {"id": "other", "text": "Nothing of the old text."}) + "\n"})
    assert res.returncode == 3 and "no question survived" in res.stderr
    assert "migration" not in out


LABELS_GH = r"""#!/bin/bash
# the labels and label events of a pull request, as GitHub's API answers through --jq
case "$*" in
  */labels*) printf 'docs\nRagspan-Override\nactor=mallory\n' ;;
  */events*) printf 'ragspan-override\tbob\nRAGSPAN-OVERRIDE\talice\ndocs\tcarol\n' ;;
  *) exit 2 ;;
esac
"""


@pytest.mark.parametrize("config", [True, False])
def test_the_labels_and_who_set_the_override_label_come_from_the_api(runner_temp, config):
    """The labels as the API lists them (a label that spells an output stays a label), and
    the login of the last event that set the label the base branch's config names; without
    that setting nobody is looked up."""
    checkout = repository(runner_temp, EVAL, {"README": "pr\n"})
    bin_dir = runner_temp / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(LABELS_GH)
    (bin_dir / "gh").chmod(0o755)
    cfg = runner_temp / "base-pyproject.toml"
    cfg.write_text('[tool.ragspan]\noverride-label = "ragspan-override"\n', encoding="utf-8")
    res, out = run(runner_temp, checkout, "Read the pull request's labels", {
        "GH_TOKEN": "x", "PR_NUMBER": "7", "CONFIG": str(cfg) if config else "",
        "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                f"{os.environ['PATH']}"})
    assert res.returncode == 0, res.stderr
    assert out["labels"].splitlines() == ["docs", "Ragspan-Override", "actor=mallory"]
    assert out.get("actor") == ("alice" if config else None)


@pytest.mark.parametrize("code,overridden,fails", [
    ("4", "true", False), ("4", "false", True), ("0", "false", False), ("3", "true", True)])
def test_the_job_passes_a_fail_only_when_overridden(runner_temp, code, overridden, fails):
    checkout = repository(runner_temp, EVAL, {"README": "pr\n"})
    res, _ = run(runner_temp, checkout, "Fail the job when the gate failed", {
        "VERDICT": "fail" if code == "4" else "error", "CODE": code,
        "OVERRIDDEN": overridden})
    assert (res.returncode != 0) == fails, res.stdout
