"""The GitHub Action, run locally: ``action.yml`` is parsed and its ``run:`` steps execute as
the runner runs a ``shell: bash`` step (``bash --noprofile --norc -e -o pipefail FILE``) with
GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP and the step ``env:`` set as the runner
would, on the committed fixture reports (one pass, one fail). The install step runs for real
into a fresh virtualenv (core only: no torch); an interpreter an earlier step of the job
planted where the install step used to put its own is never the one that judges."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

yaml = pytest.importorskip("yaml")
# the runner fixture installs ragspan into a fresh virtualenv with the action's own step
pytestmark = pytest.mark.slow
FIX = ROOT / "tests" / "fixtures" / "gate"
# github.action_path: a copy of the project, so that pip's build of it (build/, *.egg-info)
# never lands in the work tree (set by the runner fixture)
ACTION_PATH: list[Path] = [ROOT]
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def steps() -> list[dict]:
    return action()["runs"]["steps"]


def test_no_input_is_interpolated_into_a_script():
    doc = action()
    assert doc["runs"]["using"] == "composite"
    assert set(doc["inputs"]) == {"baseline", "candidate", "budgets", "alpha", "primary-metric",
                                  "fail-on-regression", "comment",
                                  "on-inconclusive", "anchor", "anchor-budget", "config",
                                  "config-origin", "allow-identical", "eval-set", "qrels",
                                  "corpus", "baseline-run", "candidate-run", "baseline-chunks",
                                  "candidate-chunks", "cluster-by", "migration",
                                  "candidate-eval-set", "candidate-corpus",
                                  "migrated-eval-set-trusted", "max-set-aside",
                                  "max-recall-regression-pct", "max-regression-pct",
                                  "trust-reports", "junit", "baseline-is", "pr-labels",
                                  "pr-actor", "profile"}
    assert set(doc["outputs"]) == {"verdict", "exit-code", "report", "summary", "junit",
                                   "overridden"}
    for step in doc["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], step["name"]  # inputs reach the shell via env only
            assert step["shell"] == "bash"


# the outputs of the steps that ran (``steps.<id>.outputs.<name>``), as the runner keeps them
STEP_OUTPUTS: dict[str, dict[str, str]] = {}


def expand(value: str, inputs: dict[str, str]) -> str:
    """Evaluate the ``${{ inputs.x }}``, ``${{ github.action_path }}`` and
    ``${{ steps.<id>.outputs.<name> }}`` expressions of env."""

    def sub(m: re.Match) -> str:
        expr = m.group(1)
        if expr.startswith("inputs."):
            return inputs.get(expr[len("inputs."):], "")
        if expr == "github.action_path":
            return str(ACTION_PATH[0])
        step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
        if step:
            return STEP_OUTPUTS.get(step.group(1), {}).get(step.group(2), "")
        raise AssertionError(f"unexpected expression {expr}")

    return EXPR.sub(sub, str(value))


GITHUB_BASH = ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail"]  # shell: bash


def read_outputs(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as the runner reads it: ``name=value`` lines and ``name<<DELIM``
    blocks (the value the lines up to ``DELIM``)."""
    out: dict[str, str] = {}
    lines = iter(path.read_text().splitlines())
    for line in lines:
        name, heredoc, delim = line.partition("<<")
        if heredoc and "=" not in name:
            block = []
            for part in lines:
                if part == delim:
                    break
                block.append(part)
            else:
                raise AssertionError(f"output {name} never ends (no line {delim!r})")
            out[name] = "\n".join(block)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
    return out


# The pull request's checkout, as an adversary writes it: modules that shadow what the gate
# imports (each records that it ran, then exits 0 with no verdict) and a pyproject.toml that
# loosens the gate. The steps run in it, as the runner runs them in the checkout.
CHECKOUT: list[Path] = [FIX]
SHADOWS = ("json.py", "jsonschema.py", "click.py", "numpy.py", "venv.py", "ensurepip.py",
           "pip/__init__.py", "pip/__main__.py", "ragspan/__init__.py", "ragspan/__main__.py")
LOOSE_PYPROJECT = """[tool.ragspan]
mode = "threshold"
alpha = 1e-9
allow-budget-change = true
budget-tolerance = 1000

[tool.ragspan.budgets]
"complete_grounding@1" = "100pt"
complete_grounding = "100pt"
"""


def hostile_checkout(where: Path) -> Path:
    """A copy of the gate fixtures with the shadowing modules and the loose pyproject."""
    import shutil

    shutil.copytree(FIX, where)
    marker = where / "SHADOW-RAN"
    for name in SHADOWS:
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n"
                        "import sys\nsys.exit(0)\n", encoding="utf-8")
    (where / "pyproject.toml").write_text(LOOSE_PYPROJECT, encoding="utf-8")
    return where


