"""The GitLab template (``examples/gitlab/ragspan-gate.gitlab-ci.yml``), its jobs' script
lines run as a GitLab runner runs them with a POSIX shell (``sh -e``, one shell for all the
lines) in a merge request's checkout of a real git repository: the target branch's tip is
scored in a work tree of its own (its report records that commit), the merge request in its
checkout, both re-scored and compared with the target branch's settings; the JUnit report is
where ``artifacts:reports:junit`` reads it; the override label the target's config names
passes the job while the verdict stays FAIL. The note job posts, then updates, one note
through a local server that answers as GitLab's API does."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT
from test_gate_recipe import git

yaml = pytest.importorskip("yaml")
pytest.importorskip("bm25s")
TEMPLATE = ROOT / "examples" / "gitlab" / "ragspan-gate.gitlab-ci.yml"
CLAUSES = [
    "The Supplier shall deliver the Goods within thirty days of each written order.",
    "Either party may terminate this Agreement upon ninety days written notice.",
    "This Agreement is governed by the laws of the State of New York.",
]
QUESTIONS = ["When are the Goods delivered?", "How can the Agreement be terminated?",
             "Which law governs the Agreement?"]
PIPELINE = "name = '{name}'\ndepth = {depth}\n\n[chunker]\nkind = '{kind}'\nsize = {size}\n\n" \
           "[sparse]\nbackend = 'bm25s'\ndepth = 10\n\n[filter]\nscope = 'none'\n"
BASE_PIPELINE = PIPELINE.format(name="base", depth=5, kind="sentence", size=1000)
# 30 characters a query: no gold clause (about 70) can be covered whole
WORSE_PIPELINE = PIPELINE.format(name="worse", depth=1, kind="fixed", size=30)


def _files(pyproject: str) -> dict[str, str]:
    corpus = "".join(json.dumps({"id": f"doc{i}", "text": f"Section {i}. {c} End."}) + "\n"
                     for i, c in enumerate(CLAUSES))
    evalset = "".join(json.dumps({
        "id": f"q{i}", "query": q, "gold_spans": [
            {"doc_id": f"doc{i}", "start": len(f"Section {i}. "),
             "end": len(f"Section {i}. ") + len(CLAUSES[i])}]}) + "\n"
        for i, q in enumerate(QUESTIONS))
    return {"ragspan-eval/pipeline.toml": BASE_PIPELINE, "ragspan-eval/eval.jsonl": evalset,
            "ragspan-eval/corpus.jsonl": corpus, "pyproject.toml": pyproject}


def _checkout(tmp: Path, pyproject: str, pipeline: str) -> Path:
    """An origin whose main holds the eval set, corpus, pipeline and settings, and a merge
    request's checkout of it on a branch that changes the pipeline."""
    work = tmp / "main"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for rel, text in _files(pyproject).items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text, encoding="utf-8")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "main")
    git(tmp, "clone", "-q", "--bare", str(work), str(tmp / "origin.git"))
    checkout = tmp / "checkout"
    git(tmp, "clone", "-q", str(tmp / "origin.git"), str(checkout))
    git(checkout, "checkout", "-q", "-b", "feature")
    (checkout / "ragspan-eval" / "pipeline.toml").write_text(pipeline, encoding="utf-8")
    git(checkout, "commit", "-q", "--allow-empty", "-am", "the merge request")
    return checkout


def _job(name: str) -> dict:
    return yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))[name]


def _run_script(job: dict, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    script = cwd.parent / f"{cwd.name}-script.sh"
    script.write_text("\n".join(job["script"]) + "\n", encoding="utf-8")
    variables = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))["variables"]
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    # as on a runner: provenance recorded (conftest turns it off for the suite)
    outer = {k: v for k, v in os.environ.items() if k != "RAGSPAN_NO_PROVENANCE"}
    return subprocess.run(["sh", "-e", str(script)], cwd=cwd, text=True, capture_output=True,
                          timeout=600, env={**outer, **variables, "PATH": path,
                                            "CI_PROJECT_DIR": str(cwd), **env})


def _gate(tmp: Path, pyproject: str, pipeline: str, labels: str = ""):
    checkout = _checkout(tmp, pyproject, pipeline)
    res = _run_script(_job("ragspan-gate"), checkout, {
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "CI_MERGE_REQUEST_LABELS": labels})
    return res, checkout / "ragspan-gate-out"


STRICT = '[tool.ragspan]\nmode = "threshold"\noverride-label = "ragspan-override"\n'


def test_the_template_is_well_formed():
    doc = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    gate, note = doc["ragspan-gate"], doc["ragspan-note"]
    assert gate["artifacts"]["reports"]["junit"] == "ragspan-gate-out/junit.xml"
    assert gate["artifacts"]["when"] == "always"
    assert note["variables"]["GIT_STRATEGY"] == "none"  # the note job runs nothing of the MR
    assert note["environment"]["name"] == "ragspan-note"
    assert all(r["if"] == '$CI_PIPELINE_SOURCE == "merge_request_event"'
               for job in (gate, note) for r in job["rules"])
    assert "python -I" in "\n".join(gate["script"]) and " python -m" not in \
        "\n".join(gate["script"])


