"""Cross-reference checks of a planted-fact gold set (the localGPT harness's shape), run by
``ragspan validate`` only (docs/datasets.md, "Cross-reference gold sets").

Such a set marks the questions whose answer needs several documents (``requires_crossref``,
top level or under ``dimensions``), the document a question starts from (``anchor_doc``) and
the document of each answer string (``expected_sources``); ``adapt`` places each string in
its document and keeps the other two as tags. Checked here, each finding naming the query:

- ``crossref_single_document`` (error): a question marked ``requires_crossref`` or
  ``multi_document`` whose gold spans lie in fewer than two documents; ``multi_document``
  (error): one marked ``multi_document`` false whose gold spans lie in several;
- ``cross_reference_not_found`` (error): a ``cross_references`` entry (the reference the
  question must follow, "Exhibit A") that none of the question's gold documents says;
- ``anchor_doc`` (error): an ``anchor_doc`` that is no document of the corpus, or holds none
  of the question's gold spans;
- ``crossref_cue`` (warning, only in a set that marks ``requires_crossref`` at all): a query
  that points elsewhere ("Exhibit A", "as defined in", "pursuant to Section 4") while its row
  is not marked and its spans lie in one document;
- ``answer_not_unique`` (warning): a short answer (under ``SHORT`` characters) that occurs in
  another document of the corpus too, so finding the string does not show which document
  was read;
- with a facts sidecar (``read_facts``): each planted fact occurs exactly once in its
  document (``fact_not_found``, ``fact_ambiguous``: errors) and in no other
  (``fact_not_unique``: warning); a question's ``facts`` tag names known facts
  (``unknown_fact``) whose place lies inside one of its gold spans (``fact_uncovered``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragspan.base.errors import InputError
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalQuery, EvalSet
from ragspan.io.files import (
    TooDeep,
    decode_records,
    iter_json_records,
    json_value,
    read_bytes,
    sha256_hex,
)

SHORT = 20  # characters: the answers gold_in_query's verbatim check leaves to a word match
CROSSREF_TAGS = ("requires_crossref", "dimensions.requires_crossref")
ANCHOR_TAGS = ("anchor_doc", "dimensions.anchor_doc")
MULTI_TAGS = ("multi_document", "dimensions.multi_document")
REFERENCE_TAGS = ("cross_references", "dimensions.cross_references")
FACT_TAGS = ("facts", "fact_ids")
CUE = re.compile(
    r"\b(?:exhibits?|schedules?|annex(?:es)?|appendix|appendices|attachments?|sections?|"
    r"clauses?|articles?)\s+(?:[A-Z]\b|[0-9IVX]+(?:\.[0-9]+)*\b)"
    r"|\bas (?:defined|described|set forth|stated|referenced|specified) in\b"
    r"|\b(?:pursuant|according) to\b|\breferenced (?:in|by)\b|\bcross[- ]referenc"
    r"|\b(?:both|other|each|all|several|multiple) (?:documents?|reports?|agreements?)\b",
    re.IGNORECASE)


@dataclass(frozen=True)
class Fact:
    """One planted fact of a sidecar: ``text`` said in document ``doc_id``."""

    id: str
    text: str
    doc_id: str
    line: int


def _finding(check: str, severity: str, qid: str | None, message: str) -> dict[str, Any]:
    return {"check": check, "severity": severity, "query": qid, "message": message}


def _tag(q: EvalQuery, names: tuple[str, ...]) -> str | None:
    return next((q.tags[n] for n in names if n in q.tags), None)


def _doc_of(corpus: Corpus, name: str) -> str | None:
    """A document id as written, or a file name whose extension the corpus dropped."""
    if name in corpus.documents:
        return name
    stem = name.rsplit(".", 1)[0]
    return stem if stem in corpus.documents else None


def read_facts(path: str, corpus: Corpus) -> tuple[list[Fact], str]:
    """A facts sidecar and the sha256 of its bytes: a JSON list or JSONL of ``{"id", "text"
    (or "fact"), "doc_id" (or "source", a file name is fine)}``. A row without those, a
    repeated id, a document that is not in the corpus or an empty file is an InputError."""
    facts: list[Fact] = []
    seen: set[str] = set()
    data = read_bytes(path)
    for line, obj in iter_json_records(decode_records(data, path), path):
        fid, text = obj.get("id"), obj.get("text", obj.get("fact"))
        doc = obj.get("doc_id", obj.get("source"))
        if not isinstance(fid, str | int) or isinstance(fid, bool) or str(fid) == "":
            raise InputError("a fact needs an 'id' (a string or an integer)", path, line)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"fact '{fid}' needs a non-empty 'text'", path, line)
        if not isinstance(doc, str):
            raise InputError(f"fact '{fid}' needs its document ('doc_id' or 'source')", path, line)
        doc_id = _doc_of(corpus, doc)
        if doc_id is None:
            raise InputError(f"fact '{fid}': '{doc}' is not a document of the corpus", path, line)
        if str(fid) in seen:
            raise InputError(f"fact id '{fid}' is repeated", path, line)
        seen.add(str(fid))
        facts.append(Fact(str(fid), text, doc_id, line))
    if not facts:
        raise InputError("no facts in the sidecar", path)
    return facts, sha256_hex(data)


def crossref_findings(evalset: EvalSet, corpus: Corpus,
                      facts: list[Fact] | None = None) -> list[dict[str, Any]]:
    """The checks of this module, in query order, then the facts' own."""
    findings: list[dict[str, Any]] = []
    marks = any(_tag(q, CROSSREF_TAGS + MULTI_TAGS) is not None for q in evalset.queries)
    holders = _Holders(corpus)
    for q in evalset.queries:
        findings += _row_findings(q, corpus, marks, evalset.path)
        findings += _short_answer_findings(q, corpus, holders)
    if facts is not None:
        findings += _fact_findings(evalset, corpus, facts, holders)
    return findings


