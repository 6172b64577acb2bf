"""Anchored gold spans: what an eval set records about the text each span was made on, so
that a corpus edit is caught span by span.

A gold span ``{"doc_id", "start", "end", ...}`` may carry ``"anchor": {"text", "before",
"after", "context"}``: the first 16 hex digits of the sha256 (UTF-8) of the span's text
``doc[start:end]``, of the ``context`` characters before it ``doc[start - context:start]``
and of those after it ``doc[end:end + context]`` (cut at the document's ends). ``adapt``, the
importers and ``migrate`` write one on every span. A span's anchor holds when all three
digests equal those of the corpus text it is scored against.

``drift`` says which documents drifted: a document whose sha256 differs from the one the
eval set's ``_header`` records is drifted unless every gold span in it is anchored and
holds (an edit elsewhere in the document leaves those spans as they were); an anchored span
that does not hold is drifted wherever it is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragspan.base.errors import InputError
from ragspan.records.evalbuild import AnchorDigests

ANCHOR_CONTEXT = 32  # characters of context on each side of a span whose digest is recorded
ANCHOR_KEYS = ("text", "before", "after", "context")
MAX_ANCHOR_CONTEXT = 4096
REPAIR = ("run `ragspan migrate --eval-set EVAL --corpus OLD --to-corpus NEW --out EVAL2` to "
          "carry the gold spans over to the edited corpus (docs/datasets.md, \"When the "
          "corpus changes\")")


def digest16(text: str) -> str:
    """The first 16 hex digits of the sha256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class SpanAnchor:
    """A span's recorded digests (see the module docstring)."""

    text: str
    before: str
    after: str
    context: int

    def digests(self) -> AnchorDigests:
        """The anchor as an eval set writes it."""
        return AnchorDigests(text=self.text, before=self.before, after=self.after,
                             context=self.context)

    def holds(self, doc: str, start: int, end: int) -> bool:
        """Whether ``doc[start:end]`` and its context are what the anchor was made on."""
        return self == anchor_of(doc, start, end, self.context)


def anchor_of(doc: str, start: int, end: int, context: int = ANCHOR_CONTEXT) -> SpanAnchor:
    """The anchor of ``doc[start:end]`` with ``context`` characters each side."""
    return SpanAnchor(digest16(doc[start:end]), digest16(doc[max(0, start - context):start]),
                      digest16(doc[end:end + context]), context)


def parse_anchor(raw: Any, path: str, line: int, what: str) -> SpanAnchor:
    """A span's ``anchor`` object, its shape checked (an InputError naming the key)."""
    if not isinstance(raw, Mapping) or set(raw) != set(ANCHOR_KEYS):
        raise InputError(f"{what}.anchor must be an object with exactly "
                         f"{', '.join(ANCHOR_KEYS)}", path, line)
    for key in ("text", "before", "after"):
        value = raw[key]
        if not isinstance(value, str) or len(value) != 16 or \
                any(c not in "0123456789abcdef" for c in value):
            raise InputError(f"{what}.anchor.{key} must be 16 lowercase hex digits", path, line)
    context = raw["context"]
    if isinstance(context, bool) or not isinstance(context, int) or \
            not 0 <= context <= MAX_ANCHOR_CONTEXT:
        raise InputError(f"{what}.anchor.context must be an integer in [0, "
                         f"{MAX_ANCHOR_CONTEXT}]", path, line)
    return SpanAnchor(raw["text"], raw["before"], raw["after"], context)


@dataclass(frozen=True)
class Drift:
    """One drifted document: the first query with a span there, and why, in words."""

    doc_id: str
    query: str | None
    message: str


def drift(header_documents: Mapping[str, str], spans: list[tuple[str, Any]],
          texts: Mapping[str, str], digests: Mapping[str, str]) -> tuple[list[Drift], list[str]]:
    """The drifted documents (see the module docstring), and the documents that changed with
    every gold span in them anchored and intact. ``spans``: ``(query id, GoldSpan)`` in eval
    set order; ``texts`` / ``digests``: the corpus's texts and sha256 by document id (a
    document absent from them is not judged here)."""
    by_doc: dict[str, list[tuple[str, Any]]] = {}
    for qid, span in spans:
        by_doc.setdefault(span.doc_id, []).append((qid, span))
    found: list[Drift] = []
    intact: list[str] = []
    for doc_id in sorted(set(header_documents) | {d for d, xs in by_doc.items()
                                                  if any(s.anchor for _, s in xs)}):
        if doc_id not in texts:
            continue
        here = by_doc.get(doc_id, [])
        text = texts[doc_id]
        broken = [(q, s) for q, s in here if s.anchor is not None
                  and not s.anchor.holds(text, s.start, s.end)]
        changed = doc_id in header_documents and digests[doc_id] != header_documents[doc_id]
        bare = [(q, s) for q, s in here if s.anchor is None] if changed else []
        if broken or bare:
            first = min(broken + bare, key=lambda x: here.index(x))[0]
            why = (f"{len(broken)} of its {len(here)} gold spans no longer match their anchors"
                   if broken else "its sha256 differs from the eval set's _header and "
                   f"{len(bare)} of its {len(here)} gold spans carry no anchor to check")
            found.append(Drift(doc_id, first, f"corpus drifted: document '{doc_id}' changed "
                               f"since the eval set was made ({why}; re-saved with other line "
                               f"endings, or edited?): {REPAIR}"))
        elif changed:
            intact.append(doc_id)
    return found, intact
