"""Text normalisation for contamination checks: Unicode NFKC, lowercase, punctuation (Unicode
category P*) dropped, whitespace collapsed; tokens are the whitespace-separated words.

``tokens`` is the fast path (whole text at C speed); ``aligned_tokens`` gives the same tokens
with the character span of the original text each came from (for reporting offsets).
"""

from __future__ import annotations

import re
import sys
import unicodedata

PUNCTUATION = {cp: None for cp in range(sys.maxunicode + 1)
               if unicodedata.category(chr(cp)).startswith("P")}
_RUN = re.compile(r"\S+")
_ASCII_PUNCTUATION = bytes(cp for cp in PUNCTUATION if cp < 128)


def normalize(text: str) -> str:
    if text.isascii():  # NFKC is the identity on ASCII; bytes.translate runs at C speed
        return text.lower().encode("ascii").translate(None, _ASCII_PUNCTUATION).decode("ascii")
    return unicodedata.normalize("NFKC", text).lower().translate(PUNCTUATION)


def tokens(text: str) -> list[str]:
    return normalize(text).split()


def aligned_tokens(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """The tokens of ``tokens(text)`` and, for each, the span ``[start, end)`` of the original
    whitespace-delimited run it came from."""
    out, spans = [], []
    for m in _RUN.finditer(text):
        for piece in normalize(m.group()).split():
            out.append(piece)
            spans.append((m.start(), m.end()))
    return out, spans
