"""Every value read from a score report is input: each field of a full-featured report (texts
placed and dropped, a chunk manifest, latency, a pipeline configuration, tags and slices,
a candidate that searched in steps)
replaced by a value of the wrong type is exit 3 naming the file and the field, for
``compare`` (also verified) and ``report``; each field removed is a verdict or exit 3, never
a traceback. The one reader is the schema (``schemas/report-envelope.v2.json``) checked by
``envelope.load_report``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import Contracts, run_cli, write_jsonl

CONFIG = {"name": "fuzz", "depth": 3, "fusion_k": 60, "scope": "doc_id",
          "chunker": {"kind": "fixed", "size": 200, "overlap": 0, "snap": False},
          "dense": None, "rerank": None,
          "sparse": {"backend": "bm25s", "k1": 1.5, "b": 0.75, "depth": 50}}


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("fields")
    c = Contracts(tmp)
    rows = [json.loads(x) for x in c.evalset.read_text("utf-8").splitlines()]
    evalset = write_jsonl(tmp / "eval.jsonl", [
        {**r, "tags": {"team": "ab"[i % 2]}} for i, r in enumerate(rows)])
    out: dict[str, Path] = {"eval": evalset, "corpus": c.corpus}
    for side, junk in (("base", False), ("cand", True)):
        run = [{"_header": {"config_digest": ("1" if junk else "2") * 64,
                            "config": {**CONFIG, "name": side}}}]
        chunks = []
        for i, (d, (lo, hi)) in enumerate(c.gold.items()):
            items = [{"doc_id": d, "text": c.clause(d)}, {"doc_id": d, "start": 0, "end": 20}]
            if junk and i % 3 == 0:
                items.insert(0, {"text": f"nothing like any contract {i} " * 3})
            row: dict[str, Any] = {"id": f"q{d}", "retrieved": items, "latency_ms": 5.0 + i}
            if junk:  # the candidate searched twice (a run with steps: summary.steps)
                row = {"id": f"q{d}", "steps": [{"query": "first", "retrieved": items[:1]},
                                                {"query": "again", "retrieved": items[1:]}],
                       "latency_ms": 5.0 + i}
            run.append(row)
            chunks += [{"doc_id": d, "chunk_id": f"{d}:0", "start": 0, "end": 20},
                       {"doc_id": d, "chunk_id": f"{d}:1", "start": lo, "end": hi}]
        out[f"run-{side}"] = write_jsonl(tmp / f"run-{side}.jsonl", run)
        out[f"chunks-{side}"] = write_jsonl(tmp / f"chunks-{side}.jsonl", chunks)
        out[side] = tmp / f"{side}.json"
        res = run_cli("score", "--eval-set", evalset, "--run", out[f"run-{side}"], "--corpus",
                      c.corpus, "--chunks", out[f"chunks-{side}"], "--k", "1", "--k", "2",
                      # one character cutoff stands for the grid's eight: every kind of
                      # field is there, at a third of the fields to walk
                      "--no-budget-grid", "--k", "500c",
                      "--unplaced", "drop", "--out", out[side])
        assert res.exit_code == 0, res.stderr
    return out


def paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path of ``obj``; of a list, its first element's only (one row stands for its
    shape)."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += paths(v, (*prefix, k))
    elif isinstance(obj, list) and obj:
        out += paths(obj[0], (*prefix, 0))
    return out


def wrong(value: Any) -> Any:
    """A value of another JSON type than ``value``'s (of a null, an object: a null stands
    for a nullable text or number, and no such field takes an object)."""
    if value is None:
        return {"a": 1}
    if isinstance(value, bool):
        return "x"
    if isinstance(value, (int, float)):
        return "x"
    if isinstance(value, str):
        return 5
    if isinstance(value, list):
        return {"a": 1}
    return ["a"]


def mutate(doc: dict, path: tuple, drop: bool) -> dict:
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = wrong(parent[path[-1]])
    return doc


def field_paths(doc: dict) -> list[tuple]:
    pred = doc["predicate"]
    return [("predicate", *p) for part in ("parameters", "summary", "details")
            for p in paths(pred[part], (part,))]


def shown(path: tuple) -> str:
    """The field as the error names it: ``summary.chunking.chunks`` (keys only)."""
    return ".".join(str(p) for p in path[1:] if not isinstance(p, int)).split(".", 1)[-1]


READOUT_ONLY = ("predicate", "parameters", "run_config", "config")  # a run's own header


@pytest.mark.slow
def test_every_field_of_the_wrong_type_is_an_input_error_naming_it(scored, tmp_path):
    """Each reader refuses what it reads: the pipeline configuration a run recorded is the
    readout's alone (compare never reads it; a run's header is the run's, so the schema
    holds it as an object and the readout checks the keys it reads)."""
    cand = json.loads(scored["cand"].read_text("utf-8"))
    fields = field_paths(cand)
    assert len(fields) > 150  # the full-featured report: placement, chunking, latency, ...
    bad = tmp_path / "cand.json"
    failures = []
    for path in fields:
        bad.write_text(json.dumps(mutate(cand, path, drop=False)), encoding="utf-8")
        for args in (("compare", "--baseline", scored["base"], "--candidate", bad,
                      "--no-config", "--allow-budget-change", "--allow-identical"),
                     ("report", scored["base"], bad, "--out", tmp_path / "r.md")):
            if args[0] == "compare" and path[:len(READOUT_ONLY)] == READOUT_ONLY:
                continue
            res = run_cli(*args)
            last = (res.stderr.strip().splitlines() or [""])[-1]
            if res.exit_code != 3 or "cand.json" not in last or "Traceback" in res.stderr:
                failures.append((path, args[0], res.exit_code, last[-160:]))
    assert not failures, "\n".join(map(str, failures))


@pytest.mark.slow
def test_every_field_removed_is_a_verdict_or_an_input_error(scored, tmp_path):
    cand = json.loads(scored["cand"].read_text("utf-8"))
    bad = tmp_path / "cand.json"
    failures = []
    for path in field_paths(cand):
        bad.write_text(json.dumps(mutate(cand, path, drop=True)), encoding="utf-8")
        for args in (("compare", "--baseline", scored["base"], "--candidate", bad,
                      "--no-config", "--allow-budget-change", "--allow-identical"),
                     ("report", scored["base"], bad, "--out", tmp_path / "r.md")):
            try:
                res = run_cli(*args)
            except Exception as exc:  # a crash: exit 1 with a traceback on the command line
                failures.append((path, args[0], 1, repr(exc)))
                continue
            if res.exit_code not in (0, 3, 4) or "Traceback" in res.stderr:
                failures.append((path, args[0], res.exit_code, res.stderr[-200:]))
    assert not failures, "\n".join(map(str, failures))


def test_verified_compare_names_the_file_for_any_parameter_of_the_wrong_type(scored, tmp_path):
    """A candidate whose parameters.anchoring, grounding_threshold or relevance_level had a
    wrong type crashed verified compare (exit 1); a bad value came out as a usage error about
    a flag nobody gave (exit 2)."""
    cand = json.loads(scored["cand"].read_text("utf-8"))
    verify = ("--eval-set", scored["eval"], "--corpus", scored["corpus"], "--baseline-run",
              scored["run-base"], "--candidate-run", scored["run-cand"], "--baseline-chunks",
              scored["chunks-base"], "--candidate-chunks", scored["chunks-cand"])
    bad = tmp_path / "cand.json"
    cases = [("anchoring", "strict"), ("grounding_threshold", "0.5"),
             ("relevance_level", [1]), ("anchoring", {**cand["predicate"]["parameters"][
                 "anchoring"], "on_ambiguous": "frist"}), ("tokenizer", 7), ("k", ["1", "x"])]
    for key, value in cases:
        doc = copy.deepcopy(cand)
        doc["predicate"]["parameters"][key] = value
        bad.write_text(json.dumps(doc), encoding="utf-8")
        res = run_cli("compare", "--baseline", scored["base"], "--candidate", bad,
                      "--no-config", "--allow-budget-change", *verify)
        assert res.exit_code == 3, (key, value, res.exit_code, res.stderr)
        assert "cand.json" in res.stderr and f"parameters.{key}" in res.stderr, res.stderr