def _yes(raw: str | None) -> bool | None:
    """A boolean tag as ``adapt`` keeps it (``true``/``false``), None when absent."""
    return None if raw is None else raw.strip().lower() in ("true", "1", "yes")


def _row_findings(q: EvalQuery, corpus: Corpus, marks: bool, path: str
                  ) -> list[dict[str, Any]]:
    """A row's marks against where its gold spans lie: requires_crossref / multi_document,
    anchor_doc, cross_references, and an unmarked query's cue."""
    found: list[dict[str, Any]] = []
    docs = sorted({s.doc_id for s in q.gold_spans})
    where = (f"one document ('{docs[0]}')" if len(docs) == 1 else "no document" if not docs
             else f"{len(docs)} documents")
    crossref, multi = _yes(_tag(q, CROSSREF_TAGS)), _yes(_tag(q, MULTI_TAGS))
    for name, value in (("requires_crossref", crossref), ("multi_document", multi)):
        if value and len(docs) < 2:
            found.append(_finding("crossref_single_document", "error", q.id,
                                  f"marked {name} but its gold spans lie in {where}: give "
                                  "the evidence in each document"))
    if multi is False and len(docs) > 1:
        found.append(_finding("multi_document", "error", q.id,
                              f"marked multi_document false but its gold spans lie in {where}: "
                              + ", ".join(f"'{d}'" for d in docs)))
    anchor = _tag(q, ANCHOR_TAGS)
    if anchor is not None:
        anchor_id = _doc_of(corpus, anchor)
        if anchor_id is None:
            found.append(_finding("anchor_doc", "error", q.id,
                                  f"anchor_doc '{anchor}' is not a document of the corpus"))
        elif anchor_id not in docs:
            found.append(_finding(
                "anchor_doc", "error", q.id,
                f"anchor_doc '{anchor}' holds none of its gold spans (they lie in "
                + ", ".join(f"'{d}'" for d in docs) + ")"))
    for ref in _list_tag(_tag(q, REFERENCE_TAGS), q, path):
        if ref and not any(ref in corpus.text(d) for d in docs if d in corpus.documents):
            found.append(_finding(
                "cross_reference_not_found", "error", q.id,
                f"cross_references names {ref!r}, which none of its gold documents says "
                f"(they are {', '.join(repr(d) for d in docs) or 'none'})"))
    cue = CUE.search(q.query)
    if marks and cue and not crossref and not multi and len(docs) < 2:
        found.append(_finding(
            "crossref_cue", "warning", q.id,
            f"the query points elsewhere ({cue.group(0)!r}) but is not marked "
            "requires_crossref and its gold spans lie in one document"))
    return found


