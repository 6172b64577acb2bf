"""Every bound a reader enforces on what it is given, stated once (docs/security.md,
"Bounds"): a file past one is refused in one line with the actual count, never read into
gigabytes or minutes. Each has its default here and, where a user may need more, one option
that raises it.

- ``INFLATE_RATIO``, ``INFLATE_FLOOR``, ``INFLATE_CAP``: a compressed input (a gzip trace
  file) inflates to at most ``max(INFLATE_FLOOR, INFLATE_RATIO x its size)`` bytes, never
  past ``INFLATE_CAP`` (``import traces --max-inflated-bytes`` sets it);
- ``MAX_SPANS``: spans in one trace file, counted as they arrive (protobuf messages are
  counted on their wire bytes before they are parsed);
- ``MAX_JSON_DEPTH``: nesting of any JSON value read from a file, an attribute or a tag;
- ``MAX_ATTRIBUTE_NESTING``: arrays and key-value lists inside one trace attribute value;
- ``UNPACK_RATIO``, ``UNPACK_CAP``: what a ``--snapshot`` archive's members may declare
  (``--max-unpacked-bytes``); ``MAX_ARCHIVE_ENTRIES``, ``MAX_ARCHIVE_NESTING``;
- ``MAX_PDF_CHARS_PER_BYTE``, ``MAX_PDF_CHARS``: the characters a PDF may draw and extract
  (``adapt --max-pdf-chars-per-byte`` / ``--max-pdf-chars``), Form XObjects counted each
  time they are drawn.
"""

from __future__ import annotations

INFLATE_RATIO = 100
INFLATE_FLOOR = 64 * 1024 ** 2  # 64 MiB
INFLATE_CAP = 4 * 1024 ** 3  # 4 GiB
MAX_SPANS = 1_000_000
MAX_JSON_DEPTH = 64
MAX_ATTRIBUTE_NESTING = 32
UNPACK_RATIO = 20
UNPACK_CAP = 8 * 1024 ** 3  # 8 GiB
MAX_ARCHIVE_ENTRIES = 1_000_000
MAX_ARCHIVE_NESTING = 4
MAX_PDF_CHARS_PER_BYTE = 20.0
MAX_PDF_CHARS = 50_000_000


def inflate_limit(compressed: int, given: int | None = None) -> int:
    """The most bytes a compressed input of ``compressed`` bytes may inflate to: ``given``
    when the user set it, else the default (module docstring)."""
    if given is not None:
        return given
    return min(INFLATE_CAP, max(INFLATE_FLOOR, INFLATE_RATIO * compressed))
