"""Runs with steps (several search calls per question) and runs read from OpenTelemetry
traces: two-hop questions over real CUAD contracts (``shared/data/cuad_dev``), the same
retrieval exported as OTLP JSON and read back, and the cutoffs against a reference built by
hand."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import assert_valid_report, cuad_questions, report_rows, run_cli, write_jsonl

WINDOW = 150  # characters of context a retrieved window keeps around its gold span


def _window(text: str, span: list[int]) -> dict:
    return {"start": max(0, span[0] - WINDOW), "end": min(len(text), span[1] + WINDOW)}


@pytest.fixture(scope="module")
def hops(tmp_path_factory):
    """Two-hop questions (match all): one single-span clause of each of two contracts. A
    steps run whose first call finds the first contract's clause (rank 1) and whose second
    finds the second's; the same results as one flat list."""
    tmp = tmp_path_factory.mktemp("steps")
    texts, questions = cuad_questions()
    single = [(d, c, s[0]) for d, c, s in questions if len(s) == 1]
    by_doc: dict[str, list] = {}
    for d, c, span in single:
        by_doc.setdefault(d, []).append((c, span))
    docs = sorted(by_doc)
    rows, steps, flat = [], [], []
    for i in range(12):
        a, b = docs[i % len(docs)], docs[(i + 5) % len(docs)]
        (ca, sa), (cb, sb) = by_doc[a][i % len(by_doc[a])], by_doc[b][i % len(by_doc[b])]
        qid = f"hop{i}"
        rows.append({"id": qid, "query": f"Compare the {ca} of one contract with the {cb} "
                     f"of another ({i})", "match": "all",
                     "gold_spans": [{"doc_id": a, "start": sa[0], "end": sa[1]},
                                    {"doc_id": b, "start": sb[0], "end": sb[1]}]})
        first = [{"doc_id": a, **_window(texts[a], sa)}, {"doc_id": a, "start": 0, "end": 200}]
        second = [{"doc_id": b, **_window(texts[b], sb)}, {"doc_id": b, "start": 0, "end": 200}]
        for item, doc in ((x, a) for x in first):
            item["text"] = texts[doc][item["start"]:item["end"]]
        for item in second:
            item["text"] = texts[b][item["start"]:item["end"]]
        steps.append({"id": qid, "steps": [{"query": f"{ca}?", "retrieved": first},
                                           {"query": f"{cb}?", "retrieved": second}]})
        flat.append({"id": qid, "retrieved": first + second})
    return {"texts": texts, "rows": rows, "tmp": tmp,
            "eval": write_jsonl(tmp / "eval.jsonl", rows),
            "corpus": write_jsonl(tmp / "corpus.jsonl",
                                  [{"id": d, "text": t} for d, t in texts.items()]),
            "steps": write_jsonl(tmp / "steps.jsonl", steps),
            "flat": write_jsonl(tmp / "flat.jsonl", flat), "step_rows": steps}


def _score(paths, run, *extra):
    res = run_cli("score", "--eval-set", paths["eval"], "--run", run, "--corpus",
                  paths["corpus"], "--k", "1", "--k", "2", *extra, "--format", "json")
    assert res.exit_code == 0, res.stderr
    doc = res.json()
    assert_valid_report(doc)
    return doc["predicate"]


def test_two_hops_ground_at_one_per_step_and_not_flattened(hops):
    steps = _score(hops, hops["steps"])
    flat = _score(hops, hops["flat"])
    assert steps["summary"]["metrics"]["complete_grounding@1"] == 1.0
    assert flat["summary"]["metrics"]["complete_grounding@1"] == 0.0
    for row in report_rows(steps):
        assert row["gold_steps"] == [1, 2]
        assert len(row["step_chars"]) == 2 and all(c > 0 for c in row["step_chars"])
    s = steps["summary"]["steps"]
    assert s == {"rows": 12, "mean_steps": 2.0, "grounded_by_first_step": 0.0,
                 "grounded_by_all_steps": 1.0, "grounded_only_by_a_later_step": 1.0}
    # k per step: precision@1 counts one slot per call
    assert steps["summary"]["metrics"]["precision@1"] == 1.0
    assert "steps" not in flat["summary"]


