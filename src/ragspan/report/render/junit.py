"""A compare report as JUnit XML (``junit_xml``), the file GitLab, Jenkins, Buildkite, Azure
DevOps and GitHub's test reporters show without a comment bot; and the JUnit file of a
compare that stopped on an error (``junit_error``).

One ``<testsuite>`` per gate run (inside ``<testsuites>``), one ``<testcase>`` per gated
metric and per gated slice value, and one per reason the verdict failed that belongs to no
metric (the retrieval budget, the budget trap, a corpus edit past its bound, the anchor):

- FAIL: ``<failure>``, its message the metric, the cutoff that decided it (the character
  cutoff where the count cutoff was decided at equal budget), the drop with the bounds of
  its change and the budget; the most-regressed queries in ``<system-out>``;
- INCONCLUSIVE: ``<skipped>``, its message the bounds and what this n can detect (the
  smallest true drop that fails with probability 0.8); a ``<failure>`` instead under
  ``--on-inconclusive fail``, as the verdict then fails the job;
- PASS: the test case alone;
- an input error: one test case with ``<error>`` and the message.

The suite's properties and ``<system-out>`` state where both reports were made, which base
the baseline is and its age (``summary.provenance``), and an override: its label, who set it
and what it overrode; an applied override also heads every failure's message, as the
failures stay (the verdict stays FAIL; only the job passes).

Attributes count the cases (``tests``, ``failures``, ``errors``, ``skipped``); the suite's
``timestamp`` is the report's ``created_at`` (``SOURCE_DATE_EPOCH`` pins it), so the same
report gives the same bytes. Text from the reports (query ids, questions, documents) is
escaped by the XML writer, and characters XML 1.0 cannot hold are written as U+FFFD.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from msgspec import UNSET

from ragspan.records.compare import ComparePredicate, CompareSummary
from ragspan.report.render.provenance import override_line, override_mark, provenance_lines
from ragspan.scoring.metrics.registry import parse_name

SUITE = "ragspan gate"
CLASS = "ragspan.gate"
SHOWN_QUERIES = 10
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any) -> str:
    """A value as text XML 1.0 can hold."""
    return _NOT_XML.sub("\ufffd", str(value))


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", {"classname": _text(classname),
                                             "name": _text(name), "time": "0"})


def _outcome(case: ET.Element, tag: str, message: str, kind: str, body: str = "") -> None:
    element = ET.SubElement(case, tag, {"message": _text(message), "type": kind})
    element.text = _text(body or message)


def _regressed(pred: ComparePredicate) -> str:
    """The most-regressed queries of the primary metric, one a line."""
    rows = pred.details.most_regressed
    primary = pred.summary.primary_metric
    lines = [f"most regressed queries ({primary}):"] if rows else []
    for q in rows[:SHOWN_QUERIES]:
        label = f" [{q.label}]" if q.label else ""
        lines.append(f"  {q.id}: {q.baseline:.2f} -> {q.candidate:.2f}{label}  "
                     f"{(q.query or '')[:100]}")
    if len(rows) > SHOWN_QUERIES:
        lines.append(f"  ... {len(rows) - SHOWN_QUERIES} more in the JSON report")
    return "\n".join(lines)


def _decided_at(summary: CompareSummary, name: str) -> str:
    """Where a metric at a character cutoff was decided from (``k = 5 at equal budget``)."""
    budget = summary.retrieval_budget
    decided = (budget.decided_at or {}) if budget is not UNSET else {}
    at = str(parse_name(name).k)
    ks = [k for k, cut in decided.items() if cut == at]
    return f" (k = {', '.join(ks)} decided at equal budget, {at})" if ks else ""


def _detectable(summary: CompareSummary, name: str) -> str:
    power = (summary.power or {}).get(name)
    if power is None or power.minimum_detectable_drop is None:
        return ""
    return (f"; with {power.queries} queries this n detects a true drop of "
            f"{100 * power.minimum_detectable_drop:.2f}pt or more with probability "
            f"{power.power:g}")


def _reason_of(reasons: list[str], name: str) -> str | None:
    return next((r for r in reasons if r.startswith(f"{name} ")), None)


def _metric_cases(suite: ET.Element, pred: ComparePredicate, strict: bool) -> None:
    summary = pred.summary
    reasons, unsure = summary.reasons, summary.inconclusive or []
    primary = summary.primary_metric
    for name, m in summary.metrics.items():
        if not m.gated:
            continue
        case = _case(suite, CLASS, name)
        where = _decided_at(summary, name)
        if m.failed:
            said = _reason_of(reasons, name) or f"{name} failed (budget {m.budget})"
            _outcome(case, "failure", said + where, "regression")
            if name == primary and pred.details.most_regressed:
                ET.SubElement(case, "system-out").text = _text(_regressed(pred))
        elif m.decision == "inconclusive":
            said = (_reason_of(unsure, name) or f"{name} inconclusive") + where + \
                _detectable(summary, name)
            if strict:
                _outcome(case, "failure", "inconclusive: " + said, "inconclusive")
            else:
                ET.SubElement(case, "skipped", {"message": _text("inconclusive: " + said)})


def _slice_cases(suite: ET.Element, pred: ComparePredicate, strict: bool) -> None:
    summary = pred.summary
    reasons, unsure = summary.reasons, summary.inconclusive or []
    for key, values in pred.details.slices.items():
        for value, part in values.items():
            if not part.gated:
                continue
            where = f"slice {key}={value} ({part.count} queries): "
            for name, m in part.metrics.items():
                case = _case(suite, f"{CLASS}.slices.{key}", f"{name} [{key}={value}]")
                if m.failed:
                    said = _reason_of([r.removeprefix(where) for r in reasons
                                       if r.startswith(where)], name) or f"{name} failed"
                    _outcome(case, "failure", where + said, "regression")
                elif m.decision == "inconclusive":
                    said = _reason_of([r.removeprefix(where) for r in unsure
                                       if r.startswith(where)], name) or f"{name} inconclusive"
                    if strict:
                        _outcome(case, "failure", "inconclusive: " + where + said, "inconclusive")
                    else:
                        ET.SubElement(case, "skipped",
                                      {"message": _text("inconclusive: " + where + said)})


OTHER = (("retrieval budget trap", "retrieval budget trap"),
         ("retrieval budget changed", "retrieval budget"),
         ("the corpus edit left", "corpus edit"),
         ("against the anchor", "anchor"))


def _other_cases(suite: ET.Element, pred: ComparePredicate) -> None:
    """A case per failing reason that belongs to no metric or slice case."""
    summary = pred.summary
    gated = [n for n, m in summary.metrics.items() if m.gated]
    for reason in summary.reasons:
        if reason.startswith("slice ") or any(reason.startswith(f"{n} ") for n in gated):
            continue
        name = next((case for prefix, case in OTHER if reason.startswith(prefix)), "verdict")
        _outcome(_case(suite, CLASS, name), "failure", reason, "regression")


def _counted(suites: ET.Element, suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    counts = {"tests": len(cases),
              "failures": sum(1 for c in cases if c.find("failure") is not None),
              "errors": sum(1 for c in cases if c.find("error") is not None),
              "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
    for element in (suites, suite):
        for key, value in counts.items():
            element.set(key, str(value))
    suite.set("time", "0")


def _written(suites: ET.Element) -> str:
    ET.indent(suites, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + \
        ET.tostring(suites, encoding="unicode") + "\n"


def junit_xml(pred: ComparePredicate) -> str:
    """The compare report's predicate ``pred`` as JUnit XML (module docstring)."""
    summary = pred.summary
    suites = ET.Element("testsuites", {"name": "ragspan"})
    suite = ET.SubElement(suites, "testsuite", {"name": SUITE,
                                                "timestamp": pred.created_at.rstrip("Z")})
    props = ET.SubElement(suite, "properties")
    said = {"verdict": summary.verdict, "exit_code": pred.exit_code,
            "queries": summary.queries, "primary_metric": summary.primary_metric,
            "verification": None if summary.verification is UNSET
            else summary.verification.statement}
    for key, value in said.items():
        if value is not None:
            ET.SubElement(props, "property", {"name": key, "value": _text(value)})
    for key, value in _said_too(summary).items():
        ET.SubElement(props, "property", {"name": key, "value": _text(value)})
    strict = pred.parameters.on_inconclusive == "fail"
    _metric_cases(suite, pred, strict)
    _slice_cases(suite, pred, strict)
    _other_cases(suite, pred)
    if not suite.findall("testcase"):  # nothing gated (--no-gate): the run itself
        _case(suite, CLASS, "compare")
    overridden, mark = override_line(summary), override_mark(summary)
    if mark:
        for failure in suite.iter("failure"):
            failure.set("message", _text(f"[{mark}] {failure.get('message', '')}"))
    told = ([overridden] if overridden else []) + provenance_lines(summary)
    if told:
        ET.SubElement(suite, "system-out").text = _text("\n".join(told))
    _counted(suites, suite)
    return _written(suites)


