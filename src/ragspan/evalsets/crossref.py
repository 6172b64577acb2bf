"""Cross-reference checks of a planted-fact gold set (the localGPT harness's shape), run by
``ragspan validate`` only (docs/datasets.md, "Cross-reference gold sets").

Such a set marks the questions whose answer lies in another document than the one the
question starts from (``requires_crossref``, top level or under ``dimensions``), that
document (``anchor_doc``, null for none), the questions whose answer spans several documents
(``multi_document``) and the document of each answer string (``expected_sources``); ``adapt``
places each string in its document and keeps the rest as tags. The marks mean what the
harness's own gate (``verify_crossref_goldset.py``) says they mean. Checked here, each
finding naming the query:

- ``crossref_flag`` (error): ``requires_crossref`` is not exactly "an anchor document is
  named and some gold span lies in another document" (a row whose answer lies only in
  another document than its anchor is correct; one whose answer is in its anchor, or that
  names no anchor, needs no cross-reference);
- ``multi_document`` (error): ``multi_document`` is not exactly "the gold spans lie in
  several documents";
- ``anchor_doc`` (error): an ``anchor_doc`` that is no document of the corpus;
- ``cross_reference_not_found`` (error): a row's ``cross_references`` entry (the reference
  the question must follow, "Exhibit A") that its anchor document (else its gold
  documents) does not say;
- ``crossref_cue`` (warning, only in a set that marks ``requires_crossref`` at all): a query
  that points elsewhere ("Exhibit A", "as defined in", "pursuant to Section 4") while its row
  is not marked and its spans lie in one document;
- ``answer_not_unique`` (warning): a short answer (under ``SHORT`` characters) that occurs in
  another document of the corpus too, so finding the string does not show which document
  was read;
- with a facts sidecar (``read_facts``: the harness's ``*.facts.json``, or a list): each
  planted fact occurs exactly once in its document (``fact_not_found``, ``fact_ambiguous``:
  errors) and in no other (``fact_not_unique``: warning; a fact naming no document is
  placed in the one document that holds it); a question's ``facts`` (or ``fact_ids``) tag
  names known facts (``unknown_fact``) whose place lies inside one of its gold spans
  (``fact_uncovered``); each of the sidecar's ``cross_references`` (``cue``, ``from``,
  ``to``) has its cue in its ``from`` document and a ``to`` in the corpus, or null for a
  reference left dangling on purpose (``cross_reference_cue_not_found``,
  ``cross_reference_document``: errors).
"""

from __future__ import annotations

import re

from ragspan.base.errors import InputError
from ragspan.evalsets.sidecar import Fact, Reference, Sidecar, doc_of, words
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import EvalQuery, EvalSet
from ragspan.io.files import TooDeep, json_value
from ragspan.records.validate import Finding

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


def _tag(q: EvalQuery, names: tuple[str, ...]) -> str | None:
    return next((q.tags[n] for n in names if n in q.tags), None)


def crossref_findings(evalset: EvalSet, corpus: Corpus,
                      sidecar: Sidecar | None = None) -> list[Finding]:
    """The checks of this module, in query order, then the sidecar's own."""
    findings: list[Finding] = []
    marks = any(_tag(q, CROSSREF_TAGS + MULTI_TAGS) is not None for q in evalset.queries)
    holders = _Holders(corpus)
    for q in evalset.queries:
        findings += _row_findings(q, corpus, marks, evalset.path)
        findings += _short_answer_findings(q, corpus, holders)
    if sidecar is not None:
        findings += _fact_findings(evalset, sidecar.facts, holders)
        findings += _reference_findings(sidecar.references, corpus)
    return findings


def _yes(raw: str | None) -> bool | None:
    """A boolean tag as ``adapt`` keeps it (``true``/``false``), None when absent."""
    return None if raw is None else raw.strip().lower() in ("true", "1", "yes")


def _anchor(q: EvalQuery) -> str | None:
    """The row's ``anchor_doc``; None when absent, empty or null (the harness's "starts from
    no document")."""
    raw = _tag(q, ANCHOR_TAGS)
    return None if raw is None or raw.strip() in ("", "null") else raw


def _row_findings(q: EvalQuery, corpus: Corpus, marks: bool, path: str
                  ) -> list[Finding]:
    """A row's marks against where its gold spans lie: requires_crossref, multi_document,
    anchor_doc, cross_references, and an unmarked query's cue."""
    found: list[Finding] = []
    docs = sorted({s.doc_id for s in q.gold_spans})
    listed = ", ".join(f"'{d}'" for d in docs) or "no document"
    anchor = _anchor(q)
    anchor_id = None if anchor is None else doc_of(corpus, anchor)
    if anchor is not None and anchor_id is None:
        found.append(Finding("anchor_doc", "error", q.id,
                              f"anchor_doc '{anchor}' is not a document of the corpus"))
    crossref, multi = _yes(_tag(q, CROSSREF_TAGS)), _yes(_tag(q, MULTI_TAGS))
    if crossref is not None:
        start = anchor_id or anchor
        expected = start is not None and any(d != start for d in docs)
        if crossref is not expected:
            why = ("it names no anchor_doc, so there is no document to cross from"
                   if start is None else
                   f"its anchor_doc is '{start}' and its gold spans lie in {listed}")
            found.append(Finding("crossref_flag", "error", q.id,
                                  f"marked requires_crossref {str(crossref).lower()}, but "
                                  f"{why}: it should be {str(expected).lower()}"))
    if multi is not None and multi is not (len(docs) > 1):
        found.append(Finding("multi_document", "error", q.id,
                              f"marked multi_document {str(multi).lower()}, but its gold spans "
                              f"lie in {len(docs)} document(s): {listed}"))
    said_in = [anchor_id] if anchor_id is not None else []
    said_in += [d for d in docs if d in corpus.documents and d != anchor_id]
    for ref in _list_tag(_tag(q, REFERENCE_TAGS), q, path):
        if ref.strip() and not any(words(ref).search(corpus.text(d)) for d in said_in):
            found.append(Finding(
                "cross_reference_not_found", "error", q.id,
                f"cross_references names {ref!r}, which neither its anchor_doc nor its gold "
                f"documents say (they are {', '.join(repr(d) for d in said_in) or 'none'})"))
    cue = CUE.search(q.query)
    if marks and cue and not crossref and not multi and len(docs) < 2:
        found.append(Finding(
            "crossref_cue", "warning", q.id,
            f"the query points elsewhere ({cue.group(0)!r}) but is not marked "
            "requires_crossref and its gold spans lie in one document"))
    return found


