"""Reading input files whole, with their sha256, and parsing JSON without surprises.

Structured inputs (eval sets, runs, qrels, corpus JSONL, reports, configs) are decoded by
``decode_records``, which drops a leading UTF-8 byte-order mark (and says so in the log);
document texts are decoded by ``decode_utf8``, which keeps it (it is a character that
offsets count). Writing lives in ``ragspan.io.outputs``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ragspan.base.bounds import MAX_JSON_DEPTH
from ragspan.base.errors import InputError

log = logging.getLogger("ragspan")
BOM = "\ufeff"


STDIN = "-"  # an input path that means standard input
_stdin: list[bytes] = []  # read once: format detection and parsing both look at it


def stdin_bytes() -> bytes:
    """Standard input, read whole on first use and kept for the process."""
    if not _stdin:
        _stdin.append(sys.stdin.buffer.read())
    return _stdin[0]


def read_bytes(path: str | os.PathLike[str], size: int = -1) -> bytes:
    """Return the file's bytes (its first ``size`` when given); ``-`` is standard input. A
    missing or unreadable file is an InputError naming it."""
    if str(path) == STDIN:
        data = stdin_bytes()
        return data if size < 0 else data[:size]
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except FileNotFoundError:
        raise InputError("file not found", str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", str(path)) from None


def decode_utf8(data: bytes, path: str | os.PathLike[str]) -> str:
    """Decode UTF-8 without newline translation (offsets are code-point indices).

    A leading byte-order mark is kept: it is a character of the text, and dropping it
    would shift every offset by one. Invalid UTF-8 is an InputError naming the line.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not valid UTF-8 (byte {exc.start})", str(path), line) from None


def decode_records(data: bytes, path: str | os.PathLike[str]) -> str:
    """``decode_utf8`` for a structured file: a leading byte-order mark is dropped (and
    logged), so it never becomes part of the first id; a lone surrogate escape is refused
    (``refuse_lone_surrogates``)."""
    text = decode_utf8(data, path)
    refuse_lone_surrogates(text, path)
    if text.startswith(BOM):
        log.info("%s: ignored the UTF-8 byte-order mark at its start", path)
        return text[1:]
    return text


# an escape \uD800-\uDFFF after an even run of backslashes (an odd run escapes the "u")
_SURROGATE = re.compile(r"(?<!\\)(?:\\\\)*(\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
                        r"(\\u[dD][c-fC-F][0-9a-fA-F]{2})?")


def refuse_lone_surrogates(text: str, path: str | os.PathLike[str]) -> None:
    """A JSON escape of a lone surrogate (``"q\\ud800"`` is valid JSON but no character:
    UTF-8 cannot write it, so an id or text holding one could be read but never reported)
    is an InputError naming the file and line. A high surrogate followed by a low one is a
    proper pair (an escaped emoji) and is kept. Decided once, at read time, for every
    structured file; a text without the escape prefix costs one substring search."""
    if "\\ud" not in text and "\\uD" not in text:
        return
    for m in _SURROGATE.finditer(text):
        first, second = m.group(1), m.group(2)
        high = first[3].lower() in "89ab"
        if high and second is not None:
            continue
        line = text.count("\n", 0, m.start(1)) + 1
        raise InputError(f"the escape {first} is a lone surrogate, not a character (UTF-8 "
                         "cannot write it): fix the id or text that holds it", str(path), line)


def read_head(path: str | os.PathLike[str], size: int = 65536) -> str:
    """The first whole lines within ``size`` bytes of a file, and always the first two
    lines whole however long (a run's ``_header`` and its first row), decoded as UTF-8 with
    a leading byte-order mark dropped (for format detection; the file is not read whole).
    Missing or unreadable files are an InputError."""
    data = read_bytes(path, size)
    if len(data) == size:
        enough = data.count(b"\n") >= 2
        data = data.rsplit(b"\n", 1)[0] if enough else _first_lines(path, size, 2)
    text = decode_utf8(data, path)
    return text[1:] if text.startswith(BOM) else text


def _first_lines(path: str | os.PathLike[str], size: int, lines: int) -> bytes:
    """The file's first ``lines`` lines, without the last one's newline (or the whole file
    when it has fewer), read ``size`` bytes at a time."""
    if str(path) == STDIN:
        return b"\n".join(stdin_bytes().split(b"\n", lines)[:lines])
    parts: list[bytes] = []
    seen = 0
    try:
        with open(path, "rb") as fh:
            while True:
                block = fh.read(size)
                if not block:
                    return b"".join(parts)
                found = block.count(b"\n")
                if seen + found >= lines:
                    cut = -1
                    for _ in range(lines - seen):
                        cut = block.find(b"\n", cut + 1)
                    parts.append(block[:cut])
                    return b"".join(parts)
                seen += found
                parts.append(block)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", str(path)) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value - value != 0:
        raise ValueError(f"number {text} is out of range (not a finite double)")
    return value


class TooDeep(ValueError):
    """A JSON value nested past ``base.bounds.MAX_JSON_DEPTH``."""


