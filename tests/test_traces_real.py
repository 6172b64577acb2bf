"""Traces as the real instrumentation writes them: LangChain and LlamaIndex agents
(``tests/trace_agents.py``) run under ``openinference-instrumentation-langchain`` and
``-llama-index``, exported by the real OpenTelemetry SDK in every shape users have, then
imported: each import scores exactly as the run of what each agent returned to the model.

Shapes: the SDK's ``ConsoleSpanExporter`` (its own output, pretty-printed and concatenated,
and one object per line); OTLP protobuf from the SDK's own encoder
(``opentelemetry.exporter.otlp.proto.common``: one bare ``ExportTraceServiceRequest``, and
one message per trace each preceded by its 4-byte length as the Collector's file exporter
writes them); OTLP JSON from that message through protobuf's JSON mapping (base64 ids, as
``MessageToJson`` writes them) and with the ids in hex as the OTLP/JSON spec and the
Collector write them, one request per line, and gzip-compressed; Phoenix's span export (each
span with ``context``, ``parent_id``, ``span_kind`` and its attributes nested, as Phoenix's
REST API returns them)."""

from __future__ import annotations

import base64
import gzip
import io
import json
import sys

import pytest

from conftest import ROOT, report_rows, run_cli, write_jsonl

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")
pytest.importorskip("openinference.instrumentation.langchain")
pytest.importorskip("openinference.instrumentation.llama_index")
pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

sys.path.insert(0, str(ROOT / "tests"))
import trace_agents  # noqa: E402

QUESTIONS = {  # id: (question, agent, gold texts)
    "law": ("Which laws govern this agreement?", "lc_plain",
            [("msa", "governed by the laws of the State of Delaware")]),
    "two": ("Which laws govern the agreement and what is owed?", "lc_two_steps",
            [("msa", "governed by the laws"), ("sow", "monthly fee of ten thousand dollars")]),
    "nested": ("What monthly fee does the customer owe under this agreement?", "lc_nested",
               [("sow", "monthly fee of ten thousand dollars")]),
    "term": ("How long is confidential information kept secret?", "li_nested",
             [("nda", "term of two years")]),
    "rerank": ("Confidential information disclosure term years", "li_reranked",
               [("nda", "term of two years")]),
}


def _spans_as_phoenix(spans) -> str:
    """Phoenix's span export: one span per line, ids in hex, attributes nested."""
    def nest(flat):
        out: dict = {}
        for key, value in flat.items():
            parts, node = key.split("."), out
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        return _lists(out)

    def _lists(node):
        if isinstance(node, dict):
            node = {k: _lists(v) for k, v in node.items()}
            if node and all(k.isdigit() for k in node):
                return [node[k] for k in sorted(node, key=int)]
        return node

    lines = []
    for s in spans:
        attrs = dict(s.attributes)
        lines.append(json.dumps({
            "name": s.name, "context": {"trace_id": f"{s.context.trace_id:032x}",
                                        "span_id": f"{s.context.span_id:016x}"},
            "parent_id": f"{s.parent.span_id:016x}" if s.parent else None,
            "span_kind": attrs.get("openinference.span.kind", "UNKNOWN"),
            "start_time": f"2026-12-05T10:00:00.{s.start_time // 1000 % 1_000_000:06d}Z",
            "attributes": nest(attrs)}))
    return "\n".join(lines) + "\n"


