"""The bad-input matrix: every command x every input option x each class of bad input.

Each case asserts the exit code, exactly one stderr line naming the file, no traceback, no
output left behind, and every input byte-identical afterwards. The commands run in-process
with exceptions propagating, so a crash fails the test instead of reading as exit 1.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, assert_error_envelope, run_cli, write_jsonl

GATE = ROOT / "tests" / "fixtures" / "gate"


@pytest.fixture
def ws(tmp_path: Path) -> dict[str, Path]:
    """A workspace of valid inputs for every command."""
    for name in ("eval.jsonl", "corpus.jsonl", "run-baseline.jsonl", "baseline.json",
                 "candidate-fail.json"):
        shutil.copy(GATE / name, tmp_path / name)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The governing law is the law of Delaware. Payment is due.",
                                encoding="utf-8")
    queries = write_jsonl(tmp_path / "queries.jsonl", [
        {"id": "q1", "query": "Which law?", "doc_id": "a",
         "gold_texts": ["the law of Delaware"]}])
    trec = tmp_path / "run.trec"
    trec.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n2 Q0 d2 1 3.0 t\n", encoding="utf-8")
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("1 0 d1 1\n2 0 d2 2\n", encoding="utf-8")
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    write_jsonl(beir / "corpus.jsonl", [{"_id": "d1", "title": "", "text": "alpha beta"}])
    write_jsonl(beir / "queries.jsonl", [{"_id": "q1", "text": "alpha?"}])
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n",
                                             encoding="utf-8")
    config = tmp_path / "bm25.toml"
    config.write_text('name = "bm25"\ndepth = 3\n[chunker]\nkind = "fixed"\nsize = 400\n'
                      '[sparse]\nbackend = "rank-bm25"\n', encoding="utf-8")
    ragas = write_jsonl(tmp_path / "ragas.jsonl", [
        {"user_input": "Which law?", "reference_contexts": ["the law of Delaware"],
         "retrieved_contexts": ["Payment is due.", "The governing law"]}])
    chroma = tmp_path / "chroma"
    (chroma / "corpora").mkdir(parents=True)
    (chroma / "corpora" / "a.md").write_text("The governing law is Delaware.", encoding="utf-8")
    (chroma / "questions_df.csv").write_text(
        'question,references,corpus_id\nWhich law?,"[{""content"": ""Delaware"", '
        '""start_index"": 21, ""end_index"": 29}]",a\n', encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    return {
        "dir": tmp_path, "out": out, "eval": tmp_path / "eval.jsonl",
        "corpus": tmp_path / "corpus.jsonl", "run": tmp_path / "run-baseline.jsonl",
        "base": tmp_path / "baseline.json", "cand": tmp_path / "candidate-fail.json",
        "docs": docs, "queries": queries, "trec": trec, "qrels": qrels, "beir": beir,
        "config": config, "ragas": ragas, "chroma": chroma,
    }


# command -> (argv template, its input options, its output options). "{x}" is a ws path.
COMMANDS: dict[str, tuple[list[str], tuple[str, ...], tuple[str, ...]]] = {
    "score": (["score", "--eval-set", "{eval}", "--run", "{run}", "--corpus", "{corpus}",
               "--k", "1", "--out", "{out}/r.json"],
              ("--eval-set", "--run", "--corpus"), ("--out",)),
    "score-doc": (["score", "--qrels", "{qrels}", "--run", "{trec}", "--out", "{out}/r.json"],
                  ("--qrels", "--run"), ("--out",)),
    "compare": (["compare", "--baseline", "{base}", "--candidate", "{cand}",
                 "--out", "{out}/r.json"], ("--baseline", "--candidate"), ("--out",)),
    "convert": (["convert", "qrels", "--in", "{qrels}", "--to", "jsonl",
                 "--out", "{out}/q.jsonl"], ("--in",), ("--out",)),
    "validate": (["validate", "--eval-set", "{eval}", "--corpus", "{corpus}",
                  "--out", "{out}/r.json"], ("--eval-set", "--corpus"), ("--out",)),
    "adapt": (["adapt", "--docs", "{docs}", "--queries", "{queries}", "--out", "{out}/e.jsonl",
               "--corpus-out", "{out}/c.jsonl", "--report", "{out}/r.json"],
              ("--docs", "--queries"), ("--out", "--corpus-out", "--report")),
    "import-beir": (["import", "beir", "--root", "{beir}", "--out", "{out}/e.jsonl",
                     "--corpus-out", "{out}/c.jsonl", "--report", "{out}/r.json"],
                    ("--root",), ("--out", "--corpus-out", "--report")),
    "import-ragas": (["import", "ragas", "--rows", "{ragas}", "--corpus", "{docs}",
                      "--out", "{out}/e.jsonl", "--run-out", "{out}/run.jsonl",
                      "--report", "{out}/r.json"],
                     ("--rows", "--corpus"), ("--out", "--run-out", "--report")),
    "import-chroma": (["import", "chroma", "--root", "{chroma}", "--out", "{out}/e.jsonl",
                       "--corpus-out", "{out}/c.jsonl", "--report", "{out}/r.json"],
                      ("--root",), ("--out", "--corpus-out", "--report")),
    "run-retriever": (["run-retriever", "--corpus", "{corpus}", "--eval-set", "{eval}",
                       "--config", "{config}", "--no-cache", "--out", "{out}/run.jsonl",
                       "--chunks-out", "{out}/chunks.jsonl", "--report", "{out}/r.json"],
                      ("--corpus", "--eval-set", "--config"),
                      ("--out", "--chunks-out", "--report")),
    "leakage": (["leakage", "--eval-set", "{eval}", "--corpus", "{corpus}",
                 "--out", "{out}/r.json"], ("--eval-set", "--corpus"), ("--out",)),
    "overlap": (["overlap", "--a", "{corpus}", "--b", "{beir}/corpus.jsonl", "--out", "{out}/r.json"],
                ("--a",), ("--out",)),
}
NEEDS_RETRIEVAL = {"run-retriever"}


def argv(ws: dict[str, Path], command: str, **replace: str) -> list[str]:
    template = COMMANDS[command][0]
    args = [a.format(**{k: str(v) for k, v in ws.items()}) for a in template]
    for flag, value in replace.items():
        args[args.index(flag) + 1] = value
    return args


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def unchanged_but_the_error(ws: dict[str, Path], before: dict[str, bytes], code: int) -> None:
    """Every input byte-identical and no output written but the error envelope the failed
    command leaves where its JSON report goes (``{out}/r.json``)."""
    after = snapshot(ws["dir"])
    report = str(ws["out"] / "r.json")
    assert report in after, sorted(after)
    assert_error_envelope(Path(report), code)
    after.pop(report)
    before = {k: v for k, v in before.items() if k != report}
    assert after == before


def assert_refused(res, code: int, *fragments: str) -> None:
    assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])


def _skip_without_retrieval(command: str) -> None:
    if command in NEEDS_RETRIEVAL:
        pytest.importorskip("rank_bm25", reason="the retrieval extra is not installed")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_runs_on_the_workspace(ws, command):
    """The matrix's baseline: each command succeeds (or finds) on the valid inputs."""
    _skip_without_retrieval(command)
    res = run_cli(*argv(ws, command))
    assert res.exit_code in (0, 4), res.stderr