def _reference_findings(refs: list[Reference], corpus: Corpus) -> list[Finding]:
    """Each sidecar cross-reference: its ``from`` and ``to`` documents of the corpus (``to``
    null: dangling on purpose, not checked) and its cue said in ``from``."""
    found: list[Finding] = []
    for r in refs:
        where = f"cross_references[{r.index}] ({r.cue[:40]!r})"
        source = doc_of(corpus, r.source)
        missing = [] if source is not None else [f"'{r.source}'"]
        if r.target is not None and doc_of(corpus, r.target) is None:
            missing.append(f"'{r.target}'")
        if missing:
            found.append(Finding("cross_reference_document", "error", None,
                                  f"{where} names {' and '.join(missing)}, not a document of "
                                  "the corpus"))
        if source is not None and not words(r.cue).search(corpus.text(source)):
            found.append(Finding("cross_reference_cue_not_found", "error", None,
                                  f"{where}: its cue is not said in '{source}'"))
    return found


def _short_answer_findings(q: EvalQuery, corpus: Corpus,
                           holders: _Holders) -> list[Finding]:
    found: list[Finding] = []
    for i, s in enumerate(q.gold_spans):
        doc = corpus.documents.get(s.doc_id)
        if doc is None or s.end > len(doc.text):
            continue  # check_eval_set reports it
        answer = doc.text[s.start:s.end].strip()
        if not answer or len(answer) >= SHORT:
            continue
        others = [d for d in holders.of(answer) if d != s.doc_id]
        if others:
            found.append(Finding(
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

    def places(self, text: str) -> dict[str, list[tuple[int, int]]]:
        """Each document's occurrences of ``text`` as ``words`` matches them."""
        pattern = words(text)
        found: dict[str, list[tuple[int, int]]] = {}
        for d, doc in self._texts:
            spans = [m.span() for m in pattern.finditer(doc)]
            if spans:
                found[d] = spans
        return found


def _fact_findings(evalset: EvalSet, facts: list[Fact],
                   holders: _Holders) -> list[Finding]:
    findings: list[Finding] = []
    places: dict[str, tuple[str, int, int]] = {}
    unplaced: dict[str, int] = {}
    for f in facts:
        found = holders.places(f.text)
        docs = sorted(found)
        if f.doc_id is None and len(docs) > 1:
            unplaced[f.id] = len(docs)
            findings.append(Finding(
                "fact_not_unique", "warning", None,
                f"fact '{f.id}' names no document and occurs in {len(docs)} (first "
                f"'{docs[0]}'): not placed, {f.text[:40]!r}"))
            continue
        doc_id = f.doc_id if f.doc_id is not None else (docs[0] if docs else None)
        count = len(found.get(doc_id, [])) if doc_id is not None else 0
        if count != 1:
            where = f"in '{doc_id}'" if doc_id is not None else "in no document"
            findings.append(Finding(
                "fact_not_found" if count == 0 else "fact_ambiguous", "error", None,
                f"fact '{f.id}' (record {f.line}) occurs {count} times {where}: "
                f"{f.text[:40]!r}"))
            continue
        assert doc_id is not None
        places[f.id] = (doc_id, *found[doc_id][0])
        others = [d for d in docs if d != doc_id]
        if others:
            findings.append(Finding(
                "fact_not_unique", "warning", None,
                f"fact '{f.id}' occurs in {len(others)} other document(s) too "
                f"(first '{others[0]}'): {f.text[:40]!r}"))
    known = {f.id for f in facts}
    for q in evalset.queries:
        raw = _tag(q, FACT_TAGS)
        for fid in [] if raw is None else _fact_ids(raw, q, evalset.path):
            if fid not in known:
                findings.append(Finding("unknown_fact", "error", q.id,
                                         f"fact '{fid}' is not in the facts sidecar"))
            elif fid in unplaced:
                findings.append(Finding(
                    "fact_uncovered", "error", q.id,
                    f"fact '{fid}' names no document and occurs in {unplaced[fid]}: which "
                    "one the row's gold covers cannot be checked (give the fact its source)"))
            elif fid in places:  # else its own finding says why it has no place
                doc_id, start, end = places[fid]
                if not any(s.doc_id == doc_id and s.start <= start and end <= s.end
                           for s in q.gold_spans):
                    findings.append(Finding(
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
