"""``ragspan report``: score reports of several configurations -> one Markdown or HTML file.

The format follows ``out``'s extension (``.md``/``.markdown`` or ``.html``/``.htm``). The
client readout quotes missed clauses from ``corpus``, which must be given and have the
sha256 the baseline report records (a path inside a report is never read). The
command's own JSON report (``report_json``) states what was written and from what.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from msgspec import UNSET

from ragspan.app.output import CommandResult
from ragspan.base.errors import InputError, UsageError
from ragspan.base.records import InputRef
from ragspan.base.voice import setting
from ragspan.gate.inputs import score_report_of
from ragspan.io.corpus import read_corpus
from ragspan.io.files import sha256_hex
from ragspan.records.readout import (
    Family,
    FamilyPair,
    Lever,
    Measured,
    ReadoutConfiguration,
    ReadoutDetails,
    ReadoutParameters,
    ReadoutSummary,
)
from ragspan.report.envelope import load_report, statement
from ragspan.report.readout import client, developer
from ragspan.report.readout.build import build, config_of
from ragspan.report.readout.document import html_page, markdown
from ragspan.report.readout.query_csv import query_csv

AUDIENCES = ("developer", "client")
FORMAT_OF_EXTENSION = {".md": "markdown", ".markdown": "markdown", ".html": "html",
                       ".htm": "html"}


def format_of(out: str) -> str:
    ext = os.path.splitext(out)[1].lower()
    if ext not in FORMAT_OF_EXTENSION:
        raise UsageError(f"{setting('out')} {out}: the extension says the format; use .md or .html")
    return FORMAT_OF_EXTENSION[ext]


def read_configs(paths: Sequence[str]) -> list[Any]:
    """Each score report, verified as ``compare`` verifies it, as a ``readout.build.Config``."""
    configs = []
    for path in paths:
        doc, sha = load_report(path)
        configs.append(config_of(score_report_of(doc, sha, str(path), "score"),
                                 doc["predicate"]))
    return configs


def corpus_for(readout: Any, corpus: str | None) -> Any:
    """The corpus given on the command line, checked against the digest the baseline report
    records. A path written inside a report is never read: a crafted report could name any
    local file and have it quoted into the readout."""
    if corpus is None:
        raise UsageError("the client readout quotes the missed clauses from the corpus: give "
                         f"{setting('corpus')} (the path a report records is never read)")
    recorded = readout.base.report.corpus_sha256
    if not recorded:
        raise InputError("the baseline report records no corpus digest, so the corpus "
                         "cannot be shown to be the one it was scored on (score it with "
                         f"{setting('corpus')})", readout.base.report.path)
    corp = read_corpus(corpus)
    if corp.sha256 != recorded:
        raise InputError(f"this corpus (sha256 {corp.sha256[:12]}) is not the one the baseline "
                         f"was scored on ({recorded[:12]})", corpus)
    return corp


def render(readout: Any, fmt: str, audience: str, corpus: Any = None) -> str:
    doc = client.document(readout, corpus) if audience == "client" \
        else developer.document(readout)
    return html_page(doc) if fmt == "html" else markdown(doc)


def summary_of(readout: Any) -> ReadoutSummary:
    """What the command's JSON report states of the readout: per configuration its complete
    grounding with the interval, and each lever's measured deltas."""
    cg = readout.cg
    names = [c.name for c in readout.configs]
    family = readout.family
    return ReadoutSummary(
        configurations=[
            ReadoutConfiguration(name=c.name, complete_grounding=c.metric(cg),
                                 ci95=list(readout.intervals[i]), config_digest=c.digest,
                                 score_sha256=c.report.sha256)
            for i, c in enumerate(readout.configs)],
        baseline=readout.base.name,
        backlog=[Lever(lever=row.lever, accounts_for=row.accounts_for, measured=[
            Measured(from_=names[e.pair.a], to=names[e.pair.b],
                     delta=e.outcome(cg).delta, p_value=e.outcome(cg).p_value)
            for e in row.effects]) for row in readout.backlog],
        family=UNSET if family is None else Family(
            alpha=family.alpha, bound_alpha=family.bound_alpha, size=family.size,
            unit=family.unit,
            pairs=[FamilyPair(from_=names[a], to=names[b], drop_low=low, drop_high=high,
                              survives=survives)
                   for a, b, low, high, survives in family.pairs]))


def run(*, reports: Sequence[str], out: str, baseline: str | None = None, k: int | None = None,
        audience: str = "developer", corpus: str | None = None,
        all_pairs: bool = False, csv_out: str | None = None,
        client_out: str | None = None) -> CommandResult:
    """The readout written to ``out`` and, with ``csv_out``, the per-query table
    (``readout.query_csv``) beside it; with ``client_out``, the client readout too, from the
    same readout (the developer report at ``out``, one command for both audiences); all or
    nothing."""
    if audience not in AUDIENCES:
        raise UsageError(f"{setting('audience')} {audience}: expected one of {', '.join(AUDIENCES)}")
    if not reports:
        raise UsageError("give at least one score report")
    if client_out is not None and audience != "developer":
        raise UsageError(f"{setting('client-out')} writes the client readout beside the developer report "
                         f"at {setting('out')}: leave {setting('audience')} at developer")
    named = [p for p in (out, csv_out, client_out) if p is not None]
    if len(set(named)) < len(named):
        raise UsageError(f"{setting('out')}, {setting('csv')} and {setting('client-out')} must name "
                         "different files")
    fmt = format_of(out)
    client_fmt = format_of(client_out) if client_out is not None else None
    readout = build(read_configs(reports), baseline, k, all_pairs)
    corp = corpus_for(readout, corpus) if audience == "client" or client_out else None
    files = {out: render(readout, fmt, audience, corp)}
    subject = [InputRef("report", out, sha256_hex(files[out].encode("utf-8")))]
    if client_out is not None and client_fmt is not None:
        files[client_out] = render(readout, client_fmt, "client", corp)
        subject.append(InputRef("client_readout", client_out,
                                sha256_hex(files[client_out].encode("utf-8"))))
    inputs = [InputRef("score", c.report.path, c.report.sha256) for c in readout.configs]
    if corp is not None:
        inputs.append(InputRef("corpus", corp.path, corp.sha256))
    doc = statement(
        kind="report", subject=subject,
        inputs=inputs, parameters=ReadoutParameters(
            k=readout.k, audience=audience, format=fmt, baseline=readout.base.name,
            all_pairs=True if all_pairs else UNSET, client_format=client_fmt or UNSET),
        summary=summary_of(readout), details=ReadoutDetails())
    if csv_out is not None:
        files[csv_out] = query_csv(readout.configs)
    return CommandResult(doc, files)
