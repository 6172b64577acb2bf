"""No readout shows a local model's path (``base.shown``): the client and developer readouts
name a local embedding or rerank model by its folder's name, the gate's note on run settings
likewise, the JSON report keeps what was typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import report_fixture as fx
from conftest import run_cli, write_jsonl
from ragspan.base.shown import shown_model

LOCAL = "/home/alice/work/models/minilm-finetuned"


@pytest.mark.parametrize(("name", "shown"), [
    ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2"),
    ("BAAI/bge-small-en-v1.5", "BAAI/bge-small-en-v1.5"),
    (LOCAL, "local model 'minilm-finetuned'"),
    (LOCAL + "/", "local model 'minilm-finetuned'"),
    ("~/models/bge", "local model 'bge'"),
    ("./models/bge", "local model 'bge'"),
    ("../bge", "local model 'bge'"),
    ("C:\\Users\\alice\\bge", "local model 'bge'"),
    ("models/org/bge", "local model 'bge'"),
])
def test_a_local_folder_is_shown_by_its_name(name, shown):
    assert shown_model(name) == shown


def _local_family(root: Path) -> dict[str, Path]:
    """The report fixture's family plus E: B's results, its run made with a local model."""
    from ragspan.retrieval.chunkers import ChunkerSpec
    from ragspan.retrieval.config import DenseSpec, PipelineConfig

    made = fx.build(root)
    cfg = PipelineConfig(name="E", depth=10, chunker=ChunkerSpec(kind="clause", size=1000),
                         dense=DenseSpec(model=LOCAL), sparse=None, scope="doc_id")
    run = write_jsonl(root / "E.run.jsonl", [
        {"_header": {"config": cfg.as_json(), "config_digest": cfg.digest}},
        *(fx._row(i, i in range(22)) for i in range(fx.N))])
    made["E"] = root / "E.score.json"
    res = run_cli("score", "--eval-set", made["eval"], "--run", run, "--corpus", made["corpus"],
                  "--k", "5", "--k", "10", "--no-budget-grid", "--out", made["E"],
                  "--format", "json")
    assert res.exit_code == 0, res.stderr
    return made


def test_no_readout_shows_a_local_model_path(tmp_path):
    made = _local_family(tmp_path)
    raw = json.loads(made["E"].read_text(encoding="utf-8"))["predicate"]["parameters"]
    assert raw["run_config"]["config"]["dense"]["model"] == LOCAL  # the record keeps it
    for audience, out in (("developer", "dev.md"), ("client", "client.md")):
        res = run_cli("report", *(made[n] for n in "ABCDE"), "--baseline", "A",
                      "--audience", audience, "--out", tmp_path / out,
                      "--corpus", made["corpus"])
        assert res.exit_code == 0, res.stderr
        text = (tmp_path / out).read_text(encoding="utf-8") + res.stdout + res.stderr
        assert "/home/alice" not in text and "minilm-finetuned" in text, audience
    dev = (tmp_path / "dev.md").read_text(encoding="utf-8")
    assert "dense model: all-MiniLM-L6-v2 → local model 'minilm-finetuned'" in dev
    res = run_cli("compare", "--baseline", made["B"], "--candidate", made["E"], "--format", "table")
    assert "/home/alice" not in res.stdout + res.stderr
    assert "config.dense.model \"all-MiniLM-L6-v2\" -> local model 'minilm-finetuned'" \
        in res.stdout
