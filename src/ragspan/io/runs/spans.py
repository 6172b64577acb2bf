"""Span runs: per query, the retrieved spans ranked best first (DESIGN.md, "Run (span level)").
Runs are held column-wise (one numpy array per field, rows delimited by ``offsets``) so that a
run of millions of spans is scored without a Python object per span."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragspan.base.errors import InputError
from ragspan.base.progress import Progress
from ragspan.io.files import decode_records, iter_json_lines, read_bytes, read_head, sha256_hex
from ragspan.io.rows import (
    MAX_OFFSET,
    Skipped,
    header_record,
    is_offset,
    out_of_range,
    parse_id,
    refuse_other_kind,
    row_id,
)
from ragspan.io.runs import fast_docs
from ragspan.io.runs.anchoring import Anchor
from ragspan.io.runs.fast_spans import FUSED_SOURCES, read_arrow_spans
from ragspan.io.runs.steps import StepLayout, StepRows, parse_steps
from ragspan.records.retrieval import TextPlacement
from ragspan.records.score_rows import Placed


@dataclass
class SpanList:
    """Ranked spans of many queries, column-wise.

    Row ``i`` (query ``ids[i]``) owns positions ``offsets[i]:offsets[i+1]`` of every column,
    in rank order. ``score`` is NaN where the run gave none.
    """

    ids: list[str]
    offsets: np.ndarray
    doc_id: list[str]
    start: np.ndarray
    end: np.ndarray
    score: np.ndarray
    chunk_id: list[str | None]
    doc_names: list[str] = field(default_factory=list)
    doc_code: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # per fused retriever (``FUSED_SOURCES``), each item's 1-based rank in that retriever's
    # own list (``sources``), 0 where it did not list it; None when no item says
    source_rank: dict[str, np.ndarray] | None = None
    # the search call each result came from, when a row has ``steps`` (``io.runs.steps``)
    steps: StepLayout | None = None

    def __post_init__(self) -> None:
        if self.doc_code.size != len(self.doc_id):
            names: dict[str, int] = {}
            self.doc_code = np.fromiter((names.setdefault(d, len(names)) for d in self.doc_id),
                                        dtype=np.int64, count=len(self.doc_id))
            self.doc_names = list(names)

    def row(self, i: int) -> range:
        return range(int(self.offsets[i]), int(self.offsets[i + 1]))


@dataclass
class SpanRun:
    path: str
    sha256: str
    spans: SpanList
    lines: list[int]
    first_stage: SpanList | None = None
    latency_ms: np.ndarray | None = None
    config: dict[str, Any] | None = field(default=None)
    # per stage (embed, search, fusion, rerank), the rows' milliseconds (NaN where a row
    # gave none); None when no row gave ``stage_ms``
    stage_ms: dict[str, np.ndarray] | None = None
    # items that carried their text: how each was checked or placed (None: none carried one)
    placement: TextPlacement | None = None
    placement_records: dict[str, list[Placed]] = field(default_factory=dict)
    # the texts of results that could not be placed and were kept as off-corpus results
    # (``io.runs.anchoring.UNPLACED_DOC``'s text); "" when none was
    unplaced: str = ""
    # results given by offsets alone, without their text: taken as given, never checked
    untexted: int = 0


class _Columns:
    """Accumulates spans of one field (``retrieved`` or ``retrieved_first_stage``)."""

    def __init__(self, key: str, anchor: Anchor | None = None):
        self.key = key
        self.anchor = anchor
        self.offsets = [0]
        self.doc: list[str] = []
        self.start: list[Any] = []
        self.end: list[Any] = []
        self.score: list[Any] = []
        self.chunk: list[str | None] = []
        self.sources: dict[str, list[int]] = {s: [] for s in FUSED_SOURCES}
        self.any_sources = False
        self.line_of_span: list[int] = []
        self.untexted = 0  # items with offsets and no text
        self.steps = StepRows()

    def add(self, raw: Any, path: str, line: int, qid: str = "") -> None:
        """One row's results (``retrieved``)."""
        self.steps.flat(self.extend(raw, path, line, qid, self.key))
        self.close()

    def add_steps(self, raw: Any, path: str, line: int, qid: str) -> None:
        """One row's ``steps``, laid end to end in step order (``io.runs.steps``)."""
        calls = parse_steps(raw, path, line)
        lengths = [self.extend(items, path, line, qid, f"steps[{j}].retrieved")
                   for j, (_, items) in enumerate(calls)]
        self.steps.add(lengths, [query for query, _ in calls])
        self.close()

    def close(self) -> None:
        self.offsets.append(len(self.doc))

    def extend(self, raw: Any, path: str, line: int, qid: str, key: str) -> int:
        """Append the items of ``raw`` (the list at ``key``) to the open row; how many."""
        if not isinstance(raw, list):
            raise InputError(f"'{key}' must be a list", path, line)
        kept = 0
        for rank, item in enumerate(raw):
            if not isinstance(item, dict):
                raise InputError(f"{key}[{rank}]: expected an object", path, line)
            doc = item.get("doc_id")
            text = item.get("text")
            if doc is None and text is None:
                raise InputError(f"{key}[{rank}]: missing 'doc_id'", path, line)
            if doc is not None and not isinstance(doc, str):
                doc = parse_id(doc, path, line, f"{key}[{rank}].doc_id")
            start, end = item.get("start"), item.get("end")
            if text is not None and self.anchor is None and (start is None or end is None):
                raise InputError(f"query '{qid}': {key}[{rank}] gives its text but no "
                                 "offsets: score it with --corpus to place the text", path, line)
            if text is not None and self.anchor is not None:
                doc, start, end = self.anchor.resolve(key, rank, qid, doc, start, end,
                                                      text, path, line)
            elif text is None:
                self.untexted += 1
            if doc is None:
                raise InputError(f"{key}[{rank}]: missing 'doc_id'", path, line)
            self.doc.append(doc)
            self.start.append(start)
            self.end.append(end)
            self.score.append(item.get("score"))
            self.chunk.append(item.get("chunk_id"))
            self._add_sources(item.get("sources"), rank, path, line, key)
            kept += 1
        self.line_of_span.extend([line] * kept)
        return kept

    def _add_sources(self, value: Any, rank: int, path: str, line: int, key: str) -> None:
        """An item's ``sources``: absent, or an object of retriever names to 1-based ranks
        (only the fused retrievers' are kept)."""
        if value is not None and not isinstance(value, dict):
            raise InputError(f"{key}[{rank}]: 'sources' must map retrievers to ranks",
                             path, line)
        for s in FUSED_SOURCES:
            r = (value or {}).get(s)
            if r is not None and (isinstance(r, bool) or not isinstance(r, int)
                                  or not 1 <= r <= MAX_OFFSET):
                raise InputError(f"{key}[{rank}]: sources.{s} must be a rank >= 1",
                                 path, line)
            self.any_sources |= r is not None
            self.sources[s].append(r or 0)

    def skip(self) -> None:
        self.steps.flat(0)
        self.offsets.append(len(self.doc))

    def finish(self, ids: list[str], path: str) -> SpanList:
        start = _int_column(self.start, "start", self, path)
        end = _int_column(self.end, "end", self, path)
        bad = np.flatnonzero((start < 0) | (start >= end))
        if bad.size:
            i = int(bad[0])
            reason = (
                f"negative offset start={start[i]}" if start[i] < 0
                else f"start={start[i]} must be < end={end[i]}"
            )
            raise InputError(f"{self._where(i)}: {reason}", path, self.line_of_span[i])
        score = _score_column(self.score, self, path)
        names: dict[str, int] = {}
        code = np.fromiter((names.setdefault(d, len(names)) for d in self.doc), dtype=np.int64,
                           count=len(self.doc))
        return SpanList(
            ids=ids,
            offsets=np.asarray(self.offsets, dtype=np.int64),
            doc_id=self.doc,
            start=start,
            end=end,
            score=score,
            chunk_id=self.chunk,
            doc_names=list(names),
            doc_code=code,
            source_rank={s: np.asarray(v, dtype=np.int64) for s, v in self.sources.items()}
            if self.any_sources else None,
            steps=self.steps.layout(),
        )

    def _where(self, i: int) -> str:
        row = int(np.searchsorted(np.asarray(self.offsets), i, side="right")) - 1
        return self.steps.where(row, i - self.offsets[row], self.key)


