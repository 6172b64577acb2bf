"""A command's result and how it leaves the process: every file and the report written
together or not at all, the chosen format on stdout, the exit code from the report."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragspan.app.provenance import git_provenance
from ragspan.base.argv import redacted
from ragspan.base.errors import ExitCode, InputError, RagspanError
from ragspan.base.records import InputRef
from ragspan.io.files import sha256_hex
from ragspan.io.outputs import check_outputs, write_files
from ragspan.records.envelope import encode
from ragspan.records.error import ErrorDetails, ErrorParameters, ErrorSummary
from ragspan.report.envelope import created_at, report_text, statement
from ragspan.report.render import render
from ragspan.report.render.junit import junit_error
from ragspan.report.render.text import for_terminal


@dataclass(frozen=True)
class CommandResult:
    """``report``: the envelope; ``files``: other outputs by path (eval set, corpus, run,
    chunks), written with the report; ``notice``: one stderr line said before the output
    (``validate``'s count of findings)."""

    report: dict[str, Any]
    files: Mapping[str, str] = field(default_factory=dict)
    notice: str | None = None
    # workflow commands said on stderr after the output (``compare --annotations github``)
    annotations: tuple[str, ...] = ()

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
    (``base.argv.redacted``); a score report also records where it was made
    (``parameters.provenance``, ``app.provenance.git_provenance``)."""
    if argv is not None:
        params = result.report["predicate"]["parameters"]
        params["argv"] = redacted(argv)
        if result.report["predicate"]["kind"].startswith("score."):
            where = git_provenance()
            if where is not None:
                params["provenance"] = encode(where)
    staged = dict(result.files)
    if out:
        staged[out] = report_text(result.report)
    shown = "" if out and fmt == "json" else render(result.report, fmt)
    if fmt == "markdown" and read_as_text(sys.stdout):  # read by a person, not rendered
        shown = for_terminal(shown)
    if result.notice:
        sys.stderr.write(result.notice + "\n")
    write_files(staged)
    sys.stdout.write(shown)
    sys.stdout.flush()
    for line in result.annotations:
        sys.stderr.write(line + "\n")
    return result.exit_code


def read_as_text(stream: Any) -> bool:
    """Whether markdown written to ``stream`` is read as text rather than rendered: a
    terminal, or a pipe (``make demo | tee``, a CI log); a regular file (the Action's
    comment, a step summary) keeps the escapes a renderer needs."""
    try:
        if stream.isatty():
            return True
        return stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):
        return False


def error_report(command: str, exc: BaseException, argv: Sequence[str]) -> dict[str, Any]:
    """The envelope a failed ``command`` leaves where its JSON report goes: kind ``error``,
    verdict ``error``, the failure's exit code (3 an input error, 2 a usage error found
    while working, 1 a bug), and in its summary the command, the message, and the file and
    line it names (null where it names none). No reader takes it for a result: ``compare``
    and ``report`` refuse any kind but a score report. Its subject is the file the error
    names, with the sha256 of its bytes (the message's, named ``<error>``, where the error
    names no readable file)."""
    code = exc.exit_code if isinstance(exc, RagspanError) else ExitCode.BUG
    message = str(exc) if isinstance(exc, RagspanError) else \
        f"internal error: {type(exc).__name__}"
    path = exc.path if isinstance(exc, InputError) else None
    subject = InputRef("error", "<error>", sha256_hex(message.encode("utf-8")))
    if path is not None and os.path.isfile(path):
        try:
            with open(path, "rb") as fh:
                subject = InputRef("error", path, hashlib.sha256(fh.read()).hexdigest())
        except OSError:
            pass  # unreadable: the message stands for it
    summary = ErrorSummary(command=command,
                           error=exc.reason if isinstance(exc, InputError) else message,
                           file=path, line=exc.line if isinstance(exc, InputError) else None,
                           message=message)
    return statement(kind="error", subject=[subject], inputs=[],
                     parameters=ErrorParameters(command=command, argv=redacted(argv)),
                     summary=summary, details=ErrorDetails(),
                     verdict="error", exit_code=int(code))


def write_error_junit(path: str, command: str, exc: BaseException) -> None:
    """Write the JUnit file of a command that stopped on ``exc`` (one case with
    ``<error>``) to ``path``, atomically; a failure to write it leaves the error to speak for
    itself."""
    message = str(exc) if isinstance(exc, RagspanError) else \
        f"internal error: {type(exc).__name__}"
    with contextlib.suppress(OSError, InputError):
        write_files({path: junit_error(command, message, created_at())})


def write_error_report(path: str, command: str, exc: BaseException,
                       argv: Sequence[str]) -> None:
    """Write ``error_report`` to ``path`` (atomically, as every output), replacing what is
    there, so no stale report survives a failed command; a failure to write it leaves the
    error to speak for itself."""
    with contextlib.suppress(OSError, InputError):
        write_files({path: report_text(error_report(command, exc, argv))})
