"""Text extraction from PDFs with pypdf; the extracted text is what offsets index."""

from __future__ import annotations

import io
import os
import re
from typing import Any

from ragspan.base.bounds import MAX_PDF_CHARS, MAX_PDF_CHARS_PER_BYTE
from ragspan.base.errors import InputError

PAGE_SEPARATOR = "\n\n"


def extractor_info() -> dict[str, str]:
    import pypdf

    return {"name": "pypdf", "version": pypdf.__version__, "page_separator": PAGE_SEPARATOR}


# Extracted text is refused beyond MAX_CHARS_PER_BYTE characters per byte of the file (real
# PDFs give 0.5-0.6: the shared acquisition set; a 5 KB file whose pages share one content
# stream once gave 16 MB) or MAX_CHARS characters in all, whichever is smaller.
MAX_CHARS_PER_BYTE = MAX_PDF_CHARS_PER_BYTE
MAX_CHARS = MAX_PDF_CHARS
MAX_FORM_NESTING = 32  # forms drawing forms
# what pypdf raises on malformed input (its own errors, and the Python ones its parser lets
# through on crafted objects: found by tests/test_fuzz.py)
PDF_FAILURES = (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError,
                ZeroDivisionError, OverflowError, AssertionError, NotImplementedError)


def text_cap(size: int, per_byte: float = MAX_CHARS_PER_BYTE, most: int = MAX_CHARS) -> int:
    """The most characters a file of ``size`` bytes may extract to."""
    return int(min(most, max(per_byte * size, 0)))


_LITERAL = re.compile(rb"\((?:[^()\\]|\\.)*\)", re.S)  # a string operand, (...)
_HEX = re.compile(rb"(?<!<)<([0-9A-Fa-f\s]*)>(?!>)")  # a hex string operand, <...>
_DO = re.compile(rb"/([^\s/\[\]()<>{}%]+)\s*Do(?![A-Za-z0-9_])")  # an XObject drawn


def _strings(raw: bytes) -> int:
    """The characters the string operands of a decoded content stream can draw: the bytes
    of its literal strings and half the digits of its hex strings (a simple font draws a
    character per byte)."""
    total = sum(len(m.group(0)) - 2 for m in _LITERAL.finditer(raw))
    return total + sum(len(re.sub(rb"\s", b"", m.group(1))) // 2 for m in _HEX.finditer(raw))


def drawn_chars(page: Any, budget: int) -> int:
    """How many characters the page can draw, counted on its decoded content streams
    without running them (regular expressions: milliseconds where extraction of a crafted
    page takes seconds): its string operands, and each Form XObject it draws (``/Name Do``)
    counted each time it is drawn, forms inside forms too (each form's own count worked out
    once). Counting stops once past ``budget`` (the count returned is then over it); a form
    that draws itself counts as over the budget."""
    contents = page.get("/Contents")
    if contents is None:
        return 0
    from pypdf.generic import ArrayObject, StreamObject

    contents = contents.get_object()
    parts = list(contents) if isinstance(contents, ArrayObject) else [contents]
    streams = [part.get_object() for part in parts]
    if not all(isinstance(x, StreamObject) for x in streams):
        raise ValueError("a page's /Contents is not a content stream")
    raw = b"\n".join(x.get_data() for x in streams)
    return _count(raw, page.get("/Resources"), budget, {}, 0)


def _count(raw: bytes, resources: Any, budget: int, memo: dict[Any, int], depth: int) -> int:
    total = _strings(raw)
    if total > budget or not _DO.search(raw):
        return total
    xobjects = _xobjects(resources)
    for m in _DO.finditer(raw):
        ref = xobjects.get("/" + m.group(1).decode("latin-1"))
        if ref is None:
            continue
        key = (ref.idnum, ref.generation) if hasattr(ref, "idnum") else id(ref)
        if key not in memo:
            from pypdf.generic import StreamObject

            form = ref.get_object()
            if not isinstance(form, StreamObject) or form.get("/Subtype") != "/Form":
                memo[key] = 0
                continue
            if depth >= MAX_FORM_NESTING:
                return budget + 1
            memo[key] = budget + 1  # while it is counted: a form that draws itself is over
            memo[key] = _count(form.get_data(), form.get("/Resources", resources), budget,
                               memo, depth + 1)
        total += memo[key]
        if total > budget:
            return total
    return total


def _xobjects(resources: Any) -> dict[str, Any]:
    """The ``/XObject`` entries of a resource dictionary, unresolved (their references kept,
    so each form is counted once)."""
    if resources is None:
        return {}
    table = resources.get_object().get("/XObject")
    if table is None:
        return {}
    table = table.get_object()
    return {str(name): table.raw_get(name) for name in table}


def extract_pdf_text(path: str | os.PathLike[str], data: bytes,
                     per_byte: float = MAX_CHARS_PER_BYTE, most: int = MAX_CHARS) -> str:
    """Return the text of every page, joined by ``PAGE_SEPARATOR``.

    A PDF that cannot be parsed, or that yields no text at all (a scan without OCR), is an
    InputError naming it; so is one whose text grows past ``text_cap``, with the counts in
    the message: each page's drawn characters (``drawn_chars``: its strings and the Form
    XObjects it draws, each time drawn) are counted before it is extracted and added up over
    the pages, so a crafted page or file is refused in a fraction of a second instead of
    extracted for minutes, and the text extracted is checked page by page too.
    """
    import pypdf
    from pypdf.errors import PyPdfError

    cap = text_cap(len(data), per_byte, most)
    pages: list[str] = []
    total = drawn_total = 0
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        for number, page in enumerate(reader.pages, start=1):
            drawn = drawn_chars(page, cap - drawn_total)
            if drawn_total + drawn > cap:  # before extracting a page that would pass the cap
                raise InputError(
                    f"page {number} of {len(reader.pages)} of the PDF draws {drawn:,} "
                    f"characters of text (its content streams' strings and the forms it "
                    f"draws, counted before extraction until past the cap), {drawn_total:,} "
                    f"before it: over the cap of {cap:,} "
                    f"for a {len(data):,}-byte file ({per_byte:g} characters per byte, at "
                    f"most {most:,}; adapt --max-pdf-chars-per-byte / --max-pdf-chars)",
                    str(path))
            drawn_total += drawn
            pages.append(page.extract_text() or "")
            total += len(pages[-1]) + (len(PAGE_SEPARATOR) if number > 1 else 0)
            if total > cap:
                raise InputError(
                    f"the PDF's text reaches {total:,} characters by page {number} of "
                    f"{len(reader.pages)}, over the cap of {cap:,} for a {len(data):,}-byte file "
                    f"({per_byte:g} characters per byte, at most {most:,}; adapt "
                    "--max-pdf-chars-per-byte / --max-pdf-chars)", str(path))
    except (PyPdfError, *PDF_FAILURES) as exc:  # a malformed file fails in many ways
        raise InputError(f"cannot read PDF: {type(exc).__name__}: {exc}"[:300], str(path)) \
            from None
    text = PAGE_SEPARATOR.join(pages)
    if not text.strip():
        raise InputError("PDF has no extractable text (scanned image without OCR?)", str(path))
    return text
