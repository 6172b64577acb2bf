"""Ids that look alike: query and run ids are matched as written, so ids that differ only by
Unicode normalisation are found and said, never silently unmatched."""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

log = logging.getLogger("ragspan")


def normalization_twins(missing: Iterable[str], extra: Iterable[str]) -> list[tuple[str, str]]:
    """``(id, other)`` pairs of an id in ``missing`` (an eval-set id without a run row, say)
    and an id in ``extra`` (a run row without a query) that are the same text under Unicode
    NFC but not as written (NFD against NFC, say). Ids are matched as written; these pairs
    are what ``score`` and ``compare`` warn about, so a mismatch is never silent."""
    forms: dict[str, str] = {}
    for m in missing:
        forms.setdefault(unicodedata.normalize("NFC", m), m)
    if not forms:
        return []
    return [(forms[f], e) for e in extra if (f := unicodedata.normalize("NFC", e)) in forms]


@dataclass(frozen=True)
class TwinsNote:
    """Ids that differ from eval-set ids only by Unicode normalisation: how many, and one
    ``(eval-set id, other id)`` pair (the report's ``records.score.Twins``)."""

    count: int
    example: tuple[str, str]


def twins_note(twins: list[tuple[str, str]], what: str) -> TwinsNote | None:
    """The report's record of ``normalization_twins`` (None when there are none), and one
    warning line in the log."""
    if not twins:
        return None
    log.warning("%d %s differ from eval-set ids only by Unicode normalisation (e.g. %r and "
                "%r) and are not matched: normalise the ids (NFC) on both sides", len(twins),
                what, twins[0][1], twins[0][0])
    return TwinsNote(len(twins), twins[0])
