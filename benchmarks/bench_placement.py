"""Benchmark: placing retrieved texts in the corpus (runs anchored by text, ``io.placement``).

A seeded synthetic corpus of 500 documents x 100,000 characters (50 MB) and 100,000
retrieved texts of ~1,000 characters, each naming its document: placed as given (exact), and
again rewritten as a logger or PDF extractor would (NFKC, whitespace runs collapsed,
line-break hyphenation), which the normalised placement finds. Target: each under 60 s on 2
cores. Then fuzzy placement of 1,000 texts with a typo every ~50 characters (bounded per item).
Last, on the shared CUAD contracts (``../shared/data/cuad_dev``, when present): a span run
of windows around each question's clauses, scored with offsets, as text only, and as
rewritten text; complete grounding of each, and the difference (target: within 0.5pt).
Then the worst case per text, for crafted inputs: a 30,000-character text that is not in its
60,000-character document, the same with every word of the text drawn from the document's
vocabulary, a text longer than its document, and (with the shared data) a 10,000-character
passage of one CUAD contract against another (target: each under a second).

    python benchmarks/bench_placement.py [n_texts]
"""

from __future__ import annotations

import random
import sys
import time

from ragspan.io.corpus import Corpus, Document
from ragspan.io.placement import Placer

N_DOCS, DOC_LEN, TEXT_LEN = 500, 100_000, 1_000
WORDS = ("licensee", "shall", "pay", "royalties", "agreement", "termination", "notice",
         "confidential", "party", "warrants", "\u201cProduct\u201d", "co\u00adoperation")


def make_corpus(rng: random.Random) -> dict[str, str]:
    docs = {}
    for d in range(N_DOCS):
        parts, n = [], 0
        while n < DOC_LEN:
            w = f"{rng.choice(WORDS)}{rng.randrange(100_000)}"
            sep = "\n" if rng.random() < 0.05 else " "
            parts.append(w + sep)
            n += len(w) + 1
        docs[f"doc{d}"] = "".join(parts)[:DOC_LEN]
    return docs


def mangle(text: str) -> str:
    import unicodedata

    words = " ".join(unicodedata.normalize("NFKC", text).split()).split(" ")
    for i in range(2, len(words), 13):
        w = words[i]
        if len(w) > 6 and w[:3].isalpha():
            words[i] = f"{w[:3]}-\n{w[3:]}"
    return " ".join(words)


def typos(text: str) -> str:
    chars = list(text)
    for i in range(10, len(chars), 50):
        chars[i] = "#"
    return "".join(chars)


def main() -> None:
    n_texts = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = random.Random(0)
    t0 = time.perf_counter()
    texts = make_corpus(rng)
    corpus = Corpus("bench", "0" * 64, {d: Document(d, t) for d, t in texts.items()})
    items = []
    for _ in range(n_texts):
        d = f"doc{rng.randrange(N_DOCS)}"
        lo = rng.randrange(0, DOC_LEN - TEXT_LEN)
        items.append((d, lo, lo + TEXT_LEN))
    print(f"corpus: {N_DOCS} documents, {N_DOCS * DOC_LEN / 1e6:.0f} MB of text; "
          f"{n_texts:,} texts of {TEXT_LEN:,} characters (built in {time.perf_counter() - t0:.1f} s)")

    placer = Placer(corpus)
    t0 = time.perf_counter()
    wrong = sum(placer.place(texts[d][lo:hi], [d]).start != lo for d, lo, hi in items)
    dt = time.perf_counter() - t0
    print(f"exact placement: {dt:.1f} s = {n_texts / dt:,.0f} texts/s (target < 60 s); "
          f"misplaced: {wrong}")

    mangled = [(d, lo, hi, mangle(texts[d][lo:hi])) for d, lo, hi in items]
    placer = Placer(corpus)  # the normalised documents are built inside the timing
    t0 = time.perf_counter()
    methods: dict[str, int] = {}
    off = 0
    for d, lo, _hi, text in mangled:
        p = placer.place(text, [d])
        methods[p.method] = methods.get(p.method, 0) + 1
        off += abs(p.start - lo) > 1
    dt = time.perf_counter() - t0
    print(f"normalised placement (NFKC, whitespace, hyphenation): {dt:.1f} s = "
          f"{n_texts / dt:,.0f} texts/s (target < 60 s); methods {methods}; start off by > 1: {off}")

    few = items[:1000]
    t0 = time.perf_counter()
    sims = [placer.place(typos(texts[d][lo:hi]), [d]).similarity for d, lo, hi in few]
    dt = time.perf_counter() - t0
    print(f"fuzzy placement (a typo every 50 characters): {dt:.2f} s for {len(few):,} texts = "
          f"{dt / len(few) * 1000:.1f} ms per text; mean similarity {sum(sims) / len(sims):.3f}")


