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
from collections.abc import Sequence

SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "credential", "auth")
HIDDEN = "***"
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")


def _secret_option(name: str) -> bool:
    words = name.lstrip("-").lower().replace("_", "-").split("-")
    return name.startswith("--") and any(w in SECRET_WORDS for w in words)


OUTPUT = "<output>"


def outputs_elided(argv: Sequence[str], flags: Sequence[str]) -> list[str]:
    """``argv`` with the value of each option in ``flags`` (``--out PATH``, ``--out=PATH``)
    written as ``<output>``."""
    out: list[str] = []
    elide_next = False
    for arg in argv:
        if elide_next:
            out.append(OUTPUT)
            elide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if name in flags:
            out.append(f"{name}={OUTPUT}" if eq else arg)
            elide_next = not eq
            continue
        out.append(arg)
    return out


def redacted(argv: Sequence[str]) -> list[str]:
    """``argv`` (the arguments after the program name) with secrets replaced by ``***``."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(HIDDEN)
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if _secret_option(name):
            if eq:
                out.append(f"{name}={HIDDEN}")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(_USERINFO.sub(lambda m: m.group(1) + HIDDEN + "@", arg))
    return out
