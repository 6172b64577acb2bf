"""Chunkers that measure length in tokens (``retrieval.tokens``), every chunk with its offsets.

- ``token_windows``: windows of ``size`` tokens, consecutive windows sharing ``overlap``
  (LangChain's ``TokenTextSplitter``, Chroma's ``FixedTokenChunker``): a window's span runs
  from its first token's start to the next window-external token's start (the text's end).
- ``recursive_tokens``: LangChain's ``RecursiveCharacterTextSplitter`` algorithm with token
  length (Chroma's ``RecursiveTokenChunker``): split on the first separator of
  ``["\\n\\n", "\\n", ".", "?", "!", " ", ""]`` the text holds, the separator kept at the start
  of the next piece; pieces of at least ``size`` tokens are split again with the remaining
  separators; the rest merged up to ``size`` tokens with ``overlap`` tokens carried over;
  each chunk stripped of surrounding whitespace. Its span is where the chunk's text occurs,
  searched forward from the previous chunk's start (the text is a slice of the document, so
  it is always found).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ragspan.retrieval.tokens import Tokenizer

SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")


def token_windows(text: str, tok: Tokenizer, size: int, overlap: int) -> list[tuple[int, int]]:
    starts = tok.offsets(text)
    n = len(starts)
    out: list[tuple[int, int]] = []
    i = 0
    while i < n:
        j = min(i + size, n)
        out.append((starts[i], starts[j] if j < n else len(text)))
        if j == n:
            break
        i += size - overlap
    return out


def _split_keep(text: str, separator: str) -> list[str]:
    """``text`` split on ``separator``, each separator kept at the start of the piece after it;
    empty pieces dropped; ``""`` splits into characters."""
    if not separator:
        return list(text)
    parts = re.split(f"({re.escape(separator)})", text)
    pieces = [parts[0], *(parts[i] + parts[i + 1] for i in range(1, len(parts) - 1, 2))]
    if len(parts) % 2 == 0:
        pieces.append(parts[-1])
    return [p for p in pieces if p]


def _merge(splits: list[str], size: int, overlap: int, length: Callable[[str], int]
           ) -> list[str]:
    """LangChain's ``_merge_splits`` with an empty joiner (the separators are in the pieces)."""
    docs: list[str] = []
    current: list[str] = []
    total = 0
    for piece in splits:
        n = length(piece)
        if total + n > size and current:
            joined = "".join(current).strip()
            if joined:
                docs.append(joined)
            while total > overlap or (total + n > size and total > 0):
                total -= length(current[0])
                current = current[1:]
        current.append(piece)
        total += n
    joined = "".join(current).strip()
    if joined:
        docs.append(joined)
    return docs


def _recursive(text: str, separators: tuple[str, ...], size: int, overlap: int,
               length: Callable[[str], int]) -> list[str]:
    separator = separators[-1]
    rest: tuple[str, ...] = ()
    for i, sep in enumerate(separators):
        if sep == "":
            separator = sep
            break
        if sep in text:
            separator, rest = sep, separators[i + 1:]
            break
    chunks: list[str] = []
    good: list[str] = []
    for piece in _split_keep(text, separator):
        if length(piece) < size:
            good.append(piece)
            continue
        if good:
            chunks.extend(_merge(good, size, overlap, length))
            good = []
        if rest:
            chunks.extend(_recursive(piece, rest, size, overlap, length))
        else:
            chunks.append(piece)
    if good:
        chunks.extend(_merge(good, size, overlap, length))
    return chunks


def recursive_texts(text: str, tok: Tokenizer, size: int, overlap: int,
                    separators: tuple[str, ...] = SEPARATORS) -> list[str]:
    """The chunk texts of ``recursive_tokens`` (what LangChain's splitter returns)."""
    counts: dict[str, int] = {}

    def length(piece: str) -> int:
        if piece not in counts:
            counts[piece] = tok.count(piece)
        return counts[piece]

    return _recursive(text, separators, size, overlap, length)


def recursive_tokens(text: str, tok: Tokenizer, size: int, overlap: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    cursor = 0
    for chunk in recursive_texts(text, tok, size, overlap):
        start = text.find(chunk, cursor)
        if start < 0:  # cannot happen: every chunk is a stripped slice, found in order
            raise ValueError("a recursive chunk is not found in its document")
        out.append((start, start + len(chunk)))
        cursor = start + 1
    return out