def _hex_ids(doc):
    """protobuf's JSON mapping writes bytes in base64; OTLP/JSON writes ids in hex."""
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if sp.get(key):
                        sp[key] = base64.b64decode(sp[key]).hex()
    return doc


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """Every agent run once per question under the instrumentors; every shape written."""
    from google.protobuf.json_format import MessageToDict, MessageToJson
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    tmp = tmp_path_factory.mktemp("traces")
    memory, pretty, oneline = InMemorySpanExporter(), io.StringIO(), io.StringIO()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=pretty)))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(
        out=oneline, formatter=lambda s: s.to_json(indent=None) + "\n")))
    lc, li = LangChainInstrumentor(), LlamaIndexInstrumentor()
    lc.instrument(tracer_provider=provider)
    li.instrument(tracer_provider=provider)
    try:
        for question, agent, _ in QUESTIONS.values():
            obj = getattr(trace_agents, agent)
            obj.invoke(question) if agent.startswith("lc_") else obj.query(question)
    finally:
        lc.uninstrument()
        li.uninstrument()
    spans = memory.get_finished_spans()
    request = encode_spans(spans)
    by_trace: dict[int, list] = {}
    for s in spans:
        by_trace.setdefault(s.context.trace_id, []).append(s)
    files = {
        "console": pretty.getvalue(), "console-lines": oneline.getvalue(),
        "otlp-protobuf": request.SerializeToString(),
        "otlp-protobuf-framed": b"".join(
            len(m).to_bytes(4, "big") + m for m in
            (encode_spans(group).SerializeToString() for group in by_trace.values())),
        "otlp-json-base64": MessageToJson(request),
        "otlp-json": "".join(json.dumps(_hex_ids(MessageToDict(encode_spans(group)))) + "\n"
                             for group in by_trace.values()),
        "phoenix": _spans_as_phoenix(spans),
    }
    files["otlp-json-gz"] = gzip.compress(files["otlp-json"].encode("utf-8"), mtime=0)
    paths = {}
    for name, data in files.items():
        path = tmp / f"traces-{name}.bin"
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        paths[name] = path
    corpus = write_jsonl(tmp / "corpus.jsonl", [{"id": d, "text": t}
                                                for d, t in trace_agents.TEXTS.items()])
    rows = []
    for qid, (question, _, gold) in QUESTIONS.items():
        spans_ = [{"doc_id": d, "start": trace_agents.TEXTS[d].index(t),
                   "end": trace_agents.TEXTS[d].index(t) + len(t)} for d, t in gold]
        rows.append({"id": qid, "query": question, "gold_spans": spans_})
    evalset = write_jsonl(tmp / "eval.jsonl", rows)
    truth = write_jsonl(tmp / "truth.jsonl", [
        {"id": qid, "steps": [{"retrieved": [
            {"doc_id": d, "start": s, "end": e, "text": trace_agents.TEXTS[d][s:e]}
            for d, s, e in step]} for step in trace_agents.SEEN[question]]}
        for qid, (question, _, _) in QUESTIONS.items()])
    return {"tmp": tmp, "paths": paths, "corpus": corpus, "eval": evalset, "truth": truth,
            "spans": spans}


def _score(t, run):
    res = run_cli("score", "--eval-set", t["eval"], "--run", run, "--corpus", t["corpus"],
                  "--k", "1", "--k", "3", "--format", "json")
    assert res.exit_code == 0, res.stderr
    return res.json()["predicate"]


def _metrics(pred):
    return {r["id"]: r["metrics"] for r in report_rows(pred)}


SHAPES = {"console": "console", "console-lines": "console", "otlp-protobuf": "otlp-protobuf",
          "otlp-protobuf-framed": "otlp-protobuf", "otlp-json-base64": "otlp-json",
          "otlp-json": "otlp-json", "otlp-json-gz": "otlp-json", "phoenix": "phoenix"}


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_shape_imports_to_what_the_model_saw(traced, name):
    out = traced["tmp"] / f"run-{name}.jsonl"
    res = run_cli("import", "traces", "--traces", traced["paths"][name], "--eval-set",
                  traced["eval"], "--corpus", traced["corpus"], "--out", out,
                  "--format", "json")
    assert res.exit_code == 0, res.stderr
    summary = res.json()["predicate"]["summary"]
    assert summary["shape"] == SHAPES[name]
    assert summary["questions_with_a_trace"] == len(QUESTIONS)
    # LangChain's wrapper called two inner retrievers; LlamaIndex nests retrieve > _retrieve
    assert summary["nested_calls_folded"] >= 2 and summary["reranked_steps"] == 1
    assert summary["placed_by_offsets"] > 0  # the chunks' metadata placed them, no search
    if name == "otlp-json-base64":
        assert any("base64" in n for n in summary["notes"])
    if name == "otlp-json-gz":
        assert "gzip-compressed" in summary["notes"]
    imported, truth = _score(traced, out), _score(traced, traced["truth"])
    assert _metrics(imported) == _metrics(truth)
    assert imported["summary"]["steps"] == truth["summary"]["steps"]