def _short_answer_findings(q: EvalQuery, corpus: Corpus,
                           holders: _Holders) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for i, s in enumerate(q.gold_spans):
        doc = corpus.documents.get(s.doc_id)
        if doc is None or s.end > len(doc.text):
            continue  # check_eval_set reports it
        answer = doc.text[s.start:s.end].strip()
        if not answer or len(answer) >= SHORT:
            continue
        others = [d for d in holders.of(answer) if d != s.doc_id]
        if others:
            found.append(_finding(
                "answer_not_unique", "warning", q.id,
                f"gold_spans[{i}]'s short answer {answer!r} occurs in {len(others)} other "
                f"document(s) too (first '{others[0]}'): the string does not show which "
                "document was read"))
    return found


class _Holders:
    """Which documents contain a text, each text looked up once."""

    def __init__(self, corpus: Corpus) -> None:
        self._texts = sorted((d, doc.text) for d, doc in corpus.documents.items())
        self._cache: dict[str, list[str]] = {}

    def of(self, needle: str) -> list[str]:
        if needle not in self._cache:
            self._cache[needle] = [d for d, text in self._texts if needle in text]
        return self._cache[needle]


def _fact_findings(evalset: EvalSet, corpus: Corpus, facts: list[Fact],
                   holders: _Holders) -> list[dict[str, Any]]:
    findings: list[dict[str, Any]] = []
    places: dict[str, tuple[str, int, int]] = {}
    for f in facts:
        text = corpus.text(f.doc_id)
        count = text.count(f.text)
        if count != 1:
            findings.append(_finding(
                "fact_not_found" if count == 0 else "fact_ambiguous", "error", None,
                f"fact '{f.id}' (record {f.line}) occurs {count} times in '{f.doc_id}': "
                f"{f.text[:40]!r}"))
            continue
        start = text.find(f.text)
        places[f.id] = (f.doc_id, start, start + len(f.text))
        others = [d for d in holders.of(f.text) if d != f.doc_id]
        if others:
            findings.append(_finding(
                "fact_not_unique", "warning", None,
                f"fact '{f.id}' occurs in {len(others)} other document(s) too "
                f"(first '{others[0]}'): {f.text[:40]!r}"))
    known = {f.id for f in facts}
    for q in evalset.queries:
        raw = _tag(q, FACT_TAGS)
        if raw is None:
            continue
        for fid in _fact_ids(raw, q, evalset.path):
            if fid not in known:
                findings.append(_finding("unknown_fact", "error", q.id,
                                         f"fact '{fid}' is not in the facts sidecar"))
                continue
            if fid not in places:
                continue  # its own finding says why it has no place
            doc_id, start, end = places[fid]
            if not any(s.doc_id == doc_id and s.start <= start and end <= s.end
                       for s in q.gold_spans):
                findings.append(_finding(
                    "fact_uncovered", "error", q.id,
                    f"fact '{fid}' ('{doc_id}' [{start}, {end})) lies inside none of its "
                    "gold spans"))
    return findings


def _list_tag(raw: str | None, q: EvalQuery, path: str) -> list[str]:
    """A list tag (``facts``, ``cross_references``): a JSON list (as ``adapt`` keeps a list
    field) or one value; none when absent."""
    return [] if raw is None else _fact_ids(raw, q, path)


def _fact_ids(raw: str, q: EvalQuery, path: str) -> list[str]:
    """A ``facts`` tag: a JSON list (as ``adapt`` keeps a list field) of ids or one id. JSON
    nested past ``base.bounds.MAX_JSON_DEPTH``, or a list holding anything but text and
    numbers, is an InputError naming the eval set, the row and the query."""
    try:
        value = json_value(raw)
    except TooDeep as exc:
        raise InputError(f"query '{q.id}': a list tag holds {exc}", path, q.line) from None
    except ValueError:
        return [raw]
    if isinstance(value, list):
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                   for v in value):
            raise InputError(f"query '{q.id}': a list tag must list ids (text or numbers)",
                             path, q.line)
        return [str(v) for v in value]
    if isinstance(value, dict):
        raise InputError(f"query '{q.id}': a list tag must list ids, got an object", path,
                         q.line)
    return [str(value)]