CASES = [(c, i, o) for c, (_, ins, outs) in sorted(COMMANDS.items()) for i in ins for o in outs]


@pytest.mark.parametrize("command,input_flag,output_flag", CASES)
def test_output_naming_an_input_is_refused(ws, command, input_flag, output_flag):
    """Exit 2 before any work, every input byte-identical, nothing written. An input folder
    is refused through the files it holds."""
    _skip_without_retrieval(command)
    target = argv(ws, command)[argv(ws, command).index(input_flag) + 1]
    if os.path.isdir(target):
        target = str(sorted(p for p in Path(target).rglob("*") if p.is_file())[0])
    before = snapshot(ws["dir"])
    res = run_cli(*argv(ws, command, **{output_flag: target}))
    assert_refused(res, 2, output_flag, "is an input of this command")
    assert snapshot(ws["dir"]) == before


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", ["directory", "fifo", "missing-folder", "same-as-other"])
def test_unwritable_outputs_are_refused(ws, command, kind):
    _skip_without_retrieval(command)
    outputs = COMMANDS[command][2]
    flag = outputs[-1]
    if kind == "directory":
        target, code, frag = str(ws["out"]), 3, "is a directory"
    elif kind == "fifo":
        target, code, frag = str(ws["dir"] / "fifo"), 3, "not a regular file"
        os.mkfifo(target)
    elif kind == "missing-folder":
        target, code, frag = str(ws["dir"] / "nowhere" / "r.json"), 3, "does not exist"
    else:
        if len(outputs) < 2:
            pytest.skip("one output only")
        target = argv(ws, command)[argv(ws, command).index(outputs[0]) + 1]
        code, frag = 2, "name the same file"
    before = snapshot(ws["dir"])
    res = run_cli(*argv(ws, command, **{flag: target}))
    assert_refused(res, code, frag)
    assert snapshot(ws["dir"]) == before
    if kind == "fifo":
        assert Path(target).is_fifo()


