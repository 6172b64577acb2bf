"""``ragspan adapt``: documents + questions with answer texts -> an eval set with verified offsets.

A query row gives its gold evidence one of three ways (docs/datasets.md):

- ``gold_spans``: offsets, used as given and checked against the document text;
- ``gold_texts``: answer texts, each located exactly once in its document (zero or several
  occurrences is an error naming the document, the text and the count);
- ``expected`` + ``match`` (``any``/``all``): answer-bearing substrings located the same way;
  ``any`` means one grounded substring suffices. ``expected_sources`` (a planted-fact gold
  set) names the document of each expected string, in the same order.

A field the eval set has no place for (``clause_type``, ``dimensions``, ``verification``) is
kept as a tag, never dropped: nested objects flattened with dots
(``dimensions.requires_crossref``), values written as strings (JSON for numbers, booleans,
null and lists); the report says which fields were kept. ``question`` is read as ``query``
where a row has no ``query``.

The eval set's ``_header`` records the extractor and the sha256 of every document text the
offsets were made on, so ``ragspan validate`` can tell when a document changed underneath.
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path
from typing import Any

from msgspec import UNSET, UnsetType

from ragspan import __version__
from ragspan.base.errors import InputError, present
from ragspan.evalsets.build import AdaptBuild, OverlapMerges
from ragspan.evalsets.locate import locate_once
from ragspan.io.corpus import Corpus, FileSelection, directory_files, read_corpus
from ragspan.io.evalset import MATCH_MODES, parse_tags
from ragspan.io.files import decode_records, iter_json_records, read_bytes
from ragspan.io.rows import check_offsets, parse_id, unique_row_id
from ragspan.io.serialize import built_span
from ragspan.records.evalbuild import (
    AdaptDetails,
    AdaptSummary,
    BuiltRow,
    BuiltSpan,
    DerivedId,
    Files,
)

DEFAULT_MAX_DOCS = 10_000
DEFAULT_MAX_BYTES = 2_000_000_000
PASSTHROUGH = ("tags", "filters", "relevant_ids", "relevance")
KNOWN = ("id", "query", "question", "doc_id", "gold_spans", "gold_texts", "expected",
         "expected_sources", "match", *PASSTHROUGH)


def derived_id(obj: dict[str, Any], path: str, line: int) -> str:
    """The id of a row that has none (the CUAD harness writes its questions so): ``q-`` and
    the first 12 hex digits of the sha256 of its question and its ``doc_id`` (canonical
    JSON), so the same question on the same document gets the same id in every run, whatever
    its line. A row without a question string is an InputError."""
    query = obj.get("query", obj.get("question"))
    if not isinstance(query, str):
        raise InputError("missing 'id' (and no 'query' string to derive one from)", path, line)
    key = json.dumps([query, obj.get("doc_id")], ensure_ascii=False, separators=(",", ":"))
    return "q-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def flatten_tags(obj: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"dimensions": {"requires_crossref": True}}`` -> ``{"dimensions.requires_crossref":
    "true"}``: nested objects joined with dots, a string as is, any other value as JSON."""
    out: dict[str, str] = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten_tags(value, f"{name}."))
        else:
            out[name] = value if isinstance(value, str) else json.dumps(
                value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return out


def provenance(corpus: Corpus, source: str, **extra: Any) -> dict[str, Any]:
    """The eval set header: who made it, from what, and the digest of every document text."""
    extractor: dict[str, Any] = {"text": "utf-8 (newline untranslated)"}
    if corpus.extractor:
        extractor["pdf"] = corpus.extractor
    return {
        "source": source,
        "tool": {"name": "ragspan", "version": __version__, "python": platform.python_version()},
        "extractor": extractor,
        "documents": {d: doc.sha256 for d, doc in sorted(corpus.documents.items())},
        **extra,
    }


def check_scope(docs: Path, max_docs: int, max_bytes: int,
                selection: FileSelection | None = None) -> None:
    """Refuse a directory past the caps before reading any file, with the actual counts (of
    the files the selection takes)."""
    if not docs.is_dir():
        size = docs.stat().st_size if docs.is_file() else 0
        if size > max_bytes:
            raise InputError(f"{size} bytes exceed --max-bytes {max_bytes}", str(docs))
        return
    files = [f for f in directory_files(docs)
             if selection is None or selection.takes(f.relative_to(docs).as_posix())]
    if len(files) > max_docs:
        raise InputError(f"{len(files)} files exceed --max-docs {max_docs}", str(docs))
    total = sum(f.stat().st_size for f in files)
    if total > max_bytes:
        raise InputError(f"{total} bytes exceed --max-bytes {max_bytes}", str(docs))


def resolve_doc(corpus: Corpus, raw: Any, path: str, line: int, what: str) -> str:
    """A row's document id: as written, or a file name whose extension the corpus dropped."""
    doc_id = parse_id(raw, path, line, what)
    if doc_id in corpus.documents:
        return doc_id
    stem = doc_id.rsplit(".", 1)[0] if "." in doc_id else doc_id
    if stem in corpus.documents:
        return stem
    raise InputError(f"{what} '{doc_id}' is not a document of the corpus", path, line)


def _texts(obj: dict[str, Any], key: str, path: str, line: int) -> list[tuple[Any, str]]:
    """``gold_texts``/``expected``: a list of strings or of {doc_id, text} objects."""
    raw = obj[key]
    if not isinstance(raw, list) or not raw:
        raise InputError(f"'{key}' must be a non-empty list", path, line)
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            out.append((None, item))
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            out.append((item.get("doc_id"), item["text"]))
        else:
            raise InputError(f"{key}[{i}] must be a string or {{doc_id, text}}", path, line)
        if not out[-1][1].strip():
            raise InputError(f"{key}[{i}] is empty", path, line)
    return out


def adapt_row(obj: dict[str, Any], corpus: Corpus, path: str, line: int,
              normalize_whitespace: bool, counts: AdaptSummary,
              merges: OverlapMerges) -> BuiltRow:
    """Turn one query row into an eval-set row whose every span slices back to its text;
    overlapping gold spans become their union (kept in ``merges``)."""
    qid = parse_id(obj.get("id"), path, line)
    query = obj.get("query", obj.get("question"))
    if not isinstance(query, str) or not query.strip():
        raise InputError("'query' (or 'question') must be a non-empty string", path, line)
    scope = resolve_doc(corpus, obj["doc_id"], path, line, "doc_id") if "doc_id" in obj else None
    ways = [k for k in ("gold_spans", "gold_texts", "expected") if k in obj]
    if len(ways) != 1:
        raise InputError("give exactly one of 'gold_spans', 'gold_texts' or 'expected'", path, line)
    way = ways[0]
    match = obj.get("match", "all")
    if match not in MATCH_MODES:
        raise InputError(f"'match' must be 'all' or 'any', got {match!r}", path, line)
    if way == "gold_texts" and "match" in obj and match != "all":
        raise InputError("'gold_texts' are all required; use 'expected' with match 'any'", path, line)
    spans = (_given_spans(obj["gold_spans"], scope, corpus, path, line) if way == "gold_spans"
             else _located_spans(obj, way, scope, corpus, normalize_whitespace, path, line))
    unique = {(s.doc_id, s.start, s.end): s for s in spans}
    counts.duplicate_spans += len(spans) - len(unique)
    gold = merges.merge(qid, list(unique.values()), corpus.text)
    counts.spans += len(gold)
    setattr(counts, f"via_{way}", getattr(counts, f"via_{way}") + 1)
    given = obj.get("tags")
    if "tags" in obj:
        parse_tags(given, path, line)  # checked; written as given
    kept = _kept_as_tags({k: v for k, v in obj.items() if k not in KNOWN}, given or {},
                         counts, path, line)
    tags = {**(given or {}), **kept} if kept else given if "tags" in obj else UNSET
    return BuiltRow(id=qid, query=query, doc_id=UNSET if scope is None else scope,
                    gold_spans=gold, match=UNSET if match == "all" else match, tags=tags,
                    **{key: obj[key] for key in PASSTHROUGH[1:] if key in obj})


def _given_spans(raw: Any, scope: str | None, corpus: Corpus, path: str, line: int
                 ) -> list[BuiltSpan]:
    """``gold_spans`` as given: ``[start, end]`` in the row's document, or objects with
    their own ``doc_id``; each within its document, and equal to its ``text`` when one is
    given."""
    if not isinstance(raw, list) or not raw:
        raise InputError("'gold_spans' must be a non-empty list", path, line)
    spans: list[BuiltSpan] = []
    for i, s in enumerate(raw):
        what = f"gold_spans[{i}]"
        if isinstance(s, list) and len(s) == 2 and scope is not None:
            doc_id, (start, end) = scope, check_offsets(s[0], s[1], path, line, what)
        elif isinstance(s, dict):
            doc_id = resolve_doc(corpus, s.get("doc_id", scope), path, line, f"{what}.doc_id")
            start, end = check_offsets(s.get("start"), s.get("end"), path, line, what)
        else:
            raise InputError(f"{what}: expected [start, end] (with 'doc_id') or an object",
                             path, line)
        text = corpus.text(doc_id)
        if end > len(text):
            raise InputError(f"{what}: end={end} is past the end of '{doc_id}' "
                             f"({len(text)} characters)", path, line)
        if isinstance(s, dict) and "text" in s and text[start:end] != s["text"]:
            raise InputError(f"{what}: text does not slice back from '{doc_id}' "
                             f"[{start}, {end})", path, line)
        spans.append(built_span(doc_id, start, end, text[start:end]))
    return spans


def _located_spans(obj: dict[str, Any], way: str, scope: str | None, corpus: Corpus,
                   normalize_whitespace: bool, path: str, line: int) -> list[BuiltSpan]:
    """``gold_texts`` or ``expected`` (with ``expected_sources``: each text's document),
    each found exactly once in its document (``locate_once``)."""
    texts = _texts(obj, way, path, line)
    if "expected_sources" in obj:
        sources = obj["expected_sources"]
        if way != "expected" or not isinstance(sources, list) or len(sources) != len(texts):
            raise InputError(f"'expected_sources' must list the document of each of the "
                             f"{len(texts)} 'expected' strings", path, line)
        texts = [(src if doc is None else doc, needle)
                 for (doc, needle), src in zip(texts, sources)]
    spans: list[BuiltSpan] = []
    for doc_raw, needle in texts:
        if doc_raw is None and scope is None:
            raise InputError(f"'{way}' needs the row's 'doc_id' (or per-text doc_id)", path, line)
        doc_id = (present(scope, "the row's scope") if doc_raw is None
                  else resolve_doc(corpus, doc_raw, path, line, "doc_id"))
        text = corpus.text(doc_id)
        start, end = locate_once(text, needle, doc_id=doc_id,
                                 normalize_whitespace=normalize_whitespace, path=path, line=line)
        spans.append(built_span(doc_id, start, end, text[start:end]))
    return spans


def _kept_as_tags(extra: dict[str, Any], tags: dict[str, object], counts: AdaptSummary,
                  path: str, line: int) -> dict[str, str]:
    """A row's unknown fields as the tags they become (flattened), counted per key in
    ``counts.kept_as_tags``; a field that is also one of the row's ``tags`` is an
    InputError."""
    if not extra:
        return {}
    kept = flatten_tags(extra)
    clash = sorted(set(kept) & set(tags))
    if clash:
        raise InputError(f"field '{clash[0]}' is also a tag: rename one", path, line)
    tally = {} if counts.kept_as_tags is UNSET else counts.kept_as_tags
    for key in kept:
        tally[key] = tally.get(key, 0) + 1
    counts.kept_as_tags = tally
    return kept


def adapt(docs: str, queries: str, *, normalize_whitespace: bool = False,
          max_docs: int = DEFAULT_MAX_DOCS, max_bytes: int = DEFAULT_MAX_BYTES,
          pdf_cap: tuple[float, int] | None = None,
          selection: FileSelection | None = None) -> AdaptBuild:
    """Read the documents (a directory or a corpus JSONL) and the query rows; locate every gold
    text. Any failure is an InputError; nothing is written here. ``pdf_cap``: (characters
    per byte, characters) a PDF may extract to (``io.pdf``). ``selection``: which files of a
    directory are documents (default: the supported extensions; the queries file is never
    one); every file taken in and left out is listed (``details["files"]``)."""
    selection = selection or FileSelection()
    if Path(docs).is_dir() and Path(queries).resolve().is_relative_to(Path(docs).resolve()):
        inside = Path(queries).resolve().relative_to(Path(docs).resolve()).as_posix()
        selection = FileSelection(selection.include, (*selection.exclude, inside))
    check_scope(Path(docs), max_docs, max_bytes, selection)
    corpus = read_corpus(docs, max_records=max_docs, pdf_cap=pdf_cap, selection=selection)
    qpath = str(queries)
    qtext = decode_records(read_bytes(queries), qpath)
    counts = AdaptSummary()
    merges = OverlapMerges()
    rows: list[BuiltRow] = []
    seen: dict[Any, Any] = {}
    derived: list[DerivedId] = []
    for line, obj in iter_json_records(qtext, qpath):
        if "id" not in obj:
            obj = {**obj, "id": derived_id(obj, qpath, line)}
            derived.append(DerivedId(line, obj["id"]))
        try:
            unique_row_id(obj, seen, qpath, line)
        except InputError:
            if derived and derived[-1].line == line:
                raise InputError(f"the id derived from this row's query and doc_id, "
                                 f"'{obj['id']}', is that of line {seen[obj['id']]}: give "
                                 "the rows ids", qpath, line) from None
            raise
        rows.append(adapt_row(obj, corpus, qpath, line, normalize_whitespace, counts, merges))
    if not rows:
        raise InputError("the query file holds no queries", qpath)
    counts.queries, counts.derived_ids = len(rows), len(derived)
    counts.overlapping_merged, counts.documents = merges.count, len(corpus)
    files: Files | UnsetType = UNSET
    if Path(docs).is_dir():
        files = Files(sorted(str(d.metadata.get("source", d.id))
                             for d in corpus.documents.values()), list(corpus.left_out))
        counts.files_taken, counts.files_left_out = len(files.taken), len(files.left_out)
    details = AdaptDetails(overlapping_merged=merges.listed, derived_ids=derived, files=files)
    header = provenance(corpus, "adapt", normalize_whitespace=normalize_whitespace)
    documents = [corpus.documents[d] for d in sorted(corpus.documents)]
    return AdaptBuild(header, rows, documents, counts, details)
