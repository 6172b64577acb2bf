"""A score report's ``details`` in format v2 (``https://ragspan.dev/report/v2``): the
per-question detail as columns. The question ids are listed once (``questions.id``); every
other per-question value is an array in the same order (``questions``, one array per metric
column in ``metrics``, one label array per cutoff in ``failure``); the gold spans are one
table of flat arrays (``gold``, a row per gold span, ``gold.question`` the index of its
question) with their covered fraction per cutoff, their first rank and what decided their
label; the chunks behind the labels are one table (``evidence``, ``evidence.gold`` the index
of its gold span). ``scoring.report_columns`` writes them, ``rows_of`` reads them back as the
per-question rows of format v1 (``records.score_rows.Row``): what a caller asking for the
rows by question id gets, whichever format a report was written in.

An array's length is not a type: ``check_columns`` refuses columns of different lengths and
indices out of range, naming the array, before anything reads them."""

from __future__ import annotations

import itertools
import operator
from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType

from ragspan.records.envelope import Finite
from ragspan.records.score_facts import Count
from ragspan.records.score_rows import Evidence, EvidenceChunk, MissingSpan, Placed, Row

# a metric column: its name and its cutoff (``complete_grounding@5``, ``char_recall@2000c``)
MetricName = Annotated[str, Meta(pattern="^[a-z_]+@[1-9][0-9]*[ct]?$")]
Index = Annotated[int, Meta(ge=0)]
Rank = Annotated[int, Meta(ge=1)]


class Slice(Struct, kw_only=True, omit_defaults=True):
    """One tag value's queries: how many, each metric's mean over them and their failure
    labels counted per k."""

    count: Count
    metrics: dict[str, Finite]
    failure_labels: dict[str, dict[str, Count]] | UnsetType = UNSET


class Questions(Struct, kw_only=True, omit_defaults=True):
    """``details.questions``: one entry per question in every array, in the eval set's order
    (a doc score: the qrels' evaluated queries). ``id`` and ``in_run`` always; a span score
    adds the question's text, the document it asks about (None: none named) and its tags
    (per tag key, each question's value, None where it has none)."""

    id: list[str]
    in_run: list[bool]
    query: list[str] | UnsetType = UNSET
    doc_id: list[str | None] | UnsetType = UNSET
    tags: dict[str, list[str | None]] | UnsetType = UNSET


class GoldSpans(Struct, kw_only=True, omit_defaults=True):
    """``details.gold``: every gold span, in the eval set's order, one entry per span in every
    array. ``question``: its question's index; ``covered``: per cutoff, the fraction of it the
    cutoff's results cover (below the grounding threshold: missing there); ``first_rank``:
    the 1-based rank of the first result that overlaps it (None: none does). ``text``: its
    text where it is missing at some cutoff and the score had the corpus (else None).
    With a chunk manifest: the share of it its chunks together cover (``chunk_ceiling``) and
    whether one chunk holds it whole. A run with steps: the 1-based step that first grounded
    it (``step``, None: none did)."""

    question: list[Index]
    doc_id: list[str]
    start: list[Index]
    end: list[Index]
    covered: dict[str, list[Finite]]
    first_rank: list[Rank | None]
    text: list[str | None] | UnsetType = UNSET
    chunk_ceiling: list[Finite | None] | UnsetType = UNSET
    whole_in_one_chunk: list[bool | None] | UnsetType = UNSET
    step: list[Rank | None] | UnsetType = UNSET


class EvidenceTable(Struct, kw_only=True):
    """``details.evidence``: the chunks behind the label of each gold span missing at some
    cutoff, at most 20 a span, best first; ``gold`` the span's index in ``details.gold``.
    With a manifest, every chunk that overlaps the span and its rank in the pool (None: not
    retrieved); without, the retrieved spans that overlap it (its chunk id when the run gave
    one, else None)."""

    gold: list[Index]
    start: list[Index]
    end: list[Index]
    chunk_id: list[str | None]
    rank: list[Rank | None]


class PlacedItem(Placed, kw_only=True):
    """A result placed by its text (``details.placed``), with its question's index."""

    question: Index


class SpanColumns(Struct, kw_only=True, omit_defaults=True):
    """A span score's details in format v2 (module docstring): the questions, the metric
    columns (a column per ``summary.metrics`` name), the failure label of each question per
    cutoff (None: grounded there), the gold spans and the evidence; what a run with texts or
    with steps adds (``placed``, ``step_chars``: per question, the characters each step
    added); the slices per tag key and value, and the first run ids that name no query."""

    questions: Questions
    metrics: dict[MetricName, list[Finite]]
    failure: dict[str, list[str | None]]
    gold: GoldSpans
    evidence: EvidenceTable
    placed: list[PlacedItem] | UnsetType = UNSET
    step_chars: list[list[Count]] | UnsetType = UNSET
    slices: dict[str, dict[str, Slice]] | UnsetType = UNSET
    run_rows_without_query: list[str] | UnsetType = UNSET


