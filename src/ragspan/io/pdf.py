"""Text extraction from PDFs with pypdf; the extracted text is what offsets index."""

from __future__ import annotations

import io
import os
import re
from typing import Any

from ragspan.base.errors import InputError

PAGE_SEPARATOR = "\n\n"


def extractor_info() -> dict[str, str]:
    import pypdf

    return {"name": "pypdf", "version": pypdf.__version__, "page_separator": PAGE_SEPARATOR}


# Extracted text is refused beyond MAX_CHARS_PER_BYTE characters per byte of the file (real
# PDFs give 0.5-0.6: the shared acquisition set; a 5 KB file whose pages share one content
# stream once gave 16 MB) or MAX_CHARS characters in all, whichever is smaller.
MAX_CHARS_PER_BYTE = 20.0
MAX_CHARS = 50_000_000


def text_cap(size: int, per_byte: float = MAX_CHARS_PER_BYTE, most: int = MAX_CHARS) -> int:
    """The most characters a file of ``size`` bytes may extract to."""
    return int(min(most, max(per_byte * size, 0)))


_LITERAL = re.compile(rb"\((?:[^()\\]|\\.)*\)", re.S)  # a string operand, (...)
_HEX = re.compile(rb"(?<!<)<([0-9A-Fa-f\s]*)>(?!>)")  # a hex string operand, <...>


def drawn_chars(page: Any) -> int:
    """How many characters the page's own content stream can draw: the bytes of its literal
    string operands and half the digits of its hex strings (a simple font draws a
    character per byte), counted on the decoded stream without running it (a regular
    expression: milliseconds where extraction of a crafted page takes seconds). Text in
    form XObjects is not counted here; the cap still applies to it after extraction."""
    from pypdf.generic import ArrayObject

    contents = page.get("/Contents")
    if contents is None:
        return 0
    contents = contents.get_object()
    parts = list(contents) if isinstance(contents, ArrayObject) else [contents]
    total = 0
    for part in parts:
        raw = part.get_object().get_data()
        total += sum(len(m.group(0)) - 2 for m in _LITERAL.finditer(raw))
        total += sum(len(re.sub(rb"\s", b"", m.group(1))) // 2 for m in _HEX.finditer(raw))
    return total


def extract_pdf_text(path: str | os.PathLike[str], data: bytes,
                     per_byte: float = MAX_CHARS_PER_BYTE, most: int = MAX_CHARS) -> str:
    """Return the text of every page, joined by ``PAGE_SEPARATOR``.

    A PDF that cannot be parsed, or that yields no text at all (a scan without OCR), is an
    InputError naming it; so is one whose text grows past ``text_cap``, with the counts in
    the message: each page's drawn characters (``drawn_chars``) are counted before it is
    extracted, so a crafted page is refused in a fraction of a second instead of extracted
    for tens of seconds, and the text extracted is checked page by page too.
    """
    import pypdf
    from pypdf.errors import PyPdfError

    cap = text_cap(len(data), per_byte, most)
    pages: list[str] = []
    total = 0
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        for number, page in enumerate(reader.pages, start=1):
            drawn = drawn_chars(page)
            if total + drawn > cap:  # before extracting a page that would pass the cap
                raise InputError(
                    f"page {number} of {len(reader.pages)} of the PDF draws {drawn:,} "
                    f"characters of text (its content stream's strings, counted before "
                    f"extraction), {total:,} before it: over the cap of {cap:,} for a "
                    f"{len(data):,}-byte file ({per_byte:g} characters per byte, at most "
                    f"{most:,}; adapt --max-pdf-chars-per-byte / --max-pdf-chars)", str(path))
            pages.append(page.extract_text() or "")
            total += len(pages[-1]) + (len(PAGE_SEPARATOR) if number > 1 else 0)
            if total > cap:
                raise InputError(
                    f"the PDF's text reaches {total:,} characters by page {number} of "
                    f"{len(reader.pages)}, over the cap of {cap:,} for a {len(data):,}-byte file "
                    f"({per_byte:g} characters per byte, at most {most:,}; adapt "
                    "--max-pdf-chars-per-byte / --max-pdf-chars)", str(path))
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"cannot read PDF: {exc}", str(path)) from None
    text = PAGE_SEPARATOR.join(pages)
    if not text.strip():
        raise InputError("PDF has no extractable text (scanned image without OCR?)", str(path))
    return text
