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


# ---- the readers of what applications and other tools write (docs/security.md, "Bounds") ----

TEXT = ("The Supplier shall deliver the Goods within thirty days of each written order. "
        "Payment is due within sixty days of delivery.")


def _trace_workspace(tmp: Path) -> dict[str, Path]:
    """One question, its trace as OTLP JSON (a root span and a retriever span whose two
    documents carry metadata JSON), as Phoenix's JSON lines, and as a validate input with
    list tags."""
    corpus = tmp / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "c", "text": TEXT}) + "\n", encoding="utf-8")
    s = TEXT.index("Payment")
    evalset = tmp / "eval.jsonl"
    evalset.write_text(json.dumps({"id": "q1", "query": "When is payment due?", "doc_id": "c",
                                   "gold_spans": [[s, len(TEXT)]],
                                   "tags": {"facts": '["f1"]',
                                            "cross_references": '["sixty days"]'}}) + "\n",
                       encoding="utf-8")
    facts = tmp / "facts.jsonl"
    facts.write_text(json.dumps({"id": "f1", "text": "sixty days", "doc_id": "c"}) + "\n",
                     encoding="utf-8")

    def attr(key: str, value: Any) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    docs = [attr("openinference.span.kind", "RETRIEVER"), attr("input.value", "payment?")]
    for i, part in enumerate((TEXT[:s].strip(), TEXT[s:])):
        docs += [attr(f"retrieval.documents.{i}.document.content", part),
                 attr(f"retrieval.documents.{i}.document.metadata",
                      json.dumps({"doc_id": "c", "start_index": TEXT.index(part)}))]
    spans = [{"traceId": "a" * 32, "spanId": "b" * 16, "name": "agent",
              "startTimeUnixNano": "1000",
              "attributes": [attr("openinference.span.kind", "AGENT"),
                             attr("input.value", "When is payment due?")]},
             {"traceId": "a" * 32, "spanId": "c" * 16, "parentSpanId": "b" * 16,
              "name": "retrieve", "startTimeUnixNano": "2000", "attributes": docs}]
    otlp = tmp / "trace.jsonl"
    otlp.write_text(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [
        {"scope": {"name": "t"}, "spans": spans}]}]}) + "\n", encoding="utf-8")
    phoenix = tmp / "phoenix.jsonl"
    rows = [{"context": {"trace_id": "a" * 32, "span_id": sp["spanId"]},
             "parent_id": sp.get("parentSpanId"), "name": sp["name"],
             "start_time": "2026-12-05T11:34:32.320221Z",
             "attributes": {kv["key"]: kv["value"]["stringValue"] for kv in sp["attributes"]}}
            for sp in spans]
    phoenix.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {"corpus": corpus, "eval": evalset, "facts": facts, "otlp": otlp,
            "phoenix": phoenix, "out": tmp / "run.jsonl"}


TRACE_TARGETS = {
    "otlp": lambda w, f: ("import", "traces", "--otlp", f, "--eval-set", w["eval"],
                          "--corpus", w["corpus"], "--out", w["out"]),
    "phoenix": lambda w, f: ("import", "traces", "--otlp", f, "--eval-set", w["eval"],
                             "--corpus", w["corpus"], "--out", w["out"]),
    "eval": lambda w, f: ("validate", "--eval-set", f, "--corpus", w["corpus"], "--facts",
                          w["facts"]),
}


def _fuzz_file(name: str, target: str, tmp_path_factory: Any, compress: bool = False) -> None:
    """Mutations of one file (its JSON values or its bytes, gzip-compressed after the
    mutation when ``compress``): the command ends in 0 or 3 (one line), never a crash."""
    import gzip

    tmp = tmp_path_factory.mktemp(f"fuzz-{name}")
    ws = _trace_workspace(tmp)
    text = ws[target].read_text(encoding="utf-8")
    path = tmp / f"mutated-{name}"
    seen: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=mutated(text))
    def check(data: bytes) -> None:
        path.write_bytes(gzip.compress(data) if compress else data)
        res = run_cli(*TRACE_TARGETS[target](ws, path))
        assert res.exit_code in (0, 3), (res.exit_code, res.stderr)
        if res.exit_code == 3:
            lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
        seen.append(res.exit_code)

    check()
    assert seen and 3 in seen
    print(f"fuzz {name}: {len(seen)} examples, exit codes {dict(sorted(Counter(seen).items()))}")


