"""The texts ``leakage`` checks (``read_items``): each item's field, read from an eval set
(``id``, ``query``, ``gold_spans``), BEIR queries (``_id``, ``text``) or items as
toolkit-rag-quality writes them (``id``, ``query`` or ``question``, ``answer``).

Fields: ``query`` (the question: ``query``, else ``question``, else BEIR's ``text``),
``gold`` (each gold span's text, checked against every document except the one it was
annotated in: an extractive answer is in its own source by design) and ``answer`` (the
item's ``answer`` text, a string or a list of strings, checked against every document). Not
given, the fields are ``query`` and, when any item carries an ``answer``, ``answer``. A field
asked for that no item has is an input error naming what the items do carry; items that
lack it while others have it are counted (``ItemRead.without``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragspan.base.errors import InputError
from ragspan.base.voice import setting
from ragspan.io.corpus import Corpus
from ragspan.io.evalset import parse_gold_span
from ragspan.io.files import decode_records, iter_json_records, read_bytes, sha256_hex
from ragspan.io.rows import parse_id

FIELDS = ("query", "gold", "answer")
QUERY_KEYS = ("query", "question", "text")  # the question, in the layouts read


@dataclass(frozen=True)
class Item:
    """One text to check: ``(item id, field, text, document to skip)``."""

    id: str
    field: str
    text: str
    exclude_doc: str | None = None
    index: int = 0  # which gold span (or answer), for those fields


@dataclass(frozen=True)
class ItemRead:
    """The texts to check, the fields they come from, the file's sha256, how many items
    there were and, per field, how many items had no text for it."""

    items: list[Item]
    fields: tuple[str, ...]
    sha256: str
    count: int
    without: dict[str, int] = field(default_factory=dict)


def _answers(obj: dict[str, object], path: str, line: int) -> list[str]:
    raw = obj.get("answer")
    if raw is None:
        return []
    texts = raw if isinstance(raw, list) else [raw]
    if not all(isinstance(t, str) for t in texts):
        raise InputError("'answer' must be a string or a list of strings", path, line)
    return [t for t in texts if isinstance(t, str) and t.strip()]


def _gold(obj: dict[str, object], corpus: Corpus, qid: str, path: str,
          line: int) -> list[Item]:
    raw = obj.get("gold_spans") or []
    if not isinstance(raw, list):
        raise InputError("'gold_spans' must be a list", path, line)
    scope = obj.get("doc_id")
    scope = None if scope is None else parse_id(scope, path, line, "doc_id")
    out = []
    for i, item in enumerate(raw):
        span = parse_gold_span(item, scope, path, line, i)
        if span.doc_id not in corpus.documents:
            raise InputError(f"gold_spans[{i}]: document '{span.doc_id}' is not in the corpus",
                             path, line)
        text = corpus.text(span.doc_id)
        if span.end > len(text):
            raise InputError(f"gold_spans[{i}]: end={span.end} is past the end of "
                             f"'{span.doc_id}' ({len(text)} characters)", path, line)
        out.append(Item(qid, "gold", text[span.start:span.end], span.doc_id, i))
    return out


def read_items(path: str, corpus: Corpus, fields: tuple[str, ...] | None,
               max_records: int) -> ItemRead:
    """The items of ``path`` and their texts for ``fields`` (None: the default; see the
    module docstring)."""
    data = read_bytes(path)
    rows = [(ln, obj) for ln, obj in iter_json_records(decode_records(data, path), path)
            if "_header" not in obj]
    if len(rows) > max_records:
        raise InputError(f"{len(rows)} records exceed --max-records {max_records}", path)
    if not rows:
        raise InputError("no items to check", path)
    if fields is None:
        fields = ("query", "answer") if any(obj.get("answer") is not None
                                            for _, obj in rows) else ("query",)
    items: list[Item] = []
    without = dict.fromkeys(fields, 0)
    first: dict[str, int] = {}
    for line, obj in rows:
        qid = parse_id(obj.get("id", obj.get("_id")), path, line)
        if qid in first:
            raise InputError(f"repeated item id '{qid}' (first on line {first[qid]})", path, line)
        first[qid] = line
        found: dict[str, list[Item]] = {}
        if "query" in fields:
            q = next((obj[k] for k in QUERY_KEYS if isinstance(obj.get(k), str)), None)
            if q is None:
                raise InputError("missing 'query' (or 'question', or BEIR 'text')", path, line)
            found["query"] = [Item(qid, "query", q)]
        if "gold" in fields:
            found["gold"] = _gold(obj, corpus, qid, path, line)
        if "answer" in fields:
            found["answer"] = [Item(qid, "answer", t, None, i)
                               for i, t in enumerate(_answers(obj, path, line))]
        for name, texts in found.items():
            without[name] += not texts
            items.extend(texts)
    for name, missing in without.items():
        if missing == len(rows):
            carried = sorted({k for _, obj in rows for k in obj if k in (
                *QUERY_KEYS, "gold_spans", "answer")})
            raise InputError(f"{setting('field', name)}: none of the {len(rows)} items has "
                             f"{'gold_spans' if name == 'gold' else repr(name)}, so nothing "
                             f"would be checked (they carry: {', '.join(carried) or 'none'})",
                             path)
    return ItemRead(items, fields, sha256_hex(data), len(rows),
                    {k: v for k, v in without.items() if v})