@pytest.mark.parametrize("command", ["adapt", "import-beir", "run-retriever"])
def test_multi_file_outputs_all_or_nothing(ws, command, monkeypatch):
    """A failure while renaming the last output leaves none of them, and an output that
    existed before keeps its old bytes."""
    _skip_without_retrieval(command)
    outputs = COMMANDS[command][2]
    first = argv(ws, command)[argv(ws, command).index(outputs[0]) + 1]
    Path(first).write_text("old\n", encoding="utf-8")
    real = os.replace
    calls = []

    def failing(src, dst):
        calls.append(dst)
        if len(calls) == len(outputs):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    res = run_cli(*argv(ws, command))
    monkeypatch.setattr(os, "replace", real)
    assert_refused(res, 3, "No space left on device")
    assert Path(first).read_text(encoding="utf-8") == "old\n"
    for flag in outputs[1:]:
        path = Path(argv(ws, command)[argv(ws, command).index(flag) + 1])
        if flag == "--report":  # the failure's own envelope, where the report goes
            assert_error_envelope(path, 3)
        else:
            assert not path.exists()
    assert sorted(p.name for p in ws["out"].iterdir()) == sorted(
        [Path(first).name, "r.json"])  # no temporary left


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_outputs_respect_the_umask(ws, command):
    _skip_without_retrieval(command)
    old = os.umask(0o027)
    try:
        res = run_cli(*argv(ws, command))
    finally:
        os.umask(old)
    assert res.exit_code in (0, 4), res.stderr
    written = [p for p in ws["out"].iterdir()]
    assert written
    for path in written:
        assert path.stat().st_mode & 0o777 == 0o640, path


# ---- bad content, per reader ----------------------------------------------------------------

BIG = 2 ** 70
DEEP = "[" * 100_000 + "]" * 100_000
BOM = "\ufeff"

EVAL_ROW = {"id": "q1", "query": "x", "doc_id": "manual", "gold_spans": [[0, 10]]}
SPAN_ROW = {"id": "q00", "retrieved": [{"doc_id": "manual", "start": 0, "end": 10}]}

