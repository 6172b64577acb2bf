"""The chunk manifest (``run-retriever --chunks-out``): JSONL, an optional ``_header`` record
with the pipeline config and its digest, then one chunk per line:
``{"chunk_id": "doc:3", "doc_id": "doc", "start": 1200, "end": 1710}`` (code points, end
exclusive; ``text == document[start:end]``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ragspan.errors import InputError
from ragspan.io.evalset import check_offsets, header_record, parse_id
from ragspan.io.files import decode_records, iter_json_lines, read_bytes, sha256_hex


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    start: int
    end: int


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


def read_chunks(path: str | os.PathLike[str]) -> ChunkManifest:
    name = str(path)
    data = read_bytes(path)
    header = None
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for line, obj in iter_json_lines(decode_records(data, name), name):
        if "_header" in obj:
            header = header_record(obj, len(chunks) + (header is not None), name, line)
            continue
        cid = parse_id(obj.get("chunk_id"), name, line, "chunk_id")
        if cid in seen:
            raise InputError(f"repeated chunk_id '{cid}' (first on line {seen[cid]})", name, line)
        seen[cid] = line
        doc = parse_id(obj.get("doc_id"), name, line, "doc_id")
        start, end = check_offsets(obj.get("start"), obj.get("end"), name, line, "chunk")
        chunks.append(Chunk(cid, doc, start, end))
    if not chunks:
        raise InputError("the chunk manifest holds no chunks", name)
    return ChunkManifest(name, sha256_hex(data), tuple(chunks), header)
