"""A command-line process keeps the memory it frees (glibc's allocator), instead of handing
every large block back to the kernel and faulting it in again, page by zeroed page.

Scoring a large run makes and drops one array of millions of entries after another; glibc
serves each from a fresh ``mmap`` and ``munmap``s it when freed, and trims its heap as soon
as the top of it is free, so the next array's pages are faulted in and zeroed by the kernel
once more. On a 10,000 x 1,000 doc run that zeroing was about a third of the command's CPU
time (``benchmarks/bench_rank_process.py``). ``keep_freed_memory`` turns both off for the
rest of the process: freed blocks are reused, peak resident memory is unchanged or lower
(the same blocks serve the next arrays), and the memory goes back when the process exits.
Only the command line calls it (``cli.common``): a library caller's process is left as it
was. Elsewhere than glibc (musl, macOS, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD = -1  # from glibc's malloc.h
M_MMAP_MAX = -4
_DONE: list[bool] = []


def keep_freed_memory() -> bool:
    """Tell glibc's ``malloc`` never to serve a block by ``mmap`` nor to trim its heap; True
    when it took both settings, False where there is no glibc ``mallopt``. Idempotent."""
    if _DONE:
        return _DONE[0]
    ok = False
    if sys.platform.startswith("linux"):
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            mallopt = None
        if mallopt is not None:
            mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            mallopt.restype = ctypes.c_int
            ok = bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, 2**31 - 1))
    _DONE.append(ok)
    return ok