# (input key, file content, fragment of the message, the command reading it)
BAD_CONTENT = [
    ("eval", json.dumps({**EVAL_ROW, "gold_spans": [[0, BIG]]}) + "\n", "out of range", "score"),
    ("eval", json.dumps({**EVAL_ROW, "gold_spans": [], "relevance": {"d": BIG}}) + "\n",
     "out of range", "score"),
    ("eval", json.dumps({**EVAL_ROW, "gold_spans": [{"doc_id": "manual", "start": True,
                                                     "end": 5}]}) + "\n", "integers", "score"),
    ("eval", '{"id": "q1", "query": "x", "gold_spans": [], "relevance": {"d": NaN}}\n',
     "non-finite", "score"),
    ("eval", DEEP + "\n", "nested too deeply", "score"),
    ("eval", '{"_header": 5}\n' + json.dumps(EVAL_ROW) + "\n", "'_header' must be an object",
     "score"),
    ("run", json.dumps({**SPAN_ROW, "retrieved": [{"doc_id": "manual", "start": 0,
                                                   "end": BIG}]}) + "\n", "out of range",
     "score"),
    ("run", json.dumps({**SPAN_ROW, "retrieved": [{"doc_id": "manual", "start": True,
                                                   "end": 5}]}) + "\n", "not an integer",
     "score"),
    ("run", json.dumps({**SPAN_ROW, "retrieved": [{"doc_id": "manual", "start": 0, "end": 5,
                                                   "score": 1e400}]}).replace("Infinity", "1e400")
     + "\n", "non-finite score", "score"),
    ("run", '{"_header": 5}\n' + json.dumps(SPAN_ROW) + "\n", "'_header' must be an object",
     "score"),
    ("run", '{"id": "q00", "retrieved": ' + DEEP + "}\n", "nested too deeply", "score"),
    ("qrels", f"1 0 d1 {BIG}\n", "out of range", "score-doc"),
    ("qrels", '{"id": "1", "relevant_ids": ["d1"], "relevance": {"d1": 1}}\n',
     "either 'relevant_ids' or 'relevance', not both", "score-doc"),
    ("corpus", '{"id": "manual", "text": ' + DEEP + "}\n", "nested too deeply", "validate"),
    ("base", '{"_type": ' + DEEP + "}\n", "nested too deeply", "compare"),
    ("base", "{}\n", "not a valid ragspan report", "compare"),
    ("config", 'name = "x"\n[sparse]\nk1 = "x"\n', "[sparse] k1", "run-retriever"),
]


@pytest.mark.parametrize("key,content,fragment,command", BAD_CONTENT)
def test_bad_content_is_one_line_naming_the_file(ws, key, content, fragment, command):
    _skip_without_retrieval(command)
    ws[key].write_text(content, encoding="utf-8")
    before = snapshot(ws["dir"])
    res = run_cli(*argv(ws, command))
    assert_refused(res, 3, ws[key].name, fragment)
    unchanged_but_the_error(ws, before, 3)


@pytest.mark.parametrize("key,command", [("eval", "score"), ("run", "score"), ("trec", "score-doc"),
                                         ("qrels", "score-doc"), ("corpus", "validate"),
                                         ("base", "compare"), ("config", "run-retriever"),
                                         ("queries", "adapt")])
def test_a_byte_order_mark_is_dropped_from_structured_inputs(ws, key, command):
    """Every structured reader reads a file saved with a UTF-8 BOM exactly as without one."""
    _skip_without_retrieval(command)
    plain = run_cli(*argv(ws, command))
    if command == "run-retriever":
        first_row = (ws["out"] / "run.jsonl").read_text().split("\n")[1]
    elif command != "compare":
        plain_summary = json.loads((ws["out"] / "r.json").read_text())["predicate"]["summary"]
    data = ws[key].read_bytes()
    ws[key].write_bytes(BOM.encode("utf-8") + data)
    if command == "compare":  # the candidate differs from the baseline by its BOM
        with_bom = run_cli(*argv(ws, command), "--allow-identical")
    else:
        with_bom = run_cli(*argv(ws, command))
    assert plain.exit_code == with_bom.exit_code, with_bom.stderr
    if command == "run-retriever":  # the ranking is the result (rows and report hold timings)
        assert json.loads((ws["out"] / "run.jsonl").read_text().split("\n")[1])["retrieved"] \
            == json.loads(first_row)["retrieved"]
    elif command != "compare":
        summary = json.loads((ws["out"] / "r.json").read_text())["predicate"]["summary"]
        assert summary == plain_summary


def _doc_metrics(ws: dict[str, Path]) -> dict[str, float]:
    res = run_cli(*argv(ws, "score-doc"))
    assert res.exit_code == 0, res.stderr
    return json.loads((ws["out"] / "r.json").read_text())["predicate"]["summary"]["metrics"]


def test_bom_doc_ids_do_not_change_ndcg(ws):
    """A BOM at the start of a TREC run or qrels once became part of the first query id
    (nDCG 0.776 -> 0.592 measured); read by every parser, it changes nothing."""
    plain = _doc_metrics(ws)
    assert plain["doc_ndcg@5"] > 0
    for key in ("trec", "qrels"):
        ws[key].write_bytes(BOM.encode("utf-8") + ws[key].read_bytes())
    assert _doc_metrics(ws) == plain


