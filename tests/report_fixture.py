"""Score reports of four pipeline configurations whose grounding is set query by query, for
the ``ragspan report`` tests.

30 queries, one contract each, one gold clause at [100, 200) of it. A configuration grounds
query i when i is in its set; otherwise the clause is ranked 7th (a rank miss at k = 5) or
not at all. Every run retrieves five 100-character spans per query at k = 5, so the retrieval
budget never changes.

====  ==========  ===========  ======  ======  ===========
name  chunker     dense        sparse  scope   grounds
====  ==========  ===========  ======  ======  ===========
A     fixed 1000  MiniLM       off     doc_id  0-14 (15)
B     clause      MiniLM       off     doc_id  0-21 (22)   A -> B isolates the chunker (+7)
C     clause      MiniLM       bm25    doc_id  0-17 (18)   B -> C isolates sparse (-4)
D     fixed 1000  MiniLM       bm25    none    0-19 (20)   A -> D changes two levers
====  ==========  ===========  ======  ======  ===========
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli, write_jsonl

N = 30
FILLER = "The parties agree as follows. " * 40  # 1,200 characters
CLAUSE = "Neither party may assign this agreement without the other's written consent. [x]"
assert len(CLAUSE) == 80


def _text(i: int) -> str:
    return FILLER[:100] + CLAUSE + FILLER[:20] + FILLER[100 + 100:] + f" Contract {i}."


def _config(name: str, chunker: str, sparse: bool, scope: str) -> dict:
    from ragspan.retrieval.chunkers import ChunkerSpec
    from ragspan.retrieval.config import DenseSpec, PipelineConfig, SparseSpec

    cfg = PipelineConfig(name=name, depth=10, chunker=ChunkerSpec(kind=chunker, size=1000),
                         dense=DenseSpec(), sparse=SparseSpec() if sparse else None,
                         scope=scope)
    return {"config": cfg.as_json(), "config_digest": cfg.digest}


CONFIGS = {
    "A": (_config("A", "fixed", False, "doc_id"), range(15)),
    "B": (_config("B", "clause", False, "doc_id"), range(22)),
    "C": (_config("C", "clause", True, "doc_id"), range(18)),
    "D": (_config("D", "fixed", True, "none"), range(20)),
}


def _row(i: int, grounded: bool) -> dict:
    doc = f"contract-{i:02d}"
    elsewhere = [{"doc_id": doc, "start": s, "end": s + 100} for s in (300, 400, 500, 600, 700)]
    gold = {"doc_id": doc, "start": 100, "end": 200}
    if grounded:
        ranked = [gold, *elsewhere[:4]]
    elif i % 2:
        ranked = [*elsewhere, {"doc_id": doc, "start": 800, "end": 900}, gold]  # 7th
    else:
        ranked = elsewhere
    return {"id": f"q{i:02d}", "retrieved": ranked}


def build(root: Path) -> dict[str, Path]:
    """Write the corpus, the eval set, each configuration's run and score report under
    ``root``; returns the score reports by configuration name, and ``eval``/``corpus``."""
    corpus = write_jsonl(root / "corpus.jsonl", [
        {"id": f"contract-{i:02d}", "text": _text(i)} for i in range(N)])
    categories = ("Anti-Assignment", "Governing Law", "Audit Rights")
    evalset = write_jsonl(root / "eval.jsonl", [
        {"id": f"q{i:02d}", "query": f"Which clause restricts assignment in contract {i}?",
         "gold_spans": [{"doc_id": f"contract-{i:02d}", "start": 100, "end": 180}],
         "tags": {"category": categories[i % 3]}} for i in range(N)])
    out: dict[str, Path] = {"eval": evalset, "corpus": corpus}
    for name, (header, grounds) in CONFIGS.items():
        run = write_jsonl(root / f"{name}.run.jsonl", [
            {"_header": header}, *(_row(i, i in grounds) for i in range(N))])
        score = root / f"{name}.score.json"
        res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus,
                      "--k", "5", "--k", "10", "--no-budget-grid", "--out", score,
                      "--format", "json")
        assert res.exit_code == 0, res.stderr
        out[name] = score
    return out


def summary(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))["predicate"]["summary"]
