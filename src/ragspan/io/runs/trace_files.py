"""Trace files as users have them, read into one list of spans (``read_trace_file``).

The shape is told by content, never by the file name, and named in the import report:

- ``otlp-json``: OTLP JSON (``ExportTraceServiceRequest`` / ``TracesData``:
  ``resourceSpans[].scopeSpans[].spans[]``), one request per line as the Collector's file
  exporter writes it, or one document; ids in hex as the OTLP/JSON spec says, base64 ids (what
  protobuf's own JSON mapping writes) read as bytes and said; ``resource_spans`` (proto
  field names) read too. Attribute values are ``AnyValue`` objects, checked by kind
  (``any_value``).
- ``otlp-protobuf``: the same messages in protobuf's binary encoding: one bare message, or a
  stream of them each preceded by its length as 4 big-endian bytes (the Collector's file
  exporter with ``format: proto``) or as a varint (the OTLP file exporter spec's delimited
  stream). Needs ``opentelemetry-proto`` (``pip install 'ragspan[traces]'``).
- ``console``: the OpenTelemetry SDK's ``ConsoleSpanExporter`` output (``span.to_json()``):
  JSON objects, pretty-printed and concatenated or one per line, with ``context.trace_id``
  and ``context.span_id`` as ``0x``-prefixed hex, ``parent_id``, ISO ``start_time`` and flat
  ``attributes``.
- ``phoenix``: Phoenix's span exports, JSON lines (or a JSON array) of spans: ``context``
  (``trace_id``, ``span_id``) or the flat columns of its span dataframe (``context.span_id``,
  ``attributes.input.value``), ``parent_id``, ``span_kind``, ``start_time``, and attributes
  flat (``retrieval.documents.0.document.content``) or nested (``{"retrieval":
  {"documents": [{"document": {...}}]}}``), flattened here to the dotted keys.

Any of them gzip-compressed (``.gz`` content, whatever the name) is decompressed first as a
bounded stream (``io.streams.gunzip``): every member, at most ``base.bounds.inflate_limit``
bytes (``max_inflated``, ``--max-inflated-bytes``, raises it), bytes after the stream
refused. A file of none of these shapes is an InputError naming what was expected. Every
span: its trace and span id (lower-case hex), its parent's ("" for a root), its start in
nanoseconds (for ordering), its kind (``openinference.span.kind``, Phoenix's
``span_kind``), its attributes as one flat dict of dotted keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from ragspan.base.bounds import MAX_SPANS, inflate_limit
from ragspan.base.errors import InputError
from ragspan.io.files import nesting, read_bytes, refuse_lone_surrogates
from ragspan.io.runs.trace_otlp import (
    EXPECTED,
    HEX,
    MAX_NESTING,
    BadValue,
    Span,
    TraceFile,
    otlp_request,
    shown,
)
from ragspan.io.runs.trace_proto import otlp_protobuf
from ragspan.io.streams import gunzip

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
KEEP_WHOLE = ("metadata",)  # a nested attribute kept as one value (OpenInference's JSON)


# ---- reading -----------------------------------------------------------------------------


def read_trace_file(path: str, max_inflated: int | None = None) -> TraceFile:
    """Every span of the trace file ``path``, whatever its shape (module docstring).
    ``max_inflated``: the most bytes a gzip file may inflate to (None: the default
    bound)."""
    data = read_bytes(path)
    notes: list[str] = []
    if data[:2] == b"\x1f\x8b":
        limit = inflate_limit(len(data), max_inflated)
        said = ("--max-inflated-bytes" if max_inflated is not None else
                "the default bound for its size; --max-inflated-bytes raises it")
        data, members = gunzip(data, path, limit, said)
        notes.append("gzip-compressed" + (f", {members} members" if members > 1 else ""))
    if not data.strip():
        raise InputError("the trace file is empty", path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        got = otlp_protobuf(data, path)
        got.notes[:0] = notes
        return got
    if text.startswith("\ufeff"):
        text = text[1:]
    refuse_lone_surrogates(text, path)
    objects = list(_json_values(text, path))
    got = _from_objects(objects, path)
    got.notes[:0] = notes
    if len(got.spans) > MAX_SPANS:
        raise InputError(f"more than {MAX_SPANS:,} spans", path)
    return got


def _json_values(text: str, path: str) -> Iterator[tuple[int, Any]]:
    """Each JSON value of ``text`` with its line: one document, JSON lines, or values
    concatenated (pretty-printed objects one after another, as the console exporter
    writes them)."""
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    i, n = 0, len(text)
    line, counted = 1, 0  # newlines counted up to ``counted``: each character once
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            return
        line += text.count("\n", counted, i)
        counted = i
        try:
            value, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise InputError(f"{EXPECTED}; this is not JSON here: {exc.msg}", path,
                             exc.lineno) from None
        except RecursionError:
            raise InputError("JSON nested too deeply", path, line) from None
        except ValueError as exc:
            raise InputError(str(exc), path, line) from None
        yield line, value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _from_objects(objects: list[tuple[int, Any]], path: str) -> TraceFile:
    flat: list[tuple[int, Any]] = []
    for line, value in objects:  # a JSON array of spans (or requests) is its items
        flat += [(line, v) for v in value] if isinstance(value, list) else [(line, value)]
    if not flat:
        raise InputError(EXPECTED, path)
    kinds = {_kind_of(v) for _, v in flat}
    if None in kinds or len(kinds) != 1:
        line, first = next((ln, v) for ln, v in flat if _kind_of(v) is None) \
            if None in kinds else flat[0]
        what = "other JSON" if None in kinds else " and ".join(sorted(str(k) for k in kinds))
        raise InputError(f"{EXPECTED}; found {what} (e.g. an object with keys "
                         f"{', '.join(sorted(first)[:5]) if isinstance(first, dict) else shown(first)})",
                         path, line)
    shape = str(kinds.pop())
    got = TraceFile(shape, [])
    for line, obj in flat:
        if shape == "otlp-json":
            otlp_request(obj, path, line, got)
        else:
            got.spans.append(_span_object(obj, path, line))
        if len(got.spans) > MAX_SPANS:
            raise InputError(f"more than {MAX_SPANS:,} spans", path)
    return got


def _kind_of(obj: Any) -> str | None:
    """The shape one JSON object belongs to (None: none of them)."""
    if not isinstance(obj, dict):
        return None
    if "resourceSpans" in obj or "resource_spans" in obj:
        return "otlp-json"
    context = obj.get("context")
    if isinstance(context, dict) and "span_id" in context:
        ids = str(context.get("span_id", ""))
        return "console" if ids.startswith("0x") else "phoenix"
    if "context.span_id" in obj or ("span_id" in obj and "trace_id" in obj):
        return "phoenix"
    return None


# ---- console and Phoenix span objects ------------------------------------------------------


def _span_object(obj: dict[str, Any], path: str, line: int) -> Span:
    """A span as one JSON object: the SDK's console exporter or Phoenix's export."""
    raw_context = obj.get("context")
    context: dict[str, Any] = raw_context if isinstance(raw_context, dict) else {}
    trace = context.get("trace_id", obj.get("context.trace_id", obj.get("trace_id")))
    span = context.get("span_id", obj.get("context.span_id", obj.get("span_id")))
    parent = obj.get("parent_id", obj.get("parent_span_id")) or ""
    ids = []
    for key, value in (("trace_id", trace), ("span_id", span), ("parent_id", parent)):
        if key == "parent_id" and not value:
            ids.append("")
            continue
        if not isinstance(value, str) or not HEX.fullmatch(value.removeprefix("0x")):
            raise InputError(f"a span needs '{key}' as hex digits, got {shown(value)}", path,
                             line)
        ids.append(value.removeprefix("0x").lower())
    attrs = obj.get("attributes")
    if attrs is None:
        attrs = {k[len("attributes."):]: v for k, v in obj.items()
                 if k.startswith("attributes.")}
    if not isinstance(attrs, dict):
        raise InputError(f"span {ids[1]}: 'attributes' must be an object", path, line)
    try:
        flat = flatten(attrs)
    except BadValue as exc:
        raise InputError(f"span {ids[1]}: 'attributes': {exc}", path, line) from None
    kind = obj.get("span_kind", flat.get("openinference.span.kind"))
    if isinstance(kind, str) and kind.startswith("SpanKind."):  # the OTel kind, not ours
        kind = flat.get("openinference.span.kind")
    return Span(ids[0], ids[1], ids[2], _start_ns(obj.get("start_time"), ids[1], path, line),
                flat, kind if isinstance(kind, str) else None, str(obj.get("name", "")))


def flatten(attrs: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Nested attributes as OpenInference's dotted keys: a dict's keys joined with ``.``,
    a list of objects indexed (``retrieval.documents.0.document.content``); a value under a
    key of ``KEEP_WHOLE`` (``metadata``), a list of scalars and a scalar kept as they are."""
    if depth > MAX_NESTING:
        raise BadValue(f"attributes nested more than {MAX_NESTING} deep")
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key not in KEEP_WHOLE and value:
            out.update(flatten(value, f"{name}.", depth + 1))
        elif isinstance(value, (dict, list)) and nesting(value, MAX_NESTING) > MAX_NESTING:
            raise BadValue(f"attribute '{name}' nested more than {MAX_NESTING} deep")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                out.update(flatten(item, f"{name}.{i}.", depth + 1))
        else:
            out[name] = value
    return out


def _start_ns(value: Any, span: str, path: str, line: int) -> int:
    """An ISO 8601 start time (``2026-12-05T11:34:32.320221Z``; without a zone, UTC) or
    nanoseconds, as nanoseconds since the epoch, within what OTLP's unsigned 64-bit
    nanoseconds hold (1970 to 2554); absent: 0."""
    if value is None or value == "":
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 64:
        return value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            since = moment - EPOCH
        except (ValueError, OverflowError):
            pass
        else:
            ns = (since.days * 86_400 + since.seconds) * 1_000_000_000 \
                + since.microseconds * 1000
            if 0 <= ns < 2 ** 64:
                return ns
    raise InputError(f"span {span}: 'start_time' must be an ISO 8601 time from 1970 to 2554 "
                     f"(or nanoseconds since 1970), got {shown(value)}", path, line)


