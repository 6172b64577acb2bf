"""Freed memory kept for reuse while a command runs (glibc only).

glibc's malloc serves every block over 32 MiB (a run's column, a sort's output) with its own
``mmap`` and unmaps it on ``free``; the next array of that size is mapped afresh, and every
page of it is faulted in and zeroed by the kernel on first touch. On a virtual machine that
first touch is the largest single cost of scoring a big run: about a second of kernel time
for 10 million entries. ``keep_freed_memory`` tells malloc to serve large blocks from its
heap and never to return freed memory to the system, so a freed array's pages are reused
already mapped. The price is a little memory: what is freed is reused, but the heap is
never given back, so fragments stay (peak resident memory +3% on ``bench_rank_process.py``'s
doc-level run, 0.90 against 0.88 GB; +10% on a 10,000-query span score, 0.80 against 0.73
GB); the process keeps its peak until it exits, which a command does at once.

Only the command line calls it (``cli.common.common_options``, on the commands that pause
the collector): a library caller's process keeps its own allocator settings. Elsewhere than
glibc, or when ``RAGSPAN_KEEP_HEAP=0``, it does nothing.
"""

from __future__ import annotations

import ctypes
import os
import platform

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_TOP_PAD = -2
M_MMAP_MAX = -4
_done: list[bool] = []


def keep_freed_memory() -> bool:
    """Large blocks from the heap, freed memory never trimmed (once per process); whether
    malloc took the settings."""
    if _done:
        return _done[0]
    ok = False
    if os.environ.get("RAGSPAN_KEEP_HEAP", "1") != "0" and platform.libc_ver()[0] == "glibc":
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):  # pragma: no cover - glibc always has it
            mallopt = None
        if mallopt is not None:
            mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            ok = all(mallopt(param, value) == 1 for param, value in (
                (M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, 2**31 - 1), (M_TOP_PAD, 64 << 20)))
    _done.append(ok)
    return ok
