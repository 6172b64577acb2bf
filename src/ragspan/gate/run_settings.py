"""What each run was made with, told apart (``run_setting_notes``): the settings a run's
header records (``parameters.run_config`` of its score report: the pipeline's configuration,
or a collection's or shard's search with its scope, depth and payload keys, the shard's
digest, the user's retriever) that differ between the baseline and the candidate. They are
the retrieval under test, so a difference is named in the verdict, never refused: a FAIL
whose candidate searched without its scope says so beside the numbers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragspan.base.canonical import canonical_dumps

# what a run's header records about its inputs, not about how it retrieved
NOT_SETTINGS = frozenset({"queries", "corpus_sha256", "eval_set_sha256", "config_digest"})
LABELS = frozenset({"config.name"})  # names a configuration, changes no retrieval
SHOWN = 6


def _leaves(value: Any, prefix: str = "") -> dict[str, str]:
    """Every scalar of a header as ``dotted.key -> its JSON text`` (walked without
    recursion; a list is one value)."""
    out: dict[str, str] = {}
    stack: list[tuple[str, Any]] = [(prefix, value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict) and item:
            stack.extend((f"{key}.{k}" if key else str(k), v) for k, v in item.items()
                         if key or k not in NOT_SETTINGS)
        else:
            out[key] = canonical_dumps(item).rstrip("\n")
    return out


def run_setting_notes(base: Mapping[str, Any] | None, cand: Mapping[str, Any] | None
                      ) -> list[str]:
    """One note naming the run settings that differ (at most ``SHOWN``, then a count); none
    when neither report recorded its run's header or they agree."""
    if not base and not cand:
        return []
    b, c = _leaves(dict(base or {})), _leaves(dict(cand or {}))
    diff = [f"{key} {b.get(key, 'absent')} -> {c.get(key, 'absent')}"
            for key in sorted(set(b) | set(c)) if b.get(key) != c.get(key)
            and key not in LABELS]
    if not diff:
        return []
    more = f"; and {len(diff) - SHOWN} more" if len(diff) > SHOWN else ""
    return [f"the runs' settings differ (the retrieval under test): "
            f"{'; '.join(diff[:SHOWN])}{more}"]
