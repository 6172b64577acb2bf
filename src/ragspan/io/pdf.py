"""Text extraction from PDFs with pypdf; the extracted text is what offsets index."""

from __future__ import annotations

import io
import os

from ragspan.errors import InputError

PAGE_SEPARATOR = "\n\n"


def extractor_info() -> dict[str, str]:
    import pypdf

    return {"name": "pypdf", "version": pypdf.__version__, "page_separator": PAGE_SEPARATOR}


def extract_pdf_text(path: str | os.PathLike[str], data: bytes) -> str:
    """Return the text of every page, joined by ``PAGE_SEPARATOR``.

    A PDF that cannot be parsed, or that yields no text at all (a scan without OCR), is an
    InputError naming it.
    """
    import pypdf
    from pypdf.errors import PyPdfError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"cannot read PDF: {exc}", str(path)) from None
    text = PAGE_SEPARATOR.join(pages)
    if not text.strip():
        raise InputError("PDF has no extractable text (scanned image without OCR?)", str(path))
    return text
