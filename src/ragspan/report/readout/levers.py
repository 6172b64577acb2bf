"""The levers of a pipeline configuration, and which pairs of configurations isolate one.

A lever's value is read from the configuration a run recorded (``run_config.config`` of a
score report, the pipeline TOML with its defaults filled in). ``None`` means the lever does
not apply (fusion when only one retriever runs). Two configurations *differ* in a lever when
both values apply and are unequal; everything that is not a lever and could change the
ranking (a retriever's backend and depth, the rerank depth; compared only where both
configurations run that retriever) counts as one more lever-like key, ``other settings``,
so a pair that also changes it isolates nothing. The configuration's
name and batch sizes never count.

A pair *isolates* a lever when it differs in exactly that lever; only such a pair lends its
delta to the lever (docs/report.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragspan.base.shown import shown_model

LEVERS = ("chunker", "dense model", "sparse", "fusion", "rerank", "filter scope", "k")
OTHER = "other settings"
OTHER_KEYS = ("dense settings", "sparse settings", "rerank settings")

# the failure labels (metrics.failures) whose queries a lever can move
LABELS_OF = {
    "chunker": ("chunk-severance",),
    "dense model": ("retrieval-miss",),
    "sparse": ("retrieval-miss",),
    "fusion": ("retrieval-miss",),
    "rerank": ("rank-miss",),
    "filter scope": ("partial-grounding",),
    "k": ("rank-miss", "partial-grounding"),
}


def _chunker(c: Mapping[str, Any]) -> str:
    text = f"{c['kind']} {c['size']}"
    if c.get("overlap"):
        text += f"/{c['overlap']}"
    return text + (" snapped" if c.get("snap") else "")


def _dense_search(dense: Mapping[str, Any]) -> str:
    """The dense backend, and its HNSW graph and beam where search is approximate."""
    if dense.get("search") != "hnsw":
        return str(dense["backend"])
    return (f"{dense['backend']} hnsw m={dense['hnsw_m']} ef_construct="
            f"{dense['hnsw_ef_construct']} ef={dense['hnsw_ef']}")


def lever_values(config: Mapping[str, Any]) -> dict[str, str | None]:
    """Each lever's value (a short string; ``off`` for a section that is off; None where it
    does not apply), then the settings of each retriever that is on (``OTHER_KEYS``)."""
    dense, sparse, rerank = config.get("dense"), config.get("sparse"), config.get("rerank")
    values: dict[str, str | None] = {
        "chunker": _chunker(config["chunker"]),
        "dense model": dense["model"] if dense else "off",
        "sparse": f"bm25 k1={sparse['k1']} b={sparse['b']}" if sparse else "off",
        "fusion": f"rrf k={config['fusion_k']}" if dense and sparse else None,
        "rerank": rerank["model"] if rerank else "off",
        "filter scope": str(config["scope"]),
        "k": f"depth {config['depth']}",
    }
    values.update({
        "dense settings": f"{_dense_search(dense)}, depth {dense['depth']}" if dense else None,
        "sparse settings": f"{sparse['backend']}, depth {sparse['depth']}" if sparse else None,
        "rerank settings": f"depth {rerank['depth']}" if rerank else None,
    })
    return values


MODEL_LEVERS = frozenset({"dense model", "rerank"})


def shown_lever(name: str, value: str) -> str:
    """A lever's value as a readout shows it: a model that is a local folder by its name,
    never its path (``base.shown``); compared raw, so two folders of one name still differ."""
    return shown_model(value) if name in MODEL_LEVERS and value != "off" else value


def _differ(a: Mapping[str, str | None], b: Mapping[str, str | None], key: str) -> bool:
    return a.get(key) is not None and b.get(key) is not None and a[key] != b[key]


def differing(a: Mapping[str, str | None], b: Mapping[str, str | None]) -> list[str]:
    """The levers in which two configurations differ, then ``other settings`` when the
    settings of a retriever both run differ."""
    diff = [k for k in LEVERS if _differ(a, b, k)]
    return diff + [OTHER] if any(_differ(a, b, k) for k in OTHER_KEYS) else diff


def settings_change(a: Mapping[str, str | None], b: Mapping[str, str | None]) -> str:
    """What ``other settings`` stands for in a pair: ``dense settings: x → y; ...``."""
    return "; ".join(f"{k}: {a[k]} → {b[k]}" for k in OTHER_KEYS if _differ(a, b, k))


@dataclass(frozen=True)
class Pair:
    """Two configurations (by index, ``a`` before ``b`` in the report's order) and the
    levers they differ in."""

    a: int
    b: int
    levers: tuple[str, ...]

    @property
    def isolates(self) -> str | None:
        """The one lever this pair isolates, or None."""
        return self.levers[0] if len(self.levers) == 1 and self.levers[0] != OTHER else None


def pairs(values: Sequence[Mapping[str, str | None] | None], baseline: int = 0) -> list[Pair]:
    """Every pair of configurations with known levers that differ at all, oriented as a
    change from today: a pair holding the baseline starts from it; a pair isolating a lever
    starts from the side that has the baseline's value of that lever (when one side has
    it); otherwise report order."""
    base = values[baseline] if 0 <= baseline < len(values) else None
    out = []
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            vi, vj = values[i], values[j]
            if vi is None or vj is None:
                continue
            diff = differing(vi, vj)
            if not diff:
                continue
            a, b = i, j
            if j == baseline:
                a, b = j, i
            elif i != baseline and base is not None and len(diff) == 1:
                lever = diff[0]
                if vj.get(lever) == base.get(lever) != vi.get(lever):
                    a, b = j, i
            out.append(Pair(a, b, tuple(diff)))
    return out