def _otlp(rows, step_rows, genai=False):
    """The steps run as the OpenTelemetry file exporter writes traces (one request per
    line): a root span with the question, one retriever span per step."""
    def attr(key, value):
        kind = "intValue" if isinstance(value, int) else "doubleValue" \
            if isinstance(value, float) else "stringValue"
        return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}

    lines = []
    for n, (row, run) in enumerate(zip(rows, step_rows)):
        trace = f"{n:032x}"
        spans = [{"traceId": trace, "spanId": f"{n:08x}00000000", "name": "agent",
                  "startTimeUnixNano": "1000", "attributes": [
                      attr("openinference.span.kind", "AGENT"),
                      attr("input.value", row["query"])]}]
        for j, step in reversed(list(enumerate(run["steps"]))):  # out of order on purpose
            attrs = [attr("input.value", step["query"])]
            if genai:
                attrs += [attr("gen_ai.operation.name", "retrieval"),
                          attr("gen_ai.retrieval.documents", json.dumps(
                              [{"id": d["doc_id"], "content": d["text"]}
                               for d in step["retrieved"]]))]
            else:
                attrs.append(attr("openinference.span.kind", "RETRIEVER"))
                for i, d in enumerate(step["retrieved"]):
                    attrs += [attr(f"retrieval.documents.{i}.document.id", d["doc_id"]),
                              attr(f"retrieval.documents.{i}.document.content", d["text"])]
            spans.append({"traceId": trace, "spanId": f"{n:08x}{j + 1:08x}",
                          "parentSpanId": f"{n:08x}00000000", "name": "retrieve",
                          "startTimeUnixNano": str(2000 + j), "attributes": attrs})
        lines.append(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [
            {"scope": {"name": "test"}, "spans": spans}]}]}))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("genai", [False, True], ids=["openinference", "genai"])
def test_traces_read_back_score_as_the_steps_run(hops, genai):
    tmp = hops["tmp"]
    otlp = tmp / f"traces-{genai}.jsonl"
    otlp.write_text(_otlp(hops["rows"], hops["step_rows"], genai), encoding="utf-8")
    out = tmp / f"from-traces-{genai}.jsonl"
    res = run_cli("import", "traces", "--otlp", otlp, "--eval-set", hops["eval"], "--corpus",
                  hops["corpus"], "--out", out, "--format", "json")
    assert res.exit_code == 0, res.stderr
    summary = res.json()["predicate"]["summary"]
    assert summary["questions_with_a_trace"] == 12 and summary["steps"] == 24
    assert summary["placed_exact"] == 48
    direct, traced = _score(hops, hops["steps"]), _score(hops, out)
    assert traced["summary"]["metrics"] == direct["summary"]["metrics"]
    assert [r["metrics"] for r in report_rows(traced)] == \
        [r["metrics"] for r in report_rows(direct)]
    assert traced["summary"]["steps"] == direct["summary"]["steps"]


def test_traces_matched_by_an_id_attribute_and_what_matches_nothing(hops, tmp_path):
    text = _otlp(hops["rows"][:3], hops["step_rows"][:3])
    docs = [json.loads(x) for x in text.splitlines()]
    for doc, row in zip(docs, hops["rows"]):
        root = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        root["attributes"] = [{"key": "app.question_id", "value": {"stringValue": row["id"]}}]
    docs[2]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][0]["value"] = \
        {"stringValue": "not-a-question"}
    otlp = tmp_path / "t.jsonl"
    otlp.write_text("\n".join(map(json.dumps, docs)) + "\n", encoding="utf-8")
    res = run_cli("import", "traces", "--otlp", otlp, "--eval-set", hops["eval"], "--corpus",
                  hops["corpus"], "--out", tmp_path / "r.jsonl", "--query-id-attribute",
                  "app.question_id", "--format", "json")
    assert res.exit_code == 0, res.stderr
    pred = res.json()["predicate"]
    assert pred["summary"]["questions_with_a_trace"] == 2
    assert pred["summary"]["traces_without_a_question"] == 1
    assert pred["summary"]["questions_without_a_trace"] == 10
    assert "hop2" in pred["details"]["questions_without_a_trace"]


