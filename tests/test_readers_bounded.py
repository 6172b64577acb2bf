"""Every reader bounded (docs/security.md, "Bounds"): trace files, tags and attributes read in
linear time and bounded memory, whole or refused in one line. The inputs here are what
careless tools and attackers produce (a gzip bomb, two gzip members, 15 million empty
protobuf spans, ancestry chains, JSON nested past any reason), each built by hand because no
library writes them; the real exporters' own files are read in tests/test_traces_real.py."""

from __future__ import annotations

import gzip
import json
import time

import pytest

from conftest import assert_input_error, patch_everywhere, run_cli, write_jsonl

TEXT = ("The Supplier shall deliver the Goods within thirty days of each written order. "
        "Payment is due within sixty days of delivery. This agreement is governed by the "
        "laws of the State of New York.")
CLAUSE = "Payment is due within sixty days of delivery."


def attr(key, value):
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def _span(n, parent, kind, extra=(), start=1000):
    attrs = [attr("openinference.span.kind", kind), *extra]
    span = {"traceId": f"{1:032x}", "spanId": f"{n:016x}", "name": kind.lower(),
            "startTimeUnixNano": str(start), "attributes": attrs}
    if parent is not None:
        span["parentSpanId"] = f"{parent:016x}"
    return span


def _request(spans):
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"},
                                                              "spans": spans}]}]}


def _docs(prefix, texts):
    out = []
    for i, t in enumerate(texts):
        out += [attr(f"{prefix}{i}.document.id", "contract"),
                attr(f"{prefix}{i}.document.content", t)]
    return out


@pytest.fixture
def one(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "contract", "text": TEXT}])
    s = TEXT.index(CLAUSE)
    ev = write_jsonl(tmp_path / "eval.jsonl", [{"id": "q1", "query": "When is payment due?",
                                               "doc_id": "contract",
                                               "gold_spans": [[s, s + len(CLAUSE)]]}])
    return tmp_path, corpus, ev


def _spans(question="When is payment due?", docs=(CLAUSE,)):
    return [_span(1, None, "AGENT", [attr("input.value", question)]),
            _span(2, 1, "RETRIEVER", [attr("input.value", question),
                                      *_docs("retrieval.documents.", docs)], start=2000)]


def _import(tmp, corpus, ev, trace, *extra):
    out = tmp / "run.jsonl"
    return run_cli("import", "traces", "--otlp", trace, "--eval-set", ev, "--corpus", corpus,
                   "--out", out, *extra)


# ---- 1. streams with bounds ----------------------------------------------------------------


def test_a_gzip_bomb_is_refused_at_its_bound_and_the_bound_can_be_raised(one):
    tmp, corpus, ev = one
    body = (json.dumps(_request(_spans())) + "\n").encode()
    bomb = tmp / "bomb.gz"
    with gzip.open(bomb, "wb") as fh:  # a valid request, then 300 MB of blank lines
        fh.write(body)
        for _ in range(300):
            fh.write(b"\n" * (1 << 20))
    t0 = time.perf_counter()
    res = _import(tmp, corpus, ev, bomb)
    assert_input_error(res, "bomb.gz", "inflates past 67,108,864 bytes",
                       "--max-inflated-bytes raises it")
    assert time.perf_counter() - t0 < 30  # refused at the bound, never inflated whole
    # at the bound and just past it
    small = tmp / "small.gz"
    small.write_bytes(gzip.compress(body))
    assert _import(tmp, corpus, ev, small, "--max-inflated-bytes", str(len(body))).exit_code == 0
    assert_input_error(_import(tmp, corpus, ev, small, "--max-inflated-bytes",
                               str(len(body) - 1)), f"inflates past {len(body) - 1:,} bytes "
                       "(--max-inflated-bytes)")


