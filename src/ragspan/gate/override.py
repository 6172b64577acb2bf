"""The audited override (``override_of``): a pull-request label, named by the trusted side's
``override-label`` setting, lets the job pass while the verdict stays what it is. Without the
setting no override exists, whatever labels the pull request carries. What it records is
said in every output: the label, who set it (when the caller knows), and what it overrode
(the verdict, its exit code and its reasons). The report's own verdict and exit code never
change: the front end that runs the job (the Action, the recipes) reads ``applied``."""

from __future__ import annotations

from collections.abc import Sequence

from ragspan.gate.decision import GateDecision
from ragspan.records.compare import Override, Overrode


def override_of(setting: str | None, labels: Sequence[str], actor: str | None,
                decision: GateDecision) -> tuple[Override | None, list[str]]:
    """The override record for the compare report's summary (or None) and the notes it adds.
    ``setting``: the configured label (None: no override exists); ``labels``: the pull
    request's labels, as the caller read them; ``actor``: who set the label, when known.
    Labels match as GitHub names them: case-insensitively, surrounding spaces ignored. An
    override applies to a failing exit (a FAIL, or INCONCLUSIVE under ``on-inconclusive =
    fail``); on a passing one the label is recorded as having nothing to override."""
    if setting is None:
        return None, []
    wanted = setting.strip().casefold()
    found = next((label.strip() for label in labels if label.strip().casefold() == wanted),
                 None)
    if found is None:
        return None, []
    failing = int(decision.exit_code) != 0
    record = Override(label=found, actor=actor, applied=failing,
                      overrode=Overrode(verdict=decision.verdict,
                                        exit_code=int(decision.exit_code),
                                        reasons=list(decision.reasons)) if failing else None)
    who = f" by {actor}" if actor else " (who set it is not known)"
    if failing:
        return record, [f"OVERRIDDEN: the label '{found}' was set{who}; the verdict stays "
                        f"{decision.verdict.upper()} (exit {int(decision.exit_code)}) and the "
                        "job passes"]
    return record, [f"the override label '{found}' is set{who}, but the verdict is "
                    f"{decision.verdict.upper()}: nothing to override"]
