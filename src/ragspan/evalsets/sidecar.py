"""A facts sidecar (the localGPT harness's ``*.facts.json``) read as the harness writes it,
for ``ragspan validate --facts`` (docs/datasets.md, "Cross-reference gold sets"): its planted
facts and its cross-references, checked against the corpus by ``evalsets.crossref``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragspan.base.errors import InputError
from ragspan.io.corpus import Corpus
from ragspan.io.files import (
    TooDeep,
    decode_records,
    iter_json_records,
    json_value,
    read_bytes,
    sha256_hex,
)


@dataclass(frozen=True)
class Fact:
    """One planted fact of a sidecar: ``text`` said in document ``doc_id`` (None: the
    sidecar names none; the one document that holds it)."""

    id: str
    text: str
    doc_id: str | None
    line: int


@dataclass(frozen=True)
class Reference:
    """A cross-reference of a sidecar: ``cue`` said in document ``source``, pointing at
    ``target`` (None: a reference left dangling on purpose)."""

    cue: str
    source: str
    target: str | None
    index: int


@dataclass(frozen=True)
class Sidecar:
    """A facts sidecar: its facts, its cross-references and the sha256 of its bytes."""

    facts: list[Fact]
    references: list[Reference]
    sha256: str


def doc_of(corpus: Corpus, name: str) -> str | None:
    """A document id as written, or a file name whose extension the corpus dropped."""
    if name in corpus.documents:
        return name
    stem = name.rsplit(".", 1)[0]
    return stem if stem in corpus.documents else None


def words(text: str) -> re.Pattern[str]:
    """``text`` as the harness compares it: each whitespace run matches any whitespace run
    (a PDF's or an RFC's line wrapping), case kept. Literal words joined by ``\\s+``: linear
    in the document."""
    return re.compile(r"\s+".join(re.escape(w) for w in text.split()))


def read_facts(path: str, corpus: Corpus) -> Sidecar:
    """A facts sidecar as the harness writes it (``*.facts.json``: an object with ``facts``,
    optionally ``document``, the one document of every fact naming none, and
    ``cross_references``), or a JSON list or JSONL of facts. A fact is ``{"id", "expected"
    (or "text", "fact"), "source" (or "doc_id"; a file name is fine; may be absent)}``; other
    fields (``topic``, ``summary``) are the harness's own. A fact without id or text, a
    repeated id, a named document that is not in the corpus, a malformed cross-reference or
    no facts at all is an InputError naming the file and the record."""
    data = read_bytes(path)
    text = decode_records(data, path)
    head: dict[str, Any] = {}
    records: list[tuple[int, dict[str, Any]]] | None = None
    if text.lstrip("\ufeff \t\r\n").startswith("{"):
        try:
            whole = json_value(text.lstrip("\ufeff"))
        except TooDeep as exc:
            raise InputError(f"the sidecar holds {exc}", path) from None
        except ValueError:
            whole = None  # JSONL: one fact per line
        if isinstance(whole, dict) and "facts" in whole:
            head = whole
            if not isinstance(whole["facts"], list) or not all(
                    isinstance(f, dict) for f in whole["facts"]):
                raise InputError("'facts' must be a list of objects", path)
            records = list(enumerate(whole["facts"], start=1))
    if records is None:
        records = list(iter_json_records(text, path))
    default = head.get("document")
    if default is not None and (not isinstance(default, str) or doc_of(corpus, default) is None):
        raise InputError(f"'document': {default!r} is not a document of the corpus", path)
    facts = _facts(records, corpus, path, default)
    return Sidecar(facts, _references(head.get("cross_references"), path), sha256_hex(data))


def _facts(records: list[tuple[int, dict[str, Any]]], corpus: Corpus, path: str,
           default: str | None) -> list[Fact]:
    facts: list[Fact] = []
    seen: set[str] = set()
    for line, obj in records:
        fid = obj.get("id")
        text = next((obj[k] for k in ("expected", "text", "fact") if k in obj), None)
        doc = next((obj[k] for k in ("source", "doc_id") if obj.get(k) is not None), default)
        if not isinstance(fid, str | int) or isinstance(fid, bool) or str(fid) == "":
            raise InputError("a fact needs an 'id' (a string or an integer)", path, line)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"fact '{fid}' needs a non-empty 'expected' (or 'text')", path,
                             line)
        doc_id = None
        if doc is not None:
            doc_id = doc_of(corpus, doc) if isinstance(doc, str) else None
            if doc_id is None:
                raise InputError(f"fact '{fid}': {doc!r} is not a document of the corpus",
                                 path, line)
        if str(fid) in seen:
            raise InputError(f"fact id '{fid}' is repeated", path, line)
        seen.add(str(fid))
        facts.append(Fact(str(fid), text, doc_id, line))
    if not facts:
        raise InputError("no facts in the sidecar", path)
    return facts


def _references(raw: Any, path: str) -> list[Reference]:
    """The sidecar's ``cross_references``: ``{"cue", "from", "to"}``, ``to`` null for a
    reference left dangling on purpose; other fields (``kind``, ``dangling``) are kept out."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError("'cross_references' must be a list", path)
    refs = []
    for i, ref in enumerate(raw):
        where = f"cross_references[{i}]"
        if not isinstance(ref, dict):
            raise InputError(f"{where} must be an object", path)
        cue, source, target = ref.get("cue"), ref.get("from"), ref.get("to")
        if not isinstance(cue, str) or not cue.strip():
            raise InputError(f"{where} needs a non-empty 'cue'", path)
        if not isinstance(source, str) or not source:
            raise InputError(f"{where} needs the document it is said in ('from')", path)
        if target is not None and not isinstance(target, str):
            raise InputError(f"{where}: 'to' must be a document name or null", path)
        refs.append(Reference(cue, source, target, i))
    return refs