def _int_column(values: list[Any], name: str, cols: _Columns, path: str) -> np.ndarray:
    if not values:
        return np.zeros(0, dtype=np.int64)
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError):
        arr = np.asarray(values, dtype=object)
    if arr.dtype.kind == "i" and not any(type(v) is bool for v in values) \
            and (not arr.size or int(np.abs(arr).max()) <= MAX_OFFSET):
        return arr.astype(np.int64, copy=False)
    for i, value in enumerate(values):
        if not is_offset(value):
            what = ("missing" if value is None
                    else "out of range (more than 2^40)" if out_of_range(value)
                    else f"not an integer ({value!r})")
            raise InputError(f"{cols._where(i)}: '{name}' {what}", path, cols.line_of_span[i])
    return np.asarray(values, dtype=np.int64)


def _span_run_of(c: dict[str, Any], name: str, data: bytes, anchor: Anchor | None) -> SpanRun:
    """The SpanRun of ``read_arrow_spans``'s checked columns, as the plain reader builds it."""
    config = None if c["header"] is None else header_record(c["header"], 0, name, 1, run=True)
    spans = SpanList(ids=c["ids"], offsets=c["offsets"], doc_id=c["doc_id"], start=c["start"],
                     end=c["end"], score=c["score"], chunk_id=c["chunk_id"],
                     doc_names=c["doc_names"], doc_code=c["doc_code"],
                     source_rank=c["source_rank"])
    lat = c["latency_ms"]
    return SpanRun(path=name, sha256=sha256_hex(data), spans=spans, lines=c["lines"],
                   latency_ms=lat if np.isfinite(lat).any() else None, config=config,
                   placement=anchor.summary() if anchor is not None else None,
                   placement_records=anchor.records if anchor is not None else {},
                   untexted=int(spans.start.size))  # the fast path takes no text


