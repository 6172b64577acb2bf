"""How a readout names a model (``shown_model``): a hub id or alias as written, a local
folder by its last segment only. Readouts (``report``'s client and developer documents, the
gate's notes, the text and markdown tables) are pasted into pull requests and sent to
clients: a home directory or a runner's workspace is none of their business, and the same
model in two checkouts should read the same. JSON reports keep what was typed (their
``argv`` and run headers are records, not readouts)."""

from __future__ import annotations

import re
from typing import Any

_PATHLIKE = re.compile(r"^(?:/|~|\.{1,2}[/\\]|[A-Za-z]:[/\\])|\\")


def is_local_path(name: str) -> bool:
    """A name only a file system resolves: absolute, from home, ``./`` or ``../``, a Windows
    drive or backslash, or more than one ``/`` (a hub id has one)."""
    return bool(_PATHLIKE.search(name)) or name.count("/") > 1


def shown_model(name: str) -> str:
    """``name`` as a readout shows it: ``local model 'minilm'`` for ``/home/u/models/minilm/``;
    anything else as written."""
    if not is_local_path(name):
        return name
    last = re.split(r"[/\\]", name.rstrip("/\\"))[-1] or name
    return f"local model '{last}'"


def shown_models(value: Any) -> Any:
    """``value`` (a summary section) with every string under a ``model`` key that is a local
    path shown as ``shown_model`` shows it; the rest as it is."""
    if isinstance(value, dict):
        return {k: shown_model(v) if k == "model" and isinstance(v, str) else shown_models(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [shown_models(v) for v in value]
    return value
