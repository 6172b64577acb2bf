"""The cyclic garbage collector paused while a command builds and checks its objects.

Scoring 10,000 queries makes millions of small dicts, lists and floats (report rows, an
eval set read back, a report read back for its schema check); each allocation burst makes
CPython walk every live object again, up to a third of a command's time. Reference
counting still frees every object the moment it is unreferenced; only reference *cycles*
wait until the collector runs again, which a scoring command barely makes. ``paused``
restores the collector's previous state on the way out (also on an error), so a library
caller's process is left as it was; commands that run models for long (``run-retriever``,
``sweep``) are not paused (``cli.common.common_options``, ``COLLECTING``).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast


@contextmanager
def paused() -> Iterator[None]:
    """Disable the cyclic collector for the block, then restore its previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


F = TypeVar("F", bound=Callable[..., Any])


def pausing(func: F) -> F:
    """``func`` run with the collector ``paused`` (the Python API's entry points)."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with paused():
            return func(*args, **kwargs)

    return cast(F, wrapper)
