"""LegalBench-RAG (``corpus/`` + ``benchmarks/<subset>.json``).

Each test is ``{"query": ..., "snippets": [{"file_path": ..., "span": [start, end],
"answer": ...}]}``; ``file_path`` is relative to ``corpus/``. ``paper_sampling`` reproduces
the benchmark's own selection: when a subset holds more than 194 tests, sort them by a random
key seeded from the first snippet's file path (``random.seed(path); random.random()``) and
keep the first 194.

Newlines: the benchmark's code reads each corpus file with Python's ``open(path).read()``, in
text mode, which turns ``\r\n`` and a lone ``\r`` into ``\n``; its spans are offsets into
that text. ``newlines="translate"`` (the default) reads the files the same way, so the
offsets mean what they mean there, and the corpus written holds that text; ``"keep"`` reads
them as they are (ragspan's own reading everywhere else), where a span past a ``\r\n``
points elsewhere and its answer no longer slices back (an InputError naming the test). The
benchmark's headline figures weight each subset equally (``benchmark_name_to_weight``, 0.25
each, spread over its tests): a macro mean over subsets, which ``score`` states beside the
micro mean when the eval set holds several (``summary.macro_mean``).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from ragspan.base.errors import InputError
from ragspan.evalsets.adapt import provenance
from ragspan.evalsets.build import EvalBuild, OverlapMerges, verify_slices
from ragspan.io.corpus import Corpus, Document
from ragspan.io.files import decode_records, decode_utf8, loads_json, read_bytes
from ragspan.io.rows import check_offsets
from ragspan.io.serialize import built_span
from ragspan.records.evalbuild import BuiltRow, BuiltSpan
from ragspan.records.imported import ImportDetails

PAPER_TESTS_PER_SUBSET = 194


def paper_key(test: dict[str, Any]) -> float:
    """The benchmark's sort key: a draw from ``random`` seeded with the first file path."""
    return random.Random(test["snippets"][0]["file_path"]).random()


def paper_sample(tests: list[dict[str, Any]], cap: int = PAPER_TESTS_PER_SUBSET) -> list[int]:
    """Indices of the tests the benchmark keeps, in its order (a stable sort, as ``sorted``)."""
    order = list(range(len(tests)))
    if len(tests) <= cap:
        return order
    return sorted(order, key=lambda i: paper_key(tests[i]))[:cap]


def _tests(path: Path) -> list[dict[str, Any]]:
    name = str(path)
    root = loads_json(decode_records(read_bytes(path), name), name)
    try:
        tests: list[dict[str, Any]] = root["tests"]
    except (KeyError, TypeError):
        raise InputError("expected an object with a 'tests' list", name) from None
    for i, t in enumerate(tests):
        if (not isinstance(t, dict) or not isinstance(t.get("query"), str)
                or not isinstance(t.get("snippets"), list) or not t["snippets"]):
            raise InputError(f"tests[{i}] needs 'query' and a non-empty 'snippets' list", name)
        for j, s in enumerate(t["snippets"]):
            if not isinstance(s, dict) or not isinstance(s.get("file_path"), str) \
                    or not isinstance(s.get("span"), list) or len(s["span"]) != 2:
                raise InputError(f"tests[{i}].snippets[{j}] needs 'file_path' and 'span'", name)
            check_offsets(s["span"][0], s["span"][1], name, None, f"tests[{i}].snippets[{j}]")
    return tests


NEWLINES = ("translate", "keep")


def read_document(data: bytes, path: Path, newlines: str) -> str:
    """A corpus file's text: UTF-8, and with ``translate`` the newlines as Python's text mode
    reads them (``\r\n`` and ``\r`` become ``\n``)."""
    text = decode_utf8(data, path)
    if newlines == "translate":
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def import_legalbench(root: str, subsets: tuple[str, ...] = (), *,
                      paper_sampling: bool = False, newlines: str = "translate") -> EvalBuild:
    base = Path(root)
    bench_dir, corpus_dir = base / "benchmarks", base / "corpus"
    if not bench_dir.is_dir() or not corpus_dir.is_dir():
        raise InputError("expected 'benchmarks/' and 'corpus/' folders", root)
    files = [bench_dir / f"{s}.json" for s in subsets] if subsets else sorted(bench_dir.glob("*.json"))
    if not files:
        raise InputError("no benchmark files (*.json) found", str(bench_dir))
    texts: dict[str, str] = {}
    rows: list[BuiltRow] = []
    counts = {"tests": 0, "selected": 0, "spans": 0, "duplicate_spans": 0}
    merges = OverlapMerges()
    for bench in files:
        tests = _tests(bench)
        counts["tests"] += len(tests)
        chosen = paper_sample(tests) if paper_sampling else range(len(tests))
        counts["selected"] += len(chosen)
        for i in chosen:
            test = tests[i]
            spans: list[BuiltSpan] = []
            for s in test["snippets"]:
                doc_id = s["file_path"]
                if doc_id not in texts:
                    fpath = corpus_dir / doc_id
                    texts[doc_id] = read_document(read_bytes(fpath), fpath, newlines)
                start, end = s["span"]
                if end > len(texts[doc_id]):
                    raise InputError(f"span [{start}, {end}) is past the end of '{doc_id}' "
                                     f"({len(texts[doc_id])} characters)", str(bench))
                answer = s.get("answer", texts[doc_id][start:end])
                if any((g.doc_id, g.start, g.end) == (doc_id, start, end)
                       for g in spans):  # the duplicate annotation that reads as 200% recall
                    counts["duplicate_spans"] += 1
                    continue
                spans.append(built_span(doc_id, start, end, answer))
            qid = f"{bench.stem}-{i:04d}"
            spans = merges.merge(qid, spans, texts.__getitem__)
            rows.append(BuiltRow(id=qid, query=test["query"], gold_spans=spans,
                                 tags={"subset": bench.stem}))
            counts["spans"] += len(spans)
    documents = [Document(d, texts[d]) for d in sorted(texts)]
    verify_slices(rows, documents, "LegalBench-RAG", str(root))
    corpus = Corpus(root, "", {d.id: d for d in documents})
    head = provenance(corpus, "legalbench-rag", paper_sampling=paper_sampling,
                      subsets=[f.stem for f in files], newlines=newlines)
    if newlines == "translate":
        head["extractor"]["text"] = "utf-8, newlines translated as Python's text mode"
    counts["overlapping_merged"] = merges.count
    return EvalBuild(head, rows, documents, counts,
                     ImportDetails(overlapping_merged=merges.listed))