def test_trec_rank_column_is_ignored_as_trec_eval_does(ws):
    """trec_eval orders by score and never reads the rank column; neither does ragspan, so
    a rank beyond 64 bits is no misread: the metrics are those of the same run ranked 1."""
    plain = _doc_metrics(ws)
    ws["trec"].write_text(ws["trec"].read_text().replace(" 1 ", f" {BIG} "), encoding="utf-8")
    assert _doc_metrics(ws) == plain


@pytest.mark.parametrize("flag,value", [
    ("--grounding-threshold", "nan"), ("--grounding-threshold", "inf"),
])
def test_non_finite_numbers_on_the_command_line(ws, flag, value):
    res = run_cli(*argv(ws, "score"), flag, value)
    assert res.exit_code == 2 and "not a finite number" in res.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_non_finite_budget_tolerance(ws, value):
    res = run_cli(*argv(ws, "compare"), "--budget-tolerance", value)
    assert res.exit_code == 2, res.stderr


def test_long_first_line_is_detected(ws):
    """Format detection reads the whole first line, however long (once only 64 KiB)."""
    ids = [f"d{i:06d}" for i in range(12_000)]
    ws["trec"].write_text(json.dumps({"id": "1", "retrieved_ids": ids}) + "\n", encoding="utf-8")
    res = run_cli(*argv(ws, "score-doc"))
    assert res.exit_code == 0, res.stderr
    rows = [{"id": "q00", "retrieved": [{"doc_id": "manual", "start": i, "end": i + 1}
                                        for i in range(0, 20_000, 2)]}]
    write_jsonl(ws["run"], rows)
    res = run_cli(*argv(ws, "score"), "--min-coverage", "0")  # one query of 30, on purpose
    assert res.exit_code == 0, res.stderr


def test_invalid_utf8_names_the_line(ws):
    ws["eval"].write_bytes(ws["eval"].read_bytes() + b'{"id": "\xff"}\n')
    res = run_cli(*argv(ws, "score"))
    lines = ws["eval"].read_bytes().count(b"\n")
    assert_refused(res, 3, f"eval.jsonl:{lines}:", "not valid UTF-8")


def test_errors_print_no_log_line_first(ws):
    """An INFO line held before the error is dropped: one stderr line, with or without -q."""
    write_jsonl(ws["run"], [SPAN_ROW, SPAN_ROW])
    for extra in ((), ("-q",)):
        assert_refused(run_cli(*argv(ws, "score"), *extra), 3, "repeated query id")
    ws["trec"].write_bytes(BOM.encode("utf-8") + ws["trec"].read_bytes())  # logged
    ws["qrels"].write_text("1 0 d1 x\n", encoding="utf-8")
    assert_refused(run_cli(*argv(ws, "score-doc")), 3, "qrels.trec")


