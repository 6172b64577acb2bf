"""Carrying an eval set's gold spans over to an edited corpus (``ragspan migrate``).

Each gold span ``[start, end)`` of document ``doc_id`` in the old corpus (its text ``T``)
gets a status and a place in the new corpus. Where it stood is read from the matched blocks
of the old and new document (``evalsets.textdiff``): its ends mapped through them give the
stretch of the new text that took its place.

- ``unchanged``: the same offsets hold the same text;
- ``moved``: the same text at other offsets: where it stood, or, when that changed, its own
  copy of ``T`` elsewhere (a passage moved);
- ``edited``: the text where it stood changed (``similarity``, ``rapidfuzz.fuzz.ratio`` /
  100 of ``T`` and the new text, recorded); when the text around it was rewritten too,
  where the placement's normalised or fuzzy step puts ``T`` in the new document at
  similarity ``threshold`` or more;
- ``deleted``: the document was removed; only whitespace is left where it stood; or where
  it stood was rewritten and no placement finds it;
- ``ambiguous``: more than one place could be it and nothing decides between them.

Which copy of ``T`` elsewhere is the span's own: every place of ``T`` in the old document
and in the new one is scored by how many characters of its surroundings agree (the common
suffix of the ``CONTEXT`` characters before, plus the common prefix of those after; two
document ends agree fully). A new place is the span's when the span's old place scores
highest against it and it scores highest against the span's old place, each strictly (a
mutual best match), and **a move carries its surroundings**: at least ``MIN_AGREE``
characters of them, whitespace aside, agree, however long ``T`` is. A copy with none of the
old place's context is ``ambiguous`` (its question set aside, and counted as lost by the
gate unless the migrated eval set is reviewed): a corpus edit that changes one character of
a gold text and writes an exact copy where a retriever looks must not pass as a move. For
the same reason, where the place the span stood still holds a close edit of ``T``
(similarity ``threshold`` or more) and an exact copy stands elsewhere, the span is
``ambiguous``: the text was edited where it stood, and the copy may be anyone's. Nothing is
ever given a place whose text differs from ``T`` without the status ``edited``.

A document whose text did not change keeps every span ``unchanged`` without a search. Work
per changed document is one ``OffsetMap``; per span, a few scans of its document
(``str.find``) and at most one bounded fuzzy search (``io.placement``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragspan.evalsets.textdiff import OffsetMap
from ragspan.io.corpus import Corpus
from ragspan.io.placement import Placer, Unplaced, occurrences, similarity
from ragspan.records.migrate import Status

CONTEXT = 64  # characters each side compared to tell copies of a text apart
MIN_AGREE = 8  # characters of the surroundings, whitespace aside, a copy elsewhere must share
MAX_COPIES = 64  # places of one text compared by context; more: ambiguous
STATUSES = ("unchanged", "moved", "edited", "deleted", "ambiguous")
DEFAULT_THRESHOLD = 0.8


@dataclass(frozen=True)
class Moved:
    """Where one gold span went: its status, new ``[start, end)`` (None when ``deleted`` or
    ``ambiguous``), the similarity of its old and new text, and why, in words."""

    status: Status
    start: int | None = None
    end: int | None = None
    similarity: float | None = None
    reason: str = ""


def _agree(old: str, o: int, new: str, n: int, length: int) -> int:
    """How many characters of the surroundings of ``old[o:o+length]`` and
    ``new[n:n+length]`` agree, whitespace aside: the common suffix of the ``CONTEXT``
    characters before each, plus the common prefix of those after (both at a document end:
    all ``CONTEXT``)."""
    score = 0
    if o == 0 and n == 0:
        score += CONTEXT
    else:
        a, b = old[max(0, o - CONTEXT):o], new[max(0, n - CONTEXT):n]
        i = 0
        while i < min(len(a), len(b)) and a[-1 - i] == b[-1 - i]:
            i += 1
        score += _solid(a[len(a) - i:])
    oe, ne = o + length, n + length
    if oe == len(old) and ne == len(new):
        score += CONTEXT
    else:
        a, b = old[oe:oe + CONTEXT], new[ne:ne + CONTEXT]
        i = 0
        while i < min(len(a), len(b)) and a[i] == b[i]:
            i += 1
        score += _solid(a[:i])
    return score


def _solid(text: str) -> int:
    """The characters of ``text`` that are not whitespace."""
    return sum(1 for ch in text if not ch.isspace())


def _own_copy(old: str, new: str, start: int, end: int,
              stood: tuple[int, int] | None = None) -> Moved | None:
    """The span's own copy of its text in ``new`` (``unchanged`` or ``moved``), ``ambiguous``
    when copies are there and none is decidably its own, None when the text is not there.
    ``stood``: the stretch of ``new`` the matched blocks map the span to; the one copy that
    overlaps it is the span's own, where it stood (an edit next to its ends)."""
    text = old[start:end]
    news = occurrences(new, text, MAX_COPIES + 1)
    if not news:
        return None
    olds = occurrences(old, text, MAX_COPIES + 1)
    if len(news) > MAX_COPIES or len(olds) > MAX_COPIES:
        return Moved("ambiguous", reason=f"the text occurs more than {MAX_COPIES} times")
    length = end - start
    if stood is not None:
        there = [n for n in news if n < max(stood[1], stood[0] + 1) and n + length > stood[0]]
        if len(there) == 1:
            n = there[0]
            return Moved("unchanged" if n == start else "moved", n, n + length, 1.0)
    mine = [_agree(old, start, new, n, length) for n in news]
    best = max(mine)
    if best < MIN_AGREE:
        return Moved("ambiguous", reason=f"a copy of the text stands elsewhere, but its "
                                         f"surroundings share {best} of the "
                                         f"{MIN_AGREE} characters a move carries with it: it "
                                         "may be another copy, not the span's own")
    if len(news) == 1 and len(olds) == 1:
        n = news[0]
    else:
        tops = [n for n, s in zip(news, mine) if s == best]
        if len(tops) > 1:
            return Moved("ambiguous", reason=f"{len(tops)} copies of the text agree equally "
                                             f"with its surroundings ({best} characters)")
        n = tops[0]
        rivals = [_agree(old, o, new, n, length) for o in olds if o != start]
        if any(r >= best for r in rivals):
            return Moved("ambiguous", reason="another copy of the text in the old document "
                                             "agrees as well with this place's surroundings")
    return Moved("unchanged" if n == start else "moved", n, n + length, 1.0)


