"""Make the example's two span runs with a dependency-free lexical retriever.

Each contract is cut into fixed-width character windows (``--size``, no overlap, every window
keeps its offsets); each query ranks the windows of its own contract by a TF-IDF dot product of
lower-cased word counts. ``baseline.jsonl`` uses 1,000-character windows, ``candidate.jsonl``
500-character windows: the candidate retrieves half the text per query at the same k, which is
what the retrieval-budget check in ``ragspan compare`` is for.

    python examples/make_runs.py examples/cuad
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

WORD = re.compile(r"[a-z0-9]+")
STOP = set("the a an of to and or in on for by with be is are any this that as at from it its "
           "parts if should reviewed lawyer highlight contract related details".split())


def words(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in STOP]


def run(example: Path, size: int, depth: int = 20) -> list[dict]:
    docs = {}
    for line in (example / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        docs[row["id"]] = row["text"]
    windows = {d: [(s, min(s + size, len(t))) for s in range(0, len(t), size)]
               for d, t in docs.items()}
    counts = {d: [Counter(words(docs[d][s:e])) for s, e in w] for d, w in windows.items()}
    df = Counter(w for cs in counts.values() for c in cs for w in c)
    n = sum(len(cs) for cs in counts.values())
    rows = []
    for line in (example / "eval.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        d = q["doc_id"]
        terms = Counter(words(q["query"]))
        scored = []
        for i, (c, (s, e)) in enumerate(zip(counts[d], windows[d])):
            score = sum(tf * c[w] * math.log(1 + n / (1 + df[w])) for w, tf in terms.items())
            scored.append((-score, i, s, e))
        scored.sort()
        rows.append({"id": q["id"], "retrieved": [
            {"doc_id": d, "start": s, "end": e, "score": round(-neg, 6), "chunk_id": f"{d}:{i}"}
            for neg, i, s, e in scored[:depth]]})
    return rows


def main() -> None:
    example = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/cuad")
    for name, size in (("baseline", 1000), ("candidate", 500)):
        rows = run(example, size)
        (example / f"run-{name}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
