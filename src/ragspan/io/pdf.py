"""Text extraction from PDFs with pypdf; the extracted text is what offsets index."""

from __future__ import annotations

import io
import os

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


def extract_pdf_text(path: str | os.PathLike[str], data: bytes,
                     per_byte: float = MAX_CHARS_PER_BYTE, most: int = MAX_CHARS) -> str:
    """Return the text of every page, joined by ``PAGE_SEPARATOR``.

    A PDF that cannot be parsed, or that yields no text at all (a scan without OCR), is an
    InputError naming it; so is one whose text grows past ``text_cap`` (checked page by page,
    so a crafted file stops early), with the counts in the message.
    """
    import pypdf
    from pypdf.errors import PyPdfError

    cap = text_cap(len(data), per_byte, most)
    pages: list[str] = []
    total = 0
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        for number, page in enumerate(reader.pages, start=1):
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
