"""Chunkers: document text -> chunks that keep exact offsets.

Every chunk is ``(doc_id, chunk_id, start, end)`` with ``text == document[start:end]``
(code points, end exclusive). With no overlap, ``fixed``, ``sentence``, ``recursive``,
``paragraph`` and ``clause`` tile the document: consecutive chunks meet exactly, from 0 to ``len(text)``,
except that a chunk holding only whitespace and invisible characters (U+200B and similar) is
dropped, never embedded.

- ``fixed``: windows of ``size`` characters moving by ``size - overlap``; ``snap`` ends each
  window after the last whitespace inside it (and starts the next on a word).
- ``sentence``: sentences (ending ``.!?`` before whitespace, or at a blank line) packed up to
  ``size``; a longer sentence is cut with ``fixed``.
- ``recursive``: split on paragraph, line, sentence, word boundaries in that order, packing up
  to ``size``.
- ``paragraph``: one chunk per paragraph (text between blank lines, the blank lines kept at
  the end of the paragraph before them), never two paragraphs in one chunk: LegalBench-RAG's
  Config C. A paragraph longer than ``size`` (its blank lines included) is packed by
  sentences up to ``size``, so no chunk crosses a blank line nor exceeds ``size``.
- ``clause``: legal section headers (``1. Recitals.``, ``3 .SCHEDULED``, ``2.3 Term``,
  ``ARTICLE IV``, ``Section 2.3``, and headers mid-line where extraction collapsed line
  breaks) start a chunk; a section longer than ``size`` is packed by sentences. Inner
  whitespace of a header is ``[ \\t]``, never a newline, so page-number footers are not
  headers. A document without any header falls back to ``sentence`` (recorded).
- ``none``: one chunk per document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragspan.base.errors import UsageError
from ragspan.base.options import pipeline_default
from ragspan.retrieval.token_chunkers import recursive_tokens, token_windows
from ragspan.retrieval.tokens import load_tokenizer

INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_VISIBLE = re.compile(rf"[^\s{INVISIBLE}]")
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n[ \t]*\n\s*")
CHUNKERS = ("fixed", "sentence", "recursive", "paragraph", "clause", "none", "tokens",
            "recursive-tokens")
TOKEN_KINDS = ("tokens", "recursive-tokens")  # size and overlap in tokens

_NUM = r"\d{1,2}(?:\.\d{1,2})*"
HEADER = re.compile(
    r"(?:^|(?<=\n))[ \t]*(?P<h1>"
    r"(?:ARTICLE|Article)[ \t]+(?:[IVXLC]+|\d{1,2})\b"
    r"|(?:SECTION|Section)[ \t]+" + _NUM + r"\b"
    r"|" + _NUM + r"[ \t]*\.?[ \t]*(?=[A-Z(][A-Za-z(]))"
    r"|(?<=[.;:])[ \t]+(?P<h2>(?:ARTICLE|Article|SECTION|Section)[ \t]+(?:[IVXLC]+|" + _NUM + r")\b"
    r"|\d{1,2}\.[ \t]+(?=[A-Z][A-Za-z]))"
)


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    chunk_id: str
    start: int
    end: int


@dataclass(frozen=True)
class ChunkerSpec:
    """``kind`` plus its parameters (characters)."""

    kind: str = pipeline_default("chunker", "kind")
    size: int = pipeline_default("chunker", "size")
    overlap: int = pipeline_default("chunker", "overlap")
    snap: bool = pipeline_default("chunker", "snap")
    tokenizer: str = pipeline_default("chunker", "tokenizer")

    def check(self) -> None:
        if self.kind not in CHUNKERS:
            raise UsageError(f"unknown chunker '{self.kind}'; expected one of {CHUNKERS}")
        if self.size < 1:
            raise UsageError(f"chunker size must be >= 1, got {self.size}")
        if not 0 <= self.overlap < self.size:
            raise UsageError(f"chunker overlap must be in [0, size), got {self.overlap}")


def fixed(text: str, size: int, overlap: int = 0, snap: bool = False,
          lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    """Windows over ``text[lo:hi]``."""
    hi = len(text) if hi is None else hi
    out, start = [], lo
    while start < hi:
        end = min(start + size, hi)
        if snap and end < hi:
            cut = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
            if cut > start:
                end = cut + 1
        out.append((start, end))
        if end >= hi:
            break
        nxt = max(end - overlap, start + 1)
        if snap and overlap:
            m = re.compile(r"\s+").search(text, nxt, end)
            nxt = m.end() if m and m.end() < end else nxt
        start = nxt
    return out


def _pieces(text: str, pattern: re.Pattern[str], lo: int, hi: int) -> list[tuple[int, int]]:
    """Cut ``[lo, hi)`` after each match of ``pattern`` (the separator stays with the piece before)."""
    out, prev = [], lo
    for m in pattern.finditer(text, lo, hi):
        if m.end() > prev and m.end() < hi:
            out.append((prev, m.end()))
            prev = m.end()
    out.append((prev, hi))
    return [p for p in out if p[1] > p[0]]


def _pack(pieces: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """Merge consecutive pieces while the merged span stays within ``size``."""
    out: list[tuple[int, int]] = []
    for s, e in pieces:
        if out and e - out[-1][0] <= size:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def sentence(text: str, size: int, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    hi = len(text) if hi is None else hi
    pieces: list[tuple[int, int]] = []
    for s, e in _pieces(text, SENTENCE_END, lo, hi):
        pieces.extend(fixed(text, size, 0, True, s, e) if e - s > size else [(s, e)])
    return _pack(pieces, size)


RECURSIVE_SEPARATORS = (re.compile(r"\n[ \t]*\n\s*"), re.compile(r"\n"), SENTENCE_END,
                        re.compile(r"[ \t]+"))


def recursive(text: str, size: int, lo: int = 0, hi: int | None = None,
              level: int = 0) -> list[tuple[int, int]]:
    hi = len(text) if hi is None else hi
    if hi - lo <= size:
        return [(lo, hi)]
    if level == len(RECURSIVE_SEPARATORS):
        return fixed(text, size, 0, False, lo, hi)
    pieces: list[tuple[int, int]] = []
    for s, e in _pieces(text, RECURSIVE_SEPARATORS[level], lo, hi):
        pieces.extend(recursive(text, size, s, e, level + 1) if e - s > size else [(s, e)])
    return _pack(pieces, size)


# a blank line: a line of nothing but whitespace (spaces, tabs, a carriage return, ...)
BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")


def paragraph(text: str, size: int) -> list[tuple[int, int]]:
    """Paragraphs (cut after each blank-line run), each one chunk, or packed by sentences
    up to ``size`` when longer: a chunk never holds text from two paragraphs."""
    out: list[tuple[int, int]] = []
    for s, e in _pieces(text, BLANK_LINE, 0, len(text)):
        out.extend(sentence(text, size, s, e) if e - s > size else [(s, e)])
    return out


def headers(text: str) -> list[int]:
    """Start offsets of legal section headers (the header text itself, indentation excluded)."""
    starts: list[int] = []
    for m in HEADER.finditer(text):
        pos = m.start("h1") if m.group("h1") is not None else m.start("h2")
        if not starts or pos > starts[-1]:
            starts.append(pos)
    return starts


def clause(text: str, size: int) -> tuple[list[tuple[int, int]], bool]:
    """Sections between headers (each packed by sentences past ``size``); ``(spans, fell_back)``."""
    starts = [h for h in headers(text) if h > 0]
    if not starts:
        return sentence(text, size), True
    bounds = [0, *starts, len(text)]
    out: list[tuple[int, int]] = []
    for s, e in zip(bounds, bounds[1:]):
        if e > s:
            out.extend(sentence(text, size, s, e) if e - s > size else [(s, e)])
    return out, False


def visible(text: str) -> bool:
    return _VISIBLE.search(text) is not None


def chunk_document(doc_id: str, text: str, spec: ChunkerSpec) -> tuple[list[Chunk], dict[str, int | str]]:
    """Chunk one document; the second value records what happened (fallback, dropped chunks)."""
    note: dict[str, int | str] = {}
    if spec.kind == "none":
        spans = [(0, len(text))] if text else []
    elif spec.kind == "fixed":
        spans = fixed(text, spec.size, spec.overlap, spec.snap)
    elif spec.kind == "sentence":
        spans = sentence(text, spec.size)
    elif spec.kind == "recursive":
        spans = recursive(text, spec.size)
    elif spec.kind == "paragraph":
        spans = paragraph(text, spec.size)
    elif spec.kind in TOKEN_KINDS:
        chunker = token_windows if spec.kind == "tokens" else recursive_tokens
        spans = chunker(text, load_tokenizer(spec.tokenizer), spec.size, spec.overlap)
    else:
        spans, fell_back = clause(text, spec.size)
        if fell_back:
            note["fallback"] = "sentence"
    kept = [(s, e) for s, e in spans if visible(text[s:e])]
    if len(kept) < len(spans):
        note["dropped_invisible"] = len(spans) - len(kept)
    return [Chunk(doc_id, f"{doc_id}:{i}", s, e) for i, (s, e) in enumerate(kept)], note