def test_a_regression_fails_the_job_with_a_junit_report(tmp_path):
    res, out = _gate(tmp_path, STRICT, WORSE_PIPELINE, labels="docs")
    assert res.returncode == 4, res.stderr
    suite = ET.parse(out / "junit.xml").getroot()
    assert int(suite.get("failures")) >= 1
    pred = json.loads((out / "compare.json").read_text())["predicate"]
    assert pred["verdict"] == "fail" and pred["summary"]["verification"]["verified"]
    assert "override" not in pred["summary"]
    prov = pred["summary"]["provenance"]
    main_sha = git(tmp_path / "main", "rev-parse", "HEAD").strip()
    assert prov["baseline"]["commit"] == main_sha and prov["baseline"]["ref"] is None
    assert prov["candidate"]["ref"] == "feature" and prov["baseline_is"] == "base-tip"
    assert pred["parameters"]["config_origin"] == f"main@{main_sha}:pyproject.toml"
    assert "### ragspan gate: ❌ FAIL" in res.stdout  # the comment, also in the job's log


def test_the_override_label_passes_the_job_and_keeps_the_fail(tmp_path):
    res, out = _gate(tmp_path, STRICT, WORSE_PIPELINE, labels="docs,ragspan-override,x")
    assert res.returncode == 0, res.stderr
    assert "the verdict stays FAIL" in res.stdout
    pred = json.loads((out / "compare.json").read_text())["predicate"]
    assert (pred["verdict"], pred["summary"]["override"]["applied"]) == ("fail", True)
    props = {p.get("name"): p.get("value") for p in ET.parse(out / "junit.xml").iter("property")}
    assert props["override_label"] == "ragspan-override"
    assert "FAIL (overridden)" in (out / "comment.md").read_text()


def test_without_the_setting_the_label_changes_nothing(tmp_path):
    res, out = _gate(tmp_path, '[tool.ragspan]\nmode = "threshold"\n', WORSE_PIPELINE,
                     labels="ragspan-override")
    assert res.returncode == 4, res.stderr
    assert "override" not in json.loads((out / "compare.json").read_text())["predicate"][
        "summary"]


def test_the_same_pipeline_passes(tmp_path):
    res, out = _gate(tmp_path, STRICT, BASE_PIPELINE)
    assert res.returncode == 0, res.stderr
    assert json.loads((out / "compare.json").read_text())["predicate"]["verdict"] == "pass"
    assert ET.parse(out / "junit.xml").getroot().get("failures") == "0"


def test_an_output_folder_the_merge_request_committed_fails_the_job(tmp_path):
    checkout = _checkout(tmp_path, STRICT, BASE_PIPELINE)
    (checkout / "ragspan-gate-out").mkdir()
    (checkout / "ragspan-gate-out" / "junit.xml").write_text("<testsuites/>\n")
    res = _run_script(_job("ragspan-gate"), checkout, {
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "CI_MERGE_REQUEST_LABELS": ""})
    assert res.returncode == 1 and "the merge request holds ragspan-gate-out" in res.stderr


class _GitLab(http.server.BaseHTTPRequestHandler):
    """GitLab's notes API, as far as the note job calls it (with a stranger's note that
    carries the marker: never touched)."""

    notes: list[dict] = []
    calls: list[tuple[str, str]] = []

    def _answer(self, value) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def do_GET(self) -> None:  # noqa: N802 - the handler's name
        assert self.headers["PRIVATE-TOKEN"] == "secret"
        self.calls.append(("GET", self.path))
        self._answer({"id": 42} if self.path.endswith("/user") else self.notes)

    def do_POST(self) -> None:  # noqa: N802
        self.calls.append(("POST", self.path))
        note = {"id": 100 + len(self.notes), "author": {"id": 42}, **self._body()}
        self.notes.append(note)
        self._answer(note)

    def do_PUT(self) -> None:  # noqa: N802
        self.calls.append(("PUT", self.path))
        note_id = int(self.path.rsplit("/", 1)[1])
        note = next(n for n in self.notes if n["id"] == note_id)
        assert note["author"]["id"] == 42
        note.update(self._body())
        self._answer(note)

    def log_message(self, *args) -> None:
        pass


def test_the_note_job_posts_then_updates_one_note(tmp_path):
    _GitLab.notes = [{"id": 1, "author": {"id": 7}, "body": "<!-- ragspan-gate -->\nfake PASS"}]
    _GitLab.calls = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GitLab)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        work = tmp_path / "job"
        (work / "ragspan-gate-out").mkdir(parents=True)
        env = {"CI_API_V4_URL": f"http://127.0.0.1:{server.server_port}/api/v4",
               "CI_PROJECT_ID": "5", "CI_MERGE_REQUEST_IID": "9", "RAGSPAN_NOTE_TOKEN": "secret"}
        for verdict in ("FAIL", "PASS"):
            (work / "ragspan-gate-out" / "comment.md").write_text(
                f"### ragspan gate: {verdict}\n", encoding="utf-8")
            res = _run_script(_job("ragspan-note"), work, env)
            assert res.returncode == 0, res.stderr
    finally:
        server.shutdown()
    ours = [n for n in _GitLab.notes if n["author"]["id"] == 42]
    assert len(ours) == 1 and ours[0]["body"] == "<!-- ragspan-gate -->\n### ragspan gate: PASS\n"
    assert _GitLab.notes[0]["body"].endswith("fake PASS")  # a stranger's note, untouched
    assert [m for m, _ in _GitLab.calls].count("POST") == 1
    assert ("PUT", f"/api/v4/projects/5/merge_requests/9/notes/{ours[0]['id']}") in _GitLab.calls
    # no token (a fork's pipeline): no note, and the job passes
    res = _run_script(_job("ragspan-note"), work, {"RAGSPAN_NOTE_TOKEN": ""})
    assert res.returncode == 0 and "no note" in res.stdout
