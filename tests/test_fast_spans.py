"""The pyarrow span-run reader (``io.runs.fast_spans``) gives exactly the plain reader's run, or
leaves the file to it: drawn runs, clean and broken, read both ways."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragspan.base.errors import InputError

pytest.importorskip("pyarrow", reason="the fast extra is not installed")

from ragspan.io.runs.fast_spans import read_arrow_spans  # noqa: E402
from ragspan.io.runs.spans import read_span_run  # noqa: E402

ODD = [  # each breaks one condition of the fast path, or of the run itself
    '{"id": 1, "retrieved": []}', '{"id": "", "retrieved": []}', '{"id": "x"}',
    '{"id": "x", "retrieved": null}', '{"id": "x", "retrieved": [1]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 5, "end": 2}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": -1, "end": 2}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 1.0, "end": 2}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": true, "end": 2}]}',
    '{"id": "x", "retrieved": [{"doc_id": 7, "start": 0, "end": 2}]}',
    '{"id": "x", "retrieved": [{"start": 0, "end": 2}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 0, "end": 1099511627777}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 0, "end": 2, "score": "1"}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 0, "end": 2, "score": 1e400}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 0, "end": 2, "chunk_id": 3}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 0, "end": 2, "text": "ab"}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 0, "end": 2, "sources": [1]}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 0, "end": 2, "sources": {"bm25": 0}}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 0, "end": 2, "sources": {"dense": 1.5}}]}',
    '{"id": "x", "retrieved": [{"doc_id": "d", "start": 0, "end": 2, "sources": {"dense": true}}]}',
    '{"id": "x", "retrieved": [], "latency_ms": "5"}', '{"id": "x", "retrieved": [], "id": "y"}',
    '{"id": "x\\ud800", "retrieved": []}', '{"id": "x\\u00e9", "retrieved": []}',
    '{"id": "x", "retrieved": []} {"id": "z", "retrieved": []}', '  {"id": "x", "retrieved": []}',
    '{"_header": {"config": {}}}', '[1]', '', '{"id": "x",\t"retrieved": []}',
]


@st.composite
def row(draw, i):
    items = []
    for _ in range(draw(st.integers(0, 5))):
        start = draw(st.integers(0, 10**6))
        item = {"doc_id": draw(st.sampled_from(["a", "b", "é", "c d"])), "start": start,
                "end": start + draw(st.integers(1, 10**4))}
        if draw(st.booleans()):
            item["score"] = draw(st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                                           st.integers(-10**20, 10**20), st.none()))
        if draw(st.booleans()):
            item["chunk_id"] = draw(st.one_of(st.text(max_size=4), st.none()))
        if draw(st.booleans()):
            item["sources"] = draw(st.dictionaries(
                st.sampled_from(["dense", "bm25", "rerank"]),
                st.one_of(st.integers(1, 500), st.none()), max_size=3))
        items.append(item)
    obj = {"id": f"q{i}", "retrieved": items}
    if draw(st.booleans()):
        obj["latency_ms"] = draw(st.floats(0, 1e6))
    return json.dumps(obj, ensure_ascii=False)


@st.composite
def run_text(draw):
    lines = [draw(row(i)) for i in range(draw(st.integers(1, 6)))]
    if draw(st.booleans()):
        lines.insert(0, json.dumps({"_header": {"config": {"name": "x"}}}))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(ODD)))
    if draw(st.booleans()) and len(lines) > 1:
        lines.append(lines[-1])  # a repeated id
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


def outcome(path, fast):
    try:
        run = read_span_run(path, fast=fast)
    except InputError as exc:
        return ("error", str(exc))
    s = run.spans
    return ("run", run.sha256, run.lines, run.config, s.ids, s.offsets.tolist(), s.doc_id,
            s.start.tolist(), s.end.tolist(), np.nan_to_num(s.score, nan=-7.5).tolist(),
            s.chunk_id, s.doc_names, s.doc_code.tolist(),
            None if s.source_rank is None else {k: v.tolist() for k, v in s.source_rank.items()},
            None if run.latency_ms is None else np.nan_to_num(run.latency_ms, nan=-1).tolist())


@given(run_text())
def test_the_fast_reader_equals_the_plain_reader(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("r") / "run.jsonl"
    path.write_text(text, encoding="utf-8")
    assert outcome(path, True) == outcome(path, False)


def test_a_clean_run_really_takes_the_fast_path(tmp_path):
    rows = [{"id": f"q{i}", "retrieved": [{"doc_id": "d", "start": i, "end": i + 5,
                                           "score": 0.5, "chunk_id": f"c{i}"}],
             "latency_ms": 1.5} for i in range(50)]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    assert read_arrow_spans(data) is not None
    for line in filter(None, ODD):  # (the empty line breaks only mid-file)
        assert read_arrow_spans(data + b"\n" + line.encode()) is None, line


def test_a_run_with_steps_is_the_plain_reader_s():
    """A row with ``steps`` is laid out by the plain reader (``io.runs.steps``)."""
    row = {"id": "q", "steps": [{"retrieved": [{"doc_id": "d", "start": 0, "end": 5}]}]}
    assert read_arrow_spans((json.dumps(row) + "\n").encode()) is None