class DocColumns(Struct, kw_only=True):
    """A doc score's details in format v2: the evaluated queries and a column per metric."""

    questions: Questions
    metrics: dict[MetricName, list[Finite]]


def check_columns(details: SpanColumns | DocColumns) -> str | None:
    """What makes ``details`` unreadable though every value has its type (an array of
    another length than its table's, an index out of range, gold spans out of their
    questions' order), as ``"<array>: ..."`` (its path under ``details``); None when it is readable."""
    n = len(details.questions.id)
    q = details.questions
    arrays: list[tuple[str, int]] = [("questions.in_run", len(q.in_run))]
    arrays += [(f"questions.{name}", len(v)) for name, v in (("query", q.query),
               ("doc_id", q.doc_id)) if not isinstance(v, UnsetType)]
    if not isinstance(q.tags, UnsetType):
        arrays += [(f"questions.tags.{key}", len(v)) for key, v in q.tags.items()]
    arrays += [(f"metrics.{name}", len(v)) for name, v in details.metrics.items()]
    if isinstance(details, SpanColumns):
        arrays += [(f"failure.{k}", len(v)) for k, v in details.failure.items()]
        if not isinstance(details.step_chars, UnsetType):
            arrays.append(("step_chars", len(details.step_chars)))
    for name, size in arrays:
        if size != n:
            return f"{name} has {size} entries for {n} questions"
    if isinstance(details, DocColumns):
        return None
    return _check_gold(details, n)


def _check_gold(details: SpanColumns, n: int) -> str | None:
    gold, evidence = details.gold, details.evidence
    if set(details.failure) != set(gold.covered):
        return "failure and gold.covered must name the same cutoffs"
    size = len(gold.question)
    arrays = [(name, getattr(gold, name)) for name in ("doc_id", "start", "end", "first_rank",
                                                       "text", "chunk_ceiling",
                                                       "whole_in_one_chunk", "step")]
    arrays += [(f"covered.{k}", v) for k, v in gold.covered.items()]
    for name, values in arrays:
        if not isinstance(values, UnsetType) and len(values) != size:
            return f"gold.{name} has {len(values)} entries for {size} gold spans"
    question = gold.question
    if not all(map(operator.le, question, itertools.islice(question, 1, None))) or (
            question and question[-1] >= n):
        return "gold.question must list question indices in order, each below " \
               f"the {n} questions"
    if not all(map(operator.le, gold.start, gold.end)):
        return "gold: a span ends before it starts"
    for name in ("start", "end", "chunk_id", "rank"):
        if len(getattr(evidence, name)) != len(evidence.gold):
            return (f"evidence.{name} has {len(getattr(evidence, name))} entries for "
                    f"{len(evidence.gold)} chunks")
    if evidence.gold and max(evidence.gold) >= size:
        return f"evidence.gold names a gold span beyond the {size} listed"
    if not isinstance(details.placed, UnsetType) and any(p.question >= n
                                                          for p in details.placed):
        return f"placed names a question beyond the {n} listed"
    return None


def rows_of(details: SpanColumns | DocColumns, tau: float | None,
            metrics: bool = True) -> list[Row]:
    """The per-question rows of format v1 (``records.score_rows.Row``) that ``details``
    (checked by ``check_columns``) holds, in its order: the same rows, value for value, that
    a v1 report of the same scoring held. ``tau`` is the report's grounding threshold (a span
    score's; a gold span below it at a failing cutoff is missing there); ``metrics=False``
    leaves each row's metrics empty (a reader with the metric columns already)."""
    q = details.questions
    names = list(details.metrics)
    columns = [details.metrics[n] for n in names]
    values = list(zip(*columns)) if metrics and columns else None
    if isinstance(details, DocColumns):
        return [Row(id=qid, in_run=q.in_run[i],
                    metrics=dict(zip(names, values[i])) if values is not None else {})
                for i, qid in enumerate(q.id)]
    assert tau is not None, "a span score's rows need its grounding threshold"
    spans = SpanRows(details, tau)
    tags = q.tags if not isinstance(q.tags, UnsetType) else {}
    query = q.query if not isinstance(q.query, UnsetType) else None
    doc_ids = q.doc_id if not isinstance(q.doc_id, UnsetType) else None
    rows = []
    for i, qid in enumerate(q.id):
        missing, failure, evidence = spans.of(i)
        doc_id = doc_ids[i] if doc_ids is not None else None
        own: dict[str, str] = {key: t for key, v in tags.items() if (t := v[i]) is not None}
        rows.append(Row(
            id=qid, query=query[i] if query is not None else UNSET, in_run=q.in_run[i],
            metrics=dict(zip(names, values[i])) if values is not None else {},
            doc_id=UNSET if doc_id is None else doc_id, tags=own or UNSET,
            missing_spans=missing or UNSET, failure=failure if missing else UNSET,
            failure_evidence=evidence if missing else UNSET))
    spans.add_runs(rows)
    return rows


