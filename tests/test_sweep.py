"""``ragspan sweep``: each configuration's files equal what run-retriever and score --chunks
write on their own; names that collide are refused before any work; a failing configuration
stops the sweep (or, with --keep-going, is recorded) and leaves nothing of itself."""

from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT, run_cli

pytest.importorskip("bm25s", reason="the retrieval extra is not installed")
EX = ROOT / "examples" / "cuad"


def config(tmp_path, name: str, chunker: str) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\ndepth = 10\n[chunker]\nkind = "{chunker}"\nsize = 500\n'
                    '[sparse]\nbackend = "bm25s"\ndepth = 50\n[filter]\nscope = "doc_id"\n',
                    encoding="utf-8")
    return str(path)


def sweep(tmp_path, *configs, extra=()):
    return run_cli("sweep", *[a for c in configs for a in ("--config", c)], "--eval-set",
                   EX / "eval.jsonl", "--corpus", EX / "corpus.jsonl", "--out-dir",
                   tmp_path / "out", "--k", "3", "--k", "5", "--no-cache", "--format", "json",
                   *extra)


def _no_latency(text: str) -> str:
    return re.sub(r'"latency_ms": ?[0-9.eE+-]+', '"latency_ms": 0', text)


def test_each_configuration_is_what_run_retriever_and_score_write(tmp_path):
    fixed, clause = config(tmp_path, "fixed", "fixed"), config(tmp_path, "clause", "clause")
    res = sweep(tmp_path, fixed, clause)
    assert res.exit_code == 0, res.stderr
    pred = res.json()["predicate"]
    assert [c["name"] for c in pred["details"]["configurations"]] == ["fixed", "clause"]
    for name, cfg in (("fixed", fixed), ("clause", clause)):
        folder = tmp_path / "out" / name
        alone = tmp_path / f"alone-{name}"
        alone.mkdir()
        assert run_cli("run-retriever", "--corpus", EX / "corpus.jsonl", "--eval-set",
                       EX / "eval.jsonl", "--config", cfg, "--out", alone / "run.jsonl",
                       "--chunks-out", alone / "chunks.jsonl", "--no-cache").exit_code == 0
        assert (alone / "chunks.jsonl").read_bytes() == (folder / "chunks.jsonl").read_bytes()
        assert _no_latency((alone / "run.jsonl").read_text()) == \
            _no_latency((folder / "run.jsonl").read_text())
        # scoring the sweep's own files gives its score report (but the command line)
        res = run_cli("score", "--eval-set", EX / "eval.jsonl", "--run", folder / "run.jsonl",
                      "--corpus", EX / "corpus.jsonl", "--chunks", folder / "chunks.jsonl",
                      "--k", "3", "--k", "5", "--out", alone / "score.json")
        assert res.exit_code == 0, res.stderr
        alone_doc = json.loads((alone / "score.json").read_text(encoding="utf-8"))
        assert alone_doc["predicate"]["parameters"].pop("argv")[0] == "score"
        assert alone_doc == json.loads((folder / "score.json").read_text(encoding="utf-8"))
        row = next(c for c in pred["details"]["configurations"] if c["name"] == name)
        score = json.loads((folder / "score.json").read_text())["predicate"]["summary"]
        assert row["metrics"]["complete_grounding@5"] == score["metrics"]["complete_grounding@5"]
        assert row["failure_labels"] == score["failure_labels"]["by_k"]
    # the developer report is the sweep's last step: what ragspan report writes from its files
    assert pred["details"]["reports"] == {"html": str(tmp_path / "out" / "report.html"),
                                          "markdown": str(tmp_path / "out" / "report.md"),
                                          "csv": str(tmp_path / "out" / "report.csv")}
    for ext in ("md", "html"):
        res = run_cli("report", tmp_path / "out" / "fixed" / "score.json",
                      tmp_path / "out" / "clause" / "score.json", "--out",
                      tmp_path / f"alone.{ext}")
        assert res.exit_code == 0, res.stderr
        assert (tmp_path / f"alone.{ext}").read_bytes() == \
            (tmp_path / "out" / f"report.{ext}").read_bytes()
    table = run_cli("sweep", "--config", fixed, "--config", clause, "--eval-set",
                    EX / "eval.jsonl", "--corpus", EX / "corpus.jsonl", "--out-dir",
                    tmp_path / "again", "--k", "5", "--no-cache").stdout
    assert "complete_grounding@5" in table and "chunk-severance" in table


def test_names_that_collide_are_refused_before_any_work(tmp_path):
    a = config(tmp_path, "same", "fixed")
    other = tmp_path / "other"
    other.mkdir()
    b = config(other, "same", "clause")
    res = sweep(tmp_path, a, b)
    assert res.exit_code == 2 and "share the name 'same'" in res.stderr
    assert not (tmp_path / "out").exists()


def test_an_input_inside_the_out_dir_is_refused(tmp_path):
    a = config(tmp_path, "fixed", "fixed")
    out = tmp_path / "out" / "fixed"
    out.mkdir(parents=True)
    (out / "run.jsonl").write_text((EX / "eval.jsonl").read_text())
    res = run_cli("sweep", "--config", a, "--eval-set", out / "run.jsonl", "--corpus",
                  EX / "corpus.jsonl", "--out-dir", tmp_path / "out")
    assert res.exit_code == 2 and "is an input" in res.stderr


