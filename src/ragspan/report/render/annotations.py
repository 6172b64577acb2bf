"""A compare report as GitHub Actions workflow commands (``github_annotations``): what a
pull request's checks page shows beside the job. GitHub keeps 10 annotations of a kind per
step and 50 per job, dropping the rest without a word, so at most ``LIMIT`` ``::error``
lines (the failing metrics, slices and reasons, largest drops first) and ``LIMIT``
``::warning`` lines (the inconclusive ones, largest drops first) are written, then one
``::notice`` naming how many more the report holds; an override is said first, as a
``::notice`` of its own (who set which label, what it overrode). Data and properties are escaped as
GitHub's toolkit escapes them (``%``, CR and LF in both; ``:`` and ``,`` in properties), so no
text from the reports can end a command or start another."""

from __future__ import annotations

from ragspan.records.compare import ComparePredicate
from ragspan.records.compare_details import Outcome
from ragspan.report.render.provenance import override_line
from ragspan.scoring.metrics.registry import parse_name

LIMIT = 10


def escape_data(text: str) -> str:
    """A command's message, as ``@actions/core`` escapes it (``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A command's property value, as ``@actions/core`` escapes it (``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _drop(metrics: dict[str, Outcome], name: str) -> float:
    """A metric's drop, for the order (a 0-1 metric's in points; else relative)."""
    m = metrics.get(name)
    try:
        spec = parse_name(name).spec
    except ValueError:
        return 0.0
    delta, base = (0.0, 0.0) if m is None else (m.delta, m.baseline)
    down = -delta if spec.higher_is_better else delta
    return down if spec.bounded else down / max(abs(base), 1e-12)


def _metric_of(reason: str, metrics: dict[str, Outcome]) -> str | None:
    body = reason.split("): ", 1)[1] if reason.startswith("slice ") and "): " in reason \
        else reason
    name = body.split(" ", 1)[0]
    return name if name in metrics else None


def _lines(kind: str, reasons: list[str], metrics: dict[str, Outcome]) -> list[str]:
    ranked = sorted(reasons, key=lambda r: -_drop(metrics, _metric_of(r, metrics) or ""))
    out = []
    for reason in ranked:
        metric = _metric_of(reason, metrics)
        title = f"ragspan {'FAIL' if kind == 'error' else 'INCONCLUSIVE'}" + \
            (f": {metric}" if metric else "")
        out.append(f"::{kind} title={escape_property(title)}::{escape_data(reason)}")
    return out


def github_annotations(pred: ComparePredicate, limit: int = LIMIT) -> list[str]:
    """The workflow command lines of a compare report's predicate (module docstring)."""
    summary = pred.summary
    metrics = summary.metrics
    errors = _lines("error", list(summary.reasons), metrics)
    warnings = _lines("warning", list(summary.inconclusive or []), metrics)
    more = max(0, len(errors) - limit) + max(0, len(warnings) - limit)
    lines = errors[:limit] + warnings[:limit]
    if more:
        lines.append(f"::notice title=ragspan::{more} more finding{'s' if more != 1 else ''} "
                     "(failures and inconclusive metrics) are in the compare report, beyond "
                     f"the {limit} of each kind shown here")
    overridden = override_line(summary)
    if overridden:  # a notice: never crowded out by the findings it overrides
        lines.insert(0, f"::notice title={escape_property('ragspan override')}::"
                        f"{escape_data(overridden)}")
    return lines
