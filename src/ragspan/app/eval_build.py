"""What ``adapt`` and ``import`` share: an EvalBuild's report and its files."""

from __future__ import annotations

import logging
from typing import Any

from ragspan.app.output import CommandResult
from ragspan.base.records import InputRef
from ragspan.evalsets.build import build_files, sha256_of
from ragspan.io.files import read_bytes, sha256_hex
from ragspan.records.envelope import encode
from ragspan.records.evalbuild import AdaptParameters
from ragspan.records.imported import importing
from ragspan.report.envelope import statement

log = logging.getLogger("ragspan")


def build_result(kind: str, build: Any, *, out: str, corpus_out: str | None,
                 inputs: list[Any], parameters: dict[str, Any] | AdaptParameters,
                 extra: dict[str, tuple[str, str]] | None = None) -> CommandResult:
    """The report of ``build`` (an ``evalsets.build.EvalBuild``) with its files (eval set at
    ``out``, corpus at ``corpus_out``, and ``extra``: path -> (role, text), such as a run),
    to be written together with the report or not at all; None parameters are left out."""
    files = build_files(build, out, corpus_out)
    for path, (_, text) in (extra or {}).items():
        files[path] = text
    log.info("writing %s (%d queries)%s", out, len(build.rows),
             f" and {corpus_out} ({len(build.documents)} documents)" if corpus_out else "")
    digests = sha256_of(files)
    subject = [InputRef("eval_set", out, digests[out])]
    if corpus_out:
        subject.append(InputRef("corpus", corpus_out, digests[corpus_out]))
    for path, (role, _) in (extra or {}).items():
        subject.append(InputRef(role, path, digests[path]))
    summary = {"queries": len(build.rows), "documents": len(build.documents),
               **encode(build.counts)}
    given = {k: v for k, v in encode(parameters).items() if v is not None}
    details = encode(build.details)
    if kind == "import":  # the importer's tally as the report's records
        given, summary, details = map(encode, importing(given, summary, details))
    doc = statement(kind=kind, subject=subject, inputs=inputs, parameters=given,
                    summary=summary, details=details)
    return CommandResult(doc, files)


def input_ref(role: str, path: str) -> Any:
    """An InputRef of a file read whole (its sha256 from its bytes)."""
    return InputRef(role, path, sha256_hex(read_bytes(path)))