@pytest.mark.parametrize("mutate,expected", [
    (lambda d: d.update(resourceSpans=None) or d, "'resourceSpans' must be a list"),
    (lambda d: d.update(resourceSpans=[], other=1) and None or {"spans": []},
     "expected trace spans: OTLP JSON"),
    (lambda d: [a.update(value={"stringValue": " "}) if a["key"].endswith("document.content")
                else a.update(value={"stringValue": "nowhere"})
                if a["key"].endswith("document.id") else None
                for s in d["resourceSpans"][0]["scopeSpans"][0]["spans"][1:]
                for a in s["attributes"]] and d, "carry no content and no id that names"),
])
def test_bad_traces_are_refused(hops, tmp_path, mutate, expected):
    doc = json.loads(_otlp(hops["rows"][:1], hops["step_rows"][:1]))
    otlp = tmp_path / "t.json"
    otlp.write_text(json.dumps(mutate(doc)), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    res = run_cli("import", "traces", "--otlp", otlp, "--eval-set", hops["eval"], "--corpus",
                  hops["corpus"], "--out", out)
    assert res.exit_code == 3 and expected in res.stderr, res.stderr
    assert not out.exists()


def test_two_questions_of_one_text_need_an_id_attribute(hops, tmp_path):
    rows = [{**hops["rows"][0], "id": "a"}, {**hops["rows"][0], "id": "b"}]
    ev = write_jsonl(tmp_path / "e.jsonl", rows)
    otlp = tmp_path / "t.jsonl"
    otlp.write_text(_otlp(rows[:1], hops["step_rows"][:1]), encoding="utf-8")
    res = run_cli("import", "traces", "--otlp", otlp, "--eval-set", ev, "--corpus",
                  hops["corpus"], "--out", tmp_path / "r.jsonl")
    assert res.exit_code == 3 and "--query-id-attribute" in res.stderr


@pytest.mark.parametrize("row,expected", [
    ({"id": "q", "steps": [], "retrieved": []}, "not both"),
    ({"id": "q", "steps": []}, "non-empty list"),
    ({"id": "q", "steps": [{"query": "x"}]}, "steps[0] must be an object with a 'retrieved'"),
    ({"id": "q", "steps": [{"query": 3, "retrieved": []}]}, "steps[0].query must be a string"),
    ({"id": "q", "steps": [{"retrieved": []}] * 257}, "more than 256"),
    ({"id": "q", "steps": [{"retrieved": []}, {"retrieved": [
        {"doc_id": "d", "start": 1, "end": 3}, {"doc_id": "d", "start": 5, "end": 2}]}]},
     "steps[1].retrieved[1]: start=5 must be < end=2"),
])
def test_bad_steps_are_refused(tmp_path, row, expected):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": "x" * 100}])
    ev = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "?", "gold_spans": [
        {"doc_id": "d", "start": 0, "end": 10}]}])
    run = write_jsonl(tmp_path / "r.jsonl", [row])
    res = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", corpus)
    assert res.exit_code == 3 and expected in res.stderr, res.stderr


def test_compare_says_when_the_number_of_calls_changes(hops, tmp_path):
    one = [{"id": r["id"], "steps": r["steps"][:1]} for r in hops["step_rows"]]
    run = write_jsonl(tmp_path / "one.jsonl", one)
    outs = {}
    for name, path in (("two", hops["steps"]), ("one", run)):
        outs[name] = tmp_path / f"{name}.json"
        res = run_cli("score", "--eval-set", hops["eval"], "--run", path, "--corpus",
                      hops["corpus"], "--k", "1", "--out", outs[name])
        assert res.exit_code == 0, res.stderr
    res = run_cli("compare", "--baseline", outs["one"], "--candidate", outs["two"],
                  "--allow-budget-change", "--format", "json")
    warnings = res.json()["predicate"]["summary"]["warnings"]
    assert any("the candidate makes 2.00 search calls per question on average, the baseline "
               "1.00" in w for w in warnings), warnings


def _context_at(step_rows, k):
    """The reference for a count cutoff: the first k of each step, steps end to end."""
    return [{"id": r["id"], "retrieved": [x for s in r["steps"] for x in s["retrieved"][:k]]}
            for r in step_rows]


