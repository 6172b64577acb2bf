"""Placing a retrieved text in the corpus: the offsets of a chunk that a run gives by its text.

A text is placed in the documents it may come from (its ``doc_id``; else its query's scope
document; else the whole corpus), in this order, the first step that finds a place deciding:

1. ``exact``: the text occurs verbatim, once. Two or more occurrences (overlapping ones
   count) are ambiguous.
2. ``normalized``: it occurs once after both sides are normalised (``normalize``: soft
   hyphens dropped, line-break hyphenation joined, Unicode NFKC of the whole string,
   typographic quotes and dashes made ASCII, whitespace runs made one space, the text's own
   ends trimmed); the match is mapped back to offsets of the original document text. Two or
   more occurrences are ambiguous.
3. ``fuzzy``: the place of the normalised text in a normalised document with the highest
   similarity (``rapidfuzz.fuzz.ratio`` / 100 of the normalised text and the normalised
   place), which must be at least ``threshold`` (0 to 1), with the place and the text of
   similar length (the shorter at least ``threshold`` times the longer): a long text never
   lands on a short document. A second place (not overlapping the first, in any document)
   exactly as good is ambiguous. Where the search looks is bounded per text
   (``io.fuzzy.candidates``: short texts aligned along the document, long ones by seed and
   extend), so one text costs about the same whether or not it is there. At most
   ``MAX_FUZZY_CHARS`` document characters are searched per text.

Offsets are Python string indices into the document text, half-open ``[start, end)``.
``similarity`` is 1.0 for an exact placement and otherwise the normalised Indel similarity
(``rapidfuzz.fuzz.ratio`` / 100) of the text and the corpus slice it was placed on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragspan.base.placement import PLACEMENT_DEFAULTS
from ragspan.io.corpus import Corpus
from ragspan.io.fuzzy import SHORT_TEXT, Seeds, candidates
from ragspan.io.textnorm import Normalized, normalize, normalized_needle

METHODS = ("exact", "normalized", "fuzzy")
DEFAULT_THRESHOLD: float = PLACEMENT_DEFAULTS["fuzzy_threshold"]
MAX_FUZZY_CHARS = 5_000_000  # document characters one text's fuzzy search may scan
MAX_COUNTED = 1000  # occurrences counted for an ambiguity message
_TIE = 1e-9  # similarities closer than this are equally good


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


def occurrences(haystack: str, needle: str, cap: int = MAX_COUNTED) -> list[int]:
    """Start offsets of ``needle`` in ``haystack`` (overlapping ones too), at most ``cap``."""
    found: list[int] = []
    i = haystack.find(needle)
    while i != -1 and len(found) < cap:
        found.append(i)
        i = haystack.find(needle, i + 1)
    return found


def similarity(a: str, b: str) -> float:
    from rapidfuzz import fuzz

    return round(float(fuzz.ratio(a, b)) / 100.0, 6)


@dataclass(frozen=True)
class _Place:
    similarity: float  # of the normalised text and the normalised place
    doc_id: str
    lo: int  # the place in the normalised document
    hi: int


@dataclass
class Placer:
    """Places texts in ``corpus``; each document's normalised text (and, for long texts, its
    seeds) is computed once."""

    corpus: Corpus
    threshold: float = DEFAULT_THRESHOLD
    _normalized: dict[str, Normalized] = field(default_factory=dict)
    _seeds: dict[str, Seeds] = field(default_factory=dict)

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
        hits = [(d, i) for d in docs for i in occurrences(self.corpus.text(d), text)]
        if len(hits) == 1 or (hits and first):
            d, i = hits[0]
            return Placed(d, i, i + len(text), "exact", 1.0, len(hits) if len(hits) > 1 else 0)
        if hits:
            raise Unplaced(f"the text occurs {_count(hits)} times", len(hits))
        needle = normalized_needle(text)
        if not needle:
            raise Unplaced("the text is empty after normalisation")
        norm_hits = [(d, i) for d in docs for i in occurrences(self.normalized(d).text, needle)]
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
        sim = similarity(text, self.corpus.text(doc_id)[start:end])
        return Placed(doc_id, start, end, method, sim, ambiguous)

    def _fuzzy(self, text: str, needle: str, docs: list[str], first: bool) -> Placed:
        size = sum(len(self.corpus.text(d)) for d in docs)
        if size > MAX_FUZZY_CHARS:
            raise Unplaced(f"not found exactly or normalised, and a fuzzy search of {size:,} "
                           f"characters is past its bound of {MAX_FUZZY_CHARS:,} (name the "
                           "text's doc_id)")
        places: list[_Place] = []
        closest: _Place | None = None  # the best place found, when none is good enough
        for d in docs:
            found, best = self._places_in(needle, d)
            places += found
            if best is not None and (closest is None or best.similarity > closest.similarity):
                closest = best
        if not places:
            length = 0 if closest is None else closest.hi - closest.lo
            if closest is not None and not self._similar_length(len(needle), length):
                raise Unplaced(f"its closest place is {length:,} characters for a text of "
                               f"{len(needle):,}: a fuzzy place must be of similar length (the "
                               f"shorter at least {self.threshold:g} of the longer)")
            said = "" if closest is None else f" (the closest has {closest.similarity:.2f})"
            raise Unplaced(f"not found exactly, normalised, or fuzzily at similarity >= "
                           f"{self.threshold}{said}")
        top = max(p.similarity for p in places)
        ties = [p for p in places if p.similarity >= top - _TIE]
        if len(ties) > 1 and not first:
            raise Unplaced(f"{len(ties)} equally good fuzzy places (similarity "
                           f"{top:.3f})", len(ties))
        best = ties[0]  # documents in ``docs`` order, each place by offset
        return self._mapped(text, best.doc_id, best.lo, best.hi, "fuzzy",
                            len(ties) if len(ties) > 1 else 0)

    def _places_in(self, needle: str, doc_id: str) -> tuple[list[_Place], _Place | None]:
        """The best places of ``needle`` in one document that meet the threshold and the
        length bound: the best, and every place not overlapping it that is as good (by
        offset); when none does, the closest place found instead (None when none was)."""
        norm = self.normalized(doc_id).text
        if not norm:
            return [], None
        if len(needle) > SHORT_TEXT and doc_id not in self._seeds:
            self._seeds[doc_id] = Seeds.of(norm)
        spans = candidates(needle, norm, self.threshold, self._seeds.get(doc_id))
        scored = sorted(((self._score(needle, norm, lo, hi), lo, hi) for lo, hi in spans),
                        key=lambda t: (-t[0], t[1]))
        fit = [(s, lo, hi) for s, lo, hi in scored
               if s >= self.threshold - _TIE and self._similar_length(len(needle), hi - lo)]
        if not fit:
            return [], _Place(scored[0][0], doc_id, scored[0][1], scored[0][2]) if scored \
                else None
        top, lo0, hi0 = fit[0]
        kept = [(lo0, hi0)]
        for s, lo, hi in fit[1:]:
            if s >= top - _TIE and all(hi <= a or lo >= b for a, b in kept):
                kept.append((lo, hi))
        return [_Place(top, doc_id, lo, hi) for lo, hi in sorted(kept)], None

    def _similar_length(self, text_len: int, place_len: int) -> bool:
        return min(text_len, place_len) >= self.threshold * max(text_len, place_len) - _TIE

    @staticmethod
    def _score(needle: str, norm: str, lo: int, hi: int) -> float:
        from rapidfuzz import fuzz

        return float(fuzz.ratio(needle, norm[lo:hi])) / 100.0

def _count(hits: list[tuple[str, int]]) -> str:
    return f"at least {len(hits)}" if len(hits) >= MAX_COUNTED else str(len(hits))


def preview(text: str, width: int = 40) -> str:
    """The first ``width`` characters of ``text`` on one line, for an error message."""
    flat = " ".join(text[:width * 2].split())
    return repr(flat[:width] + ("..." if len(flat) > width or len(text) > width * 2 else ""))
