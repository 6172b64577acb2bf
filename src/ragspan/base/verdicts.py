"""The one rule that turns a count of findings into a verdict, for ``leakage``, ``overlap``
and ``validate`` (``compare`` decides in ``gate.decide``).

A command passes while its findings number at most ``allowed``; past that it ends with
``fail`` (exit 4: a leak or a duplicate is a finding about the data, as a regression is) or
``error`` (exit 3: ``validate``'s errors say the eval set cannot be trusted as input).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragspan.base.errors import ExitCode


@dataclass(frozen=True)
class Verdict:
    verdict: str
    exit_code: ExitCode


PASS = Verdict("pass", ExitCode.OK)
EXCESS = {"fail": Verdict("fail", ExitCode.GATE_FAILED), "error": Verdict("error", ExitCode.INPUT)}


def findings_verdict(found: int, allowed: int = 0,
                     excess: Literal["fail", "error"] = "fail") -> Verdict:
    """``PASS`` when ``found <= allowed``, else the ``excess`` verdict (see the module
    docstring). Counts are of distinct things found (items, pairs, error findings)."""
    if found < 0 or allowed < 0:
        raise ValueError("counts are never negative")
    return PASS if found <= allowed else EXCESS[excess]