def _fail_on(monkeypatch, name: str):
    from ragspan.app import run_retriever
    from ragspan.base.errors import InputError

    real = run_retriever.run

    def flaky(**kw):
        if f"/{name}/" in kw["out"]:
            raise InputError("filters match no chunk", kw["eval_set"])
        return real(**kw)

    monkeypatch.setattr(run_retriever, "run", flaky)


def test_a_failing_configuration_stops_the_sweep(tmp_path, monkeypatch):
    first, second = config(tmp_path, "first", "fixed"), config(tmp_path, "second", "clause")
    _fail_on(monkeypatch, "second")
    res = sweep(tmp_path, first, second)
    assert res.exit_code == 3 and "filters match no chunk" in res.stderr
    assert sorted(p.name for p in (tmp_path / "out" / "first").iterdir()) == [
        "chunks.jsonl", "run-retriever.json", "run.jsonl", "score.json"]
    assert list((tmp_path / "out" / "second").iterdir()) == []


def test_keep_going_records_the_failure_and_goes_on(tmp_path, monkeypatch):
    first, second = config(tmp_path, "first", "fixed"), config(tmp_path, "second", "clause")
    _fail_on(monkeypatch, "first")
    res = sweep(tmp_path, first, second, extra=("--keep-going",))
    assert res.exit_code == 3
    pred = res.json()["predicate"]
    assert pred["verdict"] == "error" and pred["summary"]["failed"] == 1
    rows = {c["name"]: c for c in pred["details"]["configurations"]}
    assert "filters match no chunk" in rows["first"]["error"]
    assert rows["second"]["metrics"]["complete_grounding@5"] > 0
    assert list((tmp_path / "out" / "first").iterdir()) == []
    assert (tmp_path / "out" / "second" / "score.json").is_file()
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "| second (baseline) |" in report and "| first" not in report
    # a finished and a failed configuration read into records and write back byte for byte,
    # and the table shows both
    from ragspan.base.canonical import canonical_dumps
    from ragspan.records.envelope import Statement, decode, encode
    from ragspan.records.sweep import SweepPredicate
    from ragspan.report.render import render

    record = decode(res.json(), Statement[SweepPredicate])
    assert canonical_dumps(encode(record)) == res.stdout
    shown = render(res.json(), "table")
    assert "failed: " in shown and "second" in shown


def test_a_baseline_that_is_no_configuration_is_refused_before_any_work(tmp_path):
    res = sweep(tmp_path, config(tmp_path, "first", "fixed"), extra=("--baseline", "nope"))
    assert res.exit_code == 2 and "--baseline 'nope' names no configuration" in res.stderr
    assert not (tmp_path / "out").exists()


def test_two_sweeps_over_the_same_inputs_give_the_same_bytes(tmp_path):
    """No wall time and no cache state in any file: with SOURCE_DATE_EPOCH set (conftest),
    a sweep run twice is byte-identical, file by file, each run-retriever.json too (it held
    the elapsed time, the p95 latency and queries per second)."""
    fixed, clause = config(tmp_path, "fixed", "fixed"), config(tmp_path, "clause", "clause")
    runs = []
    for _ in range(2):
        res = sweep(tmp_path, fixed, clause, extra=("--out", tmp_path / "sweep.json"))
        assert res.exit_code == 0, res.stderr
        files = {p.relative_to(tmp_path / "out").as_posix(): p.read_bytes()
                 for p in sorted((tmp_path / "out").rglob("*")) if p.is_file()}
        files["sweep.json"] = (tmp_path / "sweep.json").read_bytes()
        runs.append(files)
        import shutil

        shutil.rmtree(tmp_path / "out")
        (tmp_path / "sweep.json").unlink()
    first, second = runs
    assert set(first) == set(second) and "fixed/run.jsonl" in first and "report.md" in first
    assert {name for name in first if first[name] != second[name]} == set()
    for name, data in first.items():
        assert b"latency_ms" not in data and b"elapsed_s" not in data, name


def test_each_input_is_read_once(tmp_path, monkeypatch):
    """N configurations: each configuration file, the corpus and the eval set are read once
    (not once per reader), and the results equal separate runs (the test above)."""
    import ragspan.app.sweep  # noqa: F401  (every reader loaded, so each binding is patched)
    from conftest import patch_everywhere
    from ragspan.io import files

    reads: dict[str, int] = {}
    real = files.read_bytes

    def counted(path, *a, **k):
        reads[str(path)] = reads.get(str(path), 0) + 1
        return real(path, *a, **k)

    patch_everywhere(monkeypatch, files, "read_bytes", counted)
    configs = [config(tmp_path, n, c) for n, c in (("a", "fixed"), ("b", "clause"),
                                                     ("c", "fixed"))]
    assert sweep(tmp_path, *configs).exit_code == 0
    inputs = [*configs, str(EX / "corpus.jsonl"), str(EX / "eval.jsonl")]
    assert {p: reads.get(p, 0) for p in inputs} == {p: 1 for p in inputs}
