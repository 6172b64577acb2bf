"""Freed memory kept for reuse by the command line only (``base.heap``)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")

PROBE = """
import ctypes, sys
from ragspan.base import heap
print(heap.keep_freed_memory(), heap.keep_freed_memory())
class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
info = ctypes.CDLL(None).mallinfo2
info.restype = Info
before = info()
block = bytearray(256 << 20)  # far over glibc's largest mmap threshold
after = info()
print(after.hblks - before.hblks, after.hblkhd - before.hblkhd >= (256 << 20))
"""


@glibc
@pytest.mark.parametrize("env,expected", [
    ({}, ["True True", "0 False"]),  # the block came from the heap, not its own mapping
    ({"RAGSPAN_KEEP_HEAP": "0"}, ["False False", "1 True"]),  # malloc's defaults kept
])
def test_large_blocks_come_from_the_heap_unless_turned_off(env, expected, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:2] == expected


def test_only_the_command_line_changes_the_allocator(tmp_path):
    """A library caller's process keeps malloc's settings: the API's scoring never calls
    ``keep_freed_memory``; the same scoring as a command does."""
    (tmp_path / "q.trec").write_text("q1 0 d1 1\nq1 0 d2 0\n", encoding="utf-8")
    (tmp_path / "r.trec").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n", encoding="utf-8")
    code = f"""
import sys
import ragspan.api as api, ragspan.base.heap as h
from ragspan.cli import main
api.score(None, {str(tmp_path / "r.trec")!r}, qrels={str(tmp_path / "q.trec")!r}, k=[1])
print(h._done)
sys.argv = ["ragspan", "-q", "score", "--qrels", {str(tmp_path / "q.trec")!r},
            "--run", {str(tmp_path / "r.trec")!r}, "--k", "1", "--out",
            {str(tmp_path / "out.json")!r}]
try:
    main()
except SystemExit as exit:
    assert exit.code in (0, None), exit.code
print(h._done)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[0] == "[]"
    assert lines[1] == ("[True]" if platform.libc_ver()[0] == "glibc" else "[False]")
