"""Every command's outputs are byte-identical to the committed golden files.

The cases (``tests/golden/cases.py``) cover each command and each output format on the
bundled example and the gate fixtures (files in ``tests/golden/files/``), and on the shared
CUAD, trec_eval and SciFact data (sha256 in ``tests/golden/digests.json``). The golden
outputs were written by the code before the commands moved to ``ragspan.app``; a
refactor must leave them unchanged. Regenerate (``python tests/golden/make_golden.py``) only
for an intended change of output."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os

import pytest

from conftest import ROOT, SHARED
from golden.cases import CASES, EPOCH, prepare, run_case

GOLDEN = ROOT / "tests" / "golden"


def _runnable(case) -> str | None:
    if case.shared and not SHARED.is_dir():
        return f"shared data not available: {SHARED}"
    if case.needs and importlib.util.find_spec(case.needs) is None:
        return f"{case.needs} not installed"
    return None


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes] | str]:
    """Every runnable case, run in order in one scratch folder (later cases read what
    earlier ones wrote): its outputs, or why it did not run."""
    scratch = tmp_path_factory.mktemp("golden")
    prepare(str(scratch), str(ROOT), str(SHARED))
    results: dict[str, dict[str, bytes] | str] = {}
    cwd, epoch = os.getcwd(), os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = EPOCH
    os.chdir(scratch)
    try:
        for case in CASES:
            results[case.name] = _runnable(case) or run_case(case)
    finally:
        os.chdir(cwd)
        if epoch is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = epoch
    return results


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_output_is_golden(case, outputs) -> None:
    got = outputs[case.name]
    if isinstance(got, str):
        pytest.skip(got)
    if case.shared:
        pinned = json.loads((GOLDEN / "digests.json").read_text(encoding="utf-8"))[case.name]
        assert {k: hashlib.sha256(v).hexdigest() for k, v in got.items()} == pinned
        return
    for key, value in got.items():
        expected = (GOLDEN / "files" / f"{case.name}--{key}").read_bytes()
        assert value == expected, f"{case.name}: {key} differs from its golden file"


def test_every_command_has_a_golden_case() -> None:
    from ragspan.cli import cli

    covered = {c.args[0] for c in CASES}
    # sweep's outputs hold wall times at every level (run rows, score summaries, digests of
    # both): tests/test_sweep.py pins each file against run-retriever and score instead
    assert set(cli.commands) - {"sweep"} <= covered, set(cli.commands) - covered
    formats = {(c.args[0], c.args[c.args.index("--format") + 1]) for c in CASES
               if "--format" in c.args}
    for command in ("score", "compare", "validate", "leakage", "overlap"):
        assert {(command, f) for f in ("json", "table", "markdown")} <= formats, command


def test_golden_files_are_all_used() -> None:
    names = {f"{c.name}--{k}" for c in CASES if not c.shared
             for k in ("exit_code", "stdout", *c.outputs)}
    assert {p.name for p in (GOLDEN / "files").iterdir()} == names
    pinned = json.loads((GOLDEN / "digests.json").read_text(encoding="utf-8"))
    assert set(pinned) == {c.name for c in CASES if c.shared}