def _plausible(text_len: int, lo: int, hi: int) -> bool:
    """Whether a stretch of the new text can be an edit of a text of ``text_len``
    characters (not a whole rewritten section around it)."""
    return hi - lo <= 2 * text_len + CONTEXT


def locate(old: str, new: str, start: int, end: int, placer: Placer, doc_id: str,
           offsets: OffsetMap | None = None, threshold: float = DEFAULT_THRESHOLD) -> Moved:
    """The status and new place of ``old[start:end]`` in ``new`` (see the module
    docstring); ``placer`` places in the new corpus at its similarity threshold, ``doc_id``
    names the document there,
    ``offsets`` is ``OffsetMap(old, new)`` (made here when not given)."""
    if old == new:
        return Moved("unchanged", start, end, 1.0)
    offsets = offsets if offsets is not None else OffsetMap(old, new)
    text = old[start:end]
    lo, hi = offsets.start(start), offsets.end(end)
    if new[lo:hi] == text:
        return Moved("unchanged" if lo == start else "moved", lo, hi, 1.0)
    own = _own_copy(old, new, start, end, (lo, hi) if offsets.blocks else None)
    if own is not None and own.status != "ambiguous":
        elsewhere = own.start is not None and not (own.start < hi and own.end is not None
                                                   and own.end > lo)
        if elsewhere and offsets.blocks and hi > lo and _plausible(end - start, lo, hi) and \
                similarity(text, new[lo:hi]) >= threshold:
            return Moved("ambiguous", reason="the text where it stood was edited, and an "
                                             "exact copy stands elsewhere: which is the "
                                             "span's own cannot be told")
        return own
    if offsets.blocks:  # the text around it is matched: the stretch between is its place
        if hi <= lo or not new[lo:hi].strip():
            return Moved("deleted", reason="nothing is left where it stood")
        if _plausible(end - start, lo, hi):
            if own is not None:  # an exact copy elsewhere, not decidably its own
                return Moved("ambiguous", reason="the text where it stood was edited, and "
                                                 f"an exact copy stands elsewhere ({own.reason})")
            return Moved("edited", lo, hi, similarity(text, new[lo:hi]),
                         "the text where it stood changed")
    if own is not None:
        return own
    try:
        placed = placer.place(text, [doc_id])
    except Unplaced as exc:
        if exc.places:
            return Moved("ambiguous", reason=exc.reason)
        return Moved("deleted", reason=f"where it stood was rewritten, and it is not placed: "
                                       f"{exc.reason}")
    return Moved("edited", placed.start, placed.end, placed.similarity,
                 f"placed {placed.method} (where it stood was rewritten)")


def locate_all(old: Corpus, new: Corpus, spans: Sequence[tuple[str, int, int]],
               threshold: float = DEFAULT_THRESHOLD) -> list[Moved]:
    """``locate`` for every ``(doc_id, start, end)`` of the old corpus, in order."""
    placer = Placer(new, threshold)
    maps: dict[str, OffsetMap] = {}
    out = []
    for doc_id, start, end in spans:
        if doc_id not in new.documents:
            out.append(Moved("deleted", reason=f"document '{doc_id}' is not in the new corpus"))
            continue
        before, after = old.text(doc_id), new.text(doc_id)
        if before != after and doc_id not in maps:
            maps[doc_id] = OffsetMap(before, after)
        out.append(locate(before, after, start, end, placer, doc_id,
                          maps.get(doc_id), threshold))
    return out
