"""The chunk manifest (``run-retriever --chunks-out``): JSONL, an optional ``_header`` record
with the pipeline config and its digest, then one chunk per line:
``{"chunk_id": "doc:3", "doc_id": "doc", "start": 1200, "end": 1710}`` (code points, end
exclusive; ``text == document[start:end]``)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from ragspan.base.errors import InputError
from ragspan.io.files import decode_records, iter_json_lines, read_bytes, sha256_hex
from ragspan.io.rows import MAX_OFFSET, check_offsets, header_record, parse_id


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    start: int
    end: int
    line: int = field(default=0, compare=False)  # the manifest line it was read from


@dataclass(frozen=True)
class ChunkManifest:
    path: str
    sha256: str
    chunks: tuple[Chunk, ...]
    header: dict[str, Any] | None = None

    def by_doc(self) -> dict[str, list[Chunk]]:
        out: dict[str, list[Chunk]] = {}
        for c in self.chunks:
            out.setdefault(c.doc_id, []).append(c)
        return out




def _refuse_constant(text: str) -> None:
    raise ValueError(text)


def _fast_chunks(text: str) -> tuple[dict[str, Any] | None, list[Chunk]] | None:
    """Every line parsed in one ``json.loads`` and checked in one loop, for a manifest the
    line reader would take as it is (one object per line, a ``_header`` only first, string
    ids, integer offsets ``0 <= start < end <= MAX_OFFSET``, no chunk id twice); None for
    anything else, which the line reader then names."""
    numbered = [(i, ln) for i, ln in enumerate(text.split("\n"), start=1) if ln.strip()]
    lines = [ln for _, ln in numbered]
    try:
        objs = json.loads("[" + ",".join(lines) + "]", parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    if len(objs) != len(lines) or not objs:
        return None
    header = None
    if type(objs[0]) is dict and "_header" in objs[0]:
        header = objs[0]["_header"]
        if type(header) is not dict:
            return None
        objs = objs[1:]
        numbered = numbered[1:]
    chunks = []
    for (line, _), obj in zip(numbered, objs):
        if type(obj) is not dict:
            return None
        cid, doc, start, end = (obj.get("chunk_id"), obj.get("doc_id"), obj.get("start"),
                                obj.get("end"))
        if (type(cid) is not str or type(doc) is not str or not cid or not doc
                or type(start) is not int or type(end) is not int
                or not 0 <= start < end <= MAX_OFFSET or "_header" in obj):
            return None
        chunks.append(Chunk(cid, doc, start, end, line))
    if len({c.chunk_id for c in chunks}) != len(chunks):
        return None
    return header, chunks


def read_chunks(path: str | os.PathLike[str]) -> ChunkManifest:
    name = str(path)
    data = read_bytes(path)
    text = decode_records(data, name)
    fast = _fast_chunks(text)
    if fast is not None and fast[1]:
        return ChunkManifest(name, sha256_hex(data), tuple(fast[1]), fast[0])
    header = None
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for line, obj in iter_json_lines(text, name):
        if "_header" in obj:
            header = header_record(obj, len(chunks) + (header is not None), name, line)
            continue
        cid = parse_id(obj.get("chunk_id"), name, line, "chunk_id")
        if cid in seen:
            raise InputError(f"repeated chunk_id '{cid}' (first on line {seen[cid]})", name, line)
        seen[cid] = line
        doc = parse_id(obj.get("doc_id"), name, line, "doc_id")
        start, end = check_offsets(obj.get("start"), obj.get("end"), name, line, "chunk")
        chunks.append(Chunk(cid, doc, start, end, line))
    if not chunks:
        raise InputError("the chunk manifest holds no chunks", name)
    return ChunkManifest(name, sha256_hex(data), tuple(chunks), header)


def chunks_outside_documents(manifest: ChunkManifest, corpus: Any) -> None:
    """The first chunk that names a document the corpus lacks, or ends past its document, is
    an InputError naming the manifest and that chunk's line (a manifest that does not fit
    its corpus is a wrong input, for ``validate`` and ``score`` alike)."""
    for c in manifest.chunks:
        doc = corpus.documents.get(c.doc_id)
        if doc is None or c.end > len(doc.text):
            where = ("is not in the corpus" if doc is None
                     else f"is {len(doc.text)} characters long")
            raise InputError(f"chunk '{c.chunk_id}' ends at {c.end}, but '{c.doc_id}' {where}",
                             manifest.path, c.line or None)
