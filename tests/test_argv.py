"""``parameters.argv``: every report the CLI writes records its command line, secrets and
output destinations taken out, so the same inputs still give the same bytes."""

from __future__ import annotations

import json

from conftest import ROOT, run_cli
from ragspan.base.argv import outputs_elided, redacted

FIX = ROOT / "tests" / "fixtures" / "gate"


def test_secrets_are_taken_out():
    assert redacted(["run-retriever", "--qdrant-url", "https://me:s3cret@db.example:6333",
                     "--api-key", "abc", "--auth-token=xyz", "--keep-collection",
                     "--k", "5"]) == [
        "run-retriever", "--qdrant-url", "https://***@db.example:6333", "--api-key", "***",
        "--auth-token=***", "--keep-collection", "--k", "5"]
    assert redacted(["score", "--eval-set", "keys.jsonl"]) == ["score", "--eval-set",
                                                             "keys.jsonl"]


def test_outputs_are_elided():
    assert outputs_elided(["score", "--out", "a.json", "--report=b.json", "--k", "1"],
                          ["--out", "--report"]) == ["score", "--out", "<output>",
                                                     "--report=<output>", "--k", "1"]


def test_a_report_records_its_command_line_and_stays_byte_identical(tmp_path):
    args = ["score", "--eval-set", FIX / "eval.jsonl", "--run", FIX / "run-baseline.jsonl",
            "--k", "1"]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run_cli(*args, "--out", a).exit_code == 0
    assert run_cli(*args, "--out", b).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    argv = json.loads(a.read_text())["predicate"]["parameters"]["argv"]
    assert argv == [*map(str, args), "--out", "<output>"]
    shown = run_cli(*args, "--format", "json").json()  # printed, not written: the same line
    assert shown["predicate"]["parameters"]["argv"] == list(map(str, args)) + ["--format",
                                                                                 "json"]