def test_the_truth_differs_from_counting_every_call(traced):
    """The nested question: its inner retrievers saw the fee, the wrapper passed on the law.
    Counting every call (what the importer did) grounds it; the truth does not."""
    truth = _metrics(_score(traced, traced["truth"]))
    assert truth["nested"]["complete_grounding@3"] == 0.0
    every = traced["tmp"] / "every-call.jsonl"
    rows = [json.loads(x) for x in traced["truth"].read_text().splitlines()]
    fee = trace_agents.TEXTS["sow"]
    s = fee.index("monthly fee")
    for row in rows:
        if row["id"] == "nested":
            row["steps"].append({"retrieved": [{"doc_id": "sow", "start": s - 10,
                                                "end": s + 50, "text": fee[s - 10:s + 50]}]})
    write_jsonl(every, rows)
    assert _metrics(_score(traced, every))["nested"]["complete_grounding@3"] == 1.0
    # and the reranked question: the list before the rerank held the gold, the model did not
    assert truth["rerank"]["complete_grounding@1"] == 0.0


def test_questions_matched_by_an_id_in_metadata(traced, tmp_path):
    """--query-id-attribute reaches a key inside OpenInference's metadata JSON attribute."""
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    out = io.StringIO()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
    lc = LangChainInstrumentor()
    lc.instrument(tracer_provider=provider)
    try:
        trace_agents.lc_plain.invoke("a question worded otherwise",
                                     config={"metadata": {"question_id": "law"}})
    finally:
        lc.uninstrument()
    path = tmp_path / "console.json"
    path.write_text(out.getvalue(), encoding="utf-8")
    res = run_cli("import", "traces", "--traces", path, "--eval-set", traced["eval"],
                  "--corpus", traced["corpus"], "--out", tmp_path / "r.jsonl",
                  "--query-id-attribute", "metadata.question_id", "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert res.json()["predicate"]["summary"]["questions_with_a_trace"] == 1


def test_genai_documents_by_id_are_placed_by_chunk_id_or_refused(traced, tmp_path):
    """GenAI retrieval documents carry id and score only: placed as the chunk their id names
    in --chunks, refused with the count without it."""
    chunks = write_jsonl(tmp_path / "chunks.jsonl", [
        {"chunk_id": f"{d}:{s}", "doc_id": d, "start": s, "end": s + len(t)}
        for d, s, t in trace_agents.CHUNKS])
    law = QUESTIONS["law"][0]
    picked = [c for c in trace_agents.CHUNKS if c[0] == "msa"][:2]
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "a" * 32, "spanId": "1" * 16, "name": "agent",
         "attributes": [{"key": "input.value", "value": {"stringValue": law}}]},
        {"traceId": "a" * 32, "spanId": "2" * 16, "parentSpanId": "1" * 16,
         "name": "retrieval", "startTimeUnixNano": "5",
         "attributes": [
             {"key": "gen_ai.operation.name", "value": {"stringValue": "retrieval"}},
             {"key": "gen_ai.retrieval.documents", "value": {"stringValue": json.dumps(
                 [{"id": f"{d}:{s}", "score": 0.9 - i / 10}
                  for i, (d, s, _) in enumerate(picked)])}}]}]}]}]}
    path = tmp_path / "genai.json"
    path.write_text(json.dumps(request), encoding="utf-8")
    common = ["--traces", path, "--eval-set", traced["eval"], "--corpus", traced["corpus"],
              "--out", tmp_path / "r.jsonl"]
    res = run_cli("import", "traces", *common)
    assert res.exit_code == 3 and "2 documents carry no content" in res.stderr
    res = run_cli("import", "traces", *common, "--chunks", chunks, "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert res.json()["predicate"]["summary"]["placed_by_chunk_id"] == 2
    row = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()][1]
    assert [(r["doc_id"], r["start"]) for r in row["steps"][0]["retrieved"]] == \
        [(d, s) for d, s, _ in picked]


@pytest.mark.parametrize("spec, folded", [("trace_agents:lc_nested", 2),
                                          ("trace_agents:li_nested", 1)])
def test_run_retriever_records_the_outermost_call_only(traced, tmp_path, monkeypatch, spec,
                                                       folded):
    """run-retriever --retriever with an agent over a wrapping retriever: one step, the
    wrapper's results, and the report counts the inner calls it folded."""
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    out = tmp_path / "run.jsonl"
    res = run_cli("run-retriever", "--corpus", traced["corpus"], "--eval-set", traced["eval"],
                  "--retriever", spec, "--out", out, "--report", tmp_path / "r.json")
    assert res.exit_code == 0, res.stderr
    report = json.loads((tmp_path / "r.json").read_text())["predicate"]["summary"]
    assert report["agent_steps"]["nested_calls_folded"] >= folded * len(QUESTIONS)
    rows = [json.loads(x) for x in out.read_text().splitlines()][1:]
    assert all(len(r["steps"]) == 1 for r in rows)
    if spec.endswith("lc_nested"):  # the wrapper passes one result on
        assert all(len(r["steps"][0]["retrieved"]) == 1 for r in rows)


