"""The commands that build and check eval sets and corpora: ``adapt``, ``import ...``,
``validate``, ``leakage``, ``overlap``."""

from __future__ import annotations

from typing import Any

import click

from ragspan.cli.common import (
    cli,
    common_options,
    emit,
    format_option,
    guard,
    k_option,
    output_options,
    placement_options,
)
from ragspan.cli.flags import flag
from ragspan.cli.ranges import FiniteFloatRange


@cli.command()
@click.option("--docs", required=True, type=str,
              help="Directory of .txt/.md/.pdf documents (or a corpus JSONL).")
@click.option("--queries", required=True, type=str,
              help="Query rows with gold_spans, gold_texts or expected (JSONL or JSON array).")
@click.option("--include", "include", multiple=True, metavar="GLOB",
              help="Files of --docs that are documents (repeat; default *.txt, *.md, *.pdf); "
                   "matched against the path inside the folder.")
@click.option("--exclude", "exclude", multiple=True, metavar="GLOB",
              help="Files of --docs left out although --include takes them (repeat), e.g. "
                   "SOURCE.md; every file taken in and left out is listed in the report.")
@click.option("--normalize-whitespace", is_flag=True,
              help="Match gold texts across line wraps; spans still point at the original text.")
@click.option("--max-docs", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--max-bytes", type=click.IntRange(min=1), default=2_000_000_000, show_default=True)
@click.option("--max-pdf-chars-per-byte", type=FiniteFloatRange(0, 1_000_000, min_open=True),
              default=20.0, show_default=True,
              help="A PDF whose text exceeds this many characters per byte of the file is refused.")
@click.option("--max-pdf-chars", type=click.IntRange(min=1, max=2_000_000_000),
              default=50_000_000, show_default=True,
              help="A PDF whose text exceeds this many characters is refused.")
@output_options
@common_options
@guard(inputs=("docs", "queries"), outputs=("out", "corpus_out", "report"), report="report")
def adapt(report: str | None, fmt: str, **kwargs: Any) -> None:
    """Build an eval set with verified offsets from documents and questions."""
    from ragspan.app import adapt as command

    emit(command.run(**kwargs), report, fmt)


@cli.group("import")
def import_group() -> None:
    """Import a public benchmark (CUAD, LegalBench-RAG, BEIR, Chroma) as an eval set."""


@import_group.command("cuad")
@flag("csv", "master_clauses.csv")
@click.option("--contracts", type=str, help="Folder of full_contract_txt files.")
@click.option("--categories", type=str, help="category_descriptions.csv")
@click.option("--squad-json", type=str, help="CUADv1.json (SQuAD shape) instead of the CSV.")
@click.option("--sample-docs", type=click.IntRange(min=1), default=None,
              help="Keep N contracts, drawn with --seed.")
@click.option("--sample-queries", type=click.IntRange(min=1), default=None,
              help="Then keep N of their queries, drawn with --seed.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--exclude-metadata-clauses/--include-metadata-clauses", "exclude_metadata",
              default=True, show_default=True,
              help="Skip Document Name, Parties, Agreement/Effective/Expiration Date.")
@click.option("--exclude-cross-references/--include-cross-references",
              "exclude_cross_references", default=True, show_default=True,
              help="Skip Competitive Restriction Exception (phrased as a cross-reference to "
                   "another clause), as the reference harness does.")
@click.option("--allow-missing-contracts", is_flag=True,
              help="List and skip CSV rows without a contract file (default: error).")
@click.option("--expect-sha256", type=str, default=None,
              help="The published sha256 of the release file (--squad-json, else --csv): "
                   "checked before anything is read from it; another digest is refused.")
@output_options
@common_options
@guard(inputs=("csv", "contracts", "categories", "squad_json"),
       outputs=("out", "corpus_out", "report"), report="report")
def import_cuad(report: str | None, fmt: str, out: str, corpus_out: str | None, **opts: Any) -> None:
    """CUAD: master_clauses.csv + contracts, or the SQuAD-style JSON."""
    from ragspan.app import import_benchmark as command

    emit(command.run("cuad", out=out, corpus_out=corpus_out, **opts), report, fmt)


@import_group.command("legalbench-rag")
@flag("root", "Folder with corpus/ and benchmarks/.", required=True)
@click.option("--subset", "subsets", multiple=True, help="Benchmark name; repeatable (default all).")
@click.option("--paper-sampling", is_flag=True,
              help="Keep the benchmark's own 194-per-subset selection.")
@click.option("--newlines", type=click.Choice(["translate", "keep"]), default="translate",
              show_default=True,
              help="translate: read corpus files as the benchmark's code does (CRLF and CR "
                   "become LF, its offsets' text); keep: as they are.")
@output_options
@common_options
@guard(inputs=("root",), outputs=("out", "corpus_out", "report"), report="report")
def import_legalbench(report: str | None, fmt: str, out: str, corpus_out: str | None,
                      **opts: Any) -> None:
    """LegalBench-RAG: snippets with file_path and span."""
    from ragspan.app import import_benchmark as command

    emit(command.run("legalbench-rag", out=out, corpus_out=corpus_out, **opts), report, fmt)


@import_group.command("beir")
@flag("root", "Folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv.", required=True)
@click.option("--split", default="test", show_default=True)
@output_options
@common_options
@guard(inputs=("root",), outputs=("out", "corpus_out", "report"), report="report")
def import_beir(report: str | None, fmt: str, out: str, corpus_out: str | None, **opts: Any) -> None:
    """BEIR: a doc-level eval set with graded judgments."""
    from ragspan.app import import_benchmark as command

    emit(command.run("beir", out=out, corpus_out=corpus_out, **opts), report, fmt)


@import_group.command("ragas")
@click.option("--rows", required=True, type=str,
              help="Ragas-style rows (JSONL or JSON array): user_input, reference_contexts, "
                   "retrieved_contexts[, reference].")
@flag("corpus", "The corpus the contexts come from (JSONL or directory).", required=True)
@flag("out", "Eval set to write (JSONL).", required=True)
@click.option("--run-out", required=True, type=str, help="Span run to write (JSONL).")
@placement_options("on-ambiguous", "fuzzy-threshold")
@flag("report")
@format_option
@common_options
@guard(inputs=("rows", "corpus"), outputs=("out", "run_out", "report"), report="report")
def import_ragas(report: str | None, fmt: str, out: str, **opts: Any) -> None:
    """Ragas rows: reference contexts placed as gold spans, retrieved contexts as a run."""
    from ragspan.app import import_benchmark as command

    emit(command.run("ragas", out=out, corpus_out=None, **opts), report, fmt)


@import_group.command("traces")
@click.option("--traces", "--otlp", "otlp", required=True, type=str,
              help="A trace file, its shape told by content: OTLP JSON (lines or one "
                   "document), OTLP protobuf, the OpenTelemetry SDK's console exporter output, "
                   "Phoenix's span export; gzip-compressed or not. OpenInference RETRIEVER "
                   "(and RERANKER) spans or GenAI retrieval spans.")
@flag("eval-set", "The questions the traces answered.", required=True)
@flag("corpus", "The corpus the retrieved documents come from (JSONL or directory).", required=True)
@flag("out", "The run with steps to write (JSONL).", required=True)
@click.option("--query-id-attribute", type=str, default=None,
              help="A span attribute holding the question's id (any span of the trace); "
                   "default: the root span's input.value equal to the question's text.")
@placement_options("on-ambiguous", "fuzzy-threshold")
@flag("chunks", "A chunk manifest: documents given by id alone (the GenAI conventions') "
      "are placed as the chunk their id names.")
@click.option("--doc-key", type=str, default=None,
              help="The document.metadata key of a document's corpus id (default doc_id, "
                   "document_id, source, file_name, file_path).")
@click.option("--offset-key", type=str, default=None,
              help="The document.metadata key of a document's start offset (default "
                   "start_index, start, start_char_idx).")
@click.option("--max-inflated-bytes", type=click.IntRange(min=1), default=None,
              help="The most bytes a gzip trace file may inflate to (default 100x its size, "
                   "at least 64 MiB, at most 4 GiB).")
@flag("report")
@format_option
@common_options
@guard(inputs=("otlp", "eval_set", "corpus", "chunks"), outputs=("out", "report"),
       report="report")
def import_traces(report: str | None, fmt: str, **opts: Any) -> None:
    """OpenTelemetry traces of your application: each question's retriever calls, placed in
    the corpus, as a run with steps."""
    from ragspan.app import import_traces as command

    emit(command.run(**opts), report, fmt)


@import_group.command("chroma")
@flag("root", "Folder with questions_df.csv and corpora/<corpus_id>.md.", required=True)
@output_options
@common_options
@guard(inputs=("root",), outputs=("out", "corpus_out", "report"), report="report")
def import_chroma(report: str | None, fmt: str, out: str, corpus_out: str | None,
                  **opts: Any) -> None:
    """Chroma's chunking evaluation: questions with references, every one checked."""
    from ragspan.app import import_benchmark as command

    emit(command.run("chroma", out=out, corpus_out=corpus_out, **opts), report, fmt)


@cli.command()
@flag("eval-set", "The eval set whose offsets index --corpus.", required=True)
@flag("corpus", "The corpus the eval set was made on (JSONL or directory).", required=True)
@click.option("--to-corpus", required=True, type=str,
              help="The edited corpus to carry the gold spans over to.")
@flag("out", "The migrated eval set to write (JSONL).", required=True)
@click.option("--keep-edited", is_flag=True,
              help="Keep questions whose gold text was edited, at its new place (listed in "
                   "the row's migration.edited); by default they are set aside for review.")
@click.option("--min-similarity", "threshold", type=FiniteFloatRange(0, 1, min_open=True),
              default=0.8, show_default=True,
              help="Least similarity (0-1) of an edited gold text to its old text for "
                   "--keep-edited to keep it, and of a text placed fuzzily once its "
                   "surroundings changed too.")
@flag("report")
@format_option
@common_options
@guard(inputs=("eval_set", "corpus", "to_corpus"), outputs=("out", "report"), report="report")
def migrate(report: str | None, fmt: str, **kwargs: Any) -> None:
    """Carry an eval set's gold spans over to an edited corpus: each span unchanged, moved,
    edited, deleted or ambiguous; questions that cannot follow are set aside or dropped."""
    from ragspan.app import migrate as command

    emit(command.run(**kwargs), report, fmt)


@cli.command()
@flag("eval-set", required=True)
@flag("corpus", required=True)
@flag("chunks", "Chunk manifest (run-retriever --chunks-out): coverage gate.")
@flag("grounding-threshold")
@click.option("--min-span-integrity", type=FiniteFloatRange(0, 1), default=None,
              help="Fail when fewer gold spans than this share sit whole in one chunk.")
@flag("run", "A span run over this chunking: the precision it attained against the "
      "chunking's ceiling (needs --chunks).")
@k_option
@click.option("--facts", type=str,
              help="A planted-facts sidecar (JSON list or JSONL of id, text, doc_id): each "
                   "fact placed once, and inside the gold spans of the questions naming it.")
@flag("out")
@format_option
@common_options
@guard(inputs=("eval_set", "corpus", "chunks", "run", "facts"), outputs=("out",), report="out")
def validate(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Check an eval set against its corpus (and chunking): exit 0 valid, 3 findings."""
    from ragspan.app import validate as command

    emit(command.run(**kwargs), out, fmt)


@cli.command()
@flag("eval-set", "Eval items: an eval set, BEIR queries (_id, text), or items as "
      "toolkit-rag-quality writes them (id, query or question, answer; --items).",
      required=True, aliases=("--items",))
@flag("corpus", "Corpus (JSONL, BEIR corpus, or directory).", required=True)
@click.option("--field", "fields", multiple=True,
              type=click.Choice(["query", "gold", "answer"]),
              help="Item field to check; repeatable (default query, and answer when the "
                   "items carry one).")
@click.option("--ngram", type=click.IntRange(min=1, max=64), default=3, show_default=True)
@flag("threshold", "Containment at which an item leaks.", default=0.6)
@flag("method", "embedding: paraphrase leaks (slower, approximate).",
      type=click.Choice(["exact", "embedding"]))
@click.option("--similarity", type=FiniteFloatRange(-1, 1), default=0.9, show_default=True,
              help="Cosine similarity at which an item leaks (--method embedding).")
@click.option("--model", default="all-MiniLM-L6-v2", show_default=True,
              help="Embedding model, name or path (--method embedding).")
@click.option("--chunk-size", type=click.IntRange(min=1, max=10_000_000), default=1000,
              show_default=True, help="Sentence chunks of the corpus, in characters (--method embedding).")
@flag("cache-dir", "Embedding cache (--method embedding).")
@flag("max-records")
@click.option("--max-leaks", type=click.IntRange(min=0), default=0, show_default=True,
              help="Exit 4 when more items than this leak.")
@flag("out")
@format_option
@common_options
@guard(inputs=("eval_set", "corpus"), outputs=("out",), report="out")
def leakage(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Find eval items contained in corpus documents: exit 0 clean, 4 leaks, 3 bad input."""
    from ragspan.app import leakage as command

    emit(command.run(**kwargs), out, fmt)


@cli.command()
@click.option("--a", "a", required=True, type=str, help="First corpus.")
@click.option("--b", "b", required=True, type=str, help="Second corpus.")
@flag("method", type=click.Choice(["exact", "minhash"]))
@flag("threshold", "Jaccard of word-shingle sets (--method minhash).", default=0.8)
@click.option("--shingle", type=click.IntRange(min=1, max=50), default=None,
              help="minhash: shingle size in words (default 5; smaller finds reworded "
                   "near-duplicates, larger only long shared passages).")
@flag("max-records")
@click.option("--max-duplicates", type=click.IntRange(min=0), default=0, show_default=True,
              help="Exit 4 when more pairs than this are found.")
@flag("out")
@format_option
@common_options
@guard(inputs=("a", "b"), outputs=("out",), report="out")
def overlap(out: str | None, fmt: str, **kwargs: Any) -> None:
    """Find documents shared by two corpora: exit 0 none, 4 duplicates, 3 bad input."""
    from ragspan.app import overlap as command

    emit(command.run(**kwargs), out, fmt)
