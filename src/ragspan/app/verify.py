"""``compare``'s verification: the files both score reports claim to come from
(``Sources``), each side re-scored from them with its own parameters and refused unless its
report is what they score to (``verify_scored``), and what the verdict rests on
(``verification``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import msgspec

from ragspan.app.score import (
    ScoreSettings,
    eval_set_body,
    qrels_body,
    with_skipped_rows,
    with_warnings,
)
from ragspan.base.canonical import canonical_dumps
from ragspan.base.errors import InputError, MissingExtraError, UsageError, present
from ragspan.base.records import ReportBody
from ragspan.base.voice import setting, surface
from ragspan.io.rows import ON_DUPLICATE, Skipped
from ragspan.records.compare import Verification
from ragspan.records.envelope import encode
from ragspan.records.score_columns import DocColumns, SpanColumns, check_columns, rows_of
from ragspan.records.score_read import RowsDetails, convert_details, is_v1
from ragspan.records.score_rows import as_plain
from ragspan.records.score_settings import recorded_parameters
from ragspan.scoring.metrics.registry import parse_cutoff


@dataclass(frozen=True)
class Sources:
    """The files both score reports claim to come from (``compare --eval-set ...``): the
    shared eval set (or qrels) and corpus, and each side's run and chunk manifest."""

    eval_set: str | None = None
    qrels: str | None = None
    corpus: str | None = None
    baseline_run: str | None = None
    candidate_run: str | None = None
    baseline_chunks: str | None = None
    candidate_chunks: str | None = None
    # across a corpus change (``--migration``): the candidate's own eval set and corpus
    candidate_eval_set: str | None = None
    candidate_corpus: str | None = None

    @property
    def given(self) -> bool:
        return any(v is not None for v in self.__dict__.values())

    def check(self) -> None:
        """Verification is all or nothing: both runs, and exactly one of eval set or qrels."""
        if not self.given:
            return
        if self.baseline_run is None or self.candidate_run is None:
            raise UsageError("verifying the reports needs both runs: give "
                             f"{setting('baseline-run')} and {setting('candidate-run')} (with "
                             f"{setting('eval-set')} or {setting('qrels')})")
        if (self.eval_set is None) == (self.qrels is None):
            raise UsageError(f"verifying the reports needs exactly one of {setting('eval-set')} "
                             f"or {setting('qrels')}, the judgments both sides were scored on")


SOURCE_KEYS = ("eval_set", "qrels", "corpus", "baseline_run", "candidate_run",
               "baseline_chunks", "candidate_chunks", "candidate_eval_set", "candidate_corpus")


_A = {"eval_set": "an eval set", "qrels": "qrels", "corpus": "a corpus", "run": "a run",
      "chunks": "a chunk manifest"}


def verify_scored(doc: dict[str, Any], path: str, role: str, sources: Sources) -> None:
    """Re-score one side from the files given and refuse its report unless it is what those
    files score to: every input the report records must be given and have the recorded
    sha256 (a missing one is a usage error, a different one an input error naming the file),
    and the report's parameters, summary and per-query rows must equal the re-scored ones
    (an input error naming the first query or key that differs). Catches hand-edited rows
    and digests alike."""
    pred = doc["predicate"]
    run = sources.baseline_run if role == "baseline" else sources.candidate_run
    chunks = sources.baseline_chunks if role == "baseline" else sources.candidate_chunks
    own = role == "candidate"
    eval_set = sources.candidate_eval_set if own and sources.candidate_eval_set else \
        sources.eval_set
    corpus = sources.candidate_corpus if own and sources.candidate_corpus else sources.corpus
    given = {"eval_set": eval_set, "qrels": sources.qrels, "corpus": corpus,
             "run": run, "chunks": chunks}
    flag = {"eval_set": setting("candidate-eval-set") if eval_set is not sources.eval_set
            else setting("eval-set"), "qrels": setting("qrels"),
            "corpus": setting("candidate-corpus") if corpus is not sources.corpus
            else setting("corpus"),
            "run": setting(f"{role}-run"), "chunks": setting(f"{role}-chunks")}
    recorded = {ref["role"]: ref["digest"].get("sha256") for ref in pred["inputs"]}
    for key, value in given.items():
        if key in recorded and value is None:
            raise UsageError(f"the {role} report was scored with {_A[key]}: "
                             f"give {flag[key]} to verify it")
        if key not in recorded and value is not None:
            raise InputError(f"{flag[key]} was given, but the {role} report was scored "
                             f"without {_A[key]}", path)
    params = _scoring_parameters(pred)
    try:
        body = _rescored(pred["kind"], params,
                         dataclasses.replace(sources, eval_set=eval_set, corpus=corpus),
                         present(run, flag["run"]), chunks, "qrels" in recorded, path)
    except MissingExtraError:
        raise
    except UsageError as exc:  # a value of the report's own parameters, not of a flag
        raise InputError(f"the {role} report's parameters cannot be re-scored: {exc}",
                         path) from None
    for ref in body.inputs:
        if recorded.get(ref.role) != ref.sha256:
            raise InputError(f"{flag.get(ref.role, ref.role)} {ref.name} (sha256 "
                             f"{ref.sha256[:12]}) is not the file the {role} report records "
                             f"(sha256 {str(recorded.get(ref.role))[:12]})", path)
    if body.kind != pred["kind"]:
        raise InputError(f"the {role} report is a {pred['kind']} report, but its inputs score "
                         f"to a {body.kind} report", path)
    _refuse_differences(body, doc, params, role, path)