def test_fuzz_otlp_json_traces(tmp_path_factory):
    _fuzz_file("otlp", "otlp", tmp_path_factory)


def test_fuzz_gzip_traces(tmp_path_factory):
    _fuzz_file("otlp-gz", "otlp", tmp_path_factory, compress=True)


def test_fuzz_phoenix_traces(tmp_path_factory):
    _fuzz_file("phoenix", "phoenix", tmp_path_factory)


def test_fuzz_validate_tags(tmp_path_factory):
    _fuzz_file("tags", "eval", tmp_path_factory)


def test_fuzz_protobuf_traces(tmp_path_factory):
    """The same trace written by opentelemetry-proto's own serializer, its bytes mutated
    (flipped, inserted, cut) and framed as the Collector frames them."""
    import pytest

    pytest.importorskip("opentelemetry.proto")
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    tmp = tmp_path_factory.mktemp("fuzz-proto")
    ws = _trace_workspace(tmp)
    message = Parse(ws["otlp"].read_text(encoding="utf-8"), TracesData()).SerializeToString()
    path = tmp / "trace.pb"
    seen: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(at=st.integers(0, len(message)), how=st.sampled_from(["flip", "insert", "cut"]),
           junk=st.binary(min_size=1, max_size=6), framed=st.booleans())
    def check(at: int, how: str, junk: bytes, framed: bool) -> None:
        data = bytearray(message)
        if how == "flip" and at < len(data):
            data[at] ^= junk[0] or 1
        elif how == "insert":
            data[at:at] = junk
        else:
            data = data[:at]
        body = bytes(data)
        path.write_bytes(len(body).to_bytes(4, "big") + body if framed else body)
        res = run_cli(*TRACE_TARGETS["otlp"](ws, path))
        assert res.exit_code in (0, 3), (res.exit_code, res.stderr)
        assert "Traceback" not in res.stderr
        seen.append(res.exit_code)

    check()
    assert seen and 3 in seen
    print(f"fuzz protobuf: {len(seen)} examples, exit codes {dict(sorted(Counter(seen).items()))}")


def test_fuzz_pdf_and_snapshot_bytes(tmp_path_factory):
    """A real PDF (pypdf's writer) and a real tar snapshot (tarfile's), bytes flipped,
    inserted and cut: the PDF reader and the archive check end in a text or one InputError,
    never another exception."""
    import io
    import tarfile

    from ragspan.base.errors import InputError
    from ragspan.io.pdf import extract_pdf_text
    from ragspan.io.readonly import check_archive
    from test_corpus import _text_bomb

    tmp = tmp_path_factory.mktemp("fuzz-pdf")
    _text_bomb(tmp / "real.pdf", 3)  # pypdf's writer: one page, one compressed stream
    buf = io.BytesIO((tmp / "real.pdf").read_bytes())
    pdf = buf.getvalue()
    tar_buf = io.BytesIO()
    with tarfile.open(fileobj=tar_buf, mode="w") as tar:
        for name, body in (("edge_config.json", b"{}"), ("segments/a.dat", b"x" * 600)):
            m = tarfile.TarInfo(name)
            m.size = len(body)
            tar.addfile(m, io.BytesIO(body))
    snapshot = tar_buf.getvalue()
    outcomes: Counter = Counter()

    @settings(max_examples=EXAMPLES * 2, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(which=st.sampled_from(["pdf", "tar"]), at=st.floats(0, 1),
           how=st.sampled_from(["flip", "insert", "cut"]), junk=st.binary(min_size=1,
                                                                         max_size=6))
    def check(which: str, at: float, how: str, junk: bytes) -> None:
        data = bytearray(pdf if which == "pdf" else snapshot)
        i = int(at * len(data))
        if how == "flip" and i < len(data):
            data[i] ^= junk[0] or 1
        elif how == "insert":
            data[i:i] = junk
        else:
            data = data[:i]
        try:
            if which == "pdf":
                extract_pdf_text(tmp / "f.pdf", bytes(data))
            else:
                (tmp / "s.snapshot").write_bytes(bytes(data))
                check_archive(str(tmp / "s.snapshot"))
            outcomes[(which, "read")] += 1
        except InputError:
            outcomes[(which, "refused")] += 1

    check()
    assert outcomes[("pdf", "refused")] and outcomes[("tar", "refused")], outcomes
    print(f"fuzz pdf and snapshot: {dict(sorted(outcomes.items()))}")
