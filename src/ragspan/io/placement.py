"""Placing a retrieved text in the corpus: the offsets of a chunk that a run gives by its text.

A text is placed in the documents it may come from (its ``doc_id``; else its query's scope
document; else the whole corpus), in this order, the first that succeeds deciding:

1. ``exact``: the text occurs verbatim, once. Two or more occurrences (overlapping ones
   count) are ambiguous.
2. ``normalized``: it occurs once after both sides are normalised (``normalize``: soft
   hyphens dropped, line-break hyphenation joined, Unicode NFKC, typographic quotes and dashes
   made ASCII, whitespace runs made one space, the text's own ends trimmed); the match is
   mapped back to offsets of the original document text.
3. ``fuzzy``: the best alignment of the normalised text in a normalised document
   (``rapidfuzz.fuzz.partial_ratio_alignment``) with a similarity of at least ``threshold``
   (0 to 1); the search is bounded (``MAX_FUZZY_CHARS`` document characters per text).
   Equally good alignments in two documents are ambiguous.

Offsets are Python string indices into the document text, half-open ``[start, end)``.
``similarity`` is 1.0 for an exact placement and otherwise the normalised Indel similarity
(``rapidfuzz.fuzz.ratio`` / 100) of the text and the corpus slice it was placed on.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field

from ragspan.io.corpus import Corpus

METHODS = ("exact", "normalized", "fuzzy")
DEFAULT_THRESHOLD = 0.9
MAX_FUZZY_CHARS = 5_000_000  # document characters one text's fuzzy search may scan
MAX_COUNTED = 1000  # occurrences counted for an ambiguity message

# ASCII stand-ins for typographic quotes, dashes and spaces (after NFKC)
_TYPOGRAPHIC = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u00a0": " ",
})
# what normalisation may change: whitespace other than one plain space, line-break
# hyphenation, and any non-ASCII character (single spaces and ASCII text map to themselves)
_SPECIAL = re.compile(r"(?<=\w)-[ \t]*\r?\n\s*(?=\w)|\s{2,}|[^\S ]|[^\x00-\x7f]")


@dataclass(frozen=True)
class Normalized:
    """A normalised text and the map back to the original: segment ``i`` starts at output
    position ``out[i]`` and original position ``orig[i]``; a verbatim segment maps position
    by position, a replaced one maps every output position to its original ``[orig, end)``."""

    text: str
    out: list[int]
    orig: list[int]
    orig_end: list[int]
    verbatim: list[bool]

    def start_of(self, p: int) -> int:
        """The original offset where output position ``p`` begins."""
        k = bisect_right(self.out, p) - 1
        return self.orig[k] + (p - self.out[k]) if self.verbatim[k] else self.orig[k]

    def end_of(self, p: int) -> int:
        """The original offset where output position ``p - 1`` ends (``p`` exclusive)."""
        k = bisect_right(self.out, p - 1) - 1
        return self.orig[k] + (p - self.out[k]) if self.verbatim[k] else self.orig_end[k]


def _replacement(piece: str) -> str:
    if piece[0] == "-" or piece == "\u00ad":
        return ""  # line-break hyphenation joined; soft hyphen dropped
    if piece.isspace():
        return " "
    return unicodedata.normalize("NFKC", piece).translate(_TYPOGRAPHIC)


def normalize(text: str) -> Normalized:
    """``text`` normalised (see the module docstring), with the map back to its offsets."""
    parts: list[str] = []
    out: list[int] = []
    orig: list[int] = []
    orig_end: list[int] = []
    verbatim: list[bool] = []
    pos = n = 0
    for m in _SPECIAL.finditer(text):
        if m.start() > pos:
            parts.append(text[pos:m.start()])
            out.append(n)
            orig.append(pos)
            orig_end.append(m.start())
            verbatim.append(True)
            n += m.start() - pos
        rep = _replacement(m.group())
        if rep == " " and parts and parts[-1].endswith(" "):
            rep = ""  # "a \n b": one space, not two
        if rep:
            parts.append(rep)
            out.append(n)
            orig.append(m.start())
            orig_end.append(m.end())
            verbatim.append(False)
            n += len(rep)
        pos = m.end()
    if pos < len(text):
        parts.append(text[pos:])
        out.append(n)
        orig.append(pos)
        orig_end.append(len(text))
        verbatim.append(True)
    if not out:
        out, orig, orig_end, verbatim = [0], [0], [0], [True]
    return Normalized("".join(parts), out, orig, orig_end, verbatim)


def normalized_needle(text: str) -> str:
    """A retrieved text normalised for searching: as ``normalize``, its ends trimmed."""
    return normalize(text).text.strip(" ")


@dataclass(frozen=True)
class Placed:
    """Where a text was placed: ``[start, end)`` of ``doc_id``, how, and its similarity."""

    doc_id: str
    start: int
    end: int
    method: str
    similarity: float
    ambiguous: int = 0  # with ``first``: how many equally good places there were (0: one)


class Unplaced(Exception):  # noqa: N818 - an outcome, raised to the reader that names the row
    """A text that cannot be placed: ``reason`` says why; ``places`` counts equally good
    places when it is ambiguous (0 when it was not found)."""

    def __init__(self, reason: str, places: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.places = places


def _occurrences(haystack: str, needle: str) -> list[int]:
    """Start offsets of ``needle`` in ``haystack`` (overlapping ones too), at most
    ``MAX_COUNTED``."""
    found: list[int] = []
    i = haystack.find(needle)
    while i != -1 and len(found) < MAX_COUNTED:
        found.append(i)
        i = haystack.find(needle, i + 1)
    return found


def _similarity(a: str, b: str) -> float:
    from rapidfuzz import fuzz

    return round(float(fuzz.ratio(a, b)) / 100.0, 6)


@dataclass
class Placer:
    """Places texts in ``corpus``; each document's normalised text is computed once."""

    corpus: Corpus
    threshold: float = DEFAULT_THRESHOLD
    _normalized: dict[str, Normalized] = field(default_factory=dict)

    def normalized(self, doc_id: str) -> Normalized:
        if doc_id not in self._normalized:
            self._normalized[doc_id] = normalize(self.corpus.text(doc_id))
        return self._normalized[doc_id]

    def place(self, text: str, docs: list[str], first: bool = False) -> Placed:
        """Place ``text`` in the documents ``docs`` (see the module docstring); Unplaced when
        it is not found or, unless ``first`` (take the first, in ``docs`` order then offset),
        found in more than one equally good place."""
        if not text.strip():
            raise Unplaced("the text is empty or whitespace")
        hits = [(d, i) for d in docs for i in _occurrences(self.corpus.text(d), text)]
        if len(hits) == 1 or (hits and first):
            d, i = hits[0]
            return Placed(d, i, i + len(text), "exact", 1.0, len(hits) if len(hits) > 1 else 0)
        if hits:
            raise Unplaced(f"the text occurs {_count(hits)} times", len(hits))
        needle = normalized_needle(text)
        if not needle:
            raise Unplaced("the text is empty after normalisation")
        norm_hits = [(d, i) for d in docs for i in _occurrences(self.normalized(d).text, needle)]
        if len(norm_hits) == 1 or (norm_hits and first):
            d, i = norm_hits[0]
            many = len(norm_hits) if len(norm_hits) > 1 else 0
            return self._mapped(text, d, i, i + len(needle), "normalized", many)
        if norm_hits:
            raise Unplaced(f"the normalised text occurs {_count(norm_hits)} times",
                           len(norm_hits))
        return self._fuzzy(text, needle, docs, first)

    def _mapped(self, text: str, doc_id: str, lo: int, hi: int, method: str,
                ambiguous: int = 0) -> Placed:
        norm = self.normalized(doc_id)
        start, end = norm.start_of(lo), norm.end_of(hi)
        sim = _similarity(text, self.corpus.text(doc_id)[start:end])
        return Placed(doc_id, start, end, method, sim, ambiguous)

    def _fuzzy(self, text: str, needle: str, docs: list[str], first: bool) -> Placed:
        from rapidfuzz import fuzz

        size = sum(len(self.corpus.text(d)) for d in docs)
        if size > MAX_FUZZY_CHARS:
            raise Unplaced(f"not found exactly or normalised, and a fuzzy search of {size:,} "
                           f"characters is past its bound of {MAX_FUZZY_CHARS:,} (name the "
                           "text's doc_id)")
        best: list[tuple[float, str, int, int]] = []
        cutoff = self.threshold * 100.0
        for d in docs:
            norm = self.normalized(d).text
            if not norm:
                continue
            a = fuzz.partial_ratio_alignment(needle, norm, score_cutoff=cutoff)
            if a is None or a.dest_end <= a.dest_start:
                continue
            if best and a.score < best[0][0]:
                continue
            if best and a.score > best[0][0]:
                best = []
            best.append((a.score, d, a.dest_start, a.dest_end))
        if not best:
            raise Unplaced(f"not found exactly, normalised, or fuzzily at similarity >= "
                           f"{self.threshold}")
        if len(best) > 1 and not first:
            raise Unplaced(f"equally good fuzzy matches in {len(best)} documents", len(best))
        _, d, lo, hi = best[0]
        return self._mapped(text, d, lo, hi, "fuzzy", len(best) if len(best) > 1 else 0)


def _count(hits: list[tuple[str, int]]) -> str:
    return f"at least {len(hits)}" if len(hits) >= MAX_COUNTED else str(len(hits))


def preview(text: str, width: int = 40) -> str:
    """The first ``width`` characters of ``text`` on one line, for an error message."""
    flat = " ".join(text[:width * 2].split())
    return repr(flat[:width] + ("..." if len(flat) > width or len(text) > width * 2 else ""))
