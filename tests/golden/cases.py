"""The golden cases: CLI invocations whose every output byte is pinned.

Each case runs in a scratch folder where ``examples``, ``fixtures`` (tests/fixtures),
``golden`` (this folder) and ``shared`` (../shared/data) are links, so every path a report
records is relative and the same on every machine; outputs go to ``out/``.
``SOURCE_DATE_EPOCH`` pins ``created_at``.

Cases over the bundled example and the gate fixtures keep their outputs in
``tests/golden/files/`` (small, readable in review); cases over ``../shared`` data keep only
the sha256 of each output (``tests/golden/digests.json``: the shared data is not copied
here). ``python tests/golden/make_golden.py`` rewrites both from the current code.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

EPOCH = "1700000000"


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]
    outputs: tuple[str, ...] = ()  # files under out/ that the case writes
    shared: bool = False  # needs ../shared/data; pinned by digest only
    needs: str | None = None  # an optional module the case needs (skipped without it)
    timed: str | None = None  # a run file whose per-row latency_ms is wall time (scrubbed)


F = "fixtures/gate"
E = "examples/cuad"
T = "shared/trec_eval_test"
C = "shared/cuad_dev"


def _fmt(name: str, args: tuple[str, ...], out: str, *, shared: bool = False,
         formats: tuple[str, ...] = ("table", "markdown"), needs: str | None = None
         ) -> list[Case]:
    """The JSON report of ``args`` written to ``out``, and its stdout in each format."""
    cases = [Case(f"{name}.json", (*args, "--out", f"out/{out}", "--format", "json"),
                  (out,), shared, needs)]
    cases += [Case(f"{name}.{f}", (*args, "--format", f), (), shared, needs) for f in formats]
    return cases


CASES: list[Case] = [
    *_fmt("score-span-baseline", ("score", "--eval-set", f"{F}/eval.jsonl", "--run",
                                  f"{F}/run-baseline.jsonl", "--corpus", f"{F}/corpus.jsonl",
                                  "--k", "1", "--k", "3"), "score-baseline.json"),
    *_fmt("score-span-fail", ("score", "--eval-set", f"{F}/eval.jsonl", "--run",
                              f"{F}/run-fail.jsonl", "--k", "1", "--k", "3"),
          "score-fail.json"),
    *_fmt("compare-pass", ("compare", "--baseline", f"{F}/baseline.json", "--candidate",
                           f"{F}/candidate-pass.json"), "compare-pass.json"),
    *_fmt("compare-fail", ("compare", "--baseline", f"{F}/baseline.json", "--candidate",
                           f"{F}/candidate-fail.json"), "compare-fail.json"),
    *_fmt("compare-noninferiority", ("compare", "--baseline", f"{F}/baseline.json",
                                     "--candidate", f"{F}/candidate-fail.json", "--mode",
                                     "non-inferiority", "--budget", "span_coverage=5pt",
                                     "--gate-slices", "part"),
          "compare-ni.json"),
    Case("adapt", ("adapt", "--docs", f"{E}/corpus.jsonl", "--queries",
                   "golden/adapt-queries.jsonl", "--out", "out/adapt-eval.jsonl",
                   "--corpus-out", "out/adapt-corpus.jsonl", "--report", "out/adapt.json",
                   "--format", "markdown"),
         ("adapt-eval.jsonl", "adapt-corpus.jsonl", "adapt.json")),
    Case("migrate", ("migrate", "--eval-set", f"{E}/eval.jsonl", "--corpus", f"{E}/corpus.jsonl",
                     "--to-corpus", "made/edited-corpus.jsonl", "--out", "out/migrated.jsonl",
                     "--report", "out/migrate.json", "--format", "markdown"),
         ("migrated.jsonl", "migrate.json")),
    *[Case(f"metrics.{f}", ("metrics", "--format", f)) for f in ("json", "table", "markdown")],
    Case("validate-report", ("validate-report", "--report", f"{F}/baseline.json")),
    *_fmt("validate-fixture", ("validate", "--eval-set", f"{F}/eval.jsonl", "--corpus",
                               f"{F}/corpus.jsonl"), "validate-fixture.json"),
    *_fmt("validate-example", ("validate", "--eval-set", f"{E}/eval.jsonl", "--corpus",
                               f"{E}/corpus.jsonl"), "validate-example.json"),
    *_fmt("leakage-example", ("leakage", "--eval-set", f"{E}/eval.jsonl", "--corpus",
                              f"{E}/corpus.jsonl", "--field", "query", "--field", "gold",
                              "--threshold", "0.3", "--max-leaks", "1000"),
          "leakage-example.json"),
    *_fmt("overlap-example", ("overlap", "--a", f"{E}/corpus.jsonl", "--b",
                              f"{F}/corpus.jsonl", "--method", "minhash"),
          "overlap-example.json"),
    *_fmt("score-doc-trec", ("score", "--qrels", f"{T}/qrels.test", "--run",
                             f"{T}/results.test", "--k", "5", "--k", "10"),
          "score-doc-trec.json", shared=True),
    *_fmt("score-doc-judged", ("score", "--qrels", f"{T}/qrels.test", "--run",
                               f"{T}/results.test", "--judged-only", "--relevance-level", "2"),
          "score-doc-judged.json", shared=True, formats=("table",)),
    Case("convert-run", ("convert", "run", "--in", f"{T}/results.test", "--to", "jsonl",
                         "--out", "out/results.jsonl"), ("results.jsonl",), shared=True),
    Case("convert-qrels", ("convert", "qrels", "--in", f"{T}/qrels.test", "--to", "jsonl",
                           "--out", "out/qrels.jsonl"), ("qrels.jsonl",), shared=True),
    Case("import-cuad", ("import", "cuad", "--csv", f"{C}/master_clauses_subset.csv",
                         "--contracts", f"{C}/contracts", "--categories",
                         f"{C}/category_descriptions.csv", "--sample-docs", "6", "--out",
                         "out/cuad-eval.jsonl", "--corpus-out", "out/cuad-corpus.jsonl",
                         "--report", "out/import-cuad.json", "--format", "table"),
         ("cuad-eval.jsonl", "cuad-corpus.jsonl", "import-cuad.json"), shared=True),
    Case("import-beir", ("import", "beir", "--root", "shared/beir_scifact", "--out",
                         "out/beir-eval.jsonl", "--report", "out/import-beir.json",
                         "--format", "markdown"),
         ("beir-eval.jsonl", "import-beir.json"), shared=True),
    Case("run-retriever-bm25", ("run-retriever", "--corpus", f"{E}/corpus.jsonl",
                                "--eval-set", f"{E}/eval.jsonl", "--config",
                                "examples/configs/bm25-corpus.toml", "--out",
                                "out/run-bm25.jsonl", "--chunks-out", "out/chunks-bm25.jsonl",
                                "--report", "out/run-retriever-bm25.json", "--no-cache",
                                "--format", "json"),
         ("run-bm25.jsonl", "chunks-bm25.jsonl", "run-retriever-bm25.json"), needs="bm25s",
         timed="run-bm25.jsonl"),
]

CASES += [
    *_fmt("validate-chunks", ("validate", "--eval-set", f"{E}/eval.jsonl", "--corpus",
                              f"{E}/corpus.jsonl", "--chunks", "out/chunks-bm25.jsonl"),
          "validate-chunks.json", needs="bm25s"),
    *_fmt("validate-chunks-run", ("validate", "--eval-set", f"{E}/eval.jsonl", "--corpus",
                                  f"{E}/corpus.jsonl", "--chunks", "out/chunks-bm25.jsonl",
                                  "--run", "out/run-bm25.jsonl", "--k", "3"),
          "validate-chunks-run.json", needs="bm25s"),
    *_fmt("score-bm25", ("score", "--eval-set", f"{E}/eval.jsonl", "--run", "out/run-bm25.jsonl",
                         "--corpus", f"{E}/corpus.jsonl", "--k", "3", "--k", "5"),
          "score-bm25.json", needs="bm25s"),
    *_fmt("score-bm25-chunks", ("score", "--eval-set", f"{E}/eval.jsonl", "--run",
                                "out/run-bm25.jsonl", "--corpus", f"{E}/corpus.jsonl",
                                "--chunks", "out/chunks-bm25.jsonl", "--k", "1", "--k", "5"),
          "score-bm25-chunks.json", needs="bm25s"),
    Case("plan.json", ("plan", "--flip-rate", "0.2", "--budget", "2pt", "--format", "json")),
    Case("plan.table", ("plan", "--flip-rate", "0.05", "--budget", "2pt", "--drop", "5pt",
                        "--format", "table")),
    Case("report-developer", ("report", f"{F}/baseline.json", f"{F}/candidate-pass.json",
                              f"{F}/candidate-fail.json", "--out", "out/report.md",
                              "--report", "out/report.json", "--format", "table"),
         ("report.md", "report.json")),
    Case("report-developer-html", ("report", f"{F}/baseline.json", f"{F}/candidate-pass.json",
                                   f"{F}/candidate-fail.json", "--out", "out/report.html",
                                   "--format", "markdown"), ("report.html",)),
    Case("report-client", ("report", f"{F}/baseline.json", f"{F}/candidate-fail.json",
                           "--audience", "client", "--corpus", f"{F}/corpus.jsonl", "--out",
                           "out/readout.md", "--format", "json"), ("readout.md",)),
    Case("report-client-html", ("report", f"{F}/baseline.json", f"{F}/candidate-fail.json",
                                "--audience", "client", "--corpus", f"{F}/corpus.jsonl",
                                "--out", "out/readout.html", "--format", "table"),
         ("readout.html",)),
    Case("run-retriever-cuad", ("run-retriever", "--corpus", "out/cuad-corpus.jsonl",
                                "--eval-set", "out/cuad-eval.jsonl", "--config",
                                "examples/configs/bm25-corpus.toml", "--out",
                                "out/run-cuad.jsonl", "--no-cache", "--format", "json"),
         ("run-cuad.jsonl",), shared=True, needs="bm25s", timed="run-cuad.jsonl"),
    *_fmt("score-cuad", ("score", "--eval-set", "out/cuad-eval.jsonl", "--run",
                         "out/run-cuad.jsonl", "--corpus", "out/cuad-corpus.jsonl", "--k", "1",
                         "--k", "3", "--k", "5", "--k", "10"),
          "score-cuad.json", shared=True, needs="bm25s"),
]


def run_case(case: Case) -> dict[str, bytes]:
    """Run ``case`` in the current folder (the scratch folder): its exit code, stdout and
    every output file, as bytes by name."""
    from click.testing import CliRunner

    from ragspan.cli import cli

    result = CliRunner().invoke(cli, list(case.args), catch_exceptions=False)
    got = {"exit_code": str(result.exit_code).encode(), "stdout": result.stdout_bytes}
    if result.exit_code not in (0, 4):
        raise AssertionError(f"{case.name}: exit {result.exit_code}: {result.stderr}")
    if case.timed:
        _scrub_latency(f"out/{case.timed}", got)
    for name in case.outputs:
        with open(f"out/{name}", "rb") as fh:
            got[name] = fh.read()
    return got


TIMED = re.compile(rb'("(?:latency_ms|elapsed_s|queries_per_second|p50|p95)": ?)[0-9.eE+-]+')


def _scrub_latency(path: str, got: dict[str, bytes]) -> None:
    """Set the wall times (``elapsed_s``, ``queries_per_second`` and the ``latency_ms``
    percentiles in the run-retriever report; a row's ``latency_ms`` with
    ``--record-latency``), the one thing that differs between two runs, to 1.0; put the scrubbed
    run file's sha256 wherever the case's stdout or report recorded the original's."""
    with open(path, "rb") as fh:
        raw = fh.read()
    scrubbed = TIMED.sub(rb"\g<1>1.0", raw)
    old, new = (hashlib.sha256(b).hexdigest().encode() for b in (raw, scrubbed))
    with open(path, "wb") as fh:
        fh.write(scrubbed)
    got["stdout"] = TIMED.sub(rb"\g<1>1.0", got["stdout"]).replace(old, new)
    for name in os.listdir("out"):
        if name.endswith(".json"):
            with open(f"out/{name}", "rb") as fh:
                text = fh.read()
            with open(f"out/{name}", "wb") as fh:
                fh.write(TIMED.sub(rb"\g<1>1.0", text).replace(old, new))


