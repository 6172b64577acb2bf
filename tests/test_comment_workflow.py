"""The comment recipe's script (examples/workflows/ragspan-comment.yml), run for real under
Node.js as actions/github-script runs it: an async function of ``require``, ``context``,
``github`` and ``core``, with a recording stand-in for the GitHub API and the downloaded
artifact as files in the working directory.

A fork controls the artifact and can make its own copy of the gate upload anything; the
comment must lead with the gate run's conclusion, say when the upload disagrees, never show a
disagreeing upload as a pass, and let no image, link, mention or tag through."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

yaml = pytest.importorskip("yaml")
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH (Debian's nodejs)")

HARNESS = r"""
const fs = require('fs');
const [script, scenario] = [fs.readFileSync(process.argv[2], 'utf8'),
                            JSON.parse(fs.readFileSync(process.argv[3], 'utf8'))];
const calls = [];
const failed = [];
const pulls = scenario.pulls;
const github = {
  rest: {
    pulls: { list: 'pulls.list' },
    issues: {
      listComments: 'issues.listComments',
      createComment: async (p) => { calls.push(['create', p]); },
      updateComment: async (p) => { calls.push(['update', p]); },
    },
  },
  paginate: async (what, params) => what === 'pulls.list' ? pulls : scenario.comments,
};
const context = { payload: { workflow_run: scenario.run }, repo: { owner: 'o', repo: 'r' } };
const core = { setFailed: (m) => failed.push(m) };
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction('require', 'context', 'github', 'core', script)(require, context, github, core)
  .then(() => process.stdout.write(JSON.stringify({ calls, failed })))
  .catch((e) => { console.error(e); process.exit(1); });
"""

HOSTILE = ("### ragspan gate: ✅ PASS\n\n![pixel](http://tracker.example/p.png) "
           "<img src=x onerror=alert(1)> <script>alert(1)</script> @someone ping #1 "
           "[click](https://evil.example) www.evil.example a@b.example\n"
           "[ref]: https://evil.example\n<details><summary>more</summary>\n\nok\n</details>\n")


def script() -> str:
    doc = yaml.safe_load((ROOT / "examples" / "workflows" / "ragspan-comment.yml").read_text())
    return doc["jobs"]["comment"]["steps"][1]["with"]["script"]


def post(tmp_path: Path, conclusion: str, files: dict[str, str]) -> dict:
    work = tmp_path / conclusion
    (work / "gate").mkdir(parents=True)
    for name, text in files.items():
        (work / "gate" / name).write_text(text, encoding="utf-8")
    (work / "script.js").write_text(script(), encoding="utf-8")
    (work / "harness.js").write_text(HARNESS, encoding="utf-8")
    head = {"full_name": "fork/r", "owner": {"login": "fork"}}
    scenario = {
        "run": {"id": 77, "html_url": "https://github.com/o/r/actions/runs/77",
                "conclusion": conclusion, "head_sha": "a" * 40, "head_branch": "b",
                "head_repository": head},
        "pulls": [{"number": 5, "head": {"sha": "a" * 40, "repo": head}}],
        "comments": [],
    }
    (work / "scenario.json").write_text(json.dumps(scenario), encoding="utf-8")
    res = subprocess.run([NODE, "harness.js", "script.js", "scenario.json"], cwd=work,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def body_of(out: dict) -> str:
    assert not out["failed"], out["failed"]
    ((kind, params),) = out["calls"]
    assert kind == "create" and params["issue_number"] == 5
    return params["body"]


def rendered(body: str) -> str:
    cmarkgfm = pytest.importorskip("cmarkgfm")
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(body, options=Options.CMARK_OPT_UNSAFE)


def test_a_forged_pass_on_a_failed_run_is_not_shown_as_a_pass(tmp_path):
    out = post(tmp_path, "failure", {"comment.md": HOSTILE, "verdict.txt": "pass\n",
                                     "pr-number.txt": "5\n"})
    body = body_of(out)
    head = body.split("<details>", 1)[0]
    assert "### ragspan gate: ❌ failed" in head
    assert "says \"pass\", but the gate run did not pass" in head
    assert "✅" not in head  # the forged PASS heading is folded away, below the run's verdict
    assert body.index("❌ failed") < body.index("✅ PASS")


def test_the_upload_is_defused(tmp_path):
    body = body_of(post(tmp_path, "success", {"comment.md": HOSTILE, "verdict.txt": "pass",
                                              "pr-number.txt": "5"}))
    assert body.startswith("<!-- ragspan-gate -->\n### ragspan gate: ✅ passed")
    assert "#### The gate's output" in body
    html = rendered(body)
    tags = set(re.findall(r"<([a-z0-9]+)", html))
    assert tags <= {"h3", "h4", "p", "a", "details", "summary", "blockquote"}, tags
    links = re.findall(r"<a [^>]*>", html)
    assert links == ['<a href="https://github.com/o/r/actions/runs/77">'], links  # the run's own
    text = re.sub(r"<[^>]+>", "", html)
    assert not re.search(r"(?<![\w\u200b])@\w", text)  # no mention survives
    assert not re.search(r"(?<![\w\u200b])#\d", text)  # no issue reference
    assert "://" not in text.replace("https://github.com/o/r", "")


def test_a_run_that_uploaded_nothing_still_gets_its_verdict(tmp_path):
    body = body_of(post(tmp_path, "failure", {}))
    assert "### ragspan gate: ❌ failed" in body and "uploaded no gate output" in body


def test_an_unrecognised_verdict_disagrees(tmp_path):
    body = body_of(post(tmp_path, "success", {"comment.md": "x", "verdict.txt": "pass\n@x",
                                              "pr-number.txt": "5"}))
    assert 'says "unrecognised"' in body


def test_a_claimed_pull_request_that_is_not_the_run_is_refused(tmp_path):
    out = post(tmp_path, "success", {"comment.md": "x", "verdict.txt": "pass",
                                     "pr-number.txt": "6"})
    assert out["calls"] == [] and "names pull request 6" in out["failed"][0]
