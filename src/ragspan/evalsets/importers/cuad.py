"""CUAD (The Atticus Project, CC BY 4.0) in both official shapes.

- ``master_clauses.csv`` + ``full_contract_txt``: each category cell is a Python-list literal
  of quotes; a quote split by ``<omitted>`` gives one gold span per piece. A piece found zero
  times is an error; a piece found more than once is ambiguous: skipped, counted and listed
  (as LegalBench-RAG does). One query per (contract, category) with at least one span, its
  text CUAD's own question template over ``category_descriptions.csv``.
- SQuAD-style JSON (``CUADv1.json``): ``answer_start`` offsets into each paragraph's context;
  ``is_impossible`` questions are skipped (and counted).

Doc ids are contract file names without ``.txt``; offsets index the file decoded as UTF-8
with no newline translation.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import random
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ragspan.base.errors import InputError
from ragspan.evalsets.adapt import provenance
from ragspan.evalsets.build import EvalBuild, OverlapMerges, verify_slices
from ragspan.evalsets.locate import find_exact
from ragspan.io.corpus import Corpus, Document
from ragspan.io.files import decode_records, decode_utf8, loads_json, read_bytes, sha256_hex
from ragspan.io.serialize import built_span
from ragspan.records.evalbuild import BuiltRow, BuiltSpan, SquadRow
from ragspan.records.imported import AmbiguousPiece, ImportDetails

METADATA_CLAUSES = ("Document Name", "Parties", "Agreement Date", "Effective Date",
                    "Expiration Date")
# phrased as a cross-reference to another clause ("except as set forth in Article 7.1"): the
# reference harness leaves it out, since its answer is the other clause, not this text
CROSS_REFERENCE_CLAUSES = ("Competitive Restriction Exception",)
OMITTED = "<omitted>"
QUESTION = ('Highlight the parts (if any) of this contract related to "{category}" that should '
            "be reviewed by a lawyer. Details: {description}")
SHOW = 5


def question(category: str, description: str) -> str:
    return QUESTION.format(category=category, description=description)


def query_id(doc_id: str, category: str) -> str:
    """Stable across samples: a digest of the contract name plus the category."""
    digest = hashlib.sha1(doc_id.encode("utf-8")).hexdigest()[:8]
    slug = "-".join(category.lower().replace("/", " ").split())
    return f"cuad-{digest}-{slug}"


def read_descriptions(path: str) -> dict[str, str]:
    """``category_descriptions.csv``: ``Category: X`` -> ``Description: Y`` (prefixes dropped)."""
    text = decode_utf8(read_bytes(path), path).lstrip("\ufeff")
    out: dict[str, str] = {}
    for i, row in enumerate(csv.reader(io.StringIO(text, newline=""))):
        if i == 0 or not row:
            continue
        if len(row) < 2:
            raise InputError("expected Category and Description columns", path, i + 1)
        cat, desc = row[0].strip(), row[1].strip()
        cat = cat.removeprefix("Category:").strip()
        out[cat] = desc.removeprefix("Description:").strip()
    if not out:
        raise InputError("no categories found", path)
    return out


def sample(names: list[str], n: int | None, seed: int, what: str, path: str) -> list[str]:
    """``n`` of the sorted ``names`` drawn with ``random.Random(seed)``, sorted; all when None."""
    names = sorted(names)
    if n is None:
        return names
    if n > len(names):
        raise InputError(f"--sample-docs {n} exceeds the {len(names)} {what}", path)
    return sorted(random.Random(seed).sample(names, n))


def sample_queries(rows: Sequence[BuiltRow | SquadRow], n: int | None, seed: int, path: str
                   ) -> Sequence[BuiltRow | SquadRow]:
    """``n`` of the queries drawn with ``random.Random(seed)``, in their order; all when
    None. The corpus keeps every sampled contract."""
    if n is None:
        return rows
    if n > len(rows):
        raise InputError(f"--sample-queries {n} exceeds the {len(rows)} queries of the sampled "
                         "contracts", path)
    keep = set(random.Random(seed).sample(range(len(rows)), n))
    return [r for i, r in enumerate(rows) if i in keep]


def _build(rows: Sequence[BuiltRow | SquadRow], documents: list[Document], counts: dict[str, int],
           details: ImportDetails, path: str, data: bytes, source: str, what: str,
           queries: int | None = None, **settings: Any) -> EvalBuild:
    """Verify every span slices back (``what`` names them in the error), keep ``queries``
    of the rows (``sample_queries``), then attach the provenance header."""
    verify_slices(rows, documents, what, path)
    if queries is not None:
        counts = {**counts, "queries_before_sampling": len(rows),
                  "spans_before_sampling": counts["spans"]}
        rows = sample_queries(rows, queries, settings["seed"], path)
        counts["spans"] = sum(len(r.spans()) for r in rows)
        kept = {r.id for r in rows}
        merged = details.overlapping_merged
        sampled = OverlapMerges([m for m in ([] if isinstance(merged, UnsetType) else merged)
                                 if m.query in kept])
        details = msgspec.structs.replace(details, overlapping_merged=sampled.listed)
        counts["overlapping_merged"] = sampled.count
        settings["sample_queries"] = queries
    corpus = Corpus(path, sha256_hex(data), {d.id: d for d in documents})
    return EvalBuild(provenance(corpus, source, **settings), rows, documents, counts, details)


def _contract_path(contracts: Path, filename: str) -> Path:
    stem = filename[:-4] if filename.lower().endswith(".pdf") else filename
    return contracts / f"{stem}.txt"


def _quotes(cell: str, path: str, line: int, column: str) -> list[str]:
    cell = cell.strip()
    if not cell:
        return []
    try:
        value = ast.literal_eval(cell)
    except (ValueError, SyntaxError):
        raise InputError(f"column '{column}' is not a list literal", path, line) from None
    if not isinstance(value, list) or not all(isinstance(q, str) for q in value):
        raise InputError(f"column '{column}' is not a list of strings", path, line)
    return value


def import_cuad_csv(csv_path: str, contracts: str, categories: str, *,
                    sample_docs: int | None = None, seed: int = 0,
                    queries: int | None = None,
                    exclude_metadata: bool = True, exclude_cross_references: bool = True,
                    allow_missing_contracts: bool = False) -> EvalBuild:
    descriptions = read_descriptions(categories)
    data = read_bytes(csv_path)
    text = decode_utf8(data, csv_path).lstrip("\ufeff")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header or header[0] != "Filename":
        raise InputError("expected a master_clauses.csv header starting with 'Filename'", csv_path, 1)
    # the released CSV spells one answer column "...- Answer", and capitalises some
    # categories differently from category_descriptions.csv: match case-insensitively
    columns = [(i, c.strip()) for i, c in enumerate(header)
               if i and not re.search(r"-\s*Answer$", c.strip())]
    descriptions = {k.casefold(): v for k, v in descriptions.items()}
    unknown = [c for _, c in columns if c.casefold() not in descriptions]
    if unknown:
        raise InputError(f"categories without a description in {categories}: {unknown[:SHOW]}",
                         csv_path, 1)
    skipped = set(METADATA_CLAUSES) if exclude_metadata else set()
    cross = set(CROSS_REFERENCE_CLAUSES) if exclude_cross_references else set()
    cdir = Path(contracts)
    rows_by_doc, missing = _rows_by_contract(reader, len(header), cdir, csv_path)
    if missing and not allow_missing_contracts:
        raise InputError(f"{len(missing)} contracts have no .txt under {contracts}: "
                         f"{missing[:SHOW]} (--allow-missing-contracts lists and skips them)",
                         csv_path)
    chosen = sample(list(rows_by_doc), sample_docs, seed, "contracts", csv_path)
    documents, out_rows = [], []
    counts = {"pieces": 0, "spans": 0, "ambiguous_pieces": 0, "duplicate_pieces": 0,
              "empty_pieces": 0, "queries_without_unique_piece": 0,
              "missing_contracts": len(missing), "cross_reference_skipped": 0}
    ambiguous: list[AmbiguousPiece] = []
    merges = OverlapMerges()
    not_found: list[str] = []
    for doc_id in chosen:
        line, row = rows_by_doc[doc_id]
        path = _contract_path(cdir, row[0])
        body = decode_utf8(read_bytes(path), path)
        documents.append(Document(doc_id, body, "", {"source": path.name}))
        for col, category in columns:
            if category in skipped:
                continue
            if category in cross:
                counts["cross_reference_skipped"] += bool(_quotes(row[col], csv_path, line,
                                                                  category))
                continue
            spans, pieces = _located_pieces(_quotes(row[col], csv_path, line, category),
                                            body, doc_id, category, counts, ambiguous,
                                            not_found)
            counts["pieces"] += pieces
            if not pieces:
                continue
            if not spans:
                counts["queries_without_unique_piece"] += 1
                continue
            qid = query_id(doc_id, category)
            gold = merges.merge(qid, [spans[k] for k in sorted(spans)],
                                {doc_id: body}.__getitem__)
            counts["spans"] += len(gold)
            out_rows.append(BuiltRow(
                id=qid, query=question(category, descriptions[category.casefold()]),
                doc_id=doc_id, gold_spans=gold, tags={"category": category},
                filters={"doc_id": doc_id}))
    if not_found:
        raise InputError(f"{len(not_found)} clause pieces not found in their contract: "
                         f"{'; '.join(not_found[:SHOW])}", csv_path)
    if not out_rows:
        raise InputError("no query has an unambiguous clause", csv_path)
    counts["overlapping_merged"] = merges.count
    details = ImportDetails(ambiguous_pieces=ambiguous, missing_contracts=missing,
                            overlapping_merged=merges.listed)
    return _build(out_rows, documents, counts, details, csv_path, data, "cuad-csv", "CUAD",
                  queries, sample_docs=sample_docs, seed=seed, exclude_metadata_clauses=exclude_metadata,
                  exclude_cross_references=exclude_cross_references)


def _rows_by_contract(reader: Iterator[list[str]], width: int, cdir: Path, csv_path: str
                      ) -> tuple[dict[str, tuple[int, list[str]]], list[str]]:
    """The CSV's rows by contract id (the .txt file's stem), each with its line, and the
    file names without a .txt under ``cdir``. A row of another width than the header's, or
    a contract listed twice, is an InputError naming its line."""
    rows_by_doc: dict[str, tuple[int, list[str]]] = {}
    missing: list[str] = []
    for line, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) != width:
            raise InputError(f"{len(row)} columns, the header has {width}", csv_path, line)
        path = _contract_path(cdir, row[0])
        if not path.is_file():
            missing.append(row[0])
            continue
        doc_id = path.stem
        if doc_id in rows_by_doc:
            raise InputError(f"contract '{row[0]}' listed twice (first on line "
                             f"{rows_by_doc[doc_id][0]})", csv_path, line)
        rows_by_doc[doc_id] = (line, row)
    return rows_by_doc, missing


def _located_pieces(quotes: list[str], body: str, doc_id: str, category: str,
                    counts: dict[str, int], ambiguous: list[AmbiguousPiece],
                    not_found: list[str]) -> tuple[dict[tuple[int, int], BuiltSpan], int]:
    """Each quoted clause split at CUAD's omission marks into pieces, each found exactly
    once in ``body``: the gold spans by offsets and the number of non-empty pieces. Empty,
    ambiguous and repeated pieces are counted in ``counts``; ambiguous ones listed in
    ``ambiguous``, pieces found nowhere in ``not_found``."""
    spans: dict[tuple[int, int], BuiltSpan] = {}
    pieces = 0
    for q in quotes:
        for piece in (p.strip() for p in q.split(OMITTED)):
            if not piece:
                counts["empty_pieces"] += 1
                continue
            pieces += 1
            hits = find_exact(body, piece)
            if not hits:
                not_found.append(f"{doc_id} / {category}: {piece[:60]!r}")
            elif len(hits) > 1:
                counts["ambiguous_pieces"] += 1
                ambiguous.append(AmbiguousPiece(doc_id=doc_id, category=category, text=piece,
                                                occurrences=len(hits)))
            elif hits[0] in spans:
                counts["duplicate_pieces"] += 1
            else:
                spans[hits[0]] = built_span(doc_id, *hits[0], piece)
    return spans, pieces


def _squad_entries(root: Any, json_path: str
                   ) -> tuple[dict[str, str], list[tuple[str, dict[str, Any]]]]:
    """A SQuAD-style file's documents (title -> context; a title with two different
    contexts is an InputError) and its questions with their document, in file order."""
    try:
        entries = root["data"]
    except (KeyError, TypeError):
        raise InputError("not a SQuAD-style JSON file with a 'data' list", json_path) from None
    docs: dict[str, str] = {}
    qas: list[tuple[str, dict[str, Any]]] = []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise InputError("'data' must be a list of objects", json_path)
    for entry in entries:
        paragraphs = entry.get("paragraphs", [])
        if not isinstance(paragraphs, list) or not all(isinstance(p, dict) for p in paragraphs):
            raise InputError(f"entry '{entry.get('title', '')}': 'paragraphs' must be a list of "
                             f"objects", json_path)
        for para in paragraphs:
            doc_id = str(entry.get("title", ""))
            if not doc_id or not isinstance(para.get("context"), str):
                raise InputError("an entry lacks 'title' or a paragraph 'context'", json_path)
            if doc_id in docs and docs[doc_id] != para["context"]:
                raise InputError(f"document '{doc_id}' has two different contexts", json_path)
            docs[doc_id] = para["context"]
            para_qas = para.get("qas", [])
            if not isinstance(para_qas, list) or not all(isinstance(qa, dict) for qa in para_qas):
                raise InputError(f"document '{doc_id}': 'qas' must be a list of objects", json_path)
            qas.extend((doc_id, qa) for qa in para_qas)
    return docs, qas


def _answer_spans(answers: Any, qid: str, doc_id: str, counts: dict[str, int],
                  json_path: str) -> dict[tuple[int, int], BuiltSpan]:
    """A question's answers as gold spans by offsets (``answer_start`` + the text's length);
    an answer given twice counts in ``counts["duplicate_answers"]`` and is kept once."""
    if not isinstance(answers, list):
        raise InputError(f"question '{qid}': 'answers' must be a list of objects, got "
                         f"{type(answers).__name__ if answers is not None else 'null'}",
                         json_path)
    spans: dict[tuple[int, int], BuiltSpan] = {}
    for ans in answers:
        start = ans.get("answer_start") if isinstance(ans, dict) else None
        text = ans.get("text") if isinstance(ans, dict) else None
        if not isinstance(start, int) or not isinstance(text, str) or not text:
            raise InputError(f"question '{qid}': an answer lacks text or answer_start", json_path)
        key = (start, start + len(text))
        if key in spans:
            counts["duplicate_answers"] += 1
        spans[key] = built_span(doc_id, *key, text)
    return spans


def import_cuad_squad(json_path: str, *, sample_docs: int | None = None, seed: int = 0,
                      queries: int | None = None,
                      exclude_metadata: bool = True, exclude_cross_references: bool = True
                      ) -> EvalBuild:
    """SQuAD-style CUAD: ``data[].title``, ``paragraphs[].context``, ``qas[]`` with ``answers``
    (``text``, ``answer_start``) and ``is_impossible``."""
    data = read_bytes(json_path)
    docs, qas = _squad_entries(loads_json(decode_records(data, json_path), json_path),
                               json_path)
    chosen = sample(list(docs), sample_docs, seed, "documents", json_path)
    keep = set(chosen)
    counts = {"impossible_skipped": 0, "spans": 0, "metadata_skipped": 0, "duplicate_answers": 0,
              "cross_reference_skipped": 0}
    merges = OverlapMerges()
    rows: list[BuiltRow | SquadRow] = []
    seen: set[str] = set()
    for doc_id, qa in qas:
        if doc_id not in keep:
            continue
        if qa.get("is_impossible"):
            counts["impossible_skipped"] += 1
            continue
        qid = str(qa.get("id", ""))
        if not qid or qid in seen:
            raise InputError(f"question id {qid!r} is {'repeated' if qid else 'missing'}", json_path)
        seen.add(qid)
        question_text = qa.get("question", "")
        if not isinstance(question_text, str):
            raise InputError(f"question '{qid}': 'question' must be a string", json_path)
        category = qid.rsplit("__", 1)[-1] if "__" in qid else ""
        if exclude_metadata and category in METADATA_CLAUSES:
            counts["metadata_skipped"] += 1
            continue
        if exclude_cross_references and category in CROSS_REFERENCE_CLAUSES:
            counts["cross_reference_skipped"] += 1
            continue
        spans = _answer_spans(qa.get("answers", []), qid, doc_id, counts, json_path)
        if not spans:
            continue
        gold = merges.merge(qid, [spans[k] for k in sorted(spans)], docs.__getitem__)
        counts["spans"] += len(gold)
        rows.append(SquadRow(id=qid, query=question_text, doc_id=doc_id, gold_spans=gold,
                             filters={"doc_id": doc_id},
                             tags={"category": category} if category else UNSET))
    documents = [Document(d, docs[d]) for d in chosen]
    if not rows:
        raise InputError("no answerable question in the selected documents", json_path)
    counts["overlapping_merged"] = merges.count
    return _build(rows, documents, counts, ImportDetails(overlapping_merged=merges.listed),
                  json_path, data,
                  "cuad-squad", "CUAD SQuAD",
                  queries, sample_docs=sample_docs, seed=seed,
                  exclude_metadata_clauses=exclude_metadata,
                  exclude_cross_references=exclude_cross_references)
