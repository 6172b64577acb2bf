"""The command line a report records (``parameters.argv``), with its secrets taken out.

A report is an artifact that is uploaded, attached to releases and pasted into pull requests,
so the command line it keeps must hold nothing secret: the value of an option whose name
says it is one (``key``, ``token``, ``secret``, ``password``, ``passwd``, ``credential``,
``auth``), given as ``--opt VALUE`` or ``--opt=VALUE``, and the user and password of a URL
(``https://user:pass@host`` -> ``https://***@host``) are written as ``***``. Paths and every
other argument are kept as typed, so the same command gives the same report; where the
outputs go (``--out``, ``--report``, ...) is written ``<output>`` (``outputs_elided``), so
the same inputs give the same bytes whatever file they are written to.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "credential", "auth")
HIDDEN = "***"
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")


def _secret_option(name: str) -> bool:
    words = name.lstrip("-").lower().replace("_", "-").split("-")
    return name.startswith("--") and any(w in SECRET_WORDS for w in words)


OUTPUT = "<output>"


def _with_values(argv: Sequence[str], chosen: Callable[[str], bool], mark: str) -> list[str]:
    """``argv`` with the value of each option ``chosen`` picks (``--opt VALUE`` or
    ``--opt=VALUE``) written as ``mark``; the other arguments as they are."""
    out: list[str] = []
    replace_next = False
    for arg in argv:
        if replace_next:
            out.append(mark)
            replace_next = False
            continue
        name, eq, _ = arg.partition("=")
        if chosen(name):
            out.append(f"{name}={mark}" if eq else arg)
            replace_next = not eq
        else:
            out.append(arg)
    return out


def outputs_elided(argv: Sequence[str], flags: Sequence[str]) -> list[str]:
    """``argv`` with the value of each option in ``flags`` (``--out PATH``, ``--out=PATH``)
    written as ``<output>``."""
    return _with_values(argv, lambda name: name in flags, OUTPUT)


def redacted(argv: Sequence[str]) -> list[str]:
    """``argv`` (the arguments after the program name) with secrets replaced by ``***``."""
    hidden = _with_values(argv, _secret_option, HIDDEN)
    return [_USERINFO.sub(lambda m: m.group(1) + HIDDEN + "@", a) for a in hidden]