class SpanRows:
    """Each question's missing spans, labels and evidence, read from the gold and evidence
    tables on demand (a reader that shows a few questions builds a few): the spans of
    question ``i`` are ``gold[bounds[i]:bounds[i + 1]]``."""

    def __init__(self, details: SpanColumns, tau: float):
        self.details, self.tau = details, tau
        gold = details.gold
        self.bounds = [0] * (len(details.questions.id) + 1)
        for g in gold.question:
            self.bounds[g + 1] += 1
        for i in range(1, len(self.bounds)):
            self.bounds[i] += self.bounds[i - 1]
        self._chunks: dict[int, list[EvidenceChunk]] | None = None
        self.failure = list(details.failure.items())

    def failure_of(self, i: int) -> dict[str, str]:
        """Question ``i``'s failure label at each cutoff it fails."""
        return {k: label for k, labels in self.failure if (label := labels[i]) is not None}

    @property
    def chunks(self) -> dict[int, list[EvidenceChunk]]:
        """The evidence table's chunks by gold span (built once, when first read)."""
        if self._chunks is None:
            self._chunks = {}
            ev = self.details.evidence
            for g, start, end, chunk_id, rank in zip(ev.gold, ev.start, ev.end, ev.chunk_id,
                                                     ev.rank):
                self._chunks.setdefault(g, []).append(EvidenceChunk(
                    start=start, end=end, chunk_id=UNSET if chunk_id is None else chunk_id,
                    rank=rank))
        return self._chunks

    def of(self, i: int) -> tuple[dict[str, list[MissingSpan]], dict[str, str],
                                  list[Evidence]]:
        """Question ``i``'s missing spans per failing cutoff, its labels, and the evidence
        of each span missing somewhere, as its v1 row held them."""
        gold, tau = self.details.gold, self.tau
        lo, hi = self.bounds[i], self.bounds[i + 1]
        missing: dict[str, list[MissingSpan]] = {}
        failure: dict[str, str] = {}
        shown: set[int] = set()
        texts = gold.text if not isinstance(gold.text, UnsetType) else None
        for k, labels in self.failure:
            label = labels[i]
            if label is None:
                continue
            failure[k] = label
            covered = gold.covered[k]
            spans = []
            for g in range(lo, hi):
                if covered[g] >= tau:
                    continue
                shown.add(g)
                text = texts[g] if texts is not None else None
                spans.append(MissingSpan(doc_id=gold.doc_id[g], start=gold.start[g],
                                         end=gold.end[g], covered=covered[g],
                                         text=UNSET if text is None else text))
            missing[k] = spans
        return missing, failure, [self._evidence(g) for g in sorted(shown)]
    def _evidence(self, g: int) -> Evidence:
        gold = self.details.gold
        first = gold.first_rank[g]
        ceiling = None if isinstance(gold.chunk_ceiling, UnsetType) else gold.chunk_ceiling[g]
        whole = (None if isinstance(gold.whole_in_one_chunk, UnsetType)
                 else gold.whole_in_one_chunk[g])
        return Evidence(doc_id=gold.doc_id[g], start=gold.start[g], end=gold.end[g],
                        chunks=list(self.chunks.get(g, [])), first_rank=first,
                        chunk_ceiling=UNSET if ceiling is None else ceiling,
                        whole_in_one_chunk=UNSET if whole is None else whole)

    def add_runs(self, rows: list[Row]) -> None:
        """What a run with texts (``placed``) or steps (``gold_steps``, ``step_chars``) adds
        to each row."""
        details, gold = self.details, self.details.gold
        if not isinstance(details.placed, UnsetType):
            for item in details.placed:
                row = rows[item.question]
                if isinstance(row.placed, UnsetType):
                    row.placed = []
                row.placed.append(Placed(**{f: getattr(item, f) for f in Placed.__struct_fields__}))
        if not isinstance(details.step_chars, UnsetType) and not isinstance(gold.step,
                                                                             UnsetType):
            for i, row in enumerate(rows):
                row.gold_steps = gold.step[self.bounds[i]:self.bounds[i + 1]]
                row.step_chars = details.step_chars[i]
