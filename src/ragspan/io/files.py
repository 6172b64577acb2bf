"""Reading input files whole, with their sha256, and writing outputs atomically."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragspan.errors import InputError


def read_bytes(path: str | os.PathLike[str], size: int = -1) -> bytes:
    """Return the file's bytes (its first ``size`` when given); a missing or unreadable file
    is an InputError naming it."""
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
    would shift every offset by one.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start})", str(path)) from None


def read_head(path: str | os.PathLike[str], size: int = 65536) -> str:
    """The first whole lines within ``size`` bytes of a file, decoded as UTF-8 (for format
    detection; the file is not read whole). Missing or unreadable files are an InputError."""
    data = read_bytes(path, size)
    whole = data.rsplit(b"\n", 1)[0] if len(data) == size else data
    return decode_utf8(whole or data, path)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


def iter_json_lines(text: str, path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL text.

    Line numbers are 1-based. A line that is not a JSON object is an InputError.
    """
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})", path, number) from None
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
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} (line {exc.lineno})", path) from None
        if not isinstance(items, list):
            raise InputError("expected a JSON array of objects", path)
        for index, item in enumerate(items, start=1):
            if not isinstance(item, dict):
                raise InputError(f"item {index}: expected a JSON object", path)
            yield index, item
        return
    yield from iter_json_lines(text, path)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], mode: str = "w") -> Iterator[Any]:
    """Open a temporary file beside ``path``; rename it into place only if the block succeeds.

    On any exception the temporary file is removed, so no partial output is ever left.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError("output directory does not exist", str(directory))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        text_args = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
        with os.fdopen(fd, mode, **text_args) as handle:
            yield handle
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_output(path) as handle:
        handle.write(text)


def write_texts_atomic(outputs: dict[str, str]) -> None:
    """Write several files so that either all of them appear or none does: every temporary
    file is written first, then all are renamed into place."""
    stack = contextlib.ExitStack()
    handles = []
    with stack:
        for path, text in outputs.items():
            handles.append((stack.enter_context(atomic_output(path)), text))
        for handle, text in handles:
            handle.write(text)