def _scoring_parameters(pred: dict[str, Any]) -> dict[str, Any]:
    """A report's parameters without the command line that wrote it and where (how it was
    typed and in which commit, not what it scored with)."""
    return {k: v for k, v in pred["parameters"].items() if k not in ("argv", "provenance")}


def _settings_of(params: dict[str, Any], path: str) -> ScoreSettings:
    """The settings a report was scored with, from its ``parameters`` read strictly
    (``records.score_settings.RecordedParameters``): its cutoffs parsed as ``score --k``
    parses them, every other field of its type or absent (then what a report is written
    without). A field that is neither is an input error naming it."""
    try:
        said = recorded_parameters(params)
    except msgspec.ValidationError as exc:  # "Expected `str`, got `int` - at `$.x`"
        said_of, _, where = str(exc).partition(" - at `$")
        raise InputError(f"the report's parameters{where.rstrip('`')} cannot be re-scored: "
                         f"{said_of}", path) from None
    try:
        ks = tuple(parse_cutoff(str(k)) for k in said.k)
    except ValueError as exc:
        raise InputError(f"the report's parameters.k cannot be re-scored: {exc}", path) from None
    if said.on_duplicate not in ON_DUPLICATE:
        raise InputError("the report's parameters.on_duplicate must be one of "
                         f"{', '.join(ON_DUPLICATE)}, got {said.on_duplicate!r}", path)
    return ScoreSettings(
        ks=ks, tau=said.grounding_threshold, relevance_level=said.relevance_level,
        judged_only=said.judged_only, anchoring=said.anchoring,
        chroma_metrics=said.chroma_metrics, tokenizer=said.tokenizer,
        budget_grid=False,  # the report's cutoffs are all of them
        qrels_format=said.qrels_format, run_format=said.run_format,
        on_duplicate=said.on_duplicate, min_coverage=0.0)


def _rescored(kind: str, params: dict[str, Any], sources: Sources, run: str,
              chunks: str | None, by_qrels: bool, path: str) -> ReportBody:
    """The report body the given files score to with the report's own settings
    (``_settings_of``)."""
    settings = _settings_of(params, path)
    if not by_qrels:  # the eval set's run: span level for a span report, else detected
        settings = msgspec.structs.replace(
            settings, run_format="span" if kind == "score.span" else "auto")
    skipped = (Skipped(), Skipped()) if settings.on_duplicate == "first" else None

    def build() -> ReportBody:
        if by_qrels:
            body = qrels_body(present(sources.qrels, setting("qrels")), run, settings,
                              skipped=skipped)
        else:
            body = eval_set_body(present(sources.eval_set, setting("eval-set")), run, sources.corpus,
                                 chunks, settings, skipped=skipped)
        if skipped is None:
            return body
        return with_skipped_rows(body, skipped, "qrels" if by_qrels else "eval_set")

    return with_warnings(build)


def _same(a: Any, b: Any) -> bool:
    return canonical_dumps(a) == canonical_dumps(b)