def _score_column(values: list[Any], cols: _Columns, path: str) -> np.ndarray:
    out = np.full(len(values), np.nan)
    for i, value in enumerate(values):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{cols._where(i)}: 'score' must be a number", path, cols.line_of_span[i])
        if not math.isfinite(value):
            raise InputError(f"{cols._where(i)}: non-finite score {value}", path, cols.line_of_span[i])
        out[i] = value
    return out


def run_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The run's ``_header`` record (its first line), or None when the first line is a row
    or cannot be read as a header (the reader then says what is wrong)."""
    first = read_head(path).split("\n", 1)[0]
    if '"_header"' not in first:
        return None
    try:
        obj = json.loads(first)
    except ValueError:
        return None
    header = obj.get("_header") if isinstance(obj, dict) else None
    return header if isinstance(header, dict) else None


def read_span_run(path: str | os.PathLike[str], anchor: Anchor | None = None,
                  fast: bool | None = None, skipped: Skipped | None = None) -> SpanRun:
    """Read a span run (JSONL). Query ids must be unique; offsets ``0 <= start < end``;
    scores, where given, finite. A row may carry ``retrieved_first_stage`` and ``latency_ms``.
    An item may carry its ``text``, with or without offsets: ``anchor`` checks it against the
    corpus or places it there (``io.runs.anchoring``); without ``anchor`` a text is refused.
    Fields of an item other than ``doc_id``, ``start``, ``end``, ``score``, ``chunk_id`` and
    ``text`` are not kept. ``fast`` (default: when pyarrow is installed) reads the file
    through pyarrow where that is certain to give the same run (``io.runs.fast_spans``).
    ``skipped`` (``--on-duplicate first``): rows without id or repeating one are counted
    there and skipped (``io.rows.row_id``), read by the plain reader."""
    name = str(path)
    data = read_bytes(path)
    if skipped is None and (fast_docs.fast_available() if fast is None else fast):
        columns = read_arrow_spans(data)
        if columns is not None:
            return _span_run_of(columns, name, data, anchor)
    text = decode_records(data, name)
    rows = _RunRows(name, anchor, skipped)
    placing = anchor is not None and anchor.corpus is not None and '"text"' in text
    progress = Progress() if placing else None
    lines_total = text.count("\n") + 1
    for line, obj in iter_json_lines(text, name):
        rows.add(obj, line)
        if progress is not None:
            progress("placing texts (run lines)", line, lines_total)
    if not rows.ids:
        raise InputError("the run holds no rows", name)
    if progress is not None:
        progress("placing texts (run lines)", lines_total, lines_total)
    lat_arr = np.asarray(rows.latency, dtype=float)
    return SpanRun(
        path=name,
        sha256=sha256_hex(data),
        spans=rows.main.finish(rows.ids, name),
        lines=rows.lines,
        first_stage=rows.first.finish(rows.ids, name) if rows.any_first else None,
        latency_ms=lat_arr if np.isfinite(lat_arr).any() else None,
        config=rows.config,
        stage_ms=_stage_columns(rows.stage_rows),
        placement=anchor.summary() if anchor is not None else None,
        placement_records=anchor.records if anchor is not None else {},
        unplaced=anchor.unplaced_text if anchor is not None else "",
        untexted=rows.main.untexted + rows.first.untexted,
    )


class _RunRows:
    """The plain reader's rows as they are read: the ``_header``, each row's id, line,
    results (both stages, checked or placed by ``anchor``), latency and stage times."""

    def __init__(self, name: str, anchor: Anchor | None, skipped: Skipped | None = None):
        self.name = name
        self.skipped = skipped
        self.main = _Columns("retrieved", anchor)
        self.first = _Columns("retrieved_first_stage", anchor)
        self.ids: list[str] = []
        self.lines: list[int] = []
        self.latency: list[float] = []
        self.stage_rows: list[dict[str, float]] = []
        self.seen: dict[str, int] = {}
        self.any_first = False
        self.config: dict[str, Any] | None = None

    def add(self, obj: dict[str, Any], line: int) -> None:
        name = self.name
        if "_header" in obj:
            self.config = header_record(obj, len(self.ids) + (self.config is not None), name,
                                        line, run=True)
            return
        if not self.ids:
            refuse_other_kind(obj, "a span run", name, line,
                              ": give the run it was scored from" if "predicate" in obj
                              else " (are --eval-set and --run swapped?)")
        qid = row_id(obj, self.seen, name, line, self.skipped)
        if qid is None:
            return
        if "steps" in obj:
            if "retrieved" in obj or "retrieved_first_stage" in obj:
                raise InputError("a row gives 'steps' or 'retrieved', not both (a row with "
                                 "steps has no first stage)", name, line)
        elif "retrieved" not in obj:
            raise InputError("missing 'retrieved' (or 'steps')", name, line)
        self.ids.append(qid)
        self.lines.append(line)
        if "steps" in obj:
            self.main.add_steps(obj["steps"], name, line, qid)
        else:
            self.main.add(obj["retrieved"], name, line, qid)
        if "retrieved_first_stage" in obj:
            self.any_first = True
            self.first.add(obj["retrieved_first_stage"], name, line, qid)
        else:
            self.first.skip()
        self.latency.append(_latency(obj.get("latency_ms"), name, line))
        self.stage_rows.append(_stages(obj.get("stage_ms"), name, line))


def _latency(value: Any, path: str, line: int) -> float:
    """A row's ``latency_ms``: absent (NaN) or a finite number."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError("'latency_ms' must be a finite number", path, line)
    return float(value)


def _stages(value: Any, path: str, line: int) -> dict[str, float]:
    """A row's ``stage_ms``: absent, or an object of stage names to finite numbers."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in value.values()):
        raise InputError("'stage_ms' must map each stage to a finite number of milliseconds",
                         path, line)
    return {str(k): float(v) for k, v in value.items()}


def _stage_columns(rows: list[dict[str, float]]) -> dict[str, np.ndarray] | None:
    names = sorted({s for r in rows for s in r})
    if not names:
        return None
    return {s: np.array([r.get(s, math.nan) for r in rows]) for s in names}
