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
from ragspan.base.shown import is_local_path, shown_model

# what a run's header records about its inputs, not about how it retrieved
NOT_SETTINGS = frozenset({"queries", "corpus_sha256", "eval_set_sha256", "config_digest"})
LABELS = frozenset({"config.name"})  # names a configuration, changes no retrieval
SHOWN = 6


def _differences(b: Any, c: Any, key: str, out: list[str], depth: int = 0) -> None:
    """The keys where ``b`` and ``c`` differ, each ``key old -> new`` (a table that is on one
    side only is said whole, cut to ``WIDE`` characters)."""
    if isinstance(b, dict) and isinstance(c, dict) and depth < MAX_DEPTH:
        for k in sorted(set(b) | set(c)):
            if depth == 0 and k in NOT_SETTINGS:
                continue
            inner = f"{key}.{k}" if key else str(k)
            if inner not in LABELS:
                _differences(b.get(k, ABSENT), c.get(k, ABSENT), inner, out, depth + 1)
        return
    if _text(b) != _text(c):
        old, new = _text(b, key), _text(c, key)
        same = " (another folder of that name)" if old == new else ""
        out.append(f"{key} {old} -> {new}{same}")


ABSENT = object()
MAX_DEPTH = 8
WIDE = 60


def _text(value: Any, key: str = "") -> str:
    """A value as the note shows it; a model that is a local folder by its name only, never
    its path (``base.shown``)."""
    if value is ABSENT:
        return "absent"
    if isinstance(value, str) and key.rsplit(".", 1)[-1] == "model" and is_local_path(value):
        return shown_model(value)
    text = canonical_dumps(value).rstrip("\n")
    return text if len(text) <= WIDE else text[:WIDE - 3] + "..."


def run_setting_notes(base: Mapping[str, Any] | None, cand: Mapping[str, Any] | None
                      ) -> list[str]:
    """One note naming the run settings that differ (at most ``SHOWN``, then a count); none
    when neither report recorded its run's header or they agree."""
    if not base and not cand:
        return []
    diff: list[str] = []
    _differences(dict(base or {}), dict(cand or {}), "", diff)
    if not diff:
        return []
    more = f"; and {len(diff) - SHOWN} more" if len(diff) > SHOWN else ""
    return [f"the runs' settings differ (the retrieval under test): "
            f"{'; '.join(diff[:SHOWN])}{more}"]