def _refuse_differences(body: ReportBody, doc: dict[str, Any], params: dict[str, Any],
                        role: str, path: str) -> None:
    """An InputError naming the first parameter (``params``: the report's scoring
    parameters), query row or summary key where the report differs from ``body``, its
    re-scoring. A report of format v1 is compared row for row with the rows the re-scoring's
    columns read back as (``records.score_columns.rows_of``), the rest of its details key for
    key."""
    pred = doc["predicate"]
    # the re-scoring's records as the JSON values the report holds
    fresh_params, fresh_summary = encode(body.parameters), encode(body.summary)
    if not _same(fresh_params, params):
        keys = sorted(set(fresh_params) | set(params))
        key = next(k for k in keys if not _same(fresh_params.get(k), params.get(k)))
        raise InputError(f"the {role} report's parameter '{key}' is not what its inputs score "
                         "to", path)
    v1 = is_v1(doc.get("predicateType"))
    fresh_details = encode(body.details)
    assert isinstance(body.details, (SpanColumns, DocColumns))
    tau = params.get("grounding_threshold")
    fresh_rows = as_plain(rows_of(body.details, tau))
    try:
        given = convert_details(pred["kind"], doc.get("predicateType"), pred["details"])
    except msgspec.ValidationError:
        given = None
    if isinstance(given, (SpanColumns, DocColumns)) and check_columns(given) is not None:
        given = None
    rows = (as_plain(given.queries) if isinstance(given, RowsDetails)
            else as_plain(rows_of(given, tau)) if given is not None else [])
    _refuse_rows(fresh_rows, rows, role, path)
    if v1:
        fresh_details = {key: value for key, value in fresh_details.items()
                         if key in ("slices", "run_rows_without_query")}
        fresh_details["queries"] = fresh_rows
    if not _same(fresh_details, pred["details"]):
        raise InputError(f"the {role} report's per-query rows are not what its inputs score "
                         "to (rows added, removed or reordered)", path)
    if not _same(fresh_summary, pred["summary"]):
        keys = sorted(set(fresh_summary) | set(pred["summary"]))
        key = next(k for k in keys if not _same(fresh_summary.get(k), pred["summary"].get(k)))
        raise InputError(f"the {role} report's summary '{key}' is not what its inputs score "
                         "to", path)


def _refuse_rows(fresh_rows: list[Any], rows: list[Any], role: str, path: str) -> None:
    """An InputError naming the first query whose row (as v1 spelled it) differs from its
    re-scoring, and the first metric that moved."""
    by_id = {r["id"]: r for r in fresh_rows}
    for row in rows:
        fresh = by_id.get(row.get("id"))
        if fresh is None or not _same(fresh, row):
            diff = ""
            if fresh is not None:
                metrics = row.get("metrics", {})
                moved = [m for m in fresh.get("metrics", {})
                         if not _same(fresh["metrics"][m], metrics.get(m))]
                if moved:
                    diff = (f" ({moved[0]}: {metrics.get(moved[0])!r} in the report, "
                            f"{fresh['metrics'][moved[0]]!r} re-scored)")
            raise InputError(f"the {role} report's row of query '{row.get('id')}' is not what "
                             f"its inputs score to{diff}", path)


def verification(sources: Sources) -> Verification:
    """What the verdict rests on: both reports re-scored from the files they record, or the
    reports taken as written (and how to verify them)."""
    if sources.given:
        files = ["the eval set" if sources.eval_set is not None else "the qrels"]
        if sources.corpus is not None:
            files.append("the corpus")
        files.append("the runs")
        if sources.baseline_chunks is not None or sources.candidate_chunks is not None:
            files.append("the chunk manifests")
        said = (f"both reports re-scored from {', '.join(files[:-1])} and {files[-1]}, and "
                "equal to what those files score to")
        return Verification(verified=True, statement=said)
    if surface() == "python":
        return Verification(verified=False, statement=(
            "taken as written, not verified: the Python API compares reports; `ragspan "
            "compare` given the eval set (or qrels), the corpus and both runs re-scores both "
            "reports from their files"))
    return Verification(verified=False, statement=(
        f"taken as written, not verified: give {setting('eval-set')} (or "
        f"{setting('qrels')}), {setting('corpus')} and {setting('baseline-run')} / "
        f"{setting('candidate-run')} to re-score both reports from their files"))
