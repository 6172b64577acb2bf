"""``compare --junit FILE``: the verdict as JUnit XML, checked against the JUnit schema CI
reporters read (tests/fixtures/junit/junit.xsd, with lxml) and read back by a real JUnit
consumer (junitparser), its counts agreeing with the JSON verdict for FAIL, PASS,
INCONCLUSIVE and an input error."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, run_cli

etree = pytest.importorskip("lxml.etree")
junitparser = pytest.importorskip("junitparser")
FIX = ROOT / "tests" / "fixtures" / "gate"
XSD = ROOT / "tests" / "fixtures" / "junit" / "junit.xsd"


def _valid(path):
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    doc = etree.parse(str(path))
    assert schema.validate(doc), schema.error_log
    return junitparser.JUnitXml.fromfile(str(path))


def _cases(xml):
    return {case.name: case for suite in xml for case in suite}


def _gate(tmp_path, candidate, *flags):
    junit, out = tmp_path / "junit.xml", tmp_path / "compare.json"
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate", candidate,
                  "--no-config", "--junit", junit, "--out", out, "--format", "json", *flags)
    return res, junit, out


def test_a_fail_is_a_failure_naming_metric_bounds_and_budget(tmp_path):
    res, junit, out = _gate(tmp_path, FIX / "candidate-fail.json")
    assert res.exit_code == 4
    xml = _valid(junit)
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (1, 1, 0, 0)
    case = _cases(xml)["complete_grounding@1"]
    (failure,) = case.result
    assert isinstance(failure, junitparser.Failure)
    assert "complete_grounding@1 dropped 26.67pt" in failure.message
    assert "bounds of its change, [-26.67pt, -13.33pt]" in failure.message
    assert "over the budget 2pt" in failure.message
    assert "most regressed queries (complete_grounding@1)" in case.system_out
    assert json.loads(out.read_text())["predicate"]["verdict"] == "fail"
    again = tmp_path / "again.xml"
    run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
            FIX / "candidate-fail.json", "--no-config", "--junit", again)
    assert again.read_bytes() == junit.read_bytes()  # the same report, the same bytes


def test_a_pass_and_an_inconclusive(tmp_path):
    res, junit, _ = _gate(tmp_path, FIX / "candidate-pass.json", "--budget",
                          "complete_grounding=7pt")
    assert res.exit_code == 0
    xml = _valid(junit)
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (1, 0, 0, 0)
    res, junit, out = _gate(tmp_path, FIX / "candidate-pass.json")
    assert json.loads(out.read_text())["predicate"]["verdict"] == "inconclusive"
    xml = _valid(junit)
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (1, 0, 0, 1)
    (skipped,) = _cases(xml)["complete_grounding@1"].result
    assert isinstance(skipped, junitparser.Skipped)
    assert "this n detects a true drop of 11.92pt or more" in skipped.message
    # --on-inconclusive fail makes it a failure, as it fails the job
    res, junit, _ = _gate(tmp_path, FIX / "candidate-pass.json", "--on-inconclusive", "fail")
    assert res.exit_code == 4
    xml = _valid(junit)
    assert (xml.failures, xml.skipped) == (1, 0)


def test_gated_slices_are_cases_of_their_own(tmp_path):
    res, junit, out = _gate(tmp_path, FIX / "candidate-fail.json", "--gate-slices", "part",
                            "--min-slice-size", "5")
    xml = _valid(junit)
    names = set(_cases(xml))
    slices = json.loads(out.read_text())["predicate"]["details"]["slices"]["part"]
    gated = {f"complete_grounding@1 [part={v}]" for v, p in slices.items() if p["gated"]}
    assert gated and gated <= names
    assert xml.tests == 1 + len(gated)


def test_an_input_error_is_an_error_case(tmp_path):
    junit = tmp_path / "junit.xml"
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  tmp_path / "missing.json", "--no-config", "--junit", junit)
    assert res.exit_code == 3
    xml = _valid(junit)
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (1, 0, 1, 0)
    (error,) = _cases(xml)["compare"].result
    assert isinstance(error, junitparser.Error) and "missing.json" in error.message


def test_text_xml_cannot_hold_is_replaced():
    from ragspan.report.render.junit import _text

    assert _text("q\x01<&>") == "q\ufffd<&>"  # the writer escapes <, & and >


def test_annotations_are_capped_ordered_and_escaped():
    """GitHub keeps 10 annotations of a kind per step: at most 10 errors and 10 warnings,
    largest drops first, then one notice naming how many more the report holds; data and
    properties escaped as GitHub's toolkit escapes them."""
    from msgspec.structs import replace

    from ragspan.records.compare import ComparePredicate
    from ragspan.records.envelope import decode
    from ragspan.report.render.annotations import escape_property, github_annotations

    golden = ROOT / "tests" / "golden" / "files" / "compare-fail.json--compare-fail.json"
    pred = decode(json.loads(golden.read_text(encoding="utf-8"))["predicate"], ComparePredicate)
    one = next(iter(pred.summary.metrics.values()))
    metrics = {f"complete_grounding@{k}": replace(one, name=f"complete_grounding@{k}",
                                                  delta=-k / 100, baseline=0.9)
               for k in range(1, 14)}
    reasons = [f"complete_grounding@{k} dropped {k}pt: query 'a%b\nc'" for k in range(1, 14)]
    unsure = [f"complete_grounding@{k} rose 1pt" for k in range(1, 4)]
    lines = github_annotations(replace(pred, summary=replace(
        pred.summary, metrics=metrics, reasons=reasons, inconclusive=unsure)))
    errors = [x for x in lines if x.startswith("::error ")]
    assert len(errors) == 10 and len([x for x in lines if x.startswith("::warning ")]) == 3
    assert errors[0].startswith("::error title=ragspan FAIL%3A complete_grounding@13::")
    assert "query 'a%25b%0Ac'" in errors[0] and "\n" not in "".join(lines)
    assert lines[-1] == ("::notice title=ragspan::3 more findings (failures and inconclusive "
                         "metrics) are in the compare report, beyond the 10 of each kind "
                         "shown here")
    assert escape_property("a:b,c%\r") == "a%3Ab%2Cc%25%0D"


def test_annotations_on_the_command_line(tmp_path, monkeypatch):
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "candidate-fail.json", "--no-config", "--format", "json")
    assert "::error" not in res.stderr  # off by default off GitHub Actions
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "candidate-fail.json", "--no-config", "--format", "json")
    assert res.stderr.startswith("::error title=ragspan FAIL%3A complete_grounding@1::")
    res = run_cli("compare", "--baseline", FIX / "baseline.json", "--candidate",
                  FIX / "candidate-fail.json", "--no-config", "--annotations", "none")
    assert "::error" not in res.stderr
