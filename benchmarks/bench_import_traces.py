"""Benchmark: ``ragspan import traces`` on 10,000 traces x 2 retriever spans x 10 documents.

A seeded synthetic corpus of 1,000 documents x 4,000 characters and 10,000 questions (ten
about each document). Each question's trace is an agent root span (``input.value`` the
question) with two OpenInference RETRIEVER spans of 10 documents each: 200,000 documents in
an OTLP JSON file of one request per trace, as the Collector's file exporter writes it.
Two files: the documents carry their text and, in ``document.metadata``, their document and
offset (LangChain's ``start_index``: placed by offsets, what a splitter's chunks give); and
their text alone (placed by an exact search in the question's document). Target: under 10 s
on 2 cores, each a whole ``python -m ragspan`` process.

Beside them, in the same run, the floor: a Python process that only parses the file
(``json.loads`` per line, interpreter start included). Peak memory (max RSS) of each.

    python benchmarks/bench_import_traces.py [n_traces]
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DOCS, DOC_LEN, PER_SPAN, SIZE = 1_000, 4_000, 10, 300
WORDS = ("licensee", "shall", "pay", "royalties", "agreement", "termination", "notice",
         "confidential", "party", "warrants", "product", "territory", "supplier", "term")


def text(rng: random.Random) -> str:
    out, size = [], 0
    while size < DOC_LEN:
        w = f"{rng.choice(WORDS)}{rng.randrange(1_000_000)}"
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:DOC_LEN]


def attr(key: str, value: object) -> dict:
    kind = "intValue" if isinstance(value, int) else "doubleValue" \
        if isinstance(value, float) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def make(folder: Path, n: int) -> None:
    rng = random.Random(7)
    texts = {f"d{i:04d}": text(rng) for i in range(DOCS)}
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for d, t in texts.items():
            fh.write(json.dumps({"id": d, "text": t}) + "\n")
    docs = sorted(texts)
    with open(folder / "eval.jsonl", "w", encoding="utf-8") as ev, \
            open(folder / "meta.json", "w", encoding="utf-8") as meta, \
            open(folder / "text.json", "w", encoding="utf-8") as bare:
        for q in range(n):
            d = docs[q % DOCS]
            s = rng.randrange(0, DOC_LEN - SIZE)
            ev.write(json.dumps({"id": f"q{q}", "query": f"question {q} about {d}",
                                 "doc_id": d, "gold_spans": [[s, s + 100]]}) + "\n")
            for out, with_meta in ((meta, True), (bare, False)):
                trace = f"{q:032x}"
                spans = [{"traceId": trace, "spanId": f"{q:08x}00000000", "name": "agent",
                          "startTimeUnixNano": "1", "attributes": [
                              attr("openinference.span.kind", "AGENT"),
                              attr("input.value", f"question {q} about {d}")]}]
                for j in range(2):
                    attrs = [attr("openinference.span.kind", "RETRIEVER"),
                             attr("input.value", f"hop {j}")]
                    for i in range(PER_SPAN):
                        at = rng.randrange(0, DOC_LEN - SIZE)
                        attrs += [attr(f"retrieval.documents.{i}.document.content",
                                       texts[d][at:at + SIZE]),
                                  attr(f"retrieval.documents.{i}.document.score",
                                       1.0 - i / 10)]
                        if with_meta:
                            attrs.append(attr(f"retrieval.documents.{i}.document.metadata",
                                              json.dumps({"source": d, "start_index": at})))
                    spans.append({"traceId": trace, "spanId": f"{q:08x}{j + 1:08x}",
                                  "parentSpanId": f"{q:08x}00000000", "name": "retrieve",
                                  "startTimeUnixNano": str(2 + j), "attributes": attrs})
                out.write(json.dumps({"resourceSpans": [{"scopeSpans": [
                    {"spans": spans}]}]}) + "\n")


PEAK = ("import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def timed(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process, measured by a parent of its own (so
    one process's peak is never another's)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PEAK, *args], check=True,
                          capture_output=True, text=True)
    return time.perf_counter() - t0, int(done.stdout.split()[-1]) / 1024


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make(folder, n)
        parse = ("import json, sys\nfor line in open(sys.argv[1], 'rb'): json.loads(line)\n")
        print(f"import traces: {n:,} traces x 2 retriever spans x {PER_SPAN} documents "
              f"({2 * PER_SPAN * n:,} documents), {DOCS:,} documents x {DOC_LEN:,} chars")
        for name in ("meta", "text"):
            path = folder / f"{name}.json"
            size = path.stat().st_size / 1e6
            floor, floor_mb = timed([sys.executable, "-c", parse, str(path)])
            wall, mb = timed([sys.executable, "-m", "ragspan", "-q", "import", "traces",
                              "--traces", str(path), "--eval-set", str(folder / "eval.jsonl"),
                              "--corpus", str(folder / "corpus.jsonl"), "--out",
                              str(folder / f"run-{name}.jsonl")])
            how = "by metadata offsets" if name == "meta" else "by exact text search"
            print(f"  placed {how}: {size:,.0f} MB file; ragspan {wall:.2f} s "
                  f"(peak {mb:,.0f} MB), a json.loads parse {floor:.2f} s (peak "
                  f"{floor_mb:,.0f} MB): x{wall / floor:.1f}; target < 10 s: "
                  f"{'met' if wall < 10 else 'NOT met'}")


if __name__ == "__main__":
    main()
