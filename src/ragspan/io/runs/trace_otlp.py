"""OTLP traces decoded: ``AnyValue`` attribute values checked by kind (``any_value``) and the
JSON of ``ExportTraceServiceRequest`` / ``TracesData`` (``otlp_request``: hex ids as the
OTLP/JSON spec writes them, base64 ids as protobuf's JSON mapping does, noted); the same
messages in protobuf's binary encoding are ``io.runs.trace_proto``'s. The file-level shape
is told by ``io.runs.trace_files``."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ragspan.base.bounds import MAX_ATTRIBUTE_NESTING, MAX_SPANS
from ragspan.base.errors import InputError

MAX_NESTING = MAX_ATTRIBUTE_NESTING  # arrays and key-value lists inside one attribute value
INT64 = 2 ** 63
UINT64 = 2 ** 64
EXPECTED = ("expected trace spans: OTLP JSON ('resourceSpans', the Collector's file "
            "exporter), OTLP protobuf (ExportTraceServiceRequest or TracesData), the "
            "OpenTelemetry SDK's ConsoleSpanExporter output, or Phoenix's span export (JSON "
            "lines of spans), any of them gzip-compressed")
_DOUBLE_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
HEX = re.compile(r"[0-9a-fA-F]+")


@dataclass(frozen=True)
class Span:
    trace: str
    span: str
    parent: str
    start: int
    attributes: dict[str, Any]
    kind: str | None = None
    name: str = ""


@dataclass
class TraceFile:
    """What a trace file held: its shape, what was noticed on the way (base64 ids, gzip,
    a stream's framing), the spans in file order."""

    shape: str
    spans: list[Span]
    notes: list[str] = field(default_factory=list)


class BadValue(ValueError):
    """A value that is not what its place in the format says."""


def any_value(v: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` (proto3 JSON) as a Python value: ``stringValue`` a string;
    ``intValue`` an integer or its decimal string, within int64; ``doubleValue`` a number, or
    ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` as proto3 JSON writes those; ``boolValue``
    true or false; ``bytesValue`` base64 text (kept as text); ``arrayValue`` ``{"values":
    [AnyValue]}``; ``kvlistValue`` ``{"values": [{"key", "value"}]}``, nested at most
    ``MAX_NESTING`` deep; an empty ``{}`` is no value (None). Anything else is BadValue
    saying what was expected."""
    if depth > MAX_NESTING:
        raise BadValue(f"nested more than {MAX_NESTING} deep")
    if not isinstance(v, dict):
        raise BadValue(f"expected an AnyValue object, got {shown(v)}")
    if not v:
        return None
    if len(v) != 1:
        raise BadValue(f"an AnyValue holds one of its kinds, got {', '.join(sorted(v))}")
    kind, x = next(iter(v.items()))
    if kind in ("stringValue", "bytesValue"):
        if not isinstance(x, str):
            raise BadValue(f"{kind} must be a string, got {shown(x)}")
        return x
    if kind == "intValue":
        if isinstance(x, str) and re.fullmatch(r"-?[0-9]{1,20}", x):
            x = int(x)
        if isinstance(x, bool) or not isinstance(x, int) or not -INT64 <= x < INT64:
            raise BadValue(f"intValue must be a 64-bit integer (or its decimal string), got "
                           f"{shown(x)}")
        return x
    if kind == "doubleValue":
        if isinstance(x, str) and x in _DOUBLE_WORDS:
            return _DOUBLE_WORDS[x]
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise BadValue(f"doubleValue must be a number, got {shown(x)}")
        return float(x)
    if kind == "boolValue":
        if not isinstance(x, bool):
            raise BadValue(f"boolValue must be true or false, got {shown(x)}")
        return x
    if kind in ("arrayValue", "kvlistValue"):
        values = x.get("values", []) if isinstance(x, dict) else None
        if not isinstance(values, list):
            raise BadValue(f"{kind} must be an object with a 'values' list, got {shown(x)}")
        if kind == "arrayValue":
            return [any_value(item, depth + 1) for item in values]
        out = {}
        for kv in values:
            if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                raise BadValue(f"kvlistValue entries must be objects with a string 'key', "
                               f"got {shown(kv)}")
            out[kv["key"]] = any_value(kv.get("value", {}), depth + 1)
        return out
    raise BadValue(f"unknown AnyValue kind '{kind}'")


def shown(x: Any) -> str:
    """``x`` as JSON, cut to 40 characters, for a message (a value nested too deeply to
    write is named by its type)."""
    try:
        text = json.dumps(x, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):
        return f"a {type(x).__name__} nested too deeply to show"
    return text if len(text) <= 40 else text[:37] + "..."


# ---- OTLP JSON ---------------------------------------------------------------------------


def otlp_request(obj: dict[str, Any], path: str, line: int, got: TraceFile) -> None:
    resource = obj.get("resourceSpans", obj.get("resource_spans"))
    if not isinstance(resource, list):
        raise InputError("'resourceSpans' must be a list", path, line)
    for rs in resource:
        for ss in _listed(rs, ("scopeSpans", "scope_spans"), "resourceSpans[]", path, line):
            for sp in _listed(ss, ("spans",), "scopeSpans[]", path, line):
                got.spans.append(_otlp_span(sp, path, line, got))
                if len(got.spans) > MAX_SPANS:
                    raise InputError(f"more than {MAX_SPANS:,} spans", path)


def _listed(obj: Any, keys: tuple[str, ...], what: str, path: str, line: int) -> list[Any]:
    """``obj[key]`` for the first of ``keys`` present, a list (absent or null: empty);
    anything else an InputError."""
    if not isinstance(obj, dict):
        raise InputError(f"each {what} must be an object, got {shown(obj)}", path, line)
    value = next((obj[k] for k in keys if k in obj), None)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{what}.{keys[0]} must be a list, got {shown(value)}", path, line)
    return value


def _otlp_span(sp: Any, path: str, line: int, got: TraceFile) -> Span:
    if not isinstance(sp, dict):
        raise InputError(f"a span must be an object, got {shown(sp)}", path, line)
    trace = _otlp_id(sp.get("traceId", sp.get("trace_id")), 16, "traceId", path, line, got)
    span = _otlp_id(sp.get("spanId", sp.get("span_id")), 8, "spanId", path, line, got)
    parent_raw = sp.get("parentSpanId", sp.get("parent_span_id")) or ""
    parent = _otlp_id(parent_raw, 8, "parentSpanId", path, line, got) if parent_raw else ""
    listed = sp.get("attributes") or []
    if not isinstance(listed, list):
        raise InputError(f"span {span}: 'attributes' must be a list of key-value objects",
                         path, line)
    attrs: dict[str, Any] = {}
    for kv in listed:
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise InputError(f"span {span}: each attribute must be an object with a string "
                             f"'key', got {shown(kv)}", path, line)
        try:
            attrs[kv["key"]] = any_value(kv.get("value", {}))
        except BadValue as exc:
            raise InputError(f"span {span}: attribute '{kv['key']}': {exc}", path,
                             line) from None
    raw_start = sp.get("startTimeUnixNano", sp.get("start_time_unix_nano")) or 0
    try:
        start = int(raw_start)
        if isinstance(raw_start, (bool, float)) or not 0 <= start < UINT64:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"span {span}: 'startTimeUnixNano' must be an integer of nanoseconds "
                         f"since 1970 (0 to 2^64 - 1), got {shown(raw_start)}", path,
                         line) from None
    kind = attrs.get("openinference.span.kind")
    return Span(trace, span, parent, start, attrs, kind if isinstance(kind, str) else None,
                str(sp.get("name", "")))


def _otlp_id(value: Any, size: int, key: str, path: str, line: int, got: TraceFile) -> str:
    """An OTLP JSON id as lower-case hex: hex as the spec writes it, or base64 (protobuf's
    JSON mapping of bytes), noted once."""
    if not isinstance(value, str) or not value:
        raise InputError(f"a span needs '{key}' (a string)", path, line)
    if len(value) == 2 * size and HEX.fullmatch(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != size:
        raise InputError(f"'{key}' {shown(value)} is neither {2 * size} hex digits nor "
                         f"base64 of {size} bytes", path, line)
    note = "ids in base64 (protobuf's JSON mapping), read as bytes; OTLP/JSON writes hex"
    if note not in got.notes:
        got.notes.append(note)
    return raw.hex()