@settings(max_examples=40)
@given(seed=st.integers(0, 2**32 - 1))
def test_cutoffs_over_steps_equal_the_context_built_by_hand(seed, tmp_path_factory):
    """On generated runs: at a character budget a steps run scores as its steps laid end to
    end; at k, the span metrics equal those of a flat run of each step's first k results
    (scored at a k that keeps them all)."""
    rnd = random.Random(seed)
    tmp = tmp_path_factory.mktemp("prop")
    text = "".join(rnd.choice("abcdefgh ") for _ in range(3000))
    corpus = write_jsonl(tmp / "c.jsonl", [{"id": "d", "text": text}])
    rows, step_rows = [], []
    for q in range(4):
        a = rnd.randrange(0, 2800)
        rows.append({"id": f"q{q}", "query": "?", "gold_spans": [
            {"doc_id": "d", "start": a, "end": a + rnd.randint(5, 150)}]})
        steps = []
        for _ in range(rnd.randint(1, 4)):
            items = []
            for _ in range(rnd.randint(0, 4)):
                s = rnd.randrange(0, 2900)
                items.append({"doc_id": "d", "start": s, "end": s + rnd.randint(1, 100)})
            steps.append({"retrieved": items})
        step_rows.append({"id": f"q{q}", "steps": steps})
    ev = write_jsonl(tmp / "e.jsonl", rows)
    run = write_jsonl(tmp / "s.jsonl", step_rows)

    def metrics(path, *ks):
        args = [a for k in ks for a in ("--k", str(k))]
        res = run_cli("score", "--eval-set", ev, "--run", path, "--corpus", corpus, *args,
                      "--no-budget-grid", "--min-coverage", "0", "--format", "json")
        assert res.exit_code == 0, res.stderr
        return [r["metrics"] for r in report_rows(res.json())]

    flat = write_jsonl(tmp / "f.jsonl", _context_at(step_rows, 10_000))
    assert metrics(run, "120c") == metrics(flat, "120c")
    k = rnd.randint(1, 3)
    cut = write_jsonl(tmp / "k.jsonl", _context_at(step_rows, k))
    mine, ref = metrics(run, k), metrics(cut, 100)
    same = ("complete_grounding", "span_coverage", "span_recall", "char_precision",
            "char_recall", "char_precision_merged", "retrieved_chars", "hit_rate", "mrr")
    for m, r in zip(mine, ref):
        assert {n: m[f"{n}@{k}"] for n in same} == {n: r[f"{n}@100"] for n in same}


AGENTS = '''
"""Scripted agents (no LLM): each rewrites the question and calls its retriever twice."""
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda

TEXTS = {"law": "This agreement is governed by the laws of the State of New York.",
         "fee": "The licensee shall pay royalties of five percent of net sales."}


class Words(BaseRetriever):
    """The document whose text holds the query's first word."""

    def _get_relevant_documents(self, query, *, run_manager=None):
        word = query.split()[0].lower()
        return [Document(page_content=t, metadata={"doc_id": d, "start_index": 0})
                for d, t in TEXTS.items() if word in t.lower()]


def _agent(question):
    words = Words()
    words.invoke("governed " + question)  # the first call: the question rewritten
    words.invoke("royalties " + question)  # a second hop
    return "an answer nobody reads"


langchain_agent = RunnableLambda(_agent)


def llama_agent():
    from llama_index.core.retrievers import BaseRetriever as LlamaRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    class Nodes(LlamaRetriever):
        def _retrieve(self, query_bundle):
            word = query_bundle.query_str.split()[0].lower()
            return [NodeWithScore(node=TextNode(text=t, start_char_idx=0, end_char_idx=len(t),
                                                metadata={"doc_id": d}), score=1.0)
                    for d, t in TEXTS.items() if word in t.lower()]

    class Engine:
        def query(self, question):
            nodes = Nodes()
            nodes.retrieve("royalties " + question)
            nodes.retrieve("governed " + question)
            return "an answer nobody reads"

    return Engine()
'''


@pytest.mark.parametrize("spec,first", [("agents_mod:langchain_agent", "law"),
                                        ("agents_mod:llama_agent()", "fee")])
def test_an_agent_s_retriever_calls_are_its_steps(tmp_path, monkeypatch, spec, first):
    """run-retriever with an agent records every retriever call made while answering one
    question as a step, in the order made; the run scores two hops as grounded at k = 1."""
    pytest.importorskip("langchain_core")
    if "llama" in spec:
        pytest.importorskip("llama_index.core")
    import sys

    (tmp_path / "agents_mod.py").write_text(AGENTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    texts = {"law": "This agreement is governed by the laws of the State of New York.",
             "fee": "The licensee shall pay royalties of five percent of net sales."}
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": d, "text": t} for d, t in texts.items()])
    ev = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "what applies", "gold_spans": [
        {"doc_id": "law", "start": 0, "end": 20}, {"doc_id": "fee", "start": 0, "end": 20}]}])
    out = tmp_path / "run.jsonl"
    try:
        res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", ev, "--retriever",
                      spec, "--out", out)
    finally:
        sys.modules.pop("agents_mod", None)
    assert res.exit_code == 0, res.stderr
    row = [json.loads(x) for x in out.read_text().splitlines()][1]
    assert [s["retrieved"][0]["doc_id"] for s in row["steps"]] == \
        [first, "fee" if first == "law" else "law"]
    assert row["steps"][0]["query"].endswith("what applies")
    scored = run_cli("score", "--eval-set", ev, "--run", out, "--corpus", corpus, "--k", "1",
                     "--format", "json")
    assert scored.exit_code == 0, scored.stderr
    pred = scored.json()["predicate"]
    assert pred["summary"]["metrics"]["complete_grounding@1"] == 1.0
    assert report_rows(pred)[0]["gold_steps"] in ([1, 2], [2, 1])


