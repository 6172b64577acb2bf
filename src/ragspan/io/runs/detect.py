"""Which kind of run a file holds (``detect_run_format``: TREC, doc-level JSONL or a span run),
from its first record, and the bytes every run reader treats alike."""

from __future__ import annotations

from ragspan.base.errors import InputError
from ragspan.io.files import loads_json, not_json_lines
from ragspan.io.rows import refuse_other_kind

RUN_FORMATS = ("trec", "jsonl", "span")


BOM_BYTES = b"\xef\xbb\xbf"


# whitespace str.split() splits on besides spaces and newlines: a clean file has none
ODD_WHITESPACE = (b"\t", b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")


def detect_run_format(text: str, path: str) -> str:
    """``span``, ``jsonl`` or ``trec``, from the first row (after a ``_header``); a row that
    is not JSON is an InputError naming its own line."""
    for number, raw in enumerate(text.split("\n", 20)[:20], start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("{"):
            obj = loads_json(line, path, number)
            if isinstance(obj, dict) and ("retrieved" in obj or "steps" in obj):
                return "span"
            if isinstance(obj, dict) and "_header" in obj:
                continue
            if isinstance(obj, dict) and "retrieved_ids" in obj:
                return "jsonl"
            if isinstance(obj, dict):
                refuse_other_kind(obj, "a run", path, number,
                                  ": give the run it was scored from" if "predicate" in obj
                                  else " (are --eval-set and --run swapped?)")
            raise InputError("a JSONL run row needs 'retrieved' (or 'steps') or "
                             "'retrieved_ids'", path, number)
        if len(line.split()) >= 6:
            return "trec"
        said = not_json_lines(line)
        raise InputError(f"cannot tell the run format from its first line{f' ({said})' if said else ''}: "
                         "expected TREC 'qid Q0 docid rank score tag' or JSON lines", path,
                         number)
    raise InputError("the run file is empty", path)
