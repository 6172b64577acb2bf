"""``compare``'s inputs across a corpus change: the ``--migration`` report read as a
``gate.migration.Migration``, and ``--migrated-eval-set-trusted`` checked against it (the
gate's rule for the questions an edit left out is ``gate.migration``'s)."""

from __future__ import annotations

from ragspan.base.errors import InputError, UsageError
from ragspan.base.records import InputRef
from ragspan.base.voice import setting
from ragspan.gate.migration import Migration, migration_of
from ragspan.io.files import decode_records, read_bytes, sha256_hex
from ragspan.io.rows import content_sha256
from ragspan.report.envelope import load_report


def migration_of_file(path: str | None, candidate_eval_set: str | None,
                      candidate_corpus: str | None) -> tuple[Migration | None, str]:
    """The ``--migration`` report read as a Migration, with its sha256 (None, "" without
    one; then the candidate's own eval set and corpus are a usage error)."""
    if path is None:
        if candidate_eval_set is not None or candidate_corpus is not None:
            raise UsageError(f"{setting('candidate-eval-set')} and {setting('candidate-corpus')} "
                             "verify a candidate scored across a corpus change: give "
                             f"{setting('migration')} too")
        return None, ""
    doc, sha = load_report(path)
    return migration_of(doc, path), sha


def trusted_eval_set(path: str | None, moved: Migration | None) -> InputRef | None:
    """``--migrated-eval-set-trusted``: a reviewed, committed migrated eval set (the base
    branch's). Its content (the questions and gold spans: every row but the header, each as
    canonical JSON, ``io.rows.content_sha256``) must be that of the eval set the migration
    wrote, as its report records it; the header (the paths typed, the Python version) is
    not part of it, so a committed copy made from the same inputs in another folder matches.
    A migration report written before it recorded the content is matched on the file's
    sha256. Then the questions the edit left out are left out of the pairing instead of
    counted as lost. None when not given."""
    if path is None:
        return None
    if moved is None:
        raise UsageError(f"{setting('migrated-eval-set-trusted')} says the migration's eval set was "
                         f"reviewed: give {setting('migration')} too")
    data = read_bytes(path)
    if moved.to_content_sha256 is not None:
        sha = content_sha256(decode_records(data, path), path)
        if sha != moved.to_content_sha256:
            raise InputError("is not the eval set the migration wrote: its questions and gold "
                             f"spans (content sha256 {sha[:12]}) differ from the migration's "
                             f"({moved.to_content_sha256[:12]}); only the reviewed content is "
                             "trusted", path)
        return InputRef("migrated_eval_set_trusted", path, sha256_hex(data))
    sha = sha256_hex(data)
    if sha != moved.to_eval_sha256:
        raise InputError(f"is not the eval set the migration wrote (sha256 {sha[:12]} vs "
                         f"{moved.to_eval_sha256[:12]}): only the reviewed file itself is "
                         "trusted", path)
    return InputRef("migrated_eval_set_trusted", path, sha)
