"""Corpora: JSONL (ragspan or BEIR field names) or a directory of .txt / .md / .pdf files."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ragspan.base.errors import InputError
from ragspan.io.files import decode_records, decode_utf8, iter_json_lines, read_bytes, sha256_hex
from ragspan.io.pdf import extract_pdf_text, extractor_info
from ragspan.io.rows import parse_id, refuse_other_kind

TEXT_SUFFIXES = (".txt", ".md")
PDF_SUFFIX = ".pdf"


@dataclass(frozen=True)
class Document:
    """A corpus document; span offsets index ``text`` (code points)."""

    id: str
    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Corpus:
    path: str
    sha256: str
    documents: dict[str, Document]
    extractor: dict[str, str] = field(default_factory=dict)
    # a folder read with a selection (``FileSelection``): the files left out, by their path
    # inside the folder (the files taken in are the documents' ``metadata.source``)
    left_out: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.documents)

    def text(self, doc_id: str) -> str:
        return self.documents[doc_id].text

    def lengths(self) -> dict[str, int]:
        return {d: len(doc.text) for d, doc in self.documents.items()}


@dataclass(frozen=True)
class FileSelection:
    """Which files of a corpus folder are documents: those matching an ``include`` glob
    and no ``exclude`` glob (matched against the path inside the folder from the right, so
    ``*.md`` takes ``a/b.md``); the rest are left out and listed, never read."""

    include: tuple[str, ...] = ("*.txt", "*.md", "*.pdf")
    exclude: tuple[str, ...] = ()

    def takes(self, rel: str) -> bool:
        path = PurePosixPath(rel)
        return any(path.match(g) for g in self.include) and \
            not any(path.match(g) for g in self.exclude)


def doc_id_hint(doc_id: str, ids: Iterable[str]) -> str:
    """For a document id absent from the corpus: how corpus ids are formed when it looks
    like a path (a loader's ``source``), and the corpus id it most likely means (the same
    file name without its folders or extension), as `` (...)``; "" otherwise."""
    looks_like_path = "/" in doc_id or "\\" in doc_id or \
        os.path.splitext(doc_id)[1].lower() in (*TEXT_SUFFIXES, PDF_SUFFIX, ".json", ".html")
    if not looks_like_path:
        return ""
    stem = os.path.splitext(doc_id.replace("\\", "/"))[0]
    near = sorted(i for i in ids if stem.endswith("/" + i) or stem == i
                  or os.path.basename(stem) == i)
    said = f"; did you mean '{near[0]}'?" if near else ""
    return (" (it looks like a path: a corpus's ids are its JSONL 'id' fields, or for a "
            "folder of files each file's path inside the folder without its extension"
            f"{said})")


def read_corpus(path: str | os.PathLike[str], max_records: int | None = None,
                pdf_cap: tuple[float, int] | None = None,
                selection: FileSelection | None = None) -> Corpus:
    """Read a corpus file or directory. Duplicate ids are an error; so is a file of another
    kind, unless ``selection`` says which files of a directory are documents (the rest are
    left out and listed in ``Corpus.left_out``). ``pdf_cap``: (characters per byte,
    characters) a PDF may extract to (default ``io.pdf.MAX_CHARS_PER_BYTE``,
    ``io.pdf.MAX_CHARS``)."""
    p = Path(path)
    if p.is_dir():
        return _read_directory(p, max_records, pdf_cap, selection)
    return _read_jsonl(p, max_records)


def _read_jsonl(path: Path, max_records: int | None) -> Corpus:
    name = str(path)
    data = read_bytes(path)
    text = decode_records(data, name)
    docs: dict[str, Document] = {}
    lines: dict[str, int] = {}
    for line, obj in iter_json_lines(text, name):
        if not docs and "text" not in obj:
            refuse_other_kind(obj, "a corpus", name, line, " (is --corpus another file?)")
        raw_id = obj.get("id", obj.get("_id"))
        if raw_id is None:
            raise InputError("missing 'id' (or BEIR '_id')", name, line)
        doc_id = parse_id(raw_id, name, line)
        body = obj.get("text")
        if not isinstance(body, str):
            raise InputError("'text' must be a string", name, line)
        title = obj.get("title") or ""
        if not isinstance(title, str):
            raise InputError("'title' must be a string", name, line)
        meta = obj.get("metadata") or {}
        if not isinstance(meta, dict):
            raise InputError("'metadata' must be an object", name, line)
        if doc_id in docs:
            raise InputError(f"repeated document id '{doc_id}' (first on line {lines[doc_id]})",
                             name, line)
        docs[doc_id] = Document(doc_id, body, title, meta)
        lines[doc_id] = line
        if max_records is not None and len(docs) > max_records:
            count = sum(1 for ln in text.split("\n") if ln.strip())
            raise InputError(f"{count} records exceed --max-records {max_records}", name)
    if not docs:
        raise InputError("the corpus holds no documents", name)
    return Corpus(path=name, sha256=sha256_hex(data), documents=docs)


def directory_files(path: Path) -> list[Path]:
    """The files of a corpus directory, sorted; hidden (dot) files and folders are not
    documents. A link to a missing file is an InputError naming it, never a skip."""
    files = []
    for f in sorted(path.rglob("*")):
        if any(part.startswith(".") for part in f.relative_to(path).parts):
            continue
        if f.is_symlink() and not f.exists():
            raise InputError("a link to a missing file (dangling symlink)", str(f))
        if f.is_file():
            files.append(f)
    return files


def _read_directory(path: Path, max_records: int | None,
                    pdf_cap: tuple[float, int] | None = None,
                    selection: FileSelection | None = None) -> Corpus:
    files = directory_files(path)
    left_out: list[str] = []
    if selection is not None:
        taken = [f for f in files if selection.takes(f.relative_to(path).as_posix())]
        left_out = [f.relative_to(path).as_posix() for f in files if f not in taken]
        files = taken
    if max_records is not None and len(files) > max_records:
        raise InputError(f"{len(files)} files exceed --max-records {max_records}", str(path))
    docs: dict[str, Document] = {}
    listing = hashlib.sha256()
    extractor: dict[str, str] = {}
    for f in files:
        suffix = f.suffix.lower()
        rel = f.relative_to(path).with_suffix("").as_posix()
        if suffix in TEXT_SUFFIXES:
            data = read_bytes(f)
            text = decode_utf8(data, f)
        elif suffix == PDF_SUFFIX:
            data = read_bytes(f)
            text = extract_pdf_text(f, data, *(pdf_cap or ()))
            extractor = extractor_info()
        else:
            raise InputError(
                f"unsupported file type '{f.suffix or '(none)'}' (expected .txt, .md or .pdf)",
                str(f),
            )
        if rel in docs:
            raise InputError(f"two files give the document id '{rel}'", str(f))
        docs[rel] = Document(rel, text, "", {"source": f.relative_to(path).as_posix()})
        listing.update(f"{f.relative_to(path).as_posix()}\0{sha256_hex(data)}\n".encode())
    if not docs:
        raise InputError("the directory holds no .txt, .md or .pdf files"
                         + (" that the selection takes" if selection is not None else ""),
                         str(path))
    return Corpus(path=str(path), sha256=listing.hexdigest(), documents=docs,
                  extractor=extractor, left_out=tuple(left_out))