def test_run_retriever_records_the_reranked_list(traced, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    out = tmp_path / "run.jsonl"
    res = run_cli("run-retriever", "--corpus", traced["corpus"], "--eval-set", traced["eval"],
                  "--retriever", "trace_agents:li_reranked", "--out", out, "--report",
                  tmp_path / "r.json")
    assert res.exit_code == 0, res.stderr
    report = json.loads((tmp_path / "r.json").read_text())["predicate"]["summary"]
    assert report["agent_steps"]["reranked_steps"] == len(QUESTIONS)
    rows = [json.loads(x) for x in out.read_text().splitlines()][1:]
    assert all(len(r["steps"][0]["retrieved"]) == 1 for r in rows)


def test_a_file_of_no_trace_shape_is_refused(traced, tmp_path):
    for name, data in (("eval", traced["eval"].read_bytes()), ("binary", b"\x00\x01garbage"),
                       ("bad.gz", b"\x1f\x8b\x08not gzip")):
        path = tmp_path / name
        path.write_bytes(data)
        res = run_cli("import", "traces", "--traces", path, "--eval-set", traced["eval"],
                      "--corpus", traced["corpus"], "--out", tmp_path / "r.jsonl")
        assert res.exit_code == 3, (name, res.stderr)
        assert "Traceback" not in res.stderr


def test_phoenix_flat_columns_paths_and_duplicate_ids(traced, tmp_path):
    """Phoenix's span dataframe written as JSON lines (flat ``context.span_id`` and
    ``attributes.*`` columns); a document id that is a file path read as the document of
    its file name, and counted; two spans with one id refused."""
    law = QUESTIONS["law"][0]
    text = trace_agents.TEXTS["msa"]
    s = text.index("governed by")
    rows = [
        {"context.trace_id": "b" * 32, "context.span_id": "1" * 16, "parent_id": None,
         "span_kind": "CHAIN", "start_time": "2026-12-05T10:00:00Z",
         "attributes.input.value": law},
        {"context.trace_id": "b" * 32, "context.span_id": "2" * 16, "parent_id": "1" * 16,
         "span_kind": "RETRIEVER", "start_time": "2026-12-05T10:00:01Z",
         "attributes.input.value": law,
         "attributes.retrieval.documents": [{"document": {
             "id": 17, "content": text[s:s + 60],
             "metadata": {"source": "/data/contracts/msa.pdf", "start_index": s}}}]},
    ]
    path = tmp_path / "phoenix.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = run_cli("import", "traces", "--traces", path, "--eval-set", traced["eval"],
                  "--corpus", traced["corpus"], "--out", tmp_path / "r.jsonl",
                  "--format", "json")
    assert res.exit_code == 0, res.stderr
    summary = res.json()["predicate"]["summary"]
    assert summary["shape"] == "phoenix" and summary["placed_by_offsets"] == 1
    assert summary["doc_ids_from_paths"] == 1 and "file paths" in res.stderr
    rows.append(dict(rows[1]))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = run_cli("import", "traces", "--traces", path, "--eval-set", traced["eval"],
                  "--corpus", traced["corpus"], "--out", tmp_path / "r2.jsonl")
    assert res.exit_code == 3 and "appears twice in trace" in res.stderr


def test_a_varint_delimited_protobuf_stream(traced, tmp_path):
    """The OTLP file exporter spec's protobuf stream: each message preceded by its varint
    length."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    def varint(n: int) -> bytes:
        out = b""
        while True:
            byte, n = n & 0x7F, n >> 7
            out += bytes([byte | (0x80 if n else 0)])
            if not n:
                return out

    by_trace: dict[int, list] = {}
    for s in traced["spans"]:
        by_trace.setdefault(s.context.trace_id, []).append(s)
    messages = [encode_spans(g).SerializeToString() for g in by_trace.values()]
    path = tmp_path / "stream.pb"
    path.write_bytes(b"".join(varint(len(m)) + m for m in messages))
    res = run_cli("import", "traces", "--traces", path, "--eval-set", traced["eval"],
                  "--corpus", traced["corpus"], "--out", tmp_path / "r.jsonl",
                  "--format", "json")
    assert res.exit_code == 0, res.stderr
    summary = res.json()["predicate"]["summary"]
    assert summary["shape"] == "otlp-protobuf"
    assert summary["notes"] == [f"varint-delimited stream of {len(messages)} messages"]