def run_step(step: dict, inputs: dict[str, str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """One ``run:`` step as the runner runs it: its script in a file, under GitHub's bash."""
    import tempfile

    step_env = {**env, **{k: expand(v, inputs) for k, v in (step.get("env") or {}).items()}}
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as fh:
        fh.write(step["run"])
    try:
        return subprocess.run([*GITHUB_BASH, fh.name], env=step_env, capture_output=True,
                              text=True, cwd=CHECKOUT[0])
    finally:
        os.unlink(fh.name)


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    """A fresh virtualenv with ragspan installed by the action's own install step."""
    import shutil

    tmp = tmp_path_factory.mktemp("action")
    CHECKOUT[0] = hostile_checkout(tmp / "checkout")
    ACTION_PATH[0] = tmp / "ragspan"
    shutil.copytree(ROOT, ACTION_PATH[0], ignore=shutil.ignore_patterns(
        ".git", ".venv", "demo-out", "build", "dist", "*.egg-info", "__pycache__", ".*_cache",
        ".hypothesis", "tests"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"  # the caller's Python
    env["RUNNER_TEMP"] = str(tmp)
    defaults = {k: str(v.get("default", "")) for k, v in action()["inputs"].items()}
    # an earlier step (a pull request's own build) leaves an interpreter where the install
    # step used to make its own: it would pass any candidate
    planted = tmp / "ragspan-venv" / "bin" / "python"
    planted.parent.mkdir(parents=True)
    planted.write_text("#!/bin/sh\necho planted >&2\nexit 0\n")
    planted.chmod(0o755)
    install = next(s for s in steps() if s.get("name", "").startswith("Install"))
    outputs = tmp / "install-output"
    outputs.touch()
    t0 = time.perf_counter()
    before = _work_tree_outputs()
    res = run_step(install, defaults, {**env, "GITHUB_OUTPUT": str(outputs)})
    elapsed = time.perf_counter() - t0
    assert res.returncode == 0, res.stderr
    STEP_OUTPUTS["install"] = read_outputs(outputs)
    own = Path(STEP_OUTPUTS["install"]["python"])
    assert own != planted and own.parent.parent.name.startswith("ragspan-venv.")
    probe = subprocess.run([str(own), "-c",
                            "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is not None)"])
    assert probe.returncode == 0, "the action's install step pulled in torch"
    caller = subprocess.run([str(venv / "bin" / "python"), "-c", "import ragspan"],
                            capture_output=True)
    assert caller.returncode != 0, "the action installed into the caller's interpreter"
    print(f"\naction install step (core only): {elapsed:.1f} s")
    # nothing new in the work tree (the step installs from its copy): named by what exists,
    # never by mtimes, which anything else that installs the clone meanwhile would move
    assert _work_tree_outputs() <= before, _work_tree_outputs() - before
    return tmp, env, defaults


def _work_tree_outputs() -> set[str]:
    """What a build of the work tree would leave: build/, dist/, egg-info folders."""
    found = {p.name for p in (ROOT / "src").glob("*.egg-info")}
    return found | {name for name in ("build", "dist") if (ROOT / name).exists()}


RUN_OF = {"baseline.json": "run-baseline.jsonl", "candidate-pass.json": "run-pass.jsonl",
          "candidate-fail.json": "run-fail.jsonl"}


def _run_of(report: str) -> str:
    """The run a fixture report (or a copy of one, named after it) was scored from."""
    for key, run in (("pass", "run-pass.jsonl"), ("fail", "run-fail.jsonl")):
        if key in report:
            return run
    return RUN_OF["baseline.json"]


def verifying(inputs: dict[str, str]) -> dict[str, str]:
    """The four verification inputs for the fixture reports (the Action refuses to run
    without them unless trust-reports is true), unless the test sets its own."""
    if "trust-reports" in inputs or "eval-set" in inputs:
        return inputs
    return {"eval-set": "eval.jsonl", "corpus": "corpus.jsonl",
            "baseline-run": _run_of(inputs.get("baseline", "")),
            "candidate-run": _run_of(inputs.get("candidate", "")),
            **inputs}


def gate(runner, name: str, **inputs: str):
    inputs = verifying(inputs)
    tmp, env, defaults = runner
    work = tmp / name
    work.mkdir()
    out, summary = work / "output", work / "step-summary.md"
    out.touch()
    summary.touch()
    env = {**env, "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary)}
    step = next(s for s in steps() if s.get("id") == "gate")
    res = run_step(step, {**defaults, **inputs}, env)
    outputs = read_outputs(out)
    return res, outputs, summary.read_text(encoding="utf-8")


def test_pass_and_inconclusive(runner):
    # 1 query fixed, 1 broken of 30: the drop is at most 6.7pt, so a 7pt budget passes
    res, outputs, summary = gate(runner, "pass", baseline="baseline.json",
                                 candidate="candidate-pass.json",
                                 budgets="complete_grounding=7pt")
    assert res.returncode == 0, res.stderr
    assert outputs["verdict"] == "pass" and outputs["exit-code"] == "0"
    assert Path(outputs["report"]).is_file() and Path(outputs["summary"]).read_text() == summary
    assert "ragspan gate: ✅ PASS" in summary
    # ... while 2pt cannot be shown on 30 queries: inconclusive, which passes by default
    res, outputs, summary = gate(runner, "unsure", baseline="baseline.json",
                                 candidate="candidate-pass.json")
    assert res.returncode == 0, res.stderr
    assert outputs["verdict"] == "inconclusive" and outputs["exit-code"] == "0"
    assert "INCONCLUSIVE" in summary and "cannot be told from noise" in summary
    res, outputs, _ = gate(runner, "strict", baseline="baseline.json",
                           candidate="candidate-pass.json", **{"on-inconclusive": "fail"})
    assert res.returncode == 4
    assert outputs["verdict"] == "inconclusive" and outputs["exit-code"] == "4"


@pytest.mark.parametrize("value", ["True", "yes", "1", ""])
def test_fail_on_regression_is_exactly_true_or_false(runner, value):
    res, outputs, summary = gate(runner, f"bool-{value or 'empty'}", baseline="baseline.json",
                                 candidate="candidate-fail.json",
                                 **{"fail-on-regression": value})
    assert res.returncode == 2 and "must be exactly true or false" in res.stderr
    assert outputs["verdict"] == "error" and outputs["exit-code"] == "2"
    assert "must be exactly true or false" in summary


def test_the_outputs_mapping_reads_what_a_failing_step_wrote(runner):
    """With fail-on-regression true the step exits 4, after writing its outputs; the
    action's ``outputs:`` mapping, evaluated on them, gives the verdict and the files."""
    res, outputs, summary = gate(runner, "fails", baseline="baseline.json",
                                 candidate="candidate-fail.json")
    assert res.returncode == 4
    mapped = {}
    for key, spec in action()["outputs"].items():
        expr = re.fullmatch(r"\$\{\{ steps\.gate\.outputs\.([\w-]+) \}\}", spec["value"])
        assert expr, spec
        mapped[key] = outputs[expr.group(1)]
    assert mapped["verdict"] == "fail" and mapped["exit-code"] == "4"
    assert Path(mapped["report"]).is_file() and Path(mapped["summary"]).read_text() == summary


def test_fail_and_budgets(runner):
    res, outputs, summary = gate(runner, "fail", baseline="baseline.json",
                                 candidate="candidate-fail.json",
                                 budgets="complete_grounding=5pt\n  span_coverage = 50pt \n\n")
    assert res.returncode == 4
    assert outputs == {**outputs, "verdict": "fail", "exit-code": "4"}
    assert "❌ FAIL" in summary and "complete_grounding@1" in summary
    import json

    params = json.loads(Path(outputs["report"]).read_text())["predicate"]["parameters"]
    assert params["budgets"]["complete_grounding"] == "5pt"
    assert params["budgets"]["span_coverage"] == "50pt"


def test_fail_without_failing_the_step_and_comment_file(runner, tmp_path):
    comment = tmp_path / "comment.md"
    res, outputs, summary = gate(runner, "soft", baseline="baseline.json",
                                 candidate="candidate-fail.json", **{"fail-on-regression": "false"},
                                 comment=str(comment))
    assert res.returncode == 0
    assert outputs["verdict"] == "fail" and outputs["exit-code"] == "4"
    assert comment.read_text() == summary


def test_the_comment_is_never_written_through_a_link(runner, tmp_path):
    """The pull request commits ``comment.md`` (or a folder on its path) as a link to a file
    outside the checkout: ``cp`` wrote through it. The step refuses a link anywhere on the
    path (exit 3, the target untouched) and otherwise writes a new file and renames it over
    the path, so a link appearing later is replaced, never followed."""
    victim = tmp_path / "victim.txt"
    victim.write_text("outside the checkout", encoding="utf-8")
    link = tmp_path / "comment.md"
    link.symlink_to(victim)
    res, outputs, _ = gate(runner, "link", baseline="baseline.json",
                           candidate="candidate-fail.json", **{"fail-on-regression": "false"},
                           comment=str(link))
    assert res.returncode == 3 and "is a link or goes through one" in res.stderr
    assert victim.read_text(encoding="utf-8") == "outside the checkout"
    assert outputs["verdict"] == "fail"  # the verdict's outputs were written first
    folder = tmp_path / "linked-folder"
    folder.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    res, _, _ = gate(runner, "link-folder", baseline="baseline.json",
                     candidate="candidate-fail.json", **{"fail-on-regression": "false"},
                     comment=str(folder / "comment.md"))
    assert res.returncode == 3 and not (tmp_path / "elsewhere" / "comment.md").exists()
    plain = tmp_path / "plain.md"
    plain.write_text("old", encoding="utf-8")
    res, _, summary = gate(runner, "plain", baseline="baseline.json",
                           candidate="candidate-fail.json", **{"fail-on-regression": "false"},
                           comment=str(plain))
    assert res.returncode == 0 and plain.read_text(encoding="utf-8") == summary
    assert not list(tmp_path.glob(".ragspan-comment.*"))


def test_bad_input_is_an_error_even_when_regressions_are_allowed(runner):
    res, outputs, summary = gate(runner, "error", baseline="baseline.json",
                                 candidate="missing.json", **{"fail-on-regression": "false"})
    assert res.returncode == 3
    assert outputs["verdict"] == "error" and outputs["exit-code"] == "3"
    assert "missing.json" in summary and "file not found" in summary


def test_an_input_cannot_inject_shell(runner, tmp_path):
    marker = tmp_path / "pwned"
    res, outputs, _ = gate(runner, "inject", baseline="baseline.json",
                           candidate=f'candidate-pass.json"; touch {marker}; echo "',
                           alpha=f"$(touch {marker})")
    assert not marker.exists()
    assert outputs["verdict"] == "error"


def test_summary_is_valid_gfm(runner):
    from markdown_it import MarkdownIt

    _, outputs, summary = gate(runner, "gfm", baseline="baseline.json", candidate="candidate-fail.json")
    html = MarkdownIt("commonmark").enable("table").render(summary)
    assert "<h3>ragspan gate: ❌ FAIL</h3>" in html
    assert "<table>" in html
    row = re.search(r"<tr>\s*<td>[^<]*</td>\s*<td>complete_grounding@1</td>(.*?)</tr>", html, re.S)
    assert row, html
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
    assert cells[:3] == ["0.8000", "0.5333", "-26.67pt"]


def test_fixture_reports_are_current(tmp_path):
    """The committed reports are what make_fixtures.py produces now."""
    import shutil

    copy = tmp_path / "gate"
    shutil.copytree(FIX, copy)
    subprocess.run([sys.executable, str(copy / "make_fixtures.py")], check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    for name in ("baseline.json", "candidate-pass.json", "candidate-fail.json"):
        assert (copy / name).read_bytes() == (FIX / name).read_bytes(), name


def test_workflows_and_hook_are_well_formed():
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    assert set(ci["jobs"]) == {"test", "lint", "action", "qdrant"}
    qdrant = ci["jobs"]["qdrant"]
    assert qdrant["services"]["qdrant"]["image"].startswith("qdrant/qdrant:")
    assert any("RAGSPAN_QDRANT_URL" in (s.get("env") or {}) for s in qdrant["steps"])
    assert ci["jobs"]["test"]["strategy"]["matrix"]["python"] == ["3.10", "3.11", "3.12", "3.13"]
    assert [s.get("uses") for s in ci["jobs"]["action"]["steps"]].count("./") == 2
    gate_wf = yaml.safe_load((ROOT / "examples" / "workflows" / "ragspan-gate.yml").read_text())
    comment = yaml.safe_load((ROOT / "examples" / "workflows" / "ragspan-comment.yml").read_text())
    assert gate_wf["permissions"] == {"contents": "read", "pull-requests": "read"}  # no write
    # YAML 1.1 reads the key "on" as True
    trigger = comment.get("on", comment.get(True))
    assert trigger["workflow_run"]["workflows"] == [gate_wf["name"]]
    assert comment["permissions"] == {}  # no workflow-level write
    assert comment["jobs"]["comment"]["permissions"] == {"pull-requests": "write",
                                                         "actions": "read"}
    uses = [s.get("uses", "") for s in comment["jobs"]["comment"]["steps"]]
    assert not any(u.startswith("actions/checkout") for u in uses)  # never runs PR code
    script = comment["jobs"]["comment"]["steps"][1]["with"]["script"]
    assert "run.head_sha" in script and "head_repository" in script  # the PR from the run
    assert "c.user.login === me" in script and "user.type" not in script
    assert "lastIndexOf('\\n', limit)" in script  # cut at a row boundary
    texts = [(ROOT / f).read_text() for f in (".github/workflows/ci.yml", "action.yml",
                                             "examples/workflows/ragspan-gate.yml",
                                             "examples/workflows/ragspan-comment.yml",
                                             ".github/workflows/release.yml")]
    for text in texts:  # every third-party action pinned by commit, its version beside it
        for ref in re.findall(r"uses: (\S+)(.*)", text):
            if ref[0].startswith(("./", "ragspan/ragspan@")):
                continue
            assert re.fullmatch(r"[\w.-]+/[\w.-]+(/[\w.-]+)*@[0-9a-f]{40}", ref[0]), ref
            assert re.search(r"# v\d", ref[1]), ref
    release = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert release.get("on", release.get(True)) == {"push": {"tags": ["v*"]}}
    assert release["permissions"] == {"contents": "read"}
    assert release["jobs"]["publish"]["permissions"] == {"id-token": "write"}  # no token
    assert release["jobs"]["publish"]["environment"]["name"] == "pypi"
    assert any("pypa/gh-action-pypi-publish@" in st.get("uses", "")
               for st in release["jobs"]["publish"]["steps"])
    build = "\n".join(st.get("run", "") for st in release["jobs"]["build"]["steps"])
    assert "twine check --strict" in build and "ragspan\" --version" in build
    for wf in (ci, gate_wf, comment, release):
        for job in wf["jobs"].values():
            for step in job["steps"]:
                if "run" in step:
                    assert "${{" not in step["run"], step
                if step.get("uses", "").startswith("actions/checkout"):
                    assert step["with"]["persist-credentials"] is False, step
    # every Python the action and the recipes run is isolated from the checkout
    for text in texts[1:]:
        for call in re.findall(r"(?:python3?|\"\$py\"|\"\$venv/bin/python\")(?= -)( -[A-Za-z]+)", text):
            assert call == " -I", call
        assert not re.search(r"^\s*ragspan ", text, re.M)  # the console script: not isolated
    # the data folder cannot shadow a module; the cache is saved from the default branch only
    assert "ragspan/" not in texts[2].replace("ragspan/ragspan@", "").replace(
        "github.com/ragspan/ragspan", "")
    jobs = gate_wf["jobs"]
    uses = {name: [st.get("uses", "") for st in job["steps"]] for name, job in jobs.items()}
    assert jobs["warm-cache"]["if"] == "github.event_name == 'push'"
    assert any(u.startswith("actions/cache/save@") for u in uses["warm-cache"])
    assert jobs["gate"]["if"] == "github.event_name == 'pull_request'"
    assert any(u.startswith("actions/cache/restore@") for u in uses["gate"])
    assert not any(u.startswith("actions/cache@") or "/save@" in u for u in uses["gate"])
    # the recipe installs the release its gate action is pinned to
    version = gate_wf["env"]["RAGSPAN_VERSION"]
    action_ref = next(u for u in uses["gate"] if u.startswith("ragspan/ragspan@"))
    assert action_ref.endswith("@v" + version)
    assert texts[2].count('"ragspan[retrieval] @ git+https://github.com/ragspan/ragspan'
                          '@v$RAGSPAN_VERSION"') == 2
    step = next(st for st in jobs["gate"]["steps"] if st.get("id") == "gate")
    assert {"config", "config-origin", "eval-set", "corpus", "baseline-run",
            "candidate-run"} <= set(step["with"])
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "ragspan-gate" and hook["entry"].startswith("ragspan compare")
    assert hook["pass_filenames"] is False


# ---- the judged cannot change the judge ---------------------------------------------------


def test_the_checkout_is_never_imported_and_its_pyproject_never_read(runner):
    """The steps run in a checkout whose json.py, jsonschema.py, click.py, numpy.py, pip/
    and ragspan/ would exit 0 with no verdict, and whose pyproject.toml would turn the
    26.67pt regression green: the install step and the gate ignore all of it."""
    res, outputs, summary = gate(runner, "hostile", baseline="baseline.json",
                                 candidate="candidate-fail.json",
                                 budgets="complete_grounding=2pt")
    assert res.returncode == 4, res.stderr
    assert outputs["verdict"] == "fail" and outputs["exit-code"] == "4"
    assert not (CHECKOUT[0] / "SHADOW-RAN").exists(), (CHECKOUT[0] / "SHADOW-RAN").read_text()
    assert "no settings file read" in summary and "pyproject" not in summary
    import json

    params = json.loads(Path(outputs["report"]).read_text())["predicate"]["parameters"]
    assert params["no_config"] is True and params["mode"] == "interval"
    assert params["budgets"]["complete_grounding"] == "2pt"


def test_settings_come_from_the_config_input_and_are_named(runner, tmp_path):
    """The trusted side's settings (the base branch's pyproject.toml, written out) apply
    and the verdict names the file and where it came from."""
    config = tmp_path / "base-pyproject.toml"
    config.write_text('[tool.ragspan]\nalpha = 0.2\n\n[tool.ragspan.budgets]\n'
                      'complete_grounding = "5pt"\n', encoding="utf-8")
    res, outputs, summary = gate(runner, "config", baseline="baseline.json",
                                 candidate="candidate-fail.json", config=str(config),
                                 **{"config-origin": "main@0123abcd:pyproject.toml"})
    assert res.returncode == 4, res.stderr
    import json

    params = json.loads(Path(outputs["report"]).read_text())["predicate"]["parameters"]
    assert params["alpha"] == 0.2 and params["budgets"]["complete_grounding"] == "5pt"
    assert params["config_origin"] == "main@0123abcd:pyproject.toml"
    assert f"settings from {config}" in summary.replace("\\_", "_")
    assert "main@0123abcd:pyproject.toml" in summary.replace("\\_", "_").replace("&#8203;", "")


def test_allow_identical_input(runner):
    """A pull request that changes nothing scores to the same bytes: an error by default,
    a pass with allow-identical."""
    import shutil

    shutil.copy(CHECKOUT[0] / "baseline.json", CHECKOUT[0] / "baseline-again.json")
    res, outputs, _ = gate(runner, "same", baseline="baseline.json",
                           candidate="baseline-again.json")
    assert res.returncode == 2 and outputs["verdict"] == "error"
    res, outputs, _ = gate(runner, "same-ok", baseline="baseline.json",
                           candidate="baseline-again.json", **{"allow-identical": "true"})
    assert res.returncode == 0, res.stderr
    assert outputs["verdict"] == "pass"
    res, outputs, _ = gate(runner, "same-bad", baseline="baseline.json",
                           candidate="baseline-again.json", **{"allow-identical": "yes"})
    assert res.returncode == 2 and "allow-identical must be exactly true or false" in res.stderr


def test_two_gate_steps_in_one_job_keep_their_own_files(runner):
    tmp, env, defaults = runner
    out = tmp / "one-job-output"
    out.touch()
    env = {**env, "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(tmp / "one-job.md")}
    step = next(s for s in steps() if s.get("id") == "gate")
    first = run_step(step, {**defaults, **verifying({
        "baseline": "baseline.json", "candidate": "candidate-pass.json",
        "budgets": "complete_grounding=7pt"})}, env)
    second = run_step(step, {**defaults, **verifying({
        "baseline": "baseline.json", "candidate": "candidate-fail.json",
        "fail-on-regression": "false"})}, env)
    assert first.returncode == 0 and second.returncode == 0
    reports = [line.split("=", 1)[1] for line in out.read_text().splitlines()
               if line.startswith("report=")]
    assert len(reports) == 2 and reports[0] != reports[1]
    import json

    verdicts = [json.loads(Path(r).read_text())["predicate"]["verdict"] for r in reports]
    assert verdicts == ["pass", "fail"]


def test_the_action_verifies_reports_against_their_files(runner, tmp_path):
    """With the eval set, corpus and runs given, a candidate whose rows were replaced by the
    baseline's is refused (exit 3), while the honest candidate is gated."""
    import json

    honest = {"eval-set": "eval.jsonl", "corpus": "corpus.jsonl",
              "baseline-run": "run-baseline.jsonl", "candidate-run": "run-fail.jsonl"}
    res, outputs, _ = gate(runner, "verified", baseline="baseline.json",
                           candidate="candidate-fail.json", **honest)
    assert res.returncode == 4, res.stderr
    assert json.loads(Path(outputs["report"]).read_text())["predicate"]["parameters"]["verified"]
    forged = json.loads((FIX / "candidate-fail.json").read_text())
    base = json.loads((FIX / "baseline.json").read_text())
    forged["predicate"]["details"] = base["predicate"]["details"]
    forged["predicate"]["summary"]["metrics"] = base["predicate"]["summary"]["metrics"]
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    res, outputs, summary = gate(runner, "forged", baseline="baseline.json",
                                 candidate=str(path), **honest)
    assert res.returncode == 3 and outputs["verdict"] == "error"
    assert "is not what its inputs score to" in summary


def test_an_error_cannot_break_out_of_its_code_fence(runner, tmp_path):
    evil = tmp_path / "```\n<img src=x onerror=alert(1)> @someone.json"
    res, outputs, summary = gate(runner, "fence", baseline="baseline.json", candidate=str(evil))
    assert outputs["verdict"] == "error"
    assert summary.count("```") == 2, summary


def test_the_migration_input_reaches_compare(runner):
    """A migration that does not link the reports (here: a score report given as one) is an
    error, not a silently ungated comparison."""
    res, outputs, summary = gate(runner, "migration", baseline="baseline.json",
                                 candidate="candidate-fail.json", migration="baseline.json")
    assert res.returncode == 3 and outputs["verdict"] == "error"
    assert "not a migrate report" in summary


# ---- verified by default ------------------------------------------------------------------


def test_without_the_verification_inputs_the_gate_refuses_to_run(runner):
    """The README's shortest example used to take both reports as written."""
    res, outputs, summary = gate(runner, "unverified", baseline="baseline.json",
                                 candidate="candidate-pass.json", **{"trust-reports": "false"})
    assert res.returncode == 3, res.stderr
    assert outputs["verdict"] == "error" and outputs["exit-code"] == "3"
    for name in ("eval-set (or qrels)", "baseline-run", "candidate-run", "trust-reports"):
        assert name in summary, summary
    res, outputs, _ = gate(runner, "half", baseline="baseline.json",
                           candidate="candidate-pass.json", **{"eval-set": "eval.jsonl",
                                                               "baseline-run": "run-baseline.jsonl"})
    assert res.returncode == 3 and "give candidate-run" in res.stderr


def test_a_forged_candidate_is_refused_unless_reports_are_trusted(runner):
    """The candidate-fail report with the baseline's rows copied in: verified by default,
    it is refused (it is not what its run scores to); trust-reports: true takes it as
    written (and says so), which is why that input is documented as unsafe."""
    import json

    doc = json.loads((CHECKOUT[0] / "candidate-fail.json").read_text())
    base = json.loads((CHECKOUT[0] / "baseline.json").read_text())
    doc["predicate"]["details"] = base["predicate"]["details"]
    doc["predicate"]["summary"]["metrics"] = base["predicate"]["summary"]["metrics"]
    forged = CHECKOUT[0] / "forged.json"
    forged.write_text(json.dumps(doc), encoding="utf-8")
    try:
        res, outputs, summary = gate(runner, "forged-by-default", baseline="baseline.json",
                                     candidate="forged.json",
                                     **{"candidate-run": "run-fail.jsonl"})
        assert res.returncode == 3, res.stderr
        assert outputs["verdict"] == "error" and "forged.json" in summary
        res, outputs, summary = gate(runner, "forged-trusted", baseline="baseline.json",
                                     candidate="forged.json", **{"trust-reports": "true"})
        assert res.returncode == 0 and "taken as written" in summary
    finally:
        forged.unlink()


def test_trust_reports_is_exactly_true_or_false(runner):
    res, outputs, _ = gate(runner, "trust-yes", baseline="baseline.json",
                           candidate="candidate-pass.json", **{"trust-reports": "yes"})
    assert res.returncode == 2 and "trust-reports must be exactly true or false" in res.stderr


def test_the_percent_budgets_reach_the_gate(runner):
    """toolkit-rag-quality's Action inputs: a span report's doc-level view gated at 5%."""
    import json

    res, outputs, _ = gate(runner, "pct", baseline="baseline.json",
                           candidate="candidate-fail.json",
                           **{"max-recall-regression-pct": "2", "max-regression-pct": "5",
                              "fail-on-regression": "false"})
    assert res.returncode == 0, res.stderr
    params = json.loads(Path(outputs["report"]).read_text())["predicate"]["parameters"]
    assert params["budgets"]["doc_recall"] == "2%" and params["budgets"]["doc_ndcg"] == "5%"
    assert params["mode"] == "threshold"


def test_the_readmes_example_works_on_reports_scored_with_chunks(runner, tmp_path):
    """Reports scored with --chunks (as the README's next step and sweep make them) sent the
    README's example red (exit 2, verdict=error), naming the CLI's --baseline-chunks. The
    example carries the chunk inputs; without them the message names the Action's input."""
    import json
    import subprocess

    chunks = CHECKOUT[0] / "chunks.jsonl"
    text = json.loads((CHECKOUT[0] / "corpus.jsonl").read_text().splitlines()[0])["text"]
    chunks.write_text("".join(json.dumps({"doc_id": "manual", "chunk_id": f"manual:{i}",
                                          "start": s, "end": min(s + 500, len(text))}) + "\n"
                              for i, s in enumerate(range(0, len(text), 500))),
                      encoding="utf-8")
    py = STEP_OUTPUTS["install"]["python"]
    made = []
    try:
        for run, out in (("run-baseline.jsonl", "chunked-base.json"),
                         ("run-pass.jsonl", "chunked-pass.json")):
            subprocess.run([py, "-I", "-m", "ragspan", "score", "--eval-set", "eval.jsonl",
                            "--run", run, "--corpus", "corpus.jsonl", "--chunks",
                            "chunks.jsonl", "--out", out], cwd=CHECKOUT[0], check=True,
                           capture_output=True)
            made.append(CHECKOUT[0] / out)
        readme = {"eval-set": "eval.jsonl", "corpus": "corpus.jsonl",
                  "baseline-run": "run-baseline.jsonl", "candidate-run": "run-pass.jsonl",
                  "budgets": "complete_grounding=7pt"}
        res, outputs, summary = gate(runner, "chunked", baseline="chunked-base.json",
                                     candidate="chunked-pass.json", **readme,
                                     **{"baseline-chunks": "chunks.jsonl",
                                        "candidate-chunks": "chunks.jsonl"})
        assert res.returncode == 0, res.stderr
        assert outputs["verdict"] == "pass"
        res, outputs, summary = gate(runner, "chunked-missing", baseline="chunked-base.json",
                                     candidate="chunked-pass.json", **readme)
        assert outputs["verdict"] == "error"
        assert "give the input 'baseline-chunks' to verify it" in summary, summary
        assert "--baseline-chunks" not in summary
    finally:
        chunks.unlink()
        for path in made:
            path.unlink()


def test_the_junit_output_and_the_annotations(runner, tmp_path):
    """The Action writes the verdict as JUnit XML (its junit input, else its own folder;
    the junit output names it), for an input error too; its annotations reach the log as
    workflow commands, and the rest of stderr is replayed with commands stopped."""
    import xml.etree.ElementTree as ET

    res, outputs, _ = gate(runner, "junit-fail", baseline="baseline.json",
                           candidate="candidate-fail.json", **{"fail-on-regression": "false"})
    assert res.returncode == 0
    suite = ET.parse(outputs["junit"]).getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    assert res.stdout.startswith("::error title=ragspan FAIL%3A complete_grounding@1::"), \
        res.stdout
    assert "::stop-commands::ragspan-" in res.stderr
    chosen = tmp_path / "verdict.xml"
    res, outputs, _ = gate(runner, "junit-error", baseline="baseline.json",
                           candidate="missing.json", junit=str(chosen))
    assert res.returncode == 3 and outputs["junit"] == str(chosen)
    assert ET.parse(chosen).getroot().get("errors") == "1"
    res, outputs, _ = gate(runner, "junit-refused", baseline="baseline.json",
                           candidate="candidate-pass.json", junit=str(chosen),
                           **{"fail-on-regression": "maybe"})
    assert res.returncode == 2
    error = ET.parse(chosen).getroot().find("testsuite/testcase/error")
    assert error is not None and "must be exactly true or false" in error.get("message")


def test_an_override_passes_the_job_and_keeps_the_fail(runner, tmp_path):
    """The trusted config names the override label: the pull request carries it, so the
    step passes while the verdict output stays fail, and the summary, the JUnit file and
    the report say who set which label and what it overrode. Without the setting, the same
    label changes nothing."""
    import json
    import xml.etree.ElementTree as ET

    config = tmp_path / "base-pyproject.toml"
    config.write_text('[tool.ragspan]\noverride-label = "ragspan-override"\n', encoding="utf-8")
    labels = {"pr-labels": "docs, maybe\n  ragspan-override \nneeds review", "pr-actor": "alice",
              "baseline-is": "base-tip"}
    res, outputs, summary = gate(runner, "override", baseline="baseline.json",
                                 candidate="candidate-fail.json", config=str(config), **labels)
    assert res.returncode == 0, res.stderr
    assert (outputs["verdict"], outputs["exit-code"], outputs["overridden"]) == \
        ("fail", "4", "true")
    assert "FAIL (overridden)" in summary and "(set by alice)" in summary
    pred = json.loads(Path(outputs["report"]).read_text())["predicate"]
    assert pred["summary"]["override"]["actor"] == "alice"
    assert pred["summary"]["provenance"]["baseline_is"] == "base-tip"
    props = {p.get("name"): p.get("value")
             for p in ET.parse(outputs["junit"]).getroot().iter("property")}
    assert (props["override_label"], props["override_actor"]) == ("ragspan-override", "alice")
    assert "::notice title=ragspan override::OVERRIDDEN" in res.stdout
    res, outputs, _ = gate(runner, "no-override", baseline="baseline.json",
                           candidate="candidate-fail.json", **labels)
    assert res.returncode == 4 and outputs["overridden"] == "false"


def test_the_profile_input_reaches_compare(runner):
    """A toolkit job's Action ported as written: profile toolkit gates its six metrics at 2%
    of the baseline (the fixture candidate's 8 lost questions fail doc metrics too)."""
    import json

    res, outputs, summary = gate(runner, "profile", baseline="baseline.json",
                                 candidate="candidate-fail.json", profile="toolkit")
    pred = json.loads(Path(outputs["report"]).read_text())["predicate"]
    assert pred["parameters"]["profile"] == "toolkit", res.stderr
    assert pred["parameters"]["mode"] == "threshold"
    assert "toolkit-rag-quality's rules" in summary

