"""Shared fixtures: the CLI runner, paths to the shared real data, a deterministic Hypothesis
profile, and schema validation of every report the tests produce."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import settings

settings.register_profile("ragspan", derandomize=True, max_examples=200, deadline=None)
settings.load_profile("ragspan")

ROOT = Path(__file__).resolve().parents[1]
# reports as made outside a repository, for every fixture of any scope and every subprocess
# (the suite runs inside one, whose commit and state change under it);
# tests/test_provenance.py and the CI templates' tests make their own repositories
os.environ["RAGSPAN_NO_PROVENANCE"] = "1"
SHARED = ROOT.parent / "shared" / "data"
if not SHARED.is_dir():  # CI clones elsewhere with shared/ beside the clone
    SHARED = Path(os.environ.get("RAGSPAN_SHARED_DATA", SHARED))


def shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the shared data {path} (public data nobody here wrote: CUAD, "
                    "BEIR SciFact, trec_eval's test files, ...; put the shared/ folder beside "
                    "the clone, or set RAGSPAN_SHARED_DATA to its data/ folder; README, "
                    "\"Tests\")")
    return path


@pytest.fixture(autouse=True)
def _pinned_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    # outputs as on a developer's machine, whatever runs the suite (a GitHub job turns
    # compare's annotations on; the tests that want them ask for them)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


class Result:
    def __init__(self, exit_code: int, stdout: str, stderr: str):
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr

    def json(self) -> dict:
        return json.loads(self.stdout)


BUILDING_COMMANDS = ("adapt", "import", "run-retriever", "report", "migrate")
REPORTS_FINDINGS = ("validate",)  # exit 3 with a report listing what is wrong
OUTPUT_FLAGS = ("--out", "--corpus-out", "--chunks-out", "--report")


def run_cli(*args: str) -> Result:
    """Invoke the CLI in-process; reports written or printed are schema-checked."""
    from ragspan.cli import cli

    argv = [str(a) for a in args]
    existed = {argv[i + 1]: Path(argv[i + 1]).read_bytes() for i, a in enumerate(argv[:-1])
               if a in OUTPUT_FLAGS and Path(argv[i + 1]).is_file()}
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    if result.stdout.startswith('{"_type"'):
        assert_valid_report(json.loads(result.stdout))
    builds = argv[0] in BUILDING_COMMANDS
    report_flag = "--report" if builds else "--out"
    if report_flag in argv and argv[0] != "convert":
        out = Path(argv[argv.index(report_flag) + 1])
        findings = argv[0] in REPORTS_FINDINGS and out.is_file() and str(out) not in existed
        if result.exit_code in (0, 4) or findings:
            doc = json.loads(out.read_text(encoding="utf-8"))
            assert_valid_report(doc)
            assert doc["predicate"]["exit_code"] == result.exit_code
        elif out.is_file() and existed.get(str(out)) != out.read_bytes():
            # a failed command leaves its error envelope where the report goes, never a
            # stale report nor a partial one
            doc = json.loads(out.read_text(encoding="utf-8"))
            assert_valid_report(doc)
            assert (doc["predicate"]["kind"], doc["predicate"]["verdict"]) == ("error", "error")
            assert doc["predicate"]["exit_code"] == result.exit_code, (doc, result.stderr)
    if builds and result.exit_code not in (0, 4):
        for flag in OUTPUT_FLAGS:
            if flag in argv and flag != report_flag:
                out = Path(argv[argv.index(flag) + 1])
                if str(out) not in existed:
                    assert not out.exists(), f"{out} left behind after exit {result.exit_code}"
    return Result(result.exit_code, result.stdout, result.stderr)


def assert_input_error(result: Result, *fragments: str) -> None:
    """Exit 3, one stderr line naming what is wrong, no traceback."""
    assert result.exit_code == 3, (result.exit_code, result.stdout, result.stderr)
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])


def assert_error_envelope(path: Path, code: int) -> None:
    """``path`` holds the error envelope a failed command leaves where its report goes."""
    pred = json.loads(Path(path).read_text(encoding="utf-8"))["predicate"]
    assert (pred["kind"], pred["verdict"], pred["exit_code"]) == ("error", "error", code), pred


def golden_reports() -> list[tuple[Path, dict]]:
    """Every golden file that is a report (written with ``--out`` or printed as JSON), with
    the report read back."""
    found = []
    for path in sorted((ROOT / "tests" / "golden" / "files").iterdir()):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(doc, dict) and "predicate" in doc:
            found.append((path, doc))
    return found


def report_rows(doc: dict) -> list[dict]:
    """A score report's rows in its order, as format v1 spelled them, whatever its format
    (what the API's ``query_rows`` reads); ``doc`` a report or its predicate."""
    from ragspan.app.score_reports import rows_by_id
    from ragspan.records.envelope import PREDICATE_TYPE, PREDICATE_TYPE_V1

    if "predicate" not in doc:  # a predicate: its details say its format
        doc = {"predicateType": PREDICATE_TYPE_V1 if "queries" in doc["details"]
               else PREDICATE_TYPE, "predicate": doc}
    return list(rows_by_id(doc).values())


def as_v1(doc: dict) -> dict:
    """A v2 score report as format v1 wrote it (its rows as ``details.queries``): what a stored
    baseline of an earlier release holds, and what a test tampers with row by row."""
    from ragspan.records.envelope import PREDICATE_TYPE_V1

    pred = doc["predicate"]
    details = {"queries": report_rows(doc)}
    if pred["kind"] == "score.span":
        details.update({k: pred["details"][k] for k in ("slices", "run_rows_without_query")
                        if k in pred["details"]})
    return {**doc, "predicateType": PREDICATE_TYPE_V1,
            "predicate": {**pred, "details": details}}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def assert_valid_report(doc: dict) -> None:
    from ragspan.report.envelope import validation_error

    assert validation_error(doc) is None, validation_error(doc)


def patch_everywhere(monkeypatch: pytest.MonkeyPatch, module, name: str, value) -> None:
    """Replace ``module.name`` and every loaded ragspan module's binding of the same object
    (modules import names at their top, so a substitute must reach each importer)."""
    import sys

    real = getattr(module, name)
    monkeypatch.setattr(module, name, value)
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("ragspan") and mod is not module and getattr(mod, name, None) is real:
            monkeypatch.setattr(mod, name, value)


CITIES = ("Leeds", "Utrecht", "Porto", "Lyon", "Graz", "Turku", "Gdansk", "Bergen", "Cork",
          "Basel", "Ghent", "Bilbao", "Malmo", "Brno", "Split", "Tartu")


class Contracts:
    """A corpus of ``n`` distinct small contracts and an eval set asking one question of
    each (its gold: the royalty clause), with runs built from texts (``run``)."""

    def __init__(self, tmp: Path, n: int = 12):
        self.tmp = tmp
        self.texts = {
            f"c{i:02d}": (f"Preamble {i}: this agreement is made in {CITIES[i % len(CITIES)]} "
                          f"between party {i}A and party {i}B. Clause {i}: the licensee pays "
                          f"royalty number {i} within {i + 10} days of each notice from "
                          f"{CITIES[(i + 5) % len(CITIES)]}. Closing words of contract {i}, "
                          f"signed on day {i + 3} of the year.")
            for i in range(n)}
        self.gold = {d: (t.index("Clause"), t.index(" Closing")) for d, t in self.texts.items()}
        self.corpus = write_jsonl(tmp / "corpus.jsonl",
                                  [{"id": d, "text": t} for d, t in self.texts.items()])
        self.evalset = write_jsonl(tmp / "eval.jsonl", [
            {"id": f"q{d}", "query": f"When is royalty {d} due?", "doc_id": d,
             "gold_spans": [list(self.gold[d])]} for d in self.texts])

    def clause(self, doc: str) -> str:
        lo, hi = self.gold[doc]
        return self.texts[doc][lo:hi]

    def run(self, name: str, items) -> Path:
        """A run whose rows are ``items(doc)``: the retrieved items of query ``q<doc>``."""
        return write_jsonl(self.tmp / name, [{"id": f"q{d}", "retrieved": items(d)}
                                             for d in self.texts])


def cuad_questions() -> tuple[dict[str, str], list[tuple[str, str, list[list[int]]]]]:
    """The shared CUAD contracts (``shared/data/cuad_dev``) and one question per
    (contract, category) of its unique clause pieces: ``(doc_id, category, spans)``, sorted,
    overlapping annotations merged into their union as the importers merge them."""
    from collections import defaultdict

    base = shared("cuad_dev")
    pieces = [json.loads(x) for x in (base / "clause_spans.jsonl").read_text("utf-8").splitlines()]
    groups = defaultdict(list)
    for s in pieces:
        if s["unique"]:
            groups[(s["doc_id"], s["category"])].append([s["start"], s["end"]])
    texts = {}
    for path in sorted((base / "contracts").glob("*.txt")):
        with open(path, encoding="utf-8", newline="") as fh:
            texts[path.name] = fh.read()
    questions = []
    for (doc, cat), spans in sorted(groups.items()):
        merged: list[list[int]] = []
        for s, e in sorted(spans):
            if merged and s < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        questions.append((doc, cat, merged))
    return texts, questions


# ---- the contributor's loop: every test over SLOW_SECONDS is marked slow (or model) -----------

SLOW_SECONDS = 10.0
_UNMARKED_SLOW: list[tuple[str, float]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.duration > SLOW_SECONDS \
            and not {"slow", "model"} & set(report.keywords):
        _UNMARKED_SLOW.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Name each test that took over SLOW_SECONDS without a slow or model marker (make
    test-fast would pay for it)."""
    for nodeid, seconds in _UNMARKED_SLOW:
        terminalreporter.write_line(f"unmarked slow test ({seconds:.1f} s > {SLOW_SECONDS:g} "
                                    f"s): {nodeid}: mark it slow, or make it smaller")