def edited_corpus(corpus: str, evalset: str, out: str) -> None:
    """The bundled example's corpus edited the way releases edit documents, one edit per
    document in order: a preamble added, one word changed in each gold span, every gold
    passage deleted, the document removed, untouched (for the ``migrate`` case)."""
    import json

    with open(corpus, encoding="utf-8", newline="") as fh:
        docs = [json.loads(line) for line in fh]
    spans: dict[str, list[tuple[int, int]]] = {}
    with open(evalset, encoding="utf-8", newline="") as fh:
        for line in fh:
            row = json.loads(line)
            for s in row.get("gold_spans", []):
                spans.setdefault(s["doc_id"], []).append((s["start"], s["end"]))
    rows = []
    for i, doc in enumerate(docs):
        text, mine = doc["text"], sorted(set(spans.get(doc["id"], [])))
        if i % 5 == 0:
            text = "AMENDED AND RESTATED.\n\n" + text
        elif i % 5 == 1:
            chars = list(text)
            for s, e in mine:
                m = s + (e - s) // 2
                while m < e and not chars[m].isalpha():
                    m += 1
                chars[m] = "x" if chars[m] != "x" else "y"
            text = "".join(chars)
        elif i % 5 == 2:
            keep = [True] * len(text)
            for s, e in mine:
                keep[s:e] = [False] * (e - s)
            text = "".join(c for c, k in zip(text, keep) if k)
        elif i % 5 == 3:
            continue
        rows.append({**doc, "text": text})
    with open(out, "w", encoding="utf-8", newline="") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def prepare(scratch: str, root: str, shared_data: str) -> None:
    """Lay out ``scratch``: the links, an empty ``out/`` and ``made/`` (inputs made from
    the bundled example)."""
    os.makedirs(os.path.join(scratch, "out"), exist_ok=True)
    os.makedirs(os.path.join(scratch, "made"), exist_ok=True)
    edited_corpus(os.path.join(root, "examples", "cuad", "corpus.jsonl"),
                  os.path.join(root, "examples", "cuad", "eval.jsonl"),
                  os.path.join(scratch, "made", "edited-corpus.jsonl"))
    for link, target in (("examples", os.path.join(root, "examples")),
                         ("fixtures", os.path.join(root, "tests", "fixtures")),
                         ("golden", os.path.join(root, "tests", "golden")),
                         ("shared", shared_data)):
        if not os.path.lexists(os.path.join(scratch, link)):
            os.symlink(target, os.path.join(scratch, link))