def test_every_gzip_member_is_read_and_trailing_bytes_are_refused(one):
    """``cat a.gz b.gz``: the second member's question was dropped with exit 0."""
    tmp, corpus, ev = one
    s = TEXT.index(CLAUSE)
    ev = write_jsonl(tmp / "eval2.jsonl", [
        {"id": "q1", "query": "When is payment due?", "doc_id": "contract",
         "gold_spans": [[s, s + len(CLAUSE)]]},
        {"id": "q2", "query": "Which law governs?", "doc_id": "contract",
         "gold_spans": [[TEXT.index("This agreement"), len(TEXT)]]}])
    second = [dict(sp, traceId=f"{2:032x}") for sp in _spans("Which law governs?")]
    two = tmp / "two.gz"
    two.write_bytes(gzip.compress((json.dumps(_request(_spans())) + "\n").encode())
                    + gzip.compress((json.dumps(_request(second)) + "\n").encode()))
    res = _import(tmp, corpus, ev, two, "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert [json.loads(x)["id"] for x in (tmp / "run.jsonl").read_text().splitlines()[1:]] \
        == ["q1", "q2"]
    assert "gzip-compressed, 2 members" in res.stderr
    junk = tmp / "junk.gz"
    junk.write_bytes(two.read_bytes() + b"trailing garbage")
    assert_input_error(_import(tmp, corpus, ev, junk), "junk.gz", "16 bytes after the gzip "
                       "stream's 2 members are not gzip")
    cut = tmp / "cut.gz"
    cut.write_bytes(two.read_bytes()[:-30])
    assert_input_error(_import(tmp, corpus, ev, cut), "cut.gz", "member 2")


def _varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def test_protobuf_spans_are_counted_before_they_are_parsed(one):
    """15 million empty spans in 30 MB were parsed whole (2.8 GB), then a MemoryError
    traceback: now refused from their wire bytes, at the bound and not before."""
    pytest.importorskip("opentelemetry.proto")
    from ragspan.io.runs.trace_proto import count_spans

    tmp, corpus, ev = one

    def message(n):
        spans = b"\x12\x00" * n
        scope = b"\x12" + _varint(len(spans)) + spans
        return b"\x0a" + _varint(len(scope)) + scope

    assert count_spans(message(5), 10) == 5
    assert count_spans(message(11), 10) == 11  # stops once past the limit
    assert count_spans(b"\x0a\x05ab", 10) is None  # not a message
    many = tmp / "many.pb"
    many.write_bytes(message(15_000_000))
    t0 = time.perf_counter()
    assert_input_error(_import(tmp, corpus, ev, many), "many.pb", "more than 1,000,000 spans "
                       "(counted before parsing)")
    assert time.perf_counter() - t0 < 30


# ---- 2. linear assembly --------------------------------------------------------------------


def test_a_deep_ancestry_and_many_rerankers_take_linear_time(one, monkeypatch):
    """5,000 rerankers at the bottom of a chain of 10,000 nested spans, beside 200 retriever
    calls: each reranker's ancestry was walked whole, and the pairing scanned every step
    (an 8 MB trace took 106 s). Each span's ancestry is now walked once."""
    tmp, corpus, ev = one
    chain = [_span(10 + i, 9 + i if i else 1, "CHAIN", start=3000 + i) for i in range(10_000)]
    steps = [_span(100_000 + i, 1, "RETRIEVER", _docs("retrieval.documents.", [CLAUSE]),
                   start=50_000 + 2 * i) for i in range(200)]
    rerank = [_span(200_000 + i, 10_009, "RERANKER", [], start=60_000 + i)
              for i in range(5_000)]
    trace = tmp / "deep.json"
    trace.write_text(json.dumps(_request(_spans() + chain + steps + rerank)), encoding="utf-8")
    from ragspan.io.runs import trace_documents

    calls = []
    real = trace_documents.role
    patch_everywhere(monkeypatch, trace_documents, "role",
                     lambda span: calls.append(1) or real(span))
    res = _import(tmp, corpus, ev, trace, "--format", "json")
    assert res.exit_code == 0, res.stderr
    spans = 2 + len(chain) + len(steps) + len(rerank)
    assert len(calls) <= 2 * spans, len(calls)  # work counted, not timed: each span once
    summary = res.json()["predicate"]["summary"]
    assert summary["steps"] == 201 and summary["rerankers_without_a_step"] == 5_000


def test_more_calls_than_a_row_holds_is_refused_before_documents_are_read(one):
    tmp, corpus, ev = one
    steps = [_span(100 + i, 1, "RETRIEVER", _docs("retrieval.documents.", [CLAUSE]),
                   start=5000 + i) for i in range(300)]
    trace = tmp / "long.json"
    trace.write_text(json.dumps(_request(_spans() + steps)), encoding="utf-8")
    assert_input_error(_import(tmp, corpus, ev, trace), "1 question has more than 256 "
                       "retriever calls", "'q1': 301")


def test_parents_that_form_a_loop_are_refused(one):
    tmp, corpus, ev = one
    spans = _spans() + [_span(7, 8, "CHAIN"), _span(8, 7, "RETRIEVER")]
    trace = tmp / "loop.json"
    trace.write_text(json.dumps(_request(spans)), encoding="utf-8")
    assert_input_error(_import(tmp, corpus, ev, trace), "is its own ancestor")


# ---- 3. depth before parse; dates and numbers in range -------------------------------------


def _deep_json(depth):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("where,extra,expected", [
    ("metadata", [attr("retrieval.documents.0.document.metadata",
                       '{"a": ' + _deep_json(5000) + "}")], "document.metadata: JSON nested"),
    ("metadata-moderate", [attr("retrieval.documents.0.document.metadata",
                                '{"a": ' + _deep_json(500) + "}")],
     "document.metadata: JSON nested more than 64 deep"),
    ("input", [attr("input.mime_type", "application/json"),
               attr("input.value", '{"q": ' + _deep_json(5000) + "}")],
     "'input.value': JSON nested"),
])
def test_json_inside_an_attribute_is_refused_past_its_depth(one, where, extra, expected):
    tmp, corpus, ev = one
    spans = _spans()
    spans[1]["attributes"] += extra
    if where == "input":
        spans[0]["attributes"] += extra
    trace = tmp / "t.json"
    trace.write_text(json.dumps(_request(spans)), encoding="utf-8")
    assert_input_error(_import(tmp, corpus, ev, trace), "t.json", expected)


def test_a_query_id_path_through_deep_json_is_refused(one):
    tmp, corpus, ev = one
    spans = _spans()
    spans[0]["attributes"].append(attr("metadata", '{"qid": ' + _deep_json(3000) + "}"))
    trace = tmp / "t.json"
    trace.write_text(json.dumps(_request(spans)), encoding="utf-8")
    assert_input_error(_import(tmp, corpus, ev, trace, "--query-id-attribute",
                               "metadata.qid.x"), "'metadata.qid.x': JSON nested")


def _phoenix(tmp, attributes, start="2026-12-05T11:34:32.320221Z"):
    rows = [{"context": {"trace_id": "a" * 32, "span_id": "b" * 16}, "parent_id": None,
             "span_kind": "AGENT", "name": "agent", "start_time": start,
             "attributes": {"input": {"value": "When is payment due?"}}},
            {"context": {"trace_id": "a" * 32, "span_id": "c" * 16}, "parent_id": "b" * 16,
             "span_kind": "RETRIEVER", "name": "retrieve", "start_time": start,
             "attributes": attributes}]
    return write_jsonl(tmp / "phoenix.jsonl", rows)


def test_phoenix_attributes_nested_too_deep_and_times_out_of_range_are_one_line(one):
    tmp, corpus, ev = one
    deep: dict = {"x": 1}
    for _ in range(40):
        deep = {"level": deep}
    assert_input_error(_import(tmp, corpus, ev, _phoenix(tmp, deep)), "phoenix.jsonl",
                       "'attributes': attributes nested more than 32 deep")
    listed: list = [1]
    for _ in range(40):
        listed = [listed]
    assert_input_error(_import(tmp, corpus, ev, _phoenix(tmp, {"tags": listed})),
                       "nested more than 32 deep")
    for start in ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00", "9999-12-31T23:59:59Z",
                  "1969-12-31T23:59:59Z"):
        assert_input_error(_import(tmp, corpus, ev, _phoenix(tmp, {}, start)),
                           "'start_time' must be an ISO 8601 time from 1970 to 2554")


