"""A command's result and how it leaves the process: every file and the report written
together or not at all, the chosen format on stdout, the exit code from the report."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragspan.base.argv import redacted
from ragspan.base.errors import ExitCode, InputError
from ragspan.base.records import InputRef
from ragspan.io.files import sha256_hex
from ragspan.io.outputs import check_outputs, write_files
from ragspan.report.envelope import report_text, statement
from ragspan.report.render import render
from ragspan.report.render.text import for_terminal


@dataclass(frozen=True)
class CommandResult:
    """``report``: the envelope; ``files``: other outputs by path (eval set, corpus, run,
    chunks), written with the report; ``notice``: one stderr line said before the output
    (``validate``'s count of findings)."""

    report: dict[str, Any]
    files: Mapping[str, str] = field(default_factory=dict)
    notice: str | None = None

    @property
    def exit_code(self) -> int:
        return int(self.report["predicate"]["exit_code"])


def refuse_clobbering(outputs: Mapping[str, str | None], inputs: Iterable[str | None]) -> None:
    """Before any work: refuse outputs that are an input, a directory, a special file or in
    a missing folder (``ragspan.io.outputs.check_outputs``)."""
    check_outputs(dict(outputs), list(inputs))


def deliver(result: CommandResult, out: str | None, fmt: str,
            argv: Sequence[str] | None = None) -> int:
    """Write ``result.files`` and the JSON report (to ``out``) all together or not at all,
    print ``fmt`` to stdout (nothing for json when the report went to ``out``), and return
    the report's exit code (the code comes from the result, never the other way round).
    ``argv``: the command line, recorded as ``parameters.argv`` with its secrets taken out
    (``base.argv.redacted``)."""
    if argv is not None:
        result.report["predicate"]["parameters"]["argv"] = redacted(argv)
    staged = dict(result.files)
    if out:
        staged[out] = report_text(result.report)
    shown = "" if out and fmt == "json" else render(result.report, fmt)
    if fmt == "markdown" and sys.stdout.isatty():  # read by a person, not rendered
        shown = for_terminal(shown)
    if result.notice:
        sys.stderr.write(result.notice + "\n")
    write_files(staged)
    sys.stdout.write(shown)
    return result.exit_code


def error_report(command: str, exc: InputError, argv: Sequence[str]) -> dict[str, Any]:
    """The envelope ``--error-report`` writes when ``command`` stops on an input error:
    kind ``error``, verdict ``error``, exit code 3, and in its summary the command, the
    message, and the file and line it names (null where it names none). No reader takes it
    for a result: ``compare`` and ``report`` refuse any kind but a score report. Its subject
    is the file the error names, with the sha256 of its bytes (the message's, named
    ``<error>``, where the error names no readable file)."""
    subject = InputRef("error", "<error>", sha256_hex(str(exc).encode("utf-8")))
    if exc.path is not None and os.path.isfile(exc.path):
        try:
            with open(exc.path, "rb") as fh:
                subject = InputRef("error", exc.path, hashlib.sha256(fh.read()).hexdigest())
        except OSError:
            pass  # unreadable: the message stands for it
    return statement(kind="error", subject=[subject], inputs=[],
                     parameters={"command": command, "argv": redacted(argv)},
                     summary={"command": command, "error": exc.reason, "file": exc.path,
                              "line": exc.line, "message": str(exc)},
                     details={}, verdict="error", exit_code=ExitCode.INPUT)


def write_error_report(path: str, command: str, exc: InputError, argv: Sequence[str]) -> None:
    """Write ``error_report`` to ``path`` (atomically, as every output); a failure to write
    it leaves the input error to speak for itself."""
    with contextlib.suppress(OSError, InputError):
        write_files({path: report_text(error_report(command, exc, argv))})
