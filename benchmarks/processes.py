"""Whole-process timing for the benchmarks: wall seconds and peak resident memory of one
command, measured by a small launcher process.

Linux keeps a process's peak resident memory across ``exec``, and a child started by
``posix_spawn`` or ``vfork`` (what ``subprocess`` uses) shares its parent's memory until it
execs: a benchmark that has loaded a large run would see its own peak reported as the
child's. The launcher is a fresh Python process of a few megabytes that spawns the command
and reports it, so the figure is the command's own.
"""

from __future__ import annotations

import json
import subprocess
import sys

LAUNCHER = """
import json, os, sys, time
t0 = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
_, status, usage = os.wait4(pid, 0)
print(json.dumps([time.perf_counter() - t0, usage.ru_maxrss, os.waitstatus_to_exitcode(status)]))
"""


def wall(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak resident memory (GB) of one process running ``cmd`` (its first
    item an absolute path), in ``env`` (default: this process's environment); a non-zero
    exit is a CalledProcessError."""
    out = subprocess.run([sys.executable, "-c", LAUNCHER, *cmd], check=True,
                         capture_output=True, text=True, env=env).stdout
    seconds, peak_kib, code = json.loads(out)
    if code:
        raise subprocess.CalledProcessError(code, cmd)
    return seconds, peak_kib * 1024 / 1e9  # ru_maxrss is in KiB on Linux