def _attrs_of_step(doc):
    return doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"]


def _nested(depth):
    value = {"stringValue": "x"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


@pytest.mark.parametrize("value,expected", [
    ({"intValue": "abc"}, "intValue must be a 64-bit integer"),
    ({"intValue": "99999999999999999999"}, "intValue must be a 64-bit integer"),
    ({"intValue": 1.5}, "intValue must be a 64-bit integer"),
    ({"doubleValue": "fast"}, "doubleValue must be a number"),
    ({"boolValue": "yes"}, "boolValue must be true or false"),
    ({"stringValue": 7}, "stringValue must be a string"),
    ({"arrayValue": [1]}, "arrayValue must be an object with a 'values' list"),
    ({"arrayValue": {"values": [1]}}, "expected an AnyValue object"),
    ({"kvlistValue": {"values": [{"value": {}}]}}, "entries must be objects with a string"),
    ({"stringValue": "a", "intValue": "1"}, "holds one of its kinds"),
    ({"mysteryValue": 1}, "unknown AnyValue kind"),
    ("plain", "expected an AnyValue object"),
    (_nested(40), "nested more than 32 deep"),
])
def test_a_malformed_otlp_value_is_one_line_naming_span_and_attribute(hops, tmp_path, value,
                                                                       expected):
    """Each was a traceback (exit 1): now exit 3, one line naming the file, the span and
    the attribute, and nothing written."""
    from conftest import assert_input_error

    doc = json.loads(_otlp(hops["rows"][:1], hops["step_rows"][:1]))
    _attrs_of_step(doc).append({"key": "app.extra", "value": value})
    otlp = tmp_path / "t.json"
    otlp.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    res = run_cli("import", "traces", "--otlp", otlp, "--eval-set", hops["eval"], "--corpus",
                  hops["corpus"], "--out", out)
    assert_input_error(res, "t.json", "attribute 'app.extra'", expected, "span ")
    assert not out.exists()


@pytest.mark.parametrize("shape,expected", [
    (lambda d: d.update(resourceSpans=[[]]) or d, "each resourceSpans[] must be an object"),
    (lambda d: d["resourceSpans"][0].update(scopeSpans={"x": 1}) or d, "must be a list"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][1].update(attributes="a=b")
     or d, "'attributes' must be a list"),
    (lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"][1].update(parentSpanId=5)
     or d, "needs 'parentSpanId' (a string)"),
])
def test_a_malformed_otlp_structure_is_refused(hops, tmp_path, shape, expected):
    from conftest import assert_input_error

    doc = shape(json.loads(_otlp(hops["rows"][:1], hops["step_rows"][:1])))
    otlp = tmp_path / "t.json"
    otlp.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("import", "traces", "--otlp", otlp, "--eval-set", hops["eval"], "--corpus",
                  hops["corpus"], "--out", tmp_path / "r.jsonl")
    assert_input_error(res, expected)


@pytest.mark.parametrize("score", [{"doubleValue": "NaN"}, {"doubleValue": "Infinity"},
                                   {"stringValue": "0.9"}])
def test_import_refuses_scores_score_would_refuse(hops, tmp_path, score):
    from conftest import assert_input_error

    doc = json.loads(_otlp(hops["rows"][:1], hops["step_rows"][:1]))
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1:]:
        span["attributes"].append({"key": "retrieval.documents.0.document.score",
                                   "value": score})
    otlp = tmp_path / "t.json"
    otlp.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    res = run_cli("import", "traces", "--otlp", otlp, "--eval-set", hops["eval"], "--corpus",
                  hops["corpus"], "--out", out)
    assert_input_error(res, "2 document scores are not finite numbers")
    assert not out.exists()


def test_import_refuses_more_steps_than_a_run_row_holds(hops, tmp_path):
    from conftest import assert_input_error

    doc = json.loads(_otlp(hops["rows"][:1], hops["step_rows"][:1]))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    step = spans[1]
    spans += [{**step, "spanId": f"{i + 1:08x}ffffffff", "startTimeUnixNano": str(5000 + i)}
              for i in range(300)]
    otlp = tmp_path / "t.json"
    otlp.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("import", "traces", "--otlp", otlp, "--eval-set", hops["eval"], "--corpus",
                  hops["corpus"], "--out", tmp_path / "r.jsonl")
    assert_input_error(res, "1 question has more than 256 retriever calls", "'hop0': 302")
