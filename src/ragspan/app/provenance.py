"""Where a score report was made (``git_provenance``): the git commit and ref of the working
tree the command ran in, the commit's own date and whether the tree had uncommitted changes
to tracked files; nothing outside a repository, and never the wall-clock time, so the same
inputs in the same commit still give the same bytes. Recorded as ``parameters.provenance``
(compared by no gate: where a report was made is not what it scored with). ``compare``
states both reports' and the baseline's age (``provenance_summary``)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from collections.abc import Sequence
from typing import Any

from msgspec import UNSET

from ragspan.base.errors import UsageError
from ragspan.base.voice import setting
from ragspan.records.compare import Where
from ragspan.records.score import Provenance

BASELINE_IS = ("base-tip", "merge-base")  # what the recipe scored the baseline at
MAX_LABELS = 100  # a pull request's labels, as the caller lists them
MAX_NAME_CHARS = 100  # a label's or an actor's name
GIT_TIMEOUT = 5.0  # seconds for each git call: a hung repository is no provenance
DISABLE = "RAGSPAN_NO_PROVENANCE"  # set to 1: record none (a reproducible build elsewhere)


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_provenance() -> Provenance | None:
    """The commit, ref, commit date and dirtiness (``records.score.Provenance``) of the
    working tree of the current
    directory, or None outside a git work tree (or without git, or with ``DISABLE`` set).
    ``dirty``: tracked files differ from the commit (or git could not say: not clean)."""
    if os.environ.get(DISABLE, "").strip() not in ("", "0"):
        return None
    if _git("rev-parse", "--is-inside-work-tree") != "true":
        return None
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return None
    # the branch checked out, else null (a detached head: CI's usual checkout; the compare's
    # --baseline-is and --config-origin say which base it is)
    ref = _git("symbolic-ref", "-q", "--short", "HEAD") or None
    committed = _git("show", "-s", "--format=%cI", "HEAD")
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return Provenance(commit=commit, ref=ref, dirty=dirty is None or bool(dirty),
                      committed_at=committed or UNSET)


def check_labels(labels: Sequence[str], actor: str | None) -> None:
    """The pull request's labels and actor as the caller gives them: at most ``MAX_LABELS``
    labels, each name (and the actor's) 1 to ``MAX_NAME_CHARS`` printable characters."""
    if isinstance(labels, str) or not all(isinstance(x, str) for x in labels):
        raise UsageError(f"{setting('pr-label')}: a list of label names, got "
                         f"{type(labels).__name__} {str(labels)[:60]!r}")
    if actor is not None and not isinstance(actor, str):
        raise UsageError(f"{setting('pr-actor')}: a name, got {type(actor).__name__}")
    if len(labels) > MAX_LABELS:
        raise UsageError(f"{setting('pr-label')}: at most {MAX_LABELS} labels, got "
                         f"{len(labels)}")
    for flag, name in [*((setting("pr-label"), x) for x in labels),
                       (setting("pr-actor"), actor)]:
        if name is None:
            continue
        if not name.strip() or len(name) > MAX_NAME_CHARS or \
                any(ord(c) < 32 or ord(c) == 127 for c in name):
            raise UsageError(f"{flag}: a name of 1 to {MAX_NAME_CHARS} printable characters, "
                             f"got {name[:MAX_NAME_CHARS]!r} ({len(name)} characters)")


def _when(text: Any) -> dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.timezone.utc)


def provenance_summary(base: Provenance | None, cand: Provenance | None,
                       baseline_is: str | None, created_at: str, max_age_days: float
                       ) -> tuple[Where | None, list[str]]:
    """What the verdict says of where the reports were made: both provenances, which base
    the baseline is (``base-tip`` or ``merge-base``, as the recipe computes it), the
    baseline's age at compare time (``created_at``, the report's own clock) and a note past
    ``max_age_days``; None when neither report recorded one and no base was named."""
    if base is None and cand is None and baseline_is is None:
        return None, []
    notes: list[str] = []
    committed = None if base is None or base.committed_at is UNSET \
        else _when(base.committed_at)
    now = _when(created_at)
    age = None
    if base is not None and committed is not None and now is not None:
        age = max(0.0, (now - committed).total_seconds() / 86_400)
        if age > max_age_days:
            notes.append(f"the baseline was scored at commit {base.commit[:12]} "
                         f"({base.ref or 'detached'}), committed {age:.1f} days before "
                         f"this compare, past {max_age_days:g} days: re-score the baseline on "
                         "the base branch's tip to judge against what is merged now")
    if base is None:
        notes.append("the baseline report records no provenance (scored outside a git "
                      "repository, or before provenance was recorded): which commit judged "
                      "this is unknown")
    return Where(baseline=base, candidate=cand,
                 baseline_is=UNSET if baseline_is is None else baseline_is,
                 baseline_age_days=UNSET if age is None else round(age, 2),
                 max_baseline_age_days=UNSET if age is None else max_age_days), notes