def _said_too(summary: CompareSummary) -> dict[str, str | float]:
    """The provenance and the override as suite properties (what a reporter lists)."""
    out: dict[str, str | float] = {}
    p = summary.provenance
    if p is not UNSET:
        for role, where in (("baseline", p.baseline), ("candidate", p.candidate)):
            if where is None:
                continue
            out[f"{role}_commit"] = where.commit
            if where.ref is not None:
                out[f"{role}_ref"] = where.ref
            if where.committed_at is not UNSET:
                out[f"{role}_committed_at"] = where.committed_at
            out[f"{role}_dirty"] = str(where.dirty).lower()
        for key, value in (("baseline_is", p.baseline_is),
                           ("baseline_age_days", p.baseline_age_days),
                           ("max_baseline_age_days", p.max_baseline_age_days)):
            if value is not UNSET:
                out[key] = value
    o = summary.override
    if o is not UNSET:
        out.update(override_label=o.label, override_applied=str(o.applied).lower())
        if o.actor:
            out["override_actor"] = o.actor
    return out


def junit_error(command: str, message: str, created_at: str) -> str:
    """The JUnit file of a command that stopped on an error: one case with ``<error>``."""
    suites = ET.Element("testsuites", {"name": "ragspan"})
    suite = ET.SubElement(suites, "testsuite", {"name": SUITE,
                                                "timestamp": created_at.rstrip("Z")})
    case = _case(suite, CLASS, command)
    _outcome(case, "error", message, "error")
    _counted(suites, suite)
    return _written(suites)
