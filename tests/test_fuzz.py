"""Property-based fuzzing of every reader through the command line: valid eval-set, run,
qrels and report files are mutated (a value replaced by any JSON value, a key dropped or
added, bytes inserted or cut) and the command must end in 0 (or 4, a finding) or 3 with one
error line, never a crash (exit 1). Bounded in the suite; ``RAGSPAN_FUZZ_EXAMPLES=N``
runs it longer."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, run_cli

GATE = ROOT / "tests" / "fixtures" / "gate"
EXAMPLES = int(os.environ.get("RAGSPAN_FUZZ_EXAMPLES", "25"))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=6,
)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _set(obj: Any, path: tuple, value: Any, drop: bool) -> Any:
    if not path:
        return value
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return obj


@st.composite
def mutated(draw: Any, text: str) -> bytes:
    """One line of a JSONL (or JSON) text changed in one of several ways."""
    lines = text.splitlines()
    i = draw(st.integers(0, len(lines) - 1))
    how = draw(st.sampled_from(["value", "drop", "add", "bytes", "cut"]))
    if how in ("bytes", "cut"):
        raw = text.encode("utf-8")
        at = draw(st.integers(0, len(raw)))
        if how == "cut":
            return raw[:at]
        return raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at:]
    obj = json.loads(lines[i])
    if how == "add" and isinstance(obj, dict):
        obj[draw(st.text(max_size=8))] = draw(json_values)
    else:
        paths = _paths(obj)
        path = draw(st.sampled_from(paths[1:] if how == "drop" and len(paths) > 1 else paths))
        obj = _set(obj, path, draw(json_values), drop=how == "drop" and bool(path))
    lines[i] = json.dumps(obj)
    return ("\n".join(lines) + "\n").encode("utf-8")


def _workspace(tmp: Path) -> dict[str, Path]:
    for name in ("eval.jsonl", "corpus.jsonl", "run-baseline.jsonl", "baseline.json",
                 "candidate-fail.json"):
        shutil.copy(GATE / name, tmp / name)
    (tmp / "qrels.jsonl").write_text('{"id": "1", "relevance": {"d1": 1, "d2": 0}}\n'
                                     '{"id": "2", "relevant_ids": ["d2"]}\n', encoding="utf-8")
    (tmp / "run.trec").write_text("1 Q0 d1 1 2.0 t\n2 Q0 d2 1 3.0 t\n", encoding="utf-8")
    return {"eval": tmp / "eval.jsonl", "corpus": tmp / "corpus.jsonl",
            "run": tmp / "run-baseline.jsonl", "base": tmp / "baseline.json",
            "cand": tmp / "candidate-fail.json", "qrels": tmp / "qrels.jsonl",
            "trec": tmp / "run.trec"}


TARGETS = {
    "eval": lambda w: ("score", "--eval-set", w["eval"], "--run", w["run"], "--corpus",
                       w["corpus"], "--k", "1"),
    "run": lambda w: ("score", "--eval-set", w["eval"], "--run", w["run"], "--k", "1"),
    "corpus": lambda w: ("validate", "--eval-set", w["eval"], "--corpus", w["corpus"]),
    "qrels": lambda w: ("score", "--qrels", w["qrels"], "--run", w["trec"], "--k", "1"),
    "cand": lambda w: ("compare", "--baseline", w["base"], "--candidate", w["cand"],
                       "--allow-identical", "--permutations", "50", "--bootstrap", "50"),
}


def _fuzz(target: str, tmp_path_factory: Any) -> None:
    tmp = tmp_path_factory.mktemp(f"fuzz-{target}")
    ws = _workspace(tmp)
    text = ws[target].read_text(encoding="utf-8")
    if target == "cand":  # one JSON document: mutate it as one line
        text = json.dumps(json.loads(text))
    seen: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=mutated(text))
    def check(data: bytes) -> None:
        ws[target].write_bytes(data)
        res = run_cli(*TARGETS[target](ws))  # a crash raises here and fails the test
        allowed = (0, 3, 4) if target in ("cand", "corpus") else (0, 3)
        assert res.exit_code in allowed, (res.exit_code, res.stderr)
        if res.exit_code == 3 and target != "corpus":
            lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and ws[target].name in lines[0], res.stderr
        seen.append(res.exit_code)

    check()
    assert seen and 3 in seen  # the mutations do reach the error paths
    print(f"fuzz {target}: {len(seen)} examples, exit codes "
          f"{dict(sorted(Counter(seen).items()))}")


def test_fuzz_eval_set(tmp_path_factory):
    _fuzz("eval", tmp_path_factory)


def test_fuzz_span_run(tmp_path_factory):
    _fuzz("run", tmp_path_factory)


def test_fuzz_corpus(tmp_path_factory):
    _fuzz("corpus", tmp_path_factory)


def test_fuzz_qrels(tmp_path_factory):
    _fuzz("qrels", tmp_path_factory)


def test_fuzz_report(tmp_path_factory):
    _fuzz("cand", tmp_path_factory)