@pytest.mark.parametrize("value", ["-5", "18446744073709551616", 1.5, True, "1e30"])
def test_an_otlp_start_time_outside_its_range_is_refused(one, value):
    tmp, corpus, ev = one
    spans = _spans()
    spans[1]["startTimeUnixNano"] = value
    trace = tmp / "t.json"
    trace.write_text(json.dumps(_request(spans)), encoding="utf-8")
    assert_input_error(_import(tmp, corpus, ev, trace), "'startTimeUnixNano' must be an "
                       "integer of nanoseconds since 1970")


@pytest.mark.parametrize("tag", ["facts", "cross_references"])
def test_a_deeply_nested_list_tag_is_one_line_in_validate(one, tag):
    tmp, corpus, ev = one
    s = TEXT.index(CLAUSE)
    for depth in (5000, 200):
        rows = [{"id": "q1", "query": "When is payment due?", "doc_id": "contract",
                 "gold_spans": [[s, s + len(CLAUSE)]], "tags": {tag: _deep_json(depth)}}]
        bad = write_jsonl(tmp / f"eval-{tag}.jsonl", rows)
        facts = write_jsonl(tmp / "facts.jsonl", [{"id": "f1", "text": CLAUSE,
                                                   "doc_id": "contract"}])
        extra = ["--facts", facts] if tag == "facts" else []
        res = run_cli("validate", "--eval-set", bad, "--corpus", corpus, *extra)
        assert_input_error(res, f"eval-{tag}.jsonl:1", "query 'q1': a list tag holds JSON "
                           "nested more than 64 deep")


