"""The ``ragspan`` command line: one thin function per subcommand, parsing and calling only.

Each subcommand parses its options and calls ``ragspan.app.<name>.run``; the result is
written and printed by ``ragspan.app.output.deliver``, and its report's exit code is the
process's. The commands live in ``scoring``, ``datasets`` and ``retrieval`` (registered on
the group of ``common`` when this package is imported). Of ragspan, the package imports only
``app``, ``base.allocator``, ``base.argv``, ``base.collector``, ``base.errors``, ``base.logs`` and
``base.options``, and each command's module inside its function, so ``ragspan --help``
starts fast and ``SOURCE_DATE_EPOCH`` is checked before numpy is imported.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ragspan.base.errors import ExitCode
from ragspan.cli import datasets, retrieval, scoring  # noqa: F401  (registers the commands)
from ragspan.cli.common import cli, one_line


def check_environment(environ: Any = None) -> str | None:
    """Before any scientific library is imported (numpy reads ``SOURCE_DATE_EPOCH`` at
    import): an empty ``SOURCE_DATE_EPOCH`` (an unset CI variable) is removed, as unset; a
    non-integer one is the returned one-line error (exit 2)."""
    import os

    env = os.environ if environ is None else environ
    epoch = env.get("SOURCE_DATE_EPOCH")
    if epoch is None:
        return None
    if not epoch.strip():
        del env["SOURCE_DATE_EPOCH"]
        return None
    try:
        int(epoch.strip())
    except ValueError:
        return f"SOURCE_DATE_EPOCH must be an integer (seconds since 1970), got {epoch!r}"
    return None


def main() -> None:
    problem = check_environment()
    if problem is not None:
        click.echo(f"ragspan: error: {one_line(problem)}", err=True)
        sys.exit(int(ExitCode.USAGE))
    try:
        cli(prog_name="ragspan")
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)
    except SystemExit:
        raise
    except Exception:  # a bug: show it, exit 1
        import traceback

        traceback.print_exc()
        click.echo("ragspan: internal error (exit 1); please report this with the traceback",
                   err=True)
        sys.exit(int(ExitCode.BUG))