def nesting(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep ``value`` nests (a scalar 0, ``[]`` 1, ``[[1]]`` 2), walked without recursion
    and stopped at ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        stack.extend((child, depth) for child in children
                     if isinstance(child, (dict, list)))
    return deepest


def json_value(text: str, limit: int = MAX_JSON_DEPTH) -> Any:
    """A JSON text read from inside another value (an attribute, a tag, a field holding JSON
    text) as a Python value: ``TooDeep`` when it nests past ``limit`` (one reader, so no
    path through the importers or ``validate`` reaches Python's recursion limit); any other
    ValueError when it is not JSON (NaN and Infinity included). The caller names where it
    was."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise TooDeep(f"JSON nested more than {limit} deep") from None
    if isinstance(value, (dict, list)) and nesting(value, limit) > limit:
        raise TooDeep(f"JSON nested more than {limit} deep")
    return value


def loads_json(text: str | bytes, path: str | os.PathLike[str], line: int | None = None,
               finite: bool = False) -> Any:
    """``json.loads`` that refuses NaN and Infinity (not JSON) and nesting too deep for
    Python; with ``finite``, also a number too large for a double (``1e400``). Every failure
    is an InputError naming the file (and line)."""
    try:
        if finite:
            return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        where = f" (column {exc.colno})" if line is not None else ""
        raise InputError(f"malformed JSON: {exc.msg}{where}", str(path),
                         line if line is not None else exc.lineno) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", str(path), line) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(str(exc), str(path), line) from None


def file_sha256(path: str) -> str:
    """The sha256 of a file's bytes, read in blocks (a large archive is never held whole)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_sha256(folder: str) -> str:
    """The sha256 of a folder: of one line per file under it, in path order,
    ``<sha256 of its bytes>  <path relative to the folder>`` (as ``sha256sum`` lists them),
    so it changes with any byte, name, addition or removal."""
    lines = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in files:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            lines.append((rel, f"{file_sha256(full)}  {rel}\n"))
    return hashlib.sha256("".join(line for _, line in sorted(lines)).encode("utf-8")).hexdigest()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_beside(data: bytes) -> Callable[[], str]:
    """The sha256 of ``data`` computed in a thread beside whatever the caller does next
    (hashlib lets go of the interpreter while it hashes): call the result for the digest,
    which waits for it."""
    got: list[str] = []
    worker = threading.Thread(target=lambda: got.append(sha256_hex(data)), daemon=True)
    worker.start()

    def digest() -> str:
        worker.join()
        return got[0] if got else sha256_hex(data)

    return digest


def split_rows(text: str, width: int) -> list[str] | None:
    """The whitespace-separated tokens of ``text``, rows of ``width`` back to back, when
    every line (split on ``\n``) holds exactly ``width`` tokens: no blank line, no short or
    long line. None otherwise (or when ``text`` holds a NUL). One C-speed split: each line
    end becomes a NUL token that must fall every ``width + 1`` tokens."""
    if not text or "\x00" in text:
        return None
    marked = text.replace("\n", " \x00 ") + ("" if text.endswith("\n") else " \x00")
    tokens = marked.split()
    del marked
    rows = len(tokens) // (width + 1)
    if len(tokens) != rows * (width + 1) or tokens[width::width + 1].count("\x00") != rows:
        return None
    del tokens[width::width + 1]
    return tokens


def not_json_lines(line: str) -> str | None:
    """What a first line that cannot open JSON lines looks like (CSV, TSV, a JSON array, a
    JSON document over several lines), or None when it parses as an object."""
    try:
        if isinstance(json.loads(line), dict):
            return None
    except RecursionError:
        return None  # the reader says it is nested too deeply
    except ValueError:
        pass
    head = line.lstrip("\ufeff \t")
    if head.startswith("["):
        return "this is a JSON array"
    if head.startswith("{"):
        return "this is a JSON document over several lines" if head.rstrip() == "{" \
            else None
    if "\t" in line:
        return "this looks like tab-separated values (TSV)"
    if "," in line:
        return "this looks like comma-separated values (CSV)"
    return None


def iter_json_lines(text: str, path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL text.

    Line numbers are 1-based. A line that is not a JSON object is an InputError.
    """
    first = True
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if first:
            first = False
            said = not_json_lines(line)
            if said:
                raise InputError(f"{said}, where JSON lines belong: one JSON object per line "
                                 "(docs/formats.md)", path, number)
        obj = loads_json(line, path, number)
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", path, number)
        yield number, obj


def iter_json_records(text: str, path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield records of a JSONL file or of a JSON array file.

    For a JSON array the number is the 1-based position of the item in the array (the
    message says ``item N``); for JSONL it is the line number.
    """
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        items = loads_json(stripped, path)
        if not isinstance(items, list):
            raise InputError("expected a JSON array of objects", path)
        for index, item in enumerate(items, start=1):
            if not isinstance(item, dict):
                raise InputError(f"item {index}: expected a JSON object", path)
            yield index, item
        return
    yield from iter_json_lines(text, path)
