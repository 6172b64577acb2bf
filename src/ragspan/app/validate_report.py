"""``ragspan validate-report``: is this file a valid ragspan report?"""

from __future__ import annotations

from ragspan.report.envelope import read_report


def run(report: str) -> str:
    """The line to print for a valid report; an invalid one raises InputError (exit 3)."""
    doc = read_report(report)
    return f"{report}: valid ({doc['predicate']['kind']})"
