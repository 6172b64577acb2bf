"""Compressed inputs read as bounded streams (``gunzip``): every gzip member decompressed in
turn, a chunk at a time, refused as soon as the inflated bytes pass the bound
(``base.bounds.inflate_limit``), and bytes after the last member refused rather than
ignored (``cat a.gz b.gz`` and appending loggers write several members, which ``gzip -dc``
reads; anything else after the stream is not gzip)."""

from __future__ import annotations

import zlib

from ragspan.base.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
STEP = 1 << 20  # inflated bytes per decompression call


def gunzip(data: bytes, path: str, limit: int, said: str) -> tuple[bytes, int]:
    """The inflated bytes of the gzip file ``data`` (every member) and how many members it
    held. ``limit``: the most bytes it may inflate to; ``said``: where that limit comes from,
    for the message. A corrupt or truncated member, a byte after the last member that does
    not start another, or more than ``limit`` bytes inflated is an InputError naming
    ``path`` with the counts."""
    out = bytearray()
    view = memoryview(data)
    pos, members = 0, 0
    while pos < len(data):
        if bytes(view[pos:pos + 2]) != GZIP_MAGIC:
            raise InputError(f"{len(data) - pos:,} bytes after the gzip stream's {members} "
                             f"member{'s' if members != 1 else ''} are not gzip: refusing "
                             "trailing data", path)
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        tail: bytes | memoryview = view[pos:]
        try:
            while not d.eof:
                piece = d.decompress(tail, STEP)
                tail = d.unconsumed_tail
                out += piece
                if len(out) > limit:
                    raise InputError(f"inflates past {limit:,} bytes ({said}) from "
                                     f"{len(data):,} compressed bytes", path)
                if not piece and not tail and not d.eof:
                    raise InputError(f"gzip member {members + 1} ends early (truncated)", path)
        except zlib.error as exc:
            raise InputError(f"not a readable gzip file (member {members + 1}): {exc}",
                             path) from None
        members += 1
        pos = len(data) - len(d.unused_data)
    return bytes(out), members
