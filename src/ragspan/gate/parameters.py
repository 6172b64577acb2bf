"""Which recorded scoring parameters two reports must share (``compare_parameters``).

Every field of a score report's ``parameters`` is compared, unless ``NOT_COMPARED`` lists it
with the reason it changes no number the gate decides from; a field the gate does not know
is compared too (fail closed). A field one report leaves out stands for the value it is
written without (``ABSENT``: no ``anchoring`` is the default placement rule). A difference
is an input error naming both values, unless the ``allow-parameter-change`` setting accepts
that field (``k`` never: the reports must be cut at the same cutoffs), which the verdict then
states.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragspan.base.canonical import canonical_dumps
from ragspan.base.placement import anchoring

NOT_COMPARED: dict[str, str] = {
    "argv": "how the command was typed, not what it scored with",
    "provenance": "where the report was made (its git commit), not what it scored with",
    "run_config": "the retrieval pipeline under test: what the comparison is about",
    "first_stage": "whether the run had a first stage, part of the retrieval under test "
                   "(the _first_stage metrics are compared where both reports carry them)",
    "level": "the report's kind (span or doc), compared as the kind",
    "run_format": "the run file's format: TREC and JSON lines give the same ranking",
    "trec_eval_equivalents": "the trec_eval names of the doc metrics, fixed text",
    "chunks": "whether the failure labels had the chunk manifest; no metric changes",
    "chroma_metrics": "whether Chroma's metrics were added; no other metric changes (a gated "
                      "metric one report lacks is refused)",
}
# what a field a report leaves out stands for (every other absent field: null)
ABSENT: dict[str, Any] = {"anchoring": anchoring({})}
NEVER_ACCEPTED = ("k",)
# the compared fields a score report may hold (tests/test_parameters.py walks every field
# the scorers write and fails on one that is neither here nor in NOT_COMPARED)
COMPARED = ("k", "grounding_threshold", "relevance_level", "judged_only", "tokenizer",
            "anchoring", "qrels_format", "on_duplicate")


class ParameterDifference(Exception):  # noqa: N818 - a finding, raised to the caller that names the file
    """Two reports scored with different values of a compared field."""

    def __init__(self, key: str, base: Any, cand: Any):
        super().__init__(f"parameter '{key}' differs: baseline {_shown(base)}, candidate "
                         f"{_shown(cand)}")
        self.key, self.base, self.cand = key, base, cand


def _shown(value: Any) -> str:
    return "absent" if value is None else canonical_dumps(value).rstrip("\n")


def _value(params: Mapping[str, Any], key: str) -> Any:
    value = params.get(key)
    if value is None:
        return ABSENT.get(key)
    if key in ABSENT and isinstance(value, dict):
        return {**ABSENT[key], **value}
    return value


def differences(base: Mapping[str, Any], cand: Mapping[str, Any]) -> list[ParameterDifference]:
    """Every compared field whose values differ, naming the inner field of a table
    (``anchoring.threshold``)."""
    out = []
    for key in sorted((set(base) | set(cand)) - set(NOT_COMPARED)):
        b, c = _value(base, key), _value(cand, key)
        if canonical_dumps(b) == canonical_dumps(c):
            continue
        if isinstance(b, dict) and isinstance(c, dict):
            for inner in sorted(set(b) | set(c)):
                if canonical_dumps(b.get(inner)) != canonical_dumps(c.get(inner)):
                    out.append(ParameterDifference(f"{key}.{inner}", b.get(inner),
                                                   c.get(inner)))
        else:
            out.append(ParameterDifference(key, b, c))
    return out


def compare_parameters(base: Mapping[str, Any], cand: Mapping[str, Any],
                       accepted: Iterable[str] = ()) -> list[str]:
    """The differences ``accepted`` (field names, ``anchoring`` covering its inner fields)
    lets through, one note each; ParameterDifference for the first it does not."""
    allowed = set(accepted)
    notes = []
    for diff in differences(base, cand):
        if diff.key.split(".", 1)[0] in allowed and diff.key not in NEVER_ACCEPTED:
            notes.append(f"{diff} (accepted by allow-parameter-change)")
            continue
        raise diff
    return notes
