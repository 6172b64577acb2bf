"""The verdict's provenance and override in words, as every rendering says them (markdown,
table, JUnit): which commit each report was scored at, which base the baseline is and its age
(``provenance_lines``); who overrode what (``override_line``). Plain text: each renderer
escapes it for its own format."""

from __future__ import annotations

from msgspec import UNSET

from ragspan.records.compare import CompareSummary, Override
from ragspan.records.score import Provenance

BASES = {"base-tip": "the base branch's tip", "merge-base": "the merge base"}


def _side(role: str, where: Provenance | None) -> str:
    if where is None:
        return f"{role}: no provenance recorded"
    ref = f" on {where.ref}" if where.ref else " (detached)"
    when = f", committed {where.committed_at}" if where.committed_at else ""
    dirty = ", with uncommitted changes" if where.dirty else ""
    return f"{role}: commit {where.commit[:12]}{ref}{when}{dirty}"


def provenance_lines(summary: CompareSummary) -> list[str]:
    """One line per report, then the baseline's base and age (none without provenance)."""
    p = summary.provenance
    if p is UNSET:
        return []
    lines = [_side("baseline", p.baseline), _side("candidate", p.candidate)]
    said = []
    if p.baseline_is:
        said.append(f"the baseline is {BASES.get(p.baseline_is, p.baseline_is)}")
    if p.baseline_age_days is not UNSET and p.max_baseline_age_days is not UNSET:
        said.append(f"its commit is {p.baseline_age_days:g} days old at this compare "
                    f"(warned past {p.max_baseline_age_days:g})")
    if said:
        lines.append("; ".join(said))
    return lines


def _who(o: Override) -> str:
    return f"set by {o.actor}" if o.actor else "who set it is not known"


def override_mark(summary: CompareSummary) -> str | None:
    """``OVERRIDDEN by the label 'L' (set by A)`` when an override applied, else None."""
    o = summary.override
    if o is UNSET or not o.applied:
        return None
    return f"OVERRIDDEN by the label '{o.label}' ({_who(o)})"


def override_line(summary: CompareSummary) -> str | None:
    """Who overrode what, or that the label had nothing to override (None: no label)."""
    o = summary.override
    if o is UNSET:
        return None
    mark = override_mark(summary)
    if mark is None or o.overrode is None:
        return (f"override label '{o.label}' ({_who(o)}): the verdict is "
                f"{summary.verdict.upper()}, nothing to override")
    was = o.overrode
    reasons = "; ".join(was.reasons) or "no reason recorded"
    return (f"{mark}: the verdict stays {was.verdict.upper()} (exit {was.exit_code}) "
            f"and the job passes; it overrode: {reasons}")
