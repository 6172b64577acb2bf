"""What a new user hits first: a doc-level eval set (as ``import beir`` writes it) scored
with ``--eval-set`` or ``--qrels``, and ``convert --to trec`` refusing what TREC cannot
carry instead of writing a file its own reader rejects."""

from __future__ import annotations

from conftest import assert_input_error, run_cli, write_jsonl


def _beir_like(tmp_path):
    evalset = write_jsonl(tmp_path / "eval.jsonl", [
        {"_header": {"source": "beir", "split": "test"}},
        {"id": "1", "query": "first", "relevance": {"d1": 1}},
        {"id": "2", "query": "second", "relevance": {"d2": 2, "d3": 1}},
    ])
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"id": "1", "retrieved": [{"doc_id": "d1", "start": 0, "end": 10},
                                  {"doc_id": "d1", "start": 10, "end": 20}]},
        {"id": "2", "retrieved": [{"doc_id": "d9", "start": 0, "end": 10},
                                  {"doc_id": "d3", "start": 0, "end": 10}]},
    ])
    return evalset, run


def test_a_doc_level_eval_set_scores_a_span_run_at_doc_level(tmp_path):
    evalset, run = _beir_like(tmp_path)
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--k", "2", "--format", "json")
    assert res.exit_code == 0, res.stderr
    pred = res.json()["predicate"]
    assert pred["kind"] == "score.doc"
    metrics = pred["summary"]["metrics"]
    assert metrics["doc_hit_rate@2"] == 1.0 and metrics["doc_mrr@2"] == (1 + 0.5) / 2
    # the same file as --qrels: its _header is the eval set's, not a judgment
    res2 = run_cli("score", "--qrels", evalset, "--run", run, "--k", "2", "--format", "json")
    assert res2.exit_code == 0, res2.stderr
    as_qrels = res2.json()["predicate"]["summary"]["metrics"]
    # the same numbers; qrels add the share of judged results (an eval set judges them all)
    assert {n: v for n, v in as_qrels.items() if not n.startswith("doc_judged@")} == metrics
    assert "doc_judged@2" in as_qrels and "doc_judged@2" not in metrics


def test_a_header_anywhere_but_first_is_still_refused(tmp_path):
    qrels = write_jsonl(tmp_path / "q.jsonl", [{"id": "1", "relevance": {"d1": 1}},
                                               {"_header": {}}])
    run = write_jsonl(tmp_path / "run.jsonl", [{"id": "1", "retrieved_ids": ["d1"]}])
    assert_input_error(run_cli("score", "--qrels", qrels, "--run", run),
                       "'_header' record must come first")


def test_convert_refuses_what_trec_cannot_carry(tmp_path):
    spaced = write_jsonl(tmp_path / "spaced.jsonl", [{"id": "q1", "retrieved_ids": ["doc a"]}])
    res = run_cli("convert", "run", "--in", spaced, "--to", "trec", "--out", tmp_path / "o.trec")
    assert_input_error(res, "doc id 'doc a'", "holds whitespace")
    qrels = write_jsonl(tmp_path / "q.jsonl", [{"id": "q 1", "relevance": {"d": 1}}])
    res = run_cli("convert", "qrels", "--in", qrels, "--to", "trec", "--out", tmp_path / "q.trec")
    assert_input_error(res, "query id 'q 1'")
    _, span_run = _beir_like(tmp_path)
    res = run_cli("convert", "run", "--in", span_run, "--to", "trec", "--out", tmp_path / "s.trec")
    assert res.exit_code == 2 and "is a span run" in res.stderr
    assert not list(tmp_path.glob("*.trec"))


