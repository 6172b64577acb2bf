"""A score report's per-query rows (``details.queries``) as typed records, decoded and
validated in one pass from the report's bytes (``decode_rows``) or from rows held in memory
(``convert_rows``): the rows of format v1, and what a v2 report's columns read back as
(``records.score_columns.rows_of``). The types are the report schema's for a row: a
number is a JSON number (an integer where the schema says integer, never a boolean), a
string a string; fields the schema does not name are allowed and ignored, as the schema
allows them. A row that breaks them is ``msgspec.ValidationError`` naming its JSON path."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

# a JSON number that is a finite double (a text like 1e400 reads as infinity: refused)
Finite = Annotated[float, Meta(ge=-sys.float_info.max, le=sys.float_info.max)]


class MissingSpan(Struct, omit_defaults=True):
    """A gold span a cutoff left below tau: where it is and how much of it was covered."""

    doc_id: str
    start: int
    end: int
    covered: Finite | UnsetType = UNSET
    text: str | UnsetType = UNSET


class EvidenceChunk(Struct, omit_defaults=True):
    """A chunk behind a failure label: its id, offsets and rank in the pool (None: not
    retrieved)."""

    start: int
    end: int
    chunk_id: str | None | UnsetType = UNSET
    rank: int | None | UnsetType = UNSET


class Evidence(Struct, omit_defaults=True):
    """A failing gold span and the chunks behind its label."""

    doc_id: str
    start: int
    end: int
    chunks: list[EvidenceChunk] | UnsetType = UNSET
    first_rank: int | None | UnsetType = UNSET
    whole_in_one_chunk: bool | UnsetType = UNSET
    chunk_ceiling: Finite | UnsetType = UNSET


class Placed(Struct, omit_defaults=True):
    """A result placed by its text (``placed``)."""

    field: str
    rank: int
    method: str
    similarity: Finite | UnsetType = UNSET
    doc_id: str | UnsetType = UNSET
    start: int | UnsetType = UNSET
    end: int | UnsetType = UNSET
    ambiguous_places: int | UnsetType = UNSET
    realigned: bool | UnsetType = UNSET


class Row(Struct, omit_defaults=True):
    """One question's row: its metrics by column name, and what the gate and the readouts
    read beside them."""

    id: str
    metrics: dict[str, Finite]
    query: str | UnsetType = UNSET
    doc_id: str | UnsetType = UNSET
    in_run: bool | UnsetType = UNSET
    tags: dict[str, str] | UnsetType = UNSET
    missing_spans: dict[str, list[MissingSpan]] | UnsetType = UNSET
    failure: dict[str, str] | UnsetType = UNSET
    failure_evidence: list[Evidence] | UnsetType = UNSET
    placed: list[Placed] | UnsetType = UNSET
    gold_steps: list[int | None] | UnsetType = UNSET
    step_chars: list[int] | UnsetType = UNSET


def convert_rows(rows: Any) -> list[Row]:
    """The rows of a report held in memory (plain JSON values), checked as decoded ones
    are (strict: no string for a number, no boolean for an integer, a finite number)."""
    return msgspec.convert(rows, list[Row], strict=True)


def as_plain(value: Any) -> Any:
    """A record (or a list or dict of them) as plain JSON values, unset fields left out."""
    return msgspec.to_builtins(value)