def test_ctrl_c_exits_130(ws, monkeypatch):
    from ragspan.app import score

    def interrupted(**_kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(score, "run", interrupted)
    res = run_cli(*argv(ws, "score"))
    assert res.exit_code == 130
    assert not (ws["out"] / "r.json").exists()


def test_pdf_warnings_are_not_printed_raw(ws):
    """pypdf's own warnings ("EOF marker not found") never reach stderr raw: a broken PDF is
    one error line naming the file."""
    (ws["docs"] / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n")
    res = run_cli(*argv(ws, "adapt"))
    assert_refused(res, 3, "broken.pdf")


def test_repeated_ids_in_beir_queries_and_leakage_items(ws):
    q = ws["beir"] / "queries.jsonl"
    q.write_text(q.read_text() * 2, encoding="utf-8")
    assert_refused(run_cli(*argv(ws, "import-beir")), 3, "queries.jsonl:2",
                   "repeated query id 'q1' (first on line 1)")
    items = write_jsonl(ws["dir"] / "items.jsonl", [{"id": "a", "query": "x y z"},
                                                    {"id": "a", "query": "p q r"}])
    res = run_cli(*argv(ws, "leakage", **{"--eval-set": str(items)}))
    assert_refused(res, 3, "items.jsonl:2", "repeated item id 'a'")


def test_a_dangling_symlink_in_docs_is_an_error(ws):
    (ws["docs"] / "gone.txt").symlink_to(ws["dir"] / "missing.txt")
    assert_refused(run_cli(*argv(ws, "adapt")), 3, "gone.txt", "dangling symlink")


def test_a_chunk_past_its_document_names_the_manifest_line(ws):
    """Once "validation found 1 errors" with no file or line, and its report left behind."""
    manifest = write_jsonl(ws["dir"] / "chunks.jsonl", [
        {"chunk_id": "c0", "doc_id": "manual", "start": 0, "end": 10},
        {"chunk_id": "c1", "doc_id": "manual", "start": 0, "end": 10 ** 7}])
    res = run_cli(*argv(ws, "validate"), "--chunks", manifest)
    assert_refused(res, 3, "chunks.jsonl:2", "chunk 'c1' ends at 10000000")
    assert_error_envelope(ws["out"] / "r.json", 3)


def test_score_checks_what_the_eval_set_recorded_about_the_corpus(ws):
    """An eval set built on CRLF texts, scored against the corpus re-saved with LF, is an
    error (its spans would shift silently); so is a gold text that no longer slices back."""
    crlf = ws["docs"] / "a.txt"
    crlf.write_bytes(b"Line one.\r\nThe governing law is the law of Delaware.\r\nEnd.\r\n")
    res = run_cli(*argv(ws, "adapt"))
    assert res.exit_code == 0, res.stderr
    built_eval, built_corpus = ws["out"] / "e.jsonl", ws["out"] / "c.jsonl"
    run = write_jsonl(ws["dir"] / "run-a.jsonl", [
        {"id": "q1", "retrieved": [{"doc_id": "a", "start": 0, "end": 20}]}])
    score = ["score", "--eval-set", built_eval, "--run", run, "--k", "1"]
    assert run_cli(*score, "--corpus", built_corpus).exit_code == 0
    lf = ws["dir"] / "lf.jsonl"
    rows = [json.loads(x) for x in built_corpus.read_text().splitlines()]
    write_jsonl(lf, [{**r, "text": r["text"].replace("\r\n", "\n")} for r in rows])
    assert_refused(run_cli(*score, "--corpus", lf), 3, "e.jsonl:2", "corpus drifted: "
                   "document 'a' changed", "no longer match their anchors", "ragspan migrate")
    header, *rest = built_eval.read_text().splitlines()
    head = json.loads(header)
    del head["_header"]["documents"]
    moved = ws["dir"] / "moved.jsonl"
    moved.write_text("\n".join([json.dumps(head), *rest]) + "\n", encoding="utf-8")
    # without the header's digests, each span's anchor still tells
    assert_refused(run_cli("score", "--eval-set", moved, "--run", run, "--k", "1",
                           "--corpus", lf), 3, "moved.jsonl:2", "corpus drifted")
    bare = [json.loads(r) for r in rest]
    for row in bare:
        for span in row["gold_spans"]:
            del span["anchor"]
    moved.write_text("\n".join(map(json.dumps, [head, *bare])) + "\n", encoding="utf-8")
    assert_refused(run_cli("score", "--eval-set", moved, "--run", run, "--k", "1",
                           "--corpus", lf), 3, "moved.jsonl:2", "does not slice back")


def test_error_messages_name_their_file(ws):
    ws["eval"].write_text(json.dumps({**EVAL_ROW, "filters": {"kind": "nothing"}}) + "\n",
                          encoding="utf-8")
    pytest.importorskip("rank_bm25", reason="the retrieval extra is not installed")
    assert_refused(run_cli(*argv(ws, "run-retriever")), 3, "eval.jsonl", "filter on 'kind'")


def test_an_error_quoting_a_line_break_stays_one_line(ws):
    """Found by the long fuzz run: an id holding U+0085 (a line break for ``splitlines``)
    once split the error into two lines."""
    ws["qrels"].write_text('{"id": "1", "relevance": {"\\u0085\\u2028": null}}\n',
                           encoding="utf-8")
    assert_refused(run_cli(*argv(ws, "score-doc")), 3, "qrels.trec:1", "\\x85\\u2028")
