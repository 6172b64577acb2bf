"""Runs anchored by text: the retrieved items of a span run that carry their ``text``.

An item ``{"doc_id", "start", "end", "text"}`` is checked: ``corpus[doc_id][start:end]`` must
equal ``text`` (a mismatch is an InputError naming the query, the rank and both texts,
unless ``align``, which places the text as if it had no offsets). An item without offsets
(``{"doc_id"?, "text"}``) is placed (``io.placement``) in its ``doc_id``, else its query's
scope document, else the whole corpus. A text that cannot be placed, or that has several
equally good places, is an InputError, unless ``unplaced = "drop"`` or ``on_ambiguous =
"first"`` (the first place, in document order then offset, is taken). A dropped item keeps
its rank: it becomes an off-corpus result, a slice of the pseudo-document ``UNPLACED_DOC``
(``unplaced_text``: every dropped text in turn), so it retrieves its text's characters and
covers no gold; the items after it keep their ranks. Every outcome is counted (``summary``)
and every placed item recorded (``records``: per query, its rank, method and similarity),
so nothing is decided silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET

from ragspan.base.errors import InputError, UsageError, present
from ragspan.base.placement import PLACEMENT_DEFAULTS, PLACEMENT_OPTIONS
from ragspan.io.corpus import Corpus, doc_id_hint
from ragspan.io.placement import DEFAULT_THRESHOLD, Placed, Placer, Unplaced, preview
from ragspan.io.rows import is_offset
from ragspan.records.retrieval import TextPlacement
from ragspan.records.score_rows import Placed as PlacedItem

ON_AMBIGUOUS = next(o.choices for o in PLACEMENT_OPTIONS if o.key == "on-ambiguous")
ON_UNPLACED = next(o.choices for o in PLACEMENT_OPTIONS if o.key == "unplaced")
UNPLACED_DOC = "(unplaced)"  # the document a dropped item retrieves from (never a corpus's)
OUTCOMES = ("checked", "unchecked", "exact", "normalized", "fuzzy", "realigned",
            "ambiguous_first", "dropped")


@dataclass
class Anchor:
    """How a run's texts are checked and placed, and what happened to each (``counts``,
    ``records``). ``corpus`` None: texts with offsets are counted ``unchecked``, texts without
    offsets are refused."""

    corpus: Corpus | None
    scope_of: dict[str, str | None] = field(default_factory=dict)
    align: bool = PLACEMENT_DEFAULTS["align"]
    on_ambiguous: str = PLACEMENT_DEFAULTS["on_ambiguous"]
    unplaced: str = PLACEMENT_DEFAULTS["unplaced"]
    threshold: float = DEFAULT_THRESHOLD
    # the options an error may suggest: score's flags (``--align``, ``--on-ambiguous``,
    # ``--unplaced``); False for a command without them (run-retriever)
    suggest_flags: bool = True
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    records: dict[str, list[PlacedItem]] = field(default_factory=dict)
    _placer: Placer | None = None
    _all_docs: list[str] = field(default_factory=list)  # document order for corpus-wide search
    _unplaced: list[str] = field(default_factory=list)  # the dropped texts, in turn
    _unplaced_len: int = 0

    @property
    def unplaced_text(self) -> str:
        """The pseudo-document ``UNPLACED_DOC``: every dropped text, in the order dropped."""
        return "".join(self._unplaced)

    def __post_init__(self) -> None:
        if self.on_ambiguous not in ON_AMBIGUOUS:
            raise UsageError(f"on_ambiguous must be one of {', '.join(ON_AMBIGUOUS)}, got "
                             f"{self.on_ambiguous!r}")
        if self.unplaced not in ON_UNPLACED:
            raise UsageError(f"unplaced must be one of {', '.join(ON_UNPLACED)}, got "
                             f"{self.unplaced!r}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) \
                or not 0 < self.threshold <= 1:
            raise UsageError(f"the fuzzy threshold must be a number in (0, 1], got "
                             f"{self.threshold!r}")
        if self.corpus is not None:
            self._placer = Placer(self.corpus, self.threshold)
            self._all_docs = sorted(self.corpus.documents)

    def resolve(self, key: str, rank: int, qid: str, doc: str | None, start: Any, end: Any,
                text: Any, path: str | None, line: int | None) -> tuple[str, Any, Any]:
        """Item ``rank`` (0-based) of field ``key`` of query ``qid``: its ``(doc_id, start,
        end)``, checked or placed (a dropped item: its slice of ``UNPLACED_DOC``)."""
        where = f"query '{qid}': {key}[{rank}]"
        if not isinstance(text, str):
            raise InputError(f"{where}: 'text' must be a string", path, line)
        if not text:
            raise InputError(f"{where}: 'text' is empty", path, line)
        has_offsets = start is not None or end is not None
        realign = False
        if has_offsets and doc is None:
            if not self.align or self.corpus is None:
                raise InputError(f"{where}: offsets need the item's 'doc_id'", path, line)
            has_offsets, realign = False, True  # offsets into an unnamed text: placed by text
        if self.corpus is None or self._placer is None:
            if not has_offsets:
                raise InputError(f"{where} gives its text but no offsets: give --corpus to "
                                 "place the text", path, line)
            self.counts["unchecked"] += 1
            return present(doc, "the item's doc_id"), start, end
        if doc is not None and doc not in self.corpus.documents:
            raise InputError(f"{where} names doc_id '{doc}', absent from the corpus"
                             f"{doc_id_hint(doc, self.corpus.documents)}", path, line)
        if has_offsets:
            doc = present(doc, "the item's doc_id")
            if not (is_offset(start) and is_offset(end)):
                return doc, start, end  # the reader names the bad offset
            actual = self.corpus.text(doc)[start:end]
            if actual == text and start < end:
                self.counts["checked"] += 1
                return doc, start, end
            if not self.align:
                hint = " (give --align to place it by its text)" if self.suggest_flags else ""
                raise InputError(
                    f"{where}: the text does not match '{doc}' [{start}, {end}): the run has "
                    f"{preview(text)}, the corpus has {preview(actual)}{hint}", path, line)
            realign = True
        return self._placed(text, doc, qid, key, rank, realign, where, path, line)

    def _placed(self, text: str, doc: str | None, qid: str, key: str, rank: int,
                realign: bool, where: str, path: str | None, line: int | None
                ) -> tuple[str, int, int]:
        """A text placed in its document, else its query's scope document, else the corpus;
        counted and recorded (dropped, under ``unplaced = "drop"``; else refused)."""
        corpus, placer = present(self.corpus, "the corpus"), present(self._placer, "a placer")
        scope = self.scope_of.get(qid)
        if doc is None and scope is not None and scope not in corpus.documents:
            raise InputError(f"{where}: its query's doc_id '{scope}', where the text would be "
                             "placed, is absent from the corpus", path, line)
        docs = [doc] if doc is not None else [scope] if scope is not None else self._all_docs
        inside = f"'{docs[0]}'" if len(docs) == 1 else f"the corpus ({len(docs)} documents)"
        try:
            placed = placer.place(text, docs, first=self.on_ambiguous == "first")
        except Unplaced as exc:
            if self.unplaced == "drop" and not exc.places:
                return self._drop(qid, key, rank, text, realign, path, line)
            if self.suggest_flags:
                hint = ("--on-ambiguous first takes the first" if exc.places
                        else "--unplaced drop scores it as an off-corpus result")
            else:
                hint = ("its text has several equally good places: give its document and "
                        "offsets" if exc.places else "is it from this corpus?")
            raise InputError(f"{where}: cannot place the text {preview(text)} in {inside}: "
                             f"{exc.reason} ({hint})", path, line) from None
        self.counts[placed.method] += 1
        if placed.ambiguous:
            self.counts["ambiguous_first"] += 1
        if realign:
            self.counts["realigned"] += 1
        self._record(qid, key, rank, placed, realign)
        return placed.doc_id, placed.start, placed.end

    def _drop(self, qid: str, key: str, rank: int, text: str, realign: bool, path: str | None,
              line: int | None) -> tuple[str, int, int]:
        """A text that cannot be placed, kept at its rank as a slice of ``UNPLACED_DOC``."""
        if self.corpus is not None and UNPLACED_DOC in self.corpus.documents:
            raise InputError(f"the corpus has a document named '{UNPLACED_DOC}', the name "
                             "--unplaced drop gives the results it cannot place", path, line)
        start = self._unplaced_len
        self._unplaced.append(text)
        self._unplaced_len += len(text)
        self.counts["dropped"] += 1
        self._record(qid, key, rank, None, realign)
        return UNPLACED_DOC, start, self._unplaced_len

    def _record(self, qid: str, key: str, rank: int, placed: Placed | None,
                realign: bool) -> None:
        realigned = True if realign else UNSET
        if placed is None:
            rec = PlacedItem(field=key, rank=rank + 1, method="dropped", realigned=realigned)
        else:
            rec = PlacedItem(field=key, rank=rank + 1, method=placed.method,
                             similarity=placed.similarity, doc_id=placed.doc_id,
                             start=placed.start, end=placed.end,
                             ambiguous_places=placed.ambiguous or UNSET, realigned=realigned)
        self.records.setdefault(qid, []).append(rec)

    def summary(self) -> TextPlacement | None:
        """The counts, with the settings that decided them; None when no item had a text."""
        c = self.counts
        if not any(c.values()):
            return None
        return TextPlacement(
            checked=c["checked"], unchecked=c["unchecked"], exact=c["exact"],
            normalized=c["normalized"], fuzzy=c["fuzzy"], realigned=c["realigned"],
            ambiguous_first=c["ambiguous_first"], dropped=c["dropped"], align=self.align,
            on_ambiguous=self.on_ambiguous, unplaced=self.unplaced, threshold=self.threshold)
