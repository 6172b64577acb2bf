"""The ``report`` command's own report (what the readout it wrote states) as typed records:
per configuration its complete grounding at the readout's cutoff with the 95% interval, the
backlog of levers with their measured deltas, and the family of pairwise bounds when the
readout compared every pair (``app.report.summary_of`` builds them by keyword)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from ragspan.records.envelope import Finite, Predicate
from ragspan.records.score_facts import Count


class ReadoutConfiguration(Struct, kw_only=True):
    """One configuration (a score report): its name, its complete grounding at the readout's
    cutoff (``parameters.k``) with the 95% interval, its pipeline's digest (None: its run
    recorded none) and the score report's sha256."""

    name: str
    complete_grounding: Finite
    ci95: list[Finite]
    config_digest: str | None
    score_sha256: str


class Measured(Struct, kw_only=True, rename={"from_": "from"}):
    """A lever's measured effect: the change of complete grounding from one configuration to
    another and its p-value (None: no test ran)."""

    from_: str
    to: str
    delta: Finite
    p_value: Finite | None


class Lever(Struct, kw_only=True):
    """A lever of the backlog: the failing questions it accounts for and its measured
    effects."""

    lever: str
    accounts_for: Count
    measured: list[Measured]


class FamilyPair(Struct, kw_only=True, rename={"from_": "from"}):
    """One pair of the family: its one-sided bounds on the drop and whether the difference
    survives the family's correction."""

    from_: str
    to: str
    drop_low: Finite
    drop_high: Finite
    survives: bool


class Family(Struct, kw_only=True):
    """Every pair compared (``--all-pairs``): the level, each bound's error rate over the
    family, its size, the sampling unit and the pairs."""

    alpha: Finite
    bound_alpha: Finite
    size: Count
    unit: str
    pairs: list[FamilyPair]


class ReadoutParameters(Struct, kw_only=True, omit_defaults=True):
    """The readout's cutoff, audience, file format and baseline; whether every pair was
    compared; the client readout's format when one was written beside it."""

    k: int
    audience: str
    format: str
    baseline: str
    all_pairs: bool | UnsetType = UNSET
    client_format: str | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET


class ReadoutSummary(Struct, kw_only=True, omit_defaults=True):
    """The configurations, the baseline's name, the backlog and the family."""

    configurations: list[ReadoutConfiguration]
    baseline: str
    backlog: list[Lever]
    family: Family | UnsetType = UNSET


class ReadoutDetails(Struct):
    """Nothing beyond the summary: the readout itself is the file written."""


ReadoutPredicate = Predicate[ReadoutParameters, ReadoutSummary, ReadoutDetails]
