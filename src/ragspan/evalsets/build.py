"""What ``adapt`` and the importers produce, and how it is written: an eval set with its
provenance header plus the corpus its offsets index, written together or not at all."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ragspan.base.errors import InputError
from ragspan.io.corpus import Document
from ragspan.io.serialize import built_span, corpus_text, eval_set_text
from ragspan.io.span_anchors import anchor_of
from ragspan.records.evalbuild import AdaptDetails, AdaptSummary, BuiltRow, BuiltSpan, Merge, SquadRow
from ragspan.records.imported import ImportDetails

Counts = Mapping[str, int | Mapping[str, int]]  # an importer's tally (``records.imported``)

SHOW_MISMATCHES = 5


@dataclass
class EvalBuild:
    """Eval rows (each span verified), the documents they index, counts and listed findings."""

    header: dict[str, Any]
    rows: Sequence[BuiltRow | SquadRow]
    documents: list[Document]
    counts: Counts | AdaptSummary = field(default_factory=dict)
    details: ImportDetails | AdaptDetails = field(default_factory=ImportDetails)


@dataclass
class AdaptBuild(EvalBuild):
    """What ``adapt`` built: its counts and details typed (``records.evalbuild``)."""

    counts: AdaptSummary = field(default_factory=AdaptSummary)
    details: AdaptDetails = field(
        default_factory=lambda: AdaptDetails(overlapping_merged=[], derived_ids=[]))


def verify_slices(rows: Sequence[BuiltRow | SquadRow], documents: list[Document], what: str,
                  path: str) -> None:
    """Every gold span must slice back to its recorded text; mismatches fail with the count
    and the first five examples (never silently dropped)."""
    texts = {d.id: d.text for d in documents}
    bad = []
    for row in rows:
        for s in row.spans():
            got = texts.get(s.doc_id, "")[s.start:s.end]
            if got != s.text:
                bad.append(f"{row.id} {s.doc_id}[{s.start}:{s.end}]={got[:40]!r} "
                           f"!= {s.text[:40]!r}")
    if bad:
        shown = "; ".join(bad[:SHOW_MISMATCHES])
        raise InputError(f"{len(bad)} {what} spans do not slice back to their answer text: "
                         f"{shown}", path)


def merge_overlapping(spans: list[BuiltSpan], text_of: Callable[[str], str], qid: str
                      ) -> tuple[list[BuiltSpan], list[Merge]]:
    """One question's gold spans with every group of overlapping spans of a document replaced
    by their union (its ``text`` sliced from ``text_of(doc_id)``), and the merges made.

    Overlap is strict: ``[a, b)`` and ``[c, d)`` of one document overlap when ``c < b`` (after
    sorting by start); spans that only touch (``c == b``) stay two pieces of evidence. Shared
    characters would count twice in the character metrics, so no importer keeps them. Each
    merge is a ``Merge`` of question ``qid``; the union takes the place of the group's first
    span in ``spans``' order, the rest are dropped.
    Spans must be unique already (duplicates are counted by the importer)."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i].doc_id, spans[i].start,
                                                      spans[i].end))
    groups: list[list[int]] = []
    end = 0
    for i in order:
        s = spans[i]
        if groups and spans[groups[-1][0]].doc_id == s.doc_id and s.start < end:
            groups[-1].append(i)
            end = max(end, s.end)
        else:
            groups.append([i])
            end = s.end
    merges: list[Merge] = []
    into: dict[int, BuiltSpan] = {}
    dropped: set[int] = set()
    for group in groups:
        if len(group) == 1:
            continue
        doc_id = spans[group[0]].doc_id
        start = min(spans[i].start for i in group)
        stop = max(spans[i].end for i in group)
        merges.append(Merge(query=qid, doc_id=doc_id,
                            spans=[[spans[i].start, spans[i].end] for i in group],
                            into=[start, stop]))
        into[min(group)] = built_span(doc_id, start, stop, text_of(doc_id)[start:stop])
        dropped.update(i for i in group if i != min(group))
    kept = [into.get(i, s) for i, s in enumerate(spans) if i not in dropped]
    return kept, merges


@dataclass
class OverlapMerges:
    """An importer's merges of overlapping gold spans, question by question: ``listed`` holds
    each merge with its ``query`` id, ``count`` the gold spans the merges removed."""

    listed: list[Merge] = field(default_factory=list)

    def merge(self, qid: str, spans: list[BuiltSpan], text_of: Callable[[str], str]
              ) -> list[BuiltSpan]:
        """``spans`` of question ``qid`` after ``merge_overlapping``; the merges are kept."""
        kept, merges = merge_overlapping(spans, text_of, qid)
        self.listed.extend(merges)
        return kept

    @property
    def count(self) -> int:
        return sum(len(m.spans) - 1 for m in self.listed)


def anchor_spans(spans: list[BuiltSpan], texts: Mapping[str, str]) -> list[BuiltSpan]:
    """``spans`` each with its ``anchor`` (``io.span_anchors``), made on the document texts
    ``texts`` the spans index."""
    return [msgspec.structs.replace(s, anchor=anchor_of(texts[s.doc_id], s.start, s.end).digests())
            for s in spans]


def anchored(rows: Sequence[BuiltRow | SquadRow], texts: Mapping[str, str]
             ) -> list[BuiltRow | SquadRow]:
    """``rows`` with an anchor on every gold span (``anchor_spans``)."""
    return [msgspec.structs.replace(row, gold_spans=anchor_spans(row.spans(), texts))
            if row.spans() else row for row in rows]


def build_files(build: EvalBuild, out: str, corpus_out: str | None) -> dict[str, str]:
    """The eval set's text (every gold span anchored) and the corpus's, by output path, to
    be written together."""
    texts = {out: eval_set_text(build.header, anchored(build.rows,
                                                       {d.id: d.text for d in build.documents}))}
    if corpus_out:
        texts[corpus_out] = corpus_text(build.documents)
    return texts


def sha256_of(texts: dict[str, str]) -> dict[str, str]:
    return {p: hashlib.sha256(t.encode("utf-8")).hexdigest() for p, t in texts.items()}
