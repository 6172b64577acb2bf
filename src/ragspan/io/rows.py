"""The row toolkit every JSON-lines reader shares (eval sets, runs, chunk manifests, qrels,
importers): ids, the ``_header`` record, and offsets (code-point indices, end exclusive)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ragspan.base.canonical import canonical_dumps
from ragspan.base.errors import InputError
from ragspan.io.files import iter_json_records
from ragspan.records.score import RUN_HEADER_TYPES

HEADER_KEY = "_header"
ON_DUPLICATE = ("error", "first")
LISTED_SKIPS = 20  # skipped rows' lines listed per file (all are counted)


def content_sha256(text: str, path: str) -> str:
    """The sha256 of a JSON-lines file's content: every record but the ``_header``, each as
    canonical JSON on its own line, in order. What the rows say, not how the file spells
    them or what its header records (the paths typed, the tool's and Python's versions)."""
    digest = hashlib.sha256()
    for _, obj in iter_json_records(text, path):
        if HEADER_KEY not in obj:
            digest.update(canonical_dumps(obj).encode("utf-8"))
    return digest.hexdigest()


@dataclass
class Skipped:
    """``--on-duplicate first``: the rows of one JSON-lines file that were skipped, counted
    (``repeated``: an id an earlier row has, that row kept; ``without_id``: no ``id``) with
    the first ``LISTED_SKIPS`` lines; in a doc run also the entries dropped from a row that
    lists a document again (``repeated_docs``: its first place kept, the row itself kept).
    The default rule (no ``Skipped``) refuses all three."""

    repeated: int = 0
    without_id: int = 0
    repeated_docs: int = 0
    lines: list[int] = field(default_factory=list)

    def skip(self, line: int, repeated: bool) -> None:
        if repeated:
            self.repeated += 1
        else:
            self.without_id += 1
        self._line(line)

    def skip_docs(self, line: int, count: int) -> None:
        """``count`` repeated documents dropped from the row on ``line``."""
        self.repeated_docs += count
        self._line(line)

    def _line(self, line: int) -> None:
        if len(self.lines) < LISTED_SKIPS and line not in self.lines:
            self.lines.append(line)

    @property
    def total(self) -> int:
        """Rows skipped (``repeated_docs`` are entries of kept rows, counted apart)."""
        return self.repeated + self.without_id


def parse_id(value: Any, path: str, line: int, what: str = "id") -> str:
    """Ids are non-empty strings; integers are accepted and turned into their decimal text."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"'{what}' must be a string", path, line)
    text = str(value)
    if not text:
        raise InputError(f"'{what}' must not be empty", path, line)
    return text


def unique_row_id(obj: dict[str, Any], seen: dict[str, int], path: str, line: int) -> str:
    """The row's ``id``: present, a valid id, not seen before (``seen`` maps id -> line)."""
    qid = row_id(obj, seen, path, line)
    assert qid is not None  # without ``skipped`` every row has its id or is refused
    return qid


def row_id(obj: dict[str, Any], seen: dict[str, int], path: str, line: int,
           skipped: Skipped | None = None) -> str | None:
    """``unique_row_id``; with ``skipped`` (``--on-duplicate first``) a row without ``id``
    or repeating an earlier row's is counted there and None returned (the caller skips it)
    instead of refused. An id of the wrong type or empty is refused either way."""
    if "id" not in obj:
        if skipped is not None:
            skipped.skip(line, repeated=False)
            return None
        raise InputError("missing 'id'", path, line)
    qid = parse_id(obj["id"], path, line)
    if qid in seen:
        if skipped is not None:
            skipped.skip(line, repeated=True)
            return None
        raise InputError(f"repeated query id '{qid}' (first on line {seen[qid]})", path, line)
    seen[qid] = line
    return qid


def kind_of(obj: dict[str, Any]) -> str | None:
    """What file a record comes from, by its keys: ``a ragspan report``, ``an eval set``, ``a
    span run``, ``a doc-level run``, ``a corpus`` or ``a chunk manifest`` (None: none of
    these)."""
    keys = set(obj)
    if {"_type", "predicate"} & keys:
        return "a ragspan report"
    if {"query", "gold_spans", "gold_texts", "relevant_ids", "relevance"} & keys:
        return "an eval set"
    if "retrieved" in keys:
        return "a span run"
    if "retrieved_ids" in keys:
        return "a doc-level run"
    if "chunk_id" in keys and {"start", "end"} <= keys:
        return "a chunk manifest"
    if "text" in keys or "_id" in keys:
        return "a corpus"
    return None


def refuse_other_kind(obj: dict[str, Any], expected: str, path: str, line: int,
                      hint: str = "") -> None:
    """An InputError when a file's first record is of another kind than ``expected`` (a run
    where an eval set belongs, a report where a run belongs), naming both."""
    kind = kind_of(obj)
    if kind is not None and kind != expected:
        raise InputError(f"this is {kind}, not {expected}{hint}", path, line)


INT64_MAX = 2 ** 63 - 1
# Offsets are code-point indices: no document has 2^40 (a trillion) characters, and the span
# arithmetic packs (group, offset) pairs into one int64 line, which needs the headroom.
MAX_OFFSET = 2 ** 40


def is_offset(value: Any) -> bool:
    """An integer (never a boolean) of magnitude at most ``MAX_OFFSET``."""
    return (isinstance(value, int) and not isinstance(value, bool)
            and -MAX_OFFSET <= value <= MAX_OFFSET)


def out_of_range(value: Any) -> bool:
    """An integer beyond ``MAX_OFFSET`` (told apart from a value that is no integer)."""
    return isinstance(value, int) and not isinstance(value, bool) and not is_offset(value)


def header_record(obj: dict[str, Any], rows_before: int, path: str, line: int,
                  run: bool = False) -> dict[str, object]:
    """The ``_header`` record's object: it must come first and be an object. ``run``: a
    span run's, kept as given but for the fields a score report types
    (``records.score.RUN_HEADER_TYPES``: its pipeline ``config`` an object, its digests
    strings), one of another type an InputError naming it before a score writes the header
    into its report."""
    if rows_before:
        raise InputError("the '_header' record must come first", path, line)
    header: object = obj[HEADER_KEY]
    if not isinstance(header, dict):
        raise InputError("'_header' must be an object", path, line)
    for key, (kind, name) in RUN_HEADER_TYPES.items() if run else ():
        if key in header and not isinstance(header[key], kind):
            raise InputError(f"'_header.{key}' must be of type '{name}', got "
                             f"{type(header[key]).__name__}", path, line)
    return header


def check_offsets(start: Any, end: Any, path: str, line: int | None, what: str) -> tuple[int, int]:
    """Validate one span's offsets: integers up to ``MAX_OFFSET``, ``0 <= start < end``."""
    if out_of_range(start) or out_of_range(end):
        raise InputError(f"{what}: offset out of range (more than 2^40)", path, line)
    if not is_offset(start) or not is_offset(end):
        raise InputError(f"{what}: start and end must be integers", path, line)
    if start < 0:
        raise InputError(f"{what}: negative offset start={start}", path, line)
    if start >= end:
        raise InputError(f"{what}: start={start} must be < end={end}", path, line)
    return start, end
