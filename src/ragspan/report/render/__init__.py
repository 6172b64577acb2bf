"""Renderers: report envelope -> text for people.

``render(doc, fmt)`` dispatches on ``(kind, format)``: one module per report kind
(``score``, ``compare``, ``validate``, and ``generic`` for every other kind), each with ``table(doc)`` and
``markdown(doc)``, built on the text primitives of ``render.text``; ``json`` is the canonical
JSON itself. Every renderer takes the envelope (a dict read back from canonical JSON) and
returns text ending in a newline.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ragspan.base.canonical import canonical_dumps

FORMATS = ("json", "table", "markdown")
MODULE_OF_KIND = {"score.span": "score", "score.doc": "score", "compare": "compare",
                  "validate": "validate", "sweep": "sweep",
                  "report": "report", "plan": "plan", "migrate": "migrate"}


def render(doc: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return canonical_dumps(doc)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    module = MODULE_OF_KIND.get(doc["predicate"]["kind"], "generic")
    text: str = getattr(import_module(f"ragspan.report.render.{module}"), fmt)(doc)
    return text
