"""Locate answer texts in documents: every occurrence, exactly, or across whitespace runs.

Offsets are code-point indices into the document text, end exclusive. Occurrences may
overlap (``"aa"`` occurs twice in ``"aaa"``): a text is unambiguous only when it occurs once.
"""

from __future__ import annotations

import re

from ragspan.base.errors import InputError


def find_exact(text: str, needle: str) -> list[tuple[int, int]]:
    """Every occurrence of ``needle`` in ``text``, overlapping ones included."""
    if not needle:
        return []
    out, pos = [], text.find(needle)
    while pos >= 0:
        out.append((pos, pos + len(needle)))
        pos = text.find(needle, pos + 1)
    return out


def find_whitespace_normalized(text: str, needle: str) -> list[tuple[int, int]]:
    """Occurrences where each whitespace run of ``needle`` matches any whitespace run of the
    document (line wraps, double spaces, page breaks). The span points at the original
    characters, from the first to the last non-space character matched."""
    words = needle.split()
    if not words:
        return []
    pattern = re.compile("(?=(" + r"\s+".join(map(re.escape, words)) + "))")
    return [(m.start(1), m.end(1)) for m in pattern.finditer(text)]


def locate_once(text: str, needle: str, *, doc_id: str, normalize_whitespace: bool = False,
                path: str | None = None, line: int | None = None) -> tuple[int, int]:
    """The single occurrence of ``needle``; zero or several is an InputError naming the
    document, the text and the count (never a guess)."""
    hits = (find_whitespace_normalized if normalize_whitespace else find_exact)(text, needle)
    if len(hits) != 1:
        shown = needle if len(needle) <= 80 else needle[:77] + "..."
        # suggest the flag only where it finds the text once (a typo is not whitespace)
        how = "" if normalize_whitespace or hits or \
            len(find_whitespace_normalized(text, needle)) != 1 else \
            " (--normalize-whitespace finds it once: the document wraps it differently)"
        raise InputError(
            f"gold text {shown!r} found {len(hits)} times in document '{doc_id}' "
            f"(must be exactly once){how}", path, line,
        )
    return hits[0]
