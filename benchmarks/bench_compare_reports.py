"""Benchmark: ``ragspan compare`` of two score reports of 10,000 queries x top-100 spans (the
default path: the character grid, 160 metric columns, report format v2) against the fastest
reasonable read of the same two files: a Python process that parses both with orjson
(nothing checked, nothing compared). Alternating processes, 5 rounds each, medians and peak
memory; beside them a process that only reads both as the gate reads them (importing the
reader, numpy and msgspec), the floor of any compare process. Target: compare within x1.5
of the two orjson reads. Then, in one process, the
reading alone (both reports read and verified as the gate reads them) against orjson's
parse of both.

    python benchmarks/bench_compare_reports.py
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

READ_BOTH = """
import sys
from ragspan.app.score_reports import load_score_report
from ragspan.base.collector import paused
with paused():
    load_score_report(sys.argv[1], "baseline"), load_score_report(sys.argv[2], "candidate")
"""

ORJSON_BOTH = """
import sys, orjson
for path in sys.argv[1:]:
    with open(path, "rb") as fh:
        orjson.loads(fh.read())
"""


def reports(tmp: Path) -> tuple[Path, Path]:
    """The baseline and a candidate that swaps ranks 1 and 6 for 30% of the queries, each
    scored as ``ragspan score`` scores by default."""
    from bench_score import make_files

    e, r = make_files(tmp)
    rng = random.Random(1)
    cand = tmp / "run-candidate.jsonl"
    with open(r, encoding="utf-8") as src, open(cand, "w", encoding="utf-8") as out:
        for line in src:
            row = json.loads(line)
            if rng.random() < 0.3:
                got = row["retrieved"]
                got[0], got[5] = got[5], got[0]
            out.write(json.dumps(row) + "\n")
    out_paths = []
    for name, run in (("base", r), ("cand", cand)):
        path = tmp / f"score-{name}.json"
        subprocess.run([sys.executable, "-m", "ragspan", "-q", "score", "--eval-set", str(e),
                        "--run", str(run), "--out", str(path)], check=True)
        out_paths.append(path)
    return out_paths[0], out_paths[1]


def main() -> None:
    from processes import wall

    if importlib.util.find_spec("orjson") is None:
        print("orjson is not installed (pip install 'ragspan[dev]'): nothing to compare with")
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base, cand = reports(tmp)
        size = (os.path.getsize(base) + os.path.getsize(cand)) / 1e6
        print(f"two score reports: {size:.0f} MB, 10,000 queries x 160 metric columns each")
        cmds = {"ragspan compare (process)": [
                    sys.executable, "-m", "ragspan", "-q", "compare", "--baseline", str(base),
                    "--candidate", str(cand), "--no-config", "--format", "json", "--out",
                    str(tmp / "compare.json")],
                "ragspan's reading alone (process)": [sys.executable, "-c", READ_BOTH, str(base),
                                                       str(cand)],
                "orjson read of both": [sys.executable, "-c", ORJSON_BOTH, str(base), str(cand)]}
        times: dict[str, list[float]] = {k: [] for k in cmds}
        peaks = dict.fromkeys(cmds, 0.0)
        for _ in range(5):
            for name, cmd in cmds.items():
                try:
                    seconds, peak = wall(cmd)
                except subprocess.CalledProcessError as exc:
                    if exc.returncode not in (0, 4):
                        raise
                    continue
                times[name].append(seconds)
                peaks[name] = max(peaks[name], peak)
        for name in cmds:
            print(f"  {name:34s} {statistics.median(times[name]):6.2f} s  "
                  f"peak {peaks[name]:.2f} GB")
        ratio = statistics.median(times["ragspan compare (process)"]) / \
            statistics.median(times["orjson read of both"])
        print(f"compare / orjson read of both: x{ratio:.2f} (target x1.5)")
        floor = statistics.median(times["ragspan's reading alone (process)"]) / \
            statistics.median(times["orjson read of both"])
        print(f"a process that only reads both as the gate does (no statistics, no verdict) / "
              f"orjson read of both: x{floor:.2f}: the floor of any compare process")
        _reading_alone(base, cand)


def _reading_alone(base: Path, cand: Path) -> None:
    """Both reports read as the gate reads them, in this process, against orjson's parse of
    both: 9 rounds, the two alternating, each round's ratio; the median ratio and its range
    (the collector paused for both, as the command pauses it). A ratio per round holds
    against the machine's speed drifting between rounds, which a best-of-N of each does
    not."""
    import time

    import orjson

    from ragspan.app.score_reports import load_score_report
    from ragspan.base.collector import paused

    def once(read) -> float:
        with paused():
            start = time.perf_counter()
            read()
            return time.perf_counter() - start

    def ours() -> object:
        return load_score_report(base, "baseline"), load_score_report(cand, "candidate")

    def theirs() -> object:
        return [orjson.loads(p.read_bytes()) for p in (base, cand)]

    once(ours), once(theirs)  # the first read builds the schema's validators: not timed
    rounds = [(once(ours), once(theirs)) for _ in range(9)]
    ratios = sorted(a / b for a, b in rounds)
    print(f"  reading both as the gate does {statistics.median(a for a, _ in rounds):6.2f} s, "
          f"orjson parse of both {statistics.median(b for _, b in rounds):.2f} s: "
          f"x{statistics.median(ratios):.2f} (rounds x{ratios[0]:.2f}-x{ratios[-1]:.2f}; "
          "target x1.5)")
    _the_rest(base, cand, lambda work: min(once(work) for _ in range(3)))


def _the_rest(base: Path, cand: Path, best) -> None:
    """What the command does besides reading, whatever the format: importing it (a fresh
    process importing the command's modules, numpy and scipy's special functions, against
    one that imports nothing), and the gate's statistics on the two reports read (every
    metric's paired test, bootstrap interval and bounds), in this process."""
    import subprocess
    import time

    from ragspan.app.compare import compare_reports, gate_options
    from ragspan.app.score_reports import load_score_report

    def process(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - start

    imports = min(process("import ragspan.app.compare, scipy.special") for _ in range(3)) - \
        min(process("pass") for _ in range(3))
    reports = (load_score_report(base, "baseline"), load_score_report(cand, "candidate"))
    opts, _ = gate_options((), {}, None, {})
    stats = best(lambda: compare_reports(*reports, opts))
    print(f"  importing the command {imports:6.2f} s, the gate's statistics {stats:.2f} s "
          "(neither depends on the format)")


if __name__ == "__main__":
    main()
