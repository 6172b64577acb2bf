"""ragspan: a regression gate for retrieval in RAG systems, decided by character-span arithmetic.

``ragspan.score``, ``ragspan.compare``, ``ragspan.read_report``, ``ragspan.read_score_report``
and the readers (``read_eval_set``, ``read_corpus``, ``read_span_run``, ``read_qrels``,
``read_doc_run``) are loaded on first use, so ``import ragspan`` stays fast (docs/api.md).
"""

import logging
from typing import Any

__version__ = "0.1.0"

# a library says nothing on stderr by itself: its warnings reach a caller through the
# ``logging`` configuration the caller chose (and the Python API's ``warnings``); the command
# line installs its own handler (``base.logs``)
logging.getLogger("ragspan").addHandler(logging.NullHandler())

_API = {
    "score": "ragspan.api", "compare": "ragspan.api", "read_report": "ragspan.api",
    "read_score_report": "ragspan.api", "query_rows": "ragspan.api", "Scored": "ragspan.api",
    "RagspanWarning": "ragspan.api",
    "read_eval_set": "ragspan.io.evalset", "read_corpus": "ragspan.io.corpus",
    "read_span_run": "ragspan.io.runs.spans", "read_qrels": "ragspan.io.qrels",
    "read_doc_run": "ragspan.io.runs.docs",
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from importlib import import_module

        value = getattr(import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ragspan' has no attribute {name!r}")
