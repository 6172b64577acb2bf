"""The Python API: the docs' example runs as written, and the calls give what the CLI
writes, byte for byte, from files or from in-memory rows."""

from __future__ import annotations

import doctest
import json

import pytest

from conftest import ROOT, run_cli


def test_the_docs_example_runs():
    failures, tried = doctest.testfile(str(ROOT / "docs" / "api.md"), module_relative=False,
                                       optionflags=doctest.ELLIPSIS)
    assert tried >= 8 and failures == 0


def test_score_and_compare_equal_the_cli(tmp_path):
    import ragspan

    fix = ROOT / "tests" / "fixtures" / "gate"
    out = tmp_path / "s.json"
    assert run_cli("score", "--eval-set", fix / "eval.jsonl", "--run", fix / "run-fail.jsonl",
                   "--corpus", fix / "corpus.jsonl", "--k", "1", "--out", out).exit_code == 0
    scored = ragspan.score(fix / "eval.jsonl", fix / "run-fail.jsonl", fix / "corpus.jsonl",
                           k=[1])
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["predicate"]["parameters"].pop("argv")[:2] == ["score", "--eval-set"]
    assert json.loads(scored.text()) == written  # the API records no command line
    rows = [json.loads(line) for line in (fix / "run-fail.jsonl").read_text().splitlines()]
    from_rows = ragspan.score(fix / "eval.jsonl", rows, fix / "corpus.jsonl", k=[1])
    assert from_rows.metrics == scored.metrics
    result = ragspan.compare(fix / "baseline.json", fix / "candidate-fail.json")
    cli = run_cli("compare", "--baseline", fix / "baseline.json", "--candidate",
                  fix / "candidate-fail.json", "--format", "json").json()["predicate"]
    api_summary = json.loads(json.dumps(result.summary()))
    # each surface says how to verify in its own terms; everything else is the CLI's
    assert "the Python API compares reports" in api_summary.pop("verification")["statement"]
    assert "--eval-set" in cli["summary"].pop("verification")["statement"]
    assert api_summary == cli["summary"]
    assert result.decision.verdict == cli["verdict"] == "fail"


def test_bad_rows_raise_the_cli_s_error():
    import ragspan
    from ragspan.base.errors import InputError

    corpus = [{"id": "c1", "text": "short"}]
    evalset = [{"id": "q1", "query": "q", "doc_id": "c1",
                "gold_spans": [{"doc_id": "c1", "start": 0, "end": 50}]}]
    run = [{"id": "q1", "retrieved": [{"doc_id": "c1", "start": 0, "end": 5}]}]
    with pytest.raises(InputError, match="past the end|outside|beyond|length"):
        ragspan.score(evalset, run, corpus, k=[1])
    with pytest.raises(TypeError, match="a path or a list of row dicts"):
        ragspan.score({"id": "q1"}, run, corpus)


@pytest.mark.parametrize("kwargs, api_says, cli_args, cli_says", [
    ({"candidate_is_baseline": True}, "pass allow_identical=True if",
     [], "pass --allow-identical if"),
    ({"budgets": {"complete_grounding@99": "2pt"}}, "budgets names 'complete_grounding@99'",
     ["--budget", "complete_grounding@99=2pt"], "--budget names 'complete_grounding@99'"),
    ({"anchor_budget": "5pt"}, "anchor_budget needs anchor (",
     ["--anchor-budget", "5pt"], "--anchor-budget needs --anchor ("),
    ({"mode": "threshold", "correction": "max-t"},
     'correction="max-t" adjusts the interval mode\'s bounds; with mode="threshold"',
     ["--mode", "threshold", "--correction", "max-t"],
     "--correction max-t adjusts the interval mode's bounds; with --mode threshold"),
])
def test_the_gate_names_settings_as_the_caller_spells_them(kwargs, api_says, cli_args,
                                                           cli_says, tmp_path):
    """The gate speaks of settings by name: the Python API's caller reads the keyword it
    passes, the command line's user the flag; neither is told about the other's spelling."""
    import ragspan
    from ragspan.base.errors import UsageError

    fix = ROOT / "tests" / "fixtures" / "gate"
    same = kwargs.pop("candidate_is_baseline", False)
    candidate = fix / "candidate-fail.json"
    if same:  # another file with the same bytes
        candidate = tmp_path / "copy.json"
        candidate.write_bytes((fix / "baseline.json").read_bytes())
    with pytest.raises(UsageError) as caught:
        ragspan.compare(fix / "baseline.json", candidate, **kwargs)
    assert api_says in str(caught.value) and "--" not in str(caught.value)
    result = run_cli("compare", "--baseline", fix / "baseline.json", "--candidate", candidate,
                     *cli_args)
    assert result.exit_code == 2 and cli_says in result.stderr, result.stderr


@pytest.mark.parametrize("kwargs, api_says", [
    ({"eval_set": None}, "give exactly one of eval_set (span level) or qrels (doc level)"),
    ({"eval_set": None, "qrels": "q0 0 d0 1\n", "chunks": []},
     "chunks labels span-level failures: give it with eval_set and a span run"),
])
def test_score_names_its_arguments_as_the_caller_spells_them(kwargs, api_says):
    """``score``'s own usage errors, said to a Python caller, name its keywords, never the
    command line's flags."""
    import ragspan
    from ragspan.base.errors import UsageError

    args = {"eval_set": [{"id": "q0", "query": "?", "gold_spans": []}],
            "run": [{"id": "q0", "retrieved": []}], **kwargs}
    with pytest.raises(UsageError) as caught:
        ragspan.score(args.pop("eval_set"), args.pop("run"), **args)
    assert api_says in str(caught.value) and "--" not in str(caught.value)


def test_import_ragspan_loads_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys, ragspan\nheavy = [m for m in ('numpy', 'scipy', 'click', 'jsonschema')"
            " if m in sys.modules]\nprint(heavy)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.stdout.strip() == "[]", res.stdout


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["predicate"]["details"]["metrics"]["complete_grounding@1"].__setitem__(0, "x"),
     "$.predicate.details.metrics['complete_grounding@1'][0]: 'x' is not of type"),
    (lambda d: d["predicate"].pop("summary"), "$.predicate: 'summary' is a required property"),
    (lambda d: d["predicate"]["summary"].update({"queries": float("nan")}), "not a JSON value"),
    (lambda d: d.pop("_type"), "$: '_type' is a required property"),
])
def test_a_malformed_report_dict_is_an_input_error_naming_its_path(mutate, where):
    """``ragspan.read_score_report(dict)`` and ``ragspan.compare(dict, ...)`` raised
    ``RuntimeError: internal error`` on a caller's malformed report, where a file gets an
    input error: now the same error, naming "the report given" and the JSON path."""
    import copy

    import ragspan
    from ragspan.base.errors import InputError

    doc = json.loads((ROOT / "tests" / "fixtures" / "gate" / "baseline.json").read_text())
    bad = copy.deepcopy(doc)
    mutate(bad)
    with pytest.raises(InputError, match="^the report given: .*" + __import__("re").escape(where)):
        ragspan.read_score_report(bad)
    with pytest.raises(InputError, match="^the report given: "):
        ragspan.compare(bad, doc)
    with pytest.raises(InputError, match="a report is a JSON object"):
        ragspan.read_score_report([1])
