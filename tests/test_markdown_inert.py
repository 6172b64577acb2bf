"""Every data string is inert in markdown: a hostile eval set, corpus and runs (ids, queries,
tags, document ids and text carrying HTML, images, links, autolinks, mentions, issue
references, code, emphasis, pipes and line ends) go through every markdown output -
compare, score, validate, leakage, overlap, report and the client readout - and the result,
rendered by GitHub's own renderer (cmark-gfm, from PyPI's ``cmarkgfm``), holds no tag,
image, link or mention that came from data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_cli

cmarkgfm = pytest.importorskip("cmarkgfm")

EVIL = ("<img src=x onerror=alert(1)> <script>alert(1)</script> ![px](http://t.example/p.png) "
        "[link](https://evil.example) <https://auto.example> www.evil.example a@b.example "
        "@someone @org/team #12 `code` **bold** _em_ ~~s~~ | pipe &amp; <details>\nnew line")
DOC = "doc <b>" + "[x](http://d.example)"
# the structure ragspan itself writes (headings, tables, lists, emphasis, code, details)
ALLOWED_TAGS = {"h1", "h2", "h3", "h4", "p", "ul", "li", "table", "thead", "tbody", "tr", "th",
                "td", "strong", "code", "blockquote", "details", "summary"}


def rows(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("hostile")
    n = 24
    text = "".join(f"Clause {i:02d}. {EVIL} " + ("lorem ipsum " * 60)[:700] + "\n"
                   for i in range(n))
    starts = [text.index(f"Clause {i:02d}.") for i in range(n)]
    files = {"corpus": rows(tmp / "corpus.jsonl", [{"id": DOC, "text": text}])}
    files["eval"] = rows(tmp / "eval.jsonl", [
        {"id": f"q{i:02d} {EVIL}", "query": f"{EVIL} question {i}", "doc_id": DOC,
         "gold_spans": [[starts[i], starts[i] + 120]], "tags": {"kind": EVIL if i % 2 else "b"}}
        for i in range(n)])

    def run(hits: set[int]) -> list[dict]:
        return [{"id": f"q{i:02d} {EVIL}", "retrieved": [
            {"doc_id": DOC, "start": starts[i] if i in hits else starts[i] + 300,
             "end": (starts[i] if i in hits else starts[i] + 300) + 200,
             "chunk_id": f"{DOC}:{i} {EVIL}"}]} for i in range(n)]

    files["run-base"] = rows(tmp / "run-base.jsonl", run(set(range(20))))
    files["run-cand"] = rows(tmp / "run-cand.jsonl", run(set(range(8))))
    for side in ("base", "cand"):
        out = tmp / f"score-{side}.json"
        res = run_cli("score", "--eval-set", files["eval"], "--run", files[f"run-{side}"],
                      "--corpus", files["corpus"], "--k", "1", "--out", out, "--format", "json")
        assert res.exit_code == 0, res.stderr
        files[f"score-{side}"] = out
    return files


def rendered(markdown: str) -> str:
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def assert_inert(markdown: str) -> None:
    assert "onerror" not in markdown or "&lt;img" in markdown
    html = rendered(markdown)
    tags = set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html))
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    assert "<a " not in html and "<img" not in html
    text = re.sub(r"<[^>]+>", "", html)
    assert not re.search(r"(?<![0-9A-Za-z\u200b])@[0-9A-Za-z]", text), "a mention survived"
    assert not re.search(r"[0-9A-Za-z._%+-]@[0-9A-Za-z-]+\.[0-9A-Za-z]", text), "an e-mail"
    assert not re.search(r"(?<![0-9A-Za-z\u200b])#[0-9]", text), "an issue reference"
    assert "://" not in text and not re.search(r"(?i)(?<![0-9a-z])www\.", text)
    assert "<details>" not in text  # the data's own tag shows as text only when escaped
    # the data is still there, character for character (HTML entities decoded)
    import html as htmllib

    shown = htmllib.unescape(text).replace("\u200b", "")
    assert "<img src=x onerror=alert(1)>" in shown
    assert "![px](http://t.example/p.png)" in shown and "@someone" in shown


def test_the_escaping_function_in_a_table_and_a_paragraph():
    from ragspan.report.render.text import md_lines, md_table, md_text

    assert_inert(md_table(["a", "b"], [[EVIL, "x"]]) + "\n" + md_text(EVIL) + "\n\n"
                 + md_lines(EVIL + "\n- item\n1. first\n===\n"))


def test_compare_markdown(hostile):
    res = run_cli("compare", "--baseline", hostile["score-base"], "--candidate",
                  hostile["score-cand"], "--no-config", "--format", "markdown")
    assert res.exit_code == 4, res.stderr
    assert "Most regressed" in res.stdout
    assert_inert(res.stdout)


def test_score_and_validate_markdown(hostile):
    res = run_cli("score", "--eval-set", hostile["eval"], "--run", hostile["run-cand"],
                  "--corpus", hostile["corpus"], "--k", "1", "--format", "markdown")
    assert res.exit_code == 0
    html = rendered(res.stdout)
    assert "<a " not in html and "<img" not in html
    res = run_cli("validate", "--eval-set", hostile["eval"], "--corpus", hostile["corpus"],
                  "--format", "markdown")
    assert res.exit_code in (0, 3)
    html = rendered(res.stdout)
    assert set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html)) <= ALLOWED_TAGS
    assert "<a " not in html


def test_leakage_and_overlap_markdown(hostile, tmp_path):
    leaky = rows(tmp_path / "leaky.jsonl", [
        {"id": f"leak {EVIL}", "query": EVIL + " lorem ipsum lorem ipsum", "doc_id": DOC,
         "gold_spans": [[0, 10]]}])
    res = run_cli("leakage", "--eval-set", leaky, "--corpus", hostile["corpus"],
                  "--threshold", "0.1", "--format", "markdown")
    assert res.exit_code == 4, res.stderr
    assert_inert(res.stdout)
    other = rows(tmp_path / "other.jsonl", [
        {"id": f"{EVIL} copy", "text": json.loads(hostile["corpus"].read_text())["text"]}])
    res = run_cli("overlap", "--a", hostile["corpus"], "--b", other, "--format", "markdown")
    assert res.exit_code == 4, res.stderr
    html = rendered(res.stdout)
    assert "<a " not in html and "<img" not in html and "<script" not in html
    assert set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html)) <= ALLOWED_TAGS


@pytest.mark.parametrize("audience", ["developer", "client"])
def test_report_and_readout_markdown(hostile, tmp_path, audience):
    out = tmp_path / f"{audience}.md"
    res = run_cli("report", hostile["score-base"], hostile["score-cand"], "--audience", audience,
                  "--corpus", hostile["corpus"], "--out", out, "--format", "markdown")
    assert res.exit_code == 0, res.stderr
    html = rendered(out.read_text(encoding="utf-8"))
    assert set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html)) <= ALLOWED_TAGS
    assert "<a " not in html and "<img" not in html
    assert not re.search(r"(?<![0-9A-Za-z\u200b])@[0-9A-Za-z]", re.sub(r"<[^>]+>", "", html))
    assert_inert_stdout = rendered(res.stdout)
    assert "<a " not in assert_inert_stdout


def test_markdown_read_as_text_on_a_pipe_and_escaped_in_a_file(tmp_path):
    """``make demo | tee`` and a CI log read markdown through a pipe: it was HTML-escaped
    (``&#8203;``, ``-&gt;``). A pipe and a terminal get it plain; a file (the Action's comment,
    a step summary) keeps what GitHub's renderer needs."""
    import subprocess
    import sys

    from conftest import ROOT

    fixtures = ROOT / "tests" / "fixtures" / "gate"
    args = [sys.executable, "-m", "ragspan", "compare", "--baseline", fixtures / "baseline.json",
            "--candidate", fixtures / "candidate-fail.json", "--no-config", "--format",
            "markdown"]
    piped = subprocess.run(args, capture_output=True, text=True)
    assert piped.returncode == 4, piped.stderr
    assert "&#8203;" not in piped.stdout and "&gt;" not in piped.stdout
    assert "@1: 300 -> 300 chars/query" in piped.stdout
    with open(tmp_path / "comment.md", "w", encoding="utf-8") as fh:
        subprocess.run(args, stdout=fh, text=True)
    written = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert "-&gt;" in written and "&#8203;" in written
