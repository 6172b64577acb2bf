"""What a report holds before it becomes an envelope: its inputs and its body.

The core returns a ``ReportBody``; only ``ragspan.app`` turns one into an in-toto
Statement (``ragspan.report.envelope.statement_of``). ``verdict`` and ``exit_code`` must agree:
``pass`` with 0, ``fail`` with 4, ``error`` with 3 (``ragspan.base.verdicts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from msgspec import Struct

from ragspan.base.errors import ExitCode


@dataclass(frozen=True)
class InputRef:
    """One input file of a report and its role (``eval_set``, ``run``, ``corpus``, ``qrels``,
    ``chunks``, ``baseline``, ``candidate``...)."""

    role: str
    name: str
    sha256: str

    def as_json(self) -> dict[str, Any]:
        return {"role": self.role, "name": self.name, "digest": {"sha256": self.sha256}}


@dataclass(frozen=True)
class ReportBody:
    """A report's kind, subject, inputs, parameters, summary, details and verdict."""

    kind: str
    subject: Sequence[InputRef]
    inputs: Sequence[InputRef]
    parameters: Struct  # the kind's records (``ragspan.records``)
    summary: Struct
    details: Struct
    verdict: str = "pass"
    exit_code: int = ExitCode.OK