def test_the_format_is_a_table_on_a_terminal_and_json_in_a_pipe(tmp_path):
    """Without --format, a person at a terminal reads the table; a pipe gets the JSON."""
    import json
    import os
    import pty
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "ragspan", "plan", "--flip-rate", "0.2", "--budget", "2pt"]
    piped = subprocess.run(cmd, capture_output=True, text=True)
    assert json.loads(piped.stdout)["predicate"]["kind"] == "plan"
    leader, follower = pty.openpty()
    proc = subprocess.run(cmd, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.returncode == 0
    assert shown.decode().startswith("ragspan plan: verdict pass")


def test_progress_shows_each_stage_with_its_rate(capsys):
    pytest = __import__("pytest")
    pytest.importorskip("tqdm", reason="tqdm comes with the retrieval extra")
    from ragspan.base.progress import Progress

    bar = Progress(enabled=True, terminal=True)
    for stage, total in (("chunking", 3), ("embedding", 5)):
        for done in range(1, total + 1):
            bar(stage, done, total)
    err = capsys.readouterr().err
    assert "chunking" in err and "embedding" in err and "5/5" in err
    assert "it/s" in err or "s/it" in err  # tqdm's rate
    quiet = Progress(enabled=False)
    quiet("querying", 1, 2)
    assert capsys.readouterr().err == ""


def test_validate_report_takes_its_input_positionally_or_as_in():
    from conftest import ROOT

    report = ROOT / "tests" / "fixtures" / "gate" / "baseline.json"
    for args in ((report,), ("--in", report), ("--report", report)):
        res = run_cli("validate-report", *args)
        assert res.exit_code == 0 and "valid (score.span)" in res.stdout
    assert run_cli("validate-report").exit_code == 2
    assert run_cli("validate-report", report, "--in", report).exit_code == 2


def test_a_dash_reads_the_run_from_standard_input(tmp_path):
    import json
    import subprocess
    import sys

    from conftest import ROOT

    fix = ROOT / "tests" / "fixtures" / "gate"
    base = [sys.executable, "-m", "ragspan", "score", "--eval-set", str(fix / "eval.jsonl"),
            "--corpus", str(fix / "corpus.jsonl"), "--k", "1", "--format", "json"]
    piped = subprocess.run([*base, "--run", "-"], input=(fix / "run-fail.jsonl").read_bytes(),
                           capture_output=True)
    named = subprocess.run([*base, "--run", str(fix / "run-fail.jsonl")], capture_output=True)
    assert piped.returncode == named.returncode == 0, piped.stderr
    a, b = (json.loads(r.stdout)["predicate"] for r in (piped, named))
    assert a["summary"] == b["summary"]
    runs = [i for i in a["inputs"] if i["role"] == "run"]
    assert runs[0]["name"] == "-" and runs[0]["digest"] == next(
        i for i in b["inputs"] if i["role"] == "run")["digest"]
    both = subprocess.run([*base[:4], "--eval-set", "-", "--run", "-"], input=b"",
                          capture_output=True)
    assert both.returncode == 2 and b"only one input can be '-'" in both.stderr


def test_chunks_with_a_doc_level_eval_set_says_why_it_cannot_label(tmp_path):
    evalset, run = _beir_like(tmp_path)
    chunks = write_jsonl(tmp_path / "chunks.jsonl", [
        {"chunk_id": "d1:0", "doc_id": "d1", "start": 0, "end": 10}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--chunks", chunks)
    assert res.exit_code == 2 and "doc-level judgments only" in res.stderr


def test_progress_in_a_ci_log(capsys, monkeypatch):
    """A 13-minute embedding run printed nothing when stderr was not a terminal: now a line
    every 15 s per stage (RAGSPAN_PROGRESS_SECONDS sets it; 0 here) with the count, the
    rate and the time left, and one when a long stage ends; -q silences it."""
    from ragspan.base.progress import Progress

    monkeypatch.setenv("RAGSPAN_PROGRESS_SECONDS", "0")
    bar = Progress(enabled=True, terminal=False)
    for done in range(1, 5):
        bar("embedding", done, 4)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("ragspan: embedding: 1/4 (25%), ")
    assert "/s, about " in err[0] and err[0].endswith(" left")
    assert err[-1].startswith("ragspan: embedding: 4 done in ")
    quiet = Progress(enabled=False, terminal=False)
    quiet("embedding", 1, 4)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("RAGSPAN_PROGRESS_SECONDS", "15")
    slow = Progress(enabled=True, terminal=False)
    for done in range(1, 5):
        slow("embedding", done, 4)  # well under 15 s: nothing to say
    assert capsys.readouterr().err == ""


def test_run_retriever_reports_progress_when_stderr_is_a_file(tmp_path, monkeypatch):
    pytest = __import__("pytest")
    pytest.importorskip("bm25s", reason="the retrieval extra is not installed")
    from conftest import ROOT

    monkeypatch.setenv("RAGSPAN_PROGRESS_SECONDS", "0")
    ex = ROOT / "examples"
    res = run_cli("run-retriever", "--corpus", ex / "cuad" / "corpus.jsonl", "--eval-set",
                  ex / "cuad" / "eval.jsonl", "--config", ex / "configs" / "bm25-corpus.toml",
                  "--out", tmp_path / "run.jsonl", "--no-cache")
    assert res.exit_code == 0, res.stderr
    assert "ragspan: chunking: " in res.stderr and "ragspan: querying: " in res.stderr
    from click.testing import CliRunner

    from ragspan.cli import cli

    quiet = CliRunner().invoke(cli, [
        "-q", "run-retriever", "--corpus", str(ex / "cuad" / "corpus.jsonl"), "--eval-set",
        str(ex / "cuad" / "eval.jsonl"), "--config", str(ex / "configs" / "bm25-corpus.toml"),
        "--out", str(tmp_path / "q.jsonl"), "--no-cache"])
    assert quiet.exit_code == 0 and "ragspan: chunking" not in quiet.stderr