# ---- 4. a reranker reorders what was retrieved -----------------------------------------


def test_a_reranker_that_outputs_a_document_never_retrieved_is_refused(one):
    """Grounding went 0 -> 1: the retriever returned the opening sentence, the reranker's
    output held the answer, and the answer became the step's context."""
    tmp, corpus, ev = one
    opening = TEXT[:TEXT.index(".") + 1]
    spans = _spans(docs=(opening,))
    spans.append(_span(3, 1, "RERANKER", [*_docs("reranker.input_documents.", [opening]),
                                          *_docs("reranker.output_documents.", [CLAUSE])],
                       start=3000))
    trace = tmp / "t.json"
    trace.write_text(json.dumps(_request(spans)), encoding="utf-8")
    assert_input_error(_import(tmp, corpus, ev, trace), "reranker span", "outputs 1 document "
                       "no retriever of the trace returned (e.g. document 0)")
    # reordering what was retrieved is what a reranker does
    spans = _spans(docs=(opening, CLAUSE))
    spans.append(_span(3, 1, "RERANKER", [
        *_docs("reranker.input_documents.", [opening, CLAUSE]),
        *_docs("reranker.output_documents.", [CLAUSE, opening])], start=3000))
    trace.write_text(json.dumps(_request(spans)), encoding="utf-8")
    res = _import(tmp, corpus, ev, trace, "--format", "json")
    assert res.exit_code == 0, res.stderr
    row = json.loads((tmp / "run.jsonl").read_text().splitlines()[1])
    assert [r["text"] for r in row["steps"][0]["retrieved"]] == [CLAUSE, opening]


def test_a_lone_surrogate_in_a_trace_is_one_line(one):
    """``"\\ud800"`` in an attribute is valid JSON but no character: the run could be read
    but never written (a UnicodeEncodeError traceback). Refused at read time, as every other
    structured reader refuses it."""
    tmp, corpus, ev = one
    spans = _spans()
    spans[1]["attributes"].append(attr("gen_ai.retrieval.query.text", "PLACEHOLDER"))
    trace = tmp / "t.json"
    trace.write_text(json.dumps(_request(spans)).replace("PLACEHOLDER", "\\ud800"),
                     encoding="utf-8")
    assert_input_error(_import(tmp, corpus, ev, trace), "t.json:1", "is a lone surrogate")