def cuad() -> None:
    import json
    import subprocess
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    base = root.parent / "shared" / "data" / "cuad_dev"
    if not base.is_dir():
        print(f"CUAD check skipped: {base} not present")
        return
    sys.path.insert(0, str(root / "tests"))
    from test_anchoring import as_text, cuad_rows, mangle, unique, windows_run

    texts = {}
    for path in sorted((base / "contracts").glob("*.txt")):
        with open(path, encoding="utf-8", newline="") as fh:
            texts[path.name] = fh.read()
    spans = [json.loads(x) for x in (base / "clause_spans.jsonl").read_text("utf-8").splitlines()]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)

        def write(name: str, rows: list[dict]) -> Path:
            path = tmp / name
            path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            return path

        corpus = write("corpus.jsonl", [{"id": d, "text": t} for d, t in texts.items()])
        evalset = write("eval.jsonl", cuad_rows(spans, texts))
        run = windows_run(evalset, texts, seed=1)
        n_all = sum(len(r["retrieved"]) for r in run)
        run = [{"id": r["id"], "retrieved": [s for s in r["retrieved"] if unique(texts, s)]}
               for r in run]
        n = sum(len(r["retrieved"]) for r in run)
        print(f"CUAD: {len(run)} questions, {n:,} retrieved windows ({n_all - n} of "
              f"{n_all:,} dropped: repeated boilerplate has no one place)")
        cg = {}
        for name, rows in (("offsets", run), ("text only", as_text(run, texts)),
                           ("rewritten text", as_text(run, texts, mangle))):
            path = write("run.jsonl", rows)
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "ragspan", "score", "--eval-set",
                                  str(evalset), "--run", str(path), "--corpus", str(corpus),
                                  "--k", "5", "--k", "10", "--format", "json"],
                                 capture_output=True, text=True, check=True)
            dt = time.perf_counter() - t0
            summary = json.loads(out.stdout)["predicate"]["summary"]
            cg[name] = summary["metrics"]["complete_grounding@10"]
            print(f"  {name:15s} complete_grounding@10 {cg[name]:.4f} "
                  f"(@5 {summary['metrics']['complete_grounding@5']:.4f}); score {dt:.1f} s; "
                  f"placement {summary.get('placement', {})}")
        for name in ("text only", "rewritten text"):
            print(f"  {name}: {100 * (cg[name] - cg['offsets']):+.2f}pt against the offsets "
                  "(target within 0.5pt)")


def worst_case() -> None:
    """The time one crafted text takes to be refused (or placed), each on a fresh placer so
    that the document's normalisation and seeds are inside the timing."""
    from pathlib import Path

    from ragspan.io.placement import Unplaced

    rng = random.Random(7)
    vocab = [f"{rng.choice(WORDS)}{rng.randrange(1000)}" for _ in range(400)]

    def prose(n: int, words: list[str]) -> str:
        return " ".join(rng.choice(words) for _ in range(n // 8))[:n]

    doc = prose(60_000, vocab)
    cases = [
        ("missing 30,000-character text, other words", doc, prose(30_000, list(WORDS))),
        ("missing 30,000-character text, the document's words", doc, prose(30_000, vocab)),
        ("30,000-character text holding its 300-character document", doc[:300],
         prose(15_000, vocab) + doc[:300] + prose(14_700, vocab)),
        ("the document's 30,000 characters with a typo every 50", doc,
         typos(doc[10_000:40_000])),
    ]
    base = Path(__file__).resolve().parents[2] / "shared" / "data" / "cuad_dev" / "contracts"
    contracts = sorted(base.glob("*.txt")) if base.is_dir() else []
    if len(contracts) >= 2:
        a, b = (p.read_text(encoding="utf-8") for p in contracts[:2])
        cases.append(("10,000 characters of one CUAD contract in another", b,
                      a[len(a) // 2:len(a) // 2 + 10_000]))
    print("worst case per text (target < 1 s each):")
    for name, text_doc, text in cases:
        placer = Placer(Corpus("bench", "0" * 64, {"d": Document("d", text_doc)}))
        t0 = time.perf_counter()
        try:
            got = placer.place(text, ["d"])
            outcome = f"placed ({got.method}, similarity {got.similarity:.3f})"
        except Unplaced as exc:
            outcome = f"refused: {exc.reason[:70]}"
        print(f"  {name}: {time.perf_counter() - t0:.3f} s; {outcome}")


if __name__ == "__main__":
    worst_case()
    main()
    cuad()
