"""The typed run facts of a span report: their JSON form is the report's, and the gate reads
a written saturation back into the same record."""

from __future__ import annotations

import pytest

from ragspan.base.errors import InputError
from ragspan.base.facts import FusionSources, SurfacedAt
from ragspan.gate.inputs import _summary
from ragspan.records.envelope import encode
from ragspan.records.score_facts import (
    ChunkRecall,
    ChunkRecallAt,
    OffScope,
    OutsideAt,
    Reordering,
    Saturated,
    Saturation,
)
from ragspan.scoring.report_body import fusion_record


def _saturation(value: dict, path: str) -> Saturation | None:
    return _summary({"metrics": {}, "saturation": value}, path).saturation


def test_saturation_written_is_read_back_by_the_gate_as_the_same_record():
    written = Saturation(0.9, {"5": Saturated(3, 0.25), "2000c": Saturated(1, 1 / 12)}, 12)
    assert _saturation(encode(written), "r.json") == written
    without_count = Saturation(0.9, {"5": Saturated(3, 0.25)})
    assert "scoped_queries" not in encode(without_count)
    assert _saturation(encode(without_count), "r.json") == without_count
    bad = {**encode(written), "threshold": 1.5}
    with pytest.raises(InputError, match=r"\$\.predicate\.summary\.saturation\.threshold"):
        _saturation(bad, "r.json")
    bad = {**encode(written), "by_k": {"5": {"queries": True, "share": 0.5}}}
    with pytest.raises(InputError, match=r"summary\.saturation\.by_k\[\.\.\.\]\.queries"):
        _saturation(bad, "r.json")


def test_the_json_forms_keep_the_report_keys():
    assert encode(OffScope(4, {"5": OutsideAt(20, 15, 0.75)})) == {
        "scoped_queries": 4, "by_k": {"5": {"results": 20, "outside": 15, "share": 0.75}}}
    assert encode(ChunkRecall(2, {"3": ChunkRecallAt(0.5, 1.0, 0.6, 0.7)})) == {
        "queries": 2, "by_k": {"3": {"recall": 0.5, "ceiling": 1.0, "ndcg": 0.6,
                                     "ndcg_candidates": 0.7}}}
    assert encode(ChunkRecall(2, {"3": ChunkRecallAt(0.5, 1.0, 0.6, 0.7)},
                              {"3": ChunkRecallAt(0.25, 1.0, 0.3, 0.3)}))["first_stage"] == {
        "3": {"recall": 0.25, "ceiling": 1.0, "ndcg": 0.3, "ndcg_candidates": 0.3}}
    assert encode(fusion_record(FusionSources(("bm25", "dense"), {"5": SurfacedAt(
        7, 2, {"bm25": 1, "dense": 3})}))) == {
        "sources": ["bm25", "dense"], "by_k": {"5": {
            "relevant_in_top": 7, "promoted": 2, "found_by_bm25_only": 1,
            "found_by_dense_only": 3}}}
    assert encode(Reordering(10, 4)) == {"rows": 10, "reordered": 4}


def test_a_jsonl_line_writes_records_and_json_values_alike():
    """``io.serialize.jsonl``: a record is written as its fields in their order (one left
    unset left out), inside a JSON value too; a numpy float is a float, as ``json`` has
    always written it; anything else that is not JSON is refused."""
    import numpy as np

    from ragspan.io.serialize import jsonl
    from ragspan.records.run_rows import RunItem, RunRow

    row = RunRow(id="q", retrieved=[RunItem(doc_id="d", start=0, end=3, text="abc")])
    assert jsonl([{"_header": {"took": np.float64(1.5)}}, row, {"steps": [row]}]) == (
        '{"_header": {"took": 1.5}}\n'
        '{"id": "q", "retrieved": [{"doc_id": "d", "start": 0, "end": 3, "text": "abc"}]}\n'
        '{"steps": [{"id": "q", "retrieved": [{"doc_id": "d", "start": 0, "end": 3, '
        '"text": "abc"}]}]}\n')
    with pytest.raises(TypeError, match="set is not JSON"):
        jsonl([{"ids": {"q"}}])
