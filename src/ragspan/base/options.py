"""Options declared once: name, type, range, default and help of every setting a file can
hold, for the gate (``[tool.ragspan]``) and for run-retriever's pipeline TOML.

``check_value`` is the one type check: a value of the wrong type or out of range is an
error naming the file and key (booleans are ``true``/``false``, never the string
``"false"``; an integer is never a float or a boolean; a float is finite). Callers turn the
message into an InputError (a config file, exit 3) or a UsageError (the command line, exit 2).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragspan.base.errors import InputError


@dataclass(frozen=True)
class Option:
    """One setting. ``kind``: ``bool``, ``int``, ``float``, ``str``, ``enum``, ``strings``
    (a list of non-empty strings) or ``table`` (checked by its reader). ``low``/``high``
    bound ``int`` and ``float`` values (``high`` also bounds a ``strings`` list's length);
    ``open_low``/``open_high`` exclude the bound. Every numeric option has a ``high``."""

    key: str
    kind: str
    default: Any = None
    help: str = ""
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple[str, ...] = ()
    nullable: bool = False
    pattern: str = ""  # a ``str`` value must match this regular expression (fully)
    pattern_help: str = ""  # the expected value in words, for a pattern
    share: bool = False  # a ``float`` share in [0, 1] that may also be written "5%"
    config_only: bool = False  # set in ``[tool.ragspan]`` only: no command-line flag

    @property
    def attr(self) -> str:
        """The Python name (``budget-tolerance`` -> ``budget_tolerance``)."""
        return self.key.replace("-", "_")

    def describe(self) -> str:
        """The expected value in words, for error messages and the docs table."""
        if self.kind == "enum":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "strings":
            return "a list of strings" + (f" (at most {int(self.high)})" if self.high else "")
        if self.kind in ("int", "float"):
            what = "an integer" if self.kind == "int" else "a number"

            def num(x: float) -> str:
                return str(int(x)) if self.kind == "int" else f"{x:g}"

            if self.low is not None and self.high is not None:
                lo = "(" if self.open_low else "["
                hi = ")" if self.open_high else "]"
                said = f"{what} in {lo}{num(self.low)}, {num(self.high)}{hi}"
                return said + (" or a percentage (5%)" if self.share else "")
            if self.low is not None:
                return f"{what} {'>' if self.open_low else '>='} {num(self.low)}"
            return what
        if self.kind == "str" and self.pattern_help:
            return self.pattern_help
        return {"bool": "true or false", "str": "a string", "table": "a table"}[self.kind]


def share_of(text: str) -> float | str:
    """A share written as a percentage (``"5%"`` -> 0.05) or a plain number (``"0.05"``);
    the text itself when it is neither (the type check then names it)."""
    t = text.strip()
    try:
        return float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        return text


def check_value(opt: Option, value: Any) -> Any:
    """``value`` if it fits ``opt``; else ValueError with what was expected and what came."""
    ok = True
    if value is None:
        ok = opt.nullable
    elif opt.kind == "bool":
        ok = isinstance(value, bool)
    elif opt.kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif opt.kind == "float":
        if opt.share and isinstance(value, str):
            value = share_of(value)
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value))
        if ok:
            value = float(value)
    elif opt.kind == "str":
        ok = isinstance(value, str) and (not opt.pattern or re.fullmatch(opt.pattern, value)
                                         is not None)
    elif opt.kind == "enum":
        ok = isinstance(value, str) and value in opt.choices
    elif opt.kind == "strings":
        ok = (isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value)
              and (opt.high is None or len(value) <= opt.high))
        if ok:
            value = tuple(value)
    elif opt.kind == "table":
        ok = isinstance(value, dict)
    if ok and value is not None and opt.kind in ("int", "float"):
        if opt.low is not None and (value < opt.low or (opt.open_low and value == opt.low)):
            ok = False
        if opt.high is not None and (value > opt.high or (opt.open_high and value == opt.high)):
            ok = False
    if not ok:
        raise ValueError(f"expected {opt.describe()}, got {value!r}")
    return value


def check_table(table: Mapping[str, Any], options: tuple[Option, ...], path: str,
                section: str) -> dict[str, Any]:
    """Check every key of a TOML table against its declared options: unknown keys and
    values of the wrong type or range are an InputError naming the file, section and key.
    Returns the values by ``Option.attr`` (only the keys present)."""
    by_key = {o.key: o for o in options}
    unknown = sorted(k for k in table if spelled_key(k, by_key) is None)
    if unknown:
        raise InputError(f"{section}: unknown key(s) {', '.join(unknown)} "
                         f"(allowed: {', '.join(sorted(by_key))})", path)
    out: dict[str, Any] = {}
    written: dict[str, str] = {}
    for key, value in table.items():
        opt = by_key[spelled_key(key, by_key) or key]
        if opt.key in written:
            raise InputError(f"{section}: '{opt.key}' is given twice (as {written[opt.key]} "
                             f"and {key})", path)
        written[opt.key] = key
        try:
            out[opt.attr] = check_value(opt, value)
        except ValueError as exc:
            raise InputError(f"{section} {key}: {exc}", path) from None
    return out


def spelled_key(key: str, by_key: Mapping[str, Option]) -> str | None:
    """The declared key ``key`` names: itself, or the same words joined by the other of
    ``-`` and ``_`` (``max_regression_pct`` is ``max-regression-pct``); None when neither."""
    for form in (key, key.replace("_", "-"), key.replace("-", "_")):
        if form in by_key:
            return form
    return None


# ---- upper bounds: every numeric setting has one, so no value a file or a flag can hold
# makes a command run for hours or exhaust memory. Each is chosen so that its worst allowed
# value finishes within minutes on 2 cores (docs/gate.md, "Bounded work"): the sign flips
# and bootstrap resamples are drawn in blocks, so time grows linearly and memory stays flat.
MAX_PERMUTATIONS = 1_000_000  # sign flips: 1.5 s, 100 MB on the demo (53 queries x 40 metrics)
MAX_BOOTSTRAP = 200_000  # resamples: 1.7 s, 330 MB on the demo; linear in the queries
MAX_SEED = 2**63 - 1
MAX_TOP = 1_000  # most-regressed queries listed
MAX_GATE_SLICES = 16  # tag keys gated (each value of each is a family member)
MAX_QUERIES = 10_000_000
MAX_K = 10_000  # a cutoff (--k), and the number of results a run row may be cut at
MAX_KS = 32  # cutoffs in one command
MAX_CHARS_CUTOFF = 1_000_000_000  # a character budget (--k 2000c)
MAX_DEPTH = 10_000  # results per query and candidates per retriever
MAX_CHUNK_CHARS = 10_000_000
MAX_BATCH = 100_000
MAX_HNSW = 4_096  # HNSW links per point and beams
MAX_FUSION_K = 1_000_000
MAX_CONFIG_DEPTH = 32  # nesting of a TOML configuration (tables and arrays)
MAX_UNPACKED_BYTES = 2 ** 46  # 64 TiB: what --max-unpacked-bytes may allow a snapshot
MAX_BASELINE_AGE_DAYS = 3650.0  # ten years: past it, no warning is meant
MAX_BUDGET_TOLERANCE = 10.0  # 1000%: beyond it, say --allow-budget-change


# ---- the gate: `ragspan compare` and [tool.ragspan] ---------------------------------------

GATE_OPTIONS: tuple[Option, ...] = (
    Option("alpha", "float", None, "Error rate of each one-sided bound (interval mode; "
           "unset: 0.05); threshold mode: fail an over-budget drop only if p < alpha.",
           low=0, high=1, open_low=True, open_high=True, nullable=True),
    Option("mode", "enum", "interval", "interval: pass / fail / inconclusive from one-sided "
           "bounds on the drop; threshold; or non-inferiority (fail unless the one-sided 95% "
           "upper bound of the drop is within the budget).",
           choices=("interval", "threshold", "non-inferiority")),
    Option("on-inconclusive", "enum", "pass", "Exit code of an inconclusive verdict: pass "
           "(0) or fail (4).", choices=("pass", "fail")),
    Option("test", "enum", "randomization", "Paired test of the mean delta.",
           choices=("randomization", "t-test")),
    Option("permutations", "int", 10_000, "Monte Carlo sign flips when n > 16.", low=1,
           high=MAX_PERMUTATIONS),
    Option("bootstrap", "int", 2_000, "Bootstrap resamples for the 95% CI.", low=1,
           high=MAX_BOOTSTRAP),
    Option("seed", "int", 0, "Random seed of the sign flips and the bootstrap.", low=0,
           high=MAX_SEED),
    Option("correction", "enum", None, "Family adjustment over gated metrics x k x gated "
           "slices: max-t (interval mode's default), holm, none (threshold mode's default).",
           choices=("max-t", "holm", "none"), nullable=True),
    Option("budget-tolerance", "float", 0.10, "Allowed relative change of mean "
           "retrieved_chars.", low=0, high=MAX_BUDGET_TOLERANCE),
    Option("allow-budget-change", "bool", False, "Accept a changed retrieval budget "
           "(still reported)."),
    Option("allow-ungated", "bool", False, "Report a budgeted metric that cannot be decided "
           "at equal budget as ungated (named in the verdict) instead of an input error."),
    Option("allow-parameter-change", "strings", (), "Scoring parameters the two reports may "
           "differ in (grounding_threshold, relevance_level, judged_only, tokenizer, "
           "anchoring, qrels_format; never k): each difference is stated.", high=8),
    Option("gate-slices", "strings", (), "Tag keys whose every value is gated too.",
           high=MAX_GATE_SLICES),
    Option("min-slice-size", "int", 10, "Slices smaller than this are reported, not gated.",
           low=1, high=MAX_QUERIES),
    Option("anchor-budget", "str", None, "With --anchor: the cumulative budget of every "
           "gated metric against the anchor (\"5pt\", \"5%\").", nullable=True),
    Option("primary-metric", "str", None, "Metric ranking the most regressed queries.",
           nullable=True),
    Option("top", "int", 10, "How many most-regressed queries to list.", low=0,
           high=MAX_TOP),
    Option("cluster-by", "str", "auto", "The sampling unit: doc_id (questions about one "
           "document move together; the verdict is about documents like these), tag:KEY, "
           "none (each question; the verdict is about these documents), or auto "
           "(docs/gate.md, \"Clustered eval sets\").",
           pattern=r"auto|none|doc_id|tag:.+", pattern_help="auto, none, doc_id or tag:KEY"),
    Option("max-recall-regression-pct", "float", None, "Percent-of-baseline budgets "
           "(toolkit-rag-quality's spelling): doc-level recall may drop this percent of the "
           "baseline's mean (2 once either percent option is given); threshold mode unless "
           "--mode is given.", low=0, high=100, nullable=True),
    Option("max-regression-pct", "float", None, "Percent-of-baseline budgets: precision, "
           "nDCG, MRR, MAP and hit rate may drop this percent (default: the recall "
           "budget).", low=0, high=100, nullable=True),
    Option("max-set-aside", "float", 0.05, "With --migration: the largest share of the "
           "questions a corpus edit may leave out of the gate (set aside or dropped); past "
           "it the verdict fails (0.05 or 5%).", low=0, high=1, share=True),
    Option("profile", "enum", "auto", "Whose rules: ragspan's, toolkit-rag-quality's "
           "(docs/toolkit.md), or auto: the toolkit's when its spelling is used (a percent "
           "option, a bare-number budget).", choices=("auto", "ragspan", "toolkit")),
    Option("max-baseline-age", "float", 3.0, "Days past which the baseline's commit is "
           "named in a warning (docs/ci.md).", low=0, high=MAX_BASELINE_AGE_DAYS),
    Option("override-label", "str", None, "`[tool.ragspan]` only: a pull-request label that "
           "passes the job while the verdict stays FAIL, said in every output (docs/ci.md).",
           nullable=True, pattern=r"[^\x00-\x1f\x7f]{1,100}",
           pattern_help="a label name of 1 to 100 printable characters", config_only=True),
    Option("budgets", "table", {}, "`[tool.ragspan.budgets]`: METRIC = \"2pt\", \"2%\" or "
           "\"off\"."),
)
GATE_DEFAULTS: dict[str, Any] = {o.attr: o.default for o in GATE_OPTIONS}


# ---- run-retriever's pipeline TOML ----------------------------------------------------------

ENABLED = Option("enabled", "bool", True, "false turns the section off.")
PIPELINE_TOP: tuple[Option, ...] = (
    Option("name", "str", None, "The configuration's name (required)."),
    Option("depth", "int", 10, "Results per query.", low=1, high=MAX_DEPTH),
    *(Option(k, "table", help=f"The `[{k}]` section.")
      for k in ("chunker", "dense", "sparse", "fusion", "rerank", "filter")),
)
PIPELINE_SECTIONS: dict[str, tuple[Option, ...]] = {
    "chunker": (Option("kind", "enum", "sentence", "How documents are cut into chunks "
                       "(tokens and recursive-tokens measure size and overlap in tokens).",
                       choices=("fixed", "sentence", "recursive", "paragraph", "clause", "none",
                                "tokens", "recursive-tokens")),
                Option("size", "int", 1000, "Chunk size in characters (the target for "
                       "sentence, recursive and clause, the cap of paragraph; tokens for the "
                       "token kinds).", low=1,
                       high=MAX_CHUNK_CHARS),
                Option("overlap", "int", 0, "Characters (tokens, for the token kinds) shared "
                       "by neighbouring chunks (below size).", low=0, high=MAX_CHUNK_CHARS),
                Option("tokenizer", "str", "cl100k_base", "The token kinds' tokenizer: "
                       "cl100k_base (no download) or a Hugging Face tokenizer name or path "
                       "(the embedding model's)."),
                Option("snap", "bool", False, "Fixed chunks end at a word boundary."),
                ENABLED),
    "dense": (Option("model", "str", "all-MiniLM-L6-v2", "sentence-transformers model, name "
                     "or path (the default is the packaged MiniLM)."),
              Option("backend", "enum", "exact", "Exact numpy search; Qdrant through its "
                     "client (local mode, or a server); or qdrant-edge, Qdrant's engine "
                     "in-process.", choices=("exact", "qdrant", "qdrant-edge")),
              Option("depth", "int", 50, "Candidates this retriever passes on.", low=1,
                     high=MAX_DEPTH),
              Option("qdrant_path", "str", None, "Local on-disk Qdrant store.", nullable=True),
              Option("qdrant_url", "str", None, "Qdrant server.", nullable=True),
              Option("search", "enum", "exact", "How Qdrant searches: exact (every vector of "
                     "the filtered set, no approximate-search noise) or hnsw (its approximate "
                     "graph: qdrant-edge, or a server; recorded with its parameters, and "
                     "with qdrant-edge its ann_recall@depth).",
                     choices=("exact", "hnsw")),
              Option("hnsw_m", "int", 16, "With search = hnsw: graph links per point.", low=4,
                     high=MAX_HNSW),
              Option("hnsw_ef_construct", "int", 100, "With search = hnsw: the beam while "
                     "the graph is built.", low=4, high=MAX_HNSW),
              Option("hnsw_ef", "int", 128, "With search = hnsw: the beam of each search "
                     "(at least depth).", low=1, high=MAX_HNSW),
              Option("batch_size", "int", 64, "Chunks embedded per batch.", low=1,
                     high=MAX_BATCH), ENABLED),
    "sparse": (Option("backend", "enum", "rank-bm25", "BM25 implementation (same tokenizer "
                      "and idf).", choices=("rank-bm25", "bm25s")),
               Option("k1", "float", 1.5, "BM25 term-frequency saturation.", low=0),
               Option("b", "float", 0.75, "BM25 length normalisation.", low=0, high=1),
               Option("depth", "int", 50, "Candidates this retriever passes on.", low=1,
                      high=MAX_DEPTH),
               ENABLED),
    "rerank": (Option("model", "str", "", "CrossEncoder model, name or path (required)."),
               Option("depth", "int", 20, "Fused candidates rescored.", low=1, high=MAX_DEPTH),
               Option("batch_size", "int", 32, "Pairs scored per batch.", low=1,
                      high=MAX_BATCH),
               Option("top_k", "int", None, "Reranked candidates kept (unset: depth).", low=1,
                      high=MAX_DEPTH, nullable=True),
               Option("min_score", "float", None, "Reranked candidates scoring below this are "
                      "dropped, counted (unset: none).", low=-1e9, high=1e9, nullable=True),
               Option("min_keep", "int", 1, "With min_score: the fewest kept whatever their "
                      "scores.", low=0, high=MAX_DEPTH), ENABLED),
    "fusion": (Option("k", "int", 60, "Reciprocal rank fusion constant.", low=1,
                      high=MAX_FUSION_K),
               Option("method", "enum", "rrf", "Fusion method.", choices=("rrf",))),
    "filter": (Option("scope", "enum", "doc_id", "doc_id: the query's document and its "
                      "filters (a row without doc_id is an error); doc_id-or-all: the same, "
                      "rows without doc_id searched corpus-wide and counted; filters: its "
                      "filters only; none: corpus-wide.",
                      choices=("doc_id", "doc_id-or-all", "filters", "none")),),
}


PIPELINE_DEFAULTS: dict[str, dict[str, Any]] = {
    "": {o.attr: o.default for o in PIPELINE_TOP if o.kind != "table"},
    **{name: {o.attr: o.default for o in opts if o is not ENABLED}
       for name, opts in PIPELINE_SECTIONS.items()},
}


def pipeline_default(section: str, key: str) -> Any:
    """The declared default of ``[section] key`` (``section`` "" for the top level): the
    only place the pipeline dataclasses take their defaults from."""
    return PIPELINE_DEFAULTS[section][key]


# ---- run-retriever's command line (the pipeline's own keys come from its TOML) -------------

RUN_RETRIEVER_OPTIONS: tuple[Option, ...] = (
    Option("cache-dir", "str", None, "Embedding cache (default ~/.cache/ragspan or "
           "$RAGSPAN_CACHE_DIR).", nullable=True),
    Option("no-cache", "bool", False, "Do not read or write the embedding cache."),
    Option("qdrant-path", "str", None, "Dense search in a local on-disk Qdrant store.",
           nullable=True),
    Option("qdrant-url", "str", None, "Dense search on a Qdrant server.", nullable=True),
    Option("depth", "int", None, "Override the config's depth (results per query); with "
           "--retriever, keep each query's first depth distinct results.", low=1,
           high=MAX_DEPTH, nullable=True),
    Option("id-key", "str", None, "With --retriever: the metadata (or result) key that holds "
           "the doc id (default doc_id, source, id, then Document.id / ref_doc_id / node_id).",
           nullable=True),
    Option("framework", "enum", "auto", "With --retriever: what your object is; auto "
           "tells by its methods (retrieve(): LlamaIndex, invoke(): LangChain, else a "
           "callable); a named one is required of the object, so a wrong object is refused.",
           choices=("auto", "langchain", "llamaindex", "callable")),
    Option("qrels", "str", None, "Run only the queries these judgments judge (TREC, BEIR TSV "
           "or JSONL qrels).", nullable=True),
    Option("to", "enum", None, "The format of a doc-level run (a --retriever returning doc "
           "ids alone): jsonl (retrieved_ids) or trec.", choices=("jsonl", "trec"),
           nullable=True),
    Option("tag", "str", "ragspan", "The run tag of a TREC run (--to trec).", nullable=True),
    Option("collection", "str", None, "Evaluate this existing Qdrant collection (with "
           "--qdrant-url or --qdrant-path), read-only: your index as it is.", nullable=True),
    Option("edge-shard", "str", None, "Evaluate this Qdrant edge shard folder (built by your "
           "pipeline with qdrant-edge) offline, from a copy: your index as it is, read-only.",
           nullable=True),
    Option("snapshot", "str", None, "Evaluate this Qdrant collection snapshot offline, "
           "unpacked into a temporary folder: your production index, read-only.",
           nullable=True),
    Option("max-unpacked-bytes", "int", None, "With --snapshot: the most bytes its members "
           "may declare unpacked, checked before anything is unpacked (default 20x the "
           "archive, at most 8 GiB).", low=1, high=MAX_UNPACKED_BYTES, nullable=True),
    Option("vector-name", "str", None, "With --collection: the named vector to search.",
           nullable=True),
    Option("hnsw-ef", "int", None, "With --collection on a server: search the collection's "
           "HNSW graph with this beam instead of exactly (approximate; recorded).", low=1,
           high=MAX_HNSW, nullable=True),
    Option("doc-key", "str", "doc_id", "With --collection: the payload key of the document "
           "id.", nullable=True),
    Option("start-key", "str", "start", "With --collection: the payload key of the chunk's "
           "start offset.", nullable=True),
    Option("end-key", "str", "end", "With --collection: the payload key of the chunk's end "
           "offset.", nullable=True),
    Option("text-key", "str", "text", "With --collection: the payload key of the chunk "
           "text (placed in the corpus where there are no offsets).", nullable=True),
    Option("model", "str", "all-MiniLM-L6-v2", "With --collection: the query model (the one "
           "that built the collection).", nullable=True),
    Option("scope", "enum", "doc_id", "With --collection: as [filter] scope.",
           choices=("doc_id", "doc_id-or-all", "filters", "none"), nullable=True),
    Option("keep-collection", "bool", False, "Keep the Qdrant collection a pipeline made on "
           "a server (its name is printed); by default it is deleted when the run ends."),
    Option("strict-cache", "bool", False, "An unusable embedding cache shard (another "
           "model's, changed, truncated, non-finite) is an error, not a warning."),
    Option("record-latency", "bool", False, "Write each query's latency into the run, and "
           "the execution's timings and embedding-cache use into the report "
           "(summary.execution). Both then differ from run to run; by default neither holds "
           "them (they are logged), so the same inputs give the same bytes."),
)
