"""OTLP traces in protobuf's binary encoding (``otlp_protobuf``): one bare
``TracesData`` / ``ExportTraceServiceRequest`` message, or a stream of them each preceded by
its length (4 big-endian bytes, as the Collector's file exporter writes them, or a varint,
as the OTLP file exporter spec's delimited stream). Each message's spans are counted on its
wire bytes (``count_spans``) before it is parsed, so the span bound holds before a span is
materialised. Needs ``opentelemetry-proto`` (``pip install 'ragspan[traces]'``)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from ragspan.base.bounds import MAX_SPANS
from ragspan.base.errors import InputError, MissingExtraError
from ragspan.io.runs.trace_otlp import EXPECTED, MAX_NESTING, BadValue, Span, TraceFile


def otlp_protobuf(data: bytes, path: str) -> TraceFile:
    """The spans of a protobuf trace file: each framing tried in turn (4-byte, varint, one
    bare message); each message's spans are counted on its wire bytes before it is parsed
    (``count_spans``), so a file of more than ``MAX_SPANS`` spans is refused before any is
    materialised."""
    try:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
    except ImportError:
        raise MissingExtraError("opentelemetry-proto", "traces") from None
    for framing, messages in (("4-byte length-prefixed", _framed(data, 4)),
                              ("varint-delimited", _framed(data, 0)), ("", [data])):
        if messages is None:
            continue
        parsed = []
        total = 0
        try:
            for message in messages:
                counted = count_spans(message, MAX_SPANS - total)
                if counted is None:
                    raise DecodeError("not a TracesData message")
                total += counted
                if total > MAX_SPANS:
                    raise InputError(f"more than {MAX_SPANS:,} spans (counted before "
                                     "parsing)", path)
                parsed.append(TracesData.FromString(message))
        except DecodeError:
            continue
        got = TraceFile("otlp-protobuf", [], [f"{framing} stream of {len(parsed)} messages"]
                        if framing else [])
        for request in parsed:
            _from_proto(request, got, path)
        if got.spans or framing == "":
            if not got.spans:
                raise InputError(f"{EXPECTED}; this binary file holds no span", path)
            return got
    raise InputError(f"{EXPECTED}; this binary file is none of them", path)


def _varint(data: bytes, i: int) -> tuple[int, int]:
    """The varint at ``data[i]`` and the index after it; ValueError when it runs off the
    end or past 64 bits."""
    value, shift = 0, 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


class _Malformed(ValueError):
    """Bytes that are not a protobuf message's wire form."""


def _fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    """The length-delimited fields of the message ``data[start:end]``, one at a time, as
    (field number, start, end) of their payloads, other wire types skipped; ``_Malformed``
    when the bytes are not a well-formed message (found as the walk reaches them)."""
    i = start
    try:
        while i < end:
            tag, i = _varint(data, i)
            kind = tag & 7
            if kind == 0:
                _, i = _varint(data, i)
            elif kind in (1, 5):
                i += 8 if kind == 1 else 4
            elif kind == 2:
                size, i = _varint(data, i)
                yield tag >> 3, i, i + size
                i += size
            else:
                raise _Malformed("a group or an unknown wire type")
    except ValueError as exc:
        raise _Malformed(str(exc)) from None
    if i != end:
        raise _Malformed("a field runs past its message")


def count_spans(message: bytes, limit: int) -> int | None:
    """How many spans a ``TracesData`` (or ``ExportTraceServiceRequest``) message holds,
    read from its wire bytes without parsing it (``resource_spans`` is field 1, a
    ``ResourceSpans``' ``scope_spans`` field 2, a ``ScopeSpans``' ``spans`` field 2), stopping
    once past ``limit``; None when the bytes are not such a message."""
    count = 0
    try:
        for number, a, b in _fields(message, 0, len(message)):
            if number != 1:
                continue
            for inner, c, d in _fields(message, a, b):
                if inner != 2:
                    continue
                for field, _, _ in _fields(message, c, d):
                    count += field == 2
                    if count > limit:
                        return count
    except _Malformed:
        return None
    return count


def _framed(data: bytes, width: int) -> list[bytes] | None:
    """``data`` cut into messages each preceded by its length (``width`` big-endian bytes,
    or a varint for 0); None when the lengths do not add up to the file exactly."""
    out, i = [], 0
    while i < len(data):
        if width:
            if i + width > len(data):
                return None
            size = int.from_bytes(data[i:i + width], "big")
            i += width
        else:
            size, shift = 0, 0
            while True:
                if i >= len(data) or shift > 63:
                    return None
                byte = data[i]
                i += 1
                size |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
        if size == 0 or i + size > len(data):
            return None
        out.append(data[i:i + size])
        i += size
    return out if len(out) > 1 or (out and width) else None


def _from_proto(request: Any, got: TraceFile, path: str) -> None:
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for sp in ss.spans:
                name = sp.span_id.hex()
                attrs = {}
                for kv in sp.attributes:
                    try:
                        attrs[kv.key] = _proto_value(kv.value, 0)
                    except BadValue as exc:
                        raise InputError(f"span {name}: attribute '{kv.key}': {exc}",
                                         path) from None
                kind = attrs.get("openinference.span.kind")
                got.spans.append(Span(sp.trace_id.hex(), name, sp.parent_span_id.hex(),
                                      int(sp.start_time_unix_nano), attrs,
                                      kind if isinstance(kind, str) else None, sp.name))
                if len(got.spans) > MAX_SPANS:
                    raise InputError(f"more than {MAX_SPANS:,} spans", path)


def _proto_value(v: Any, depth: int) -> Any:
    if depth > MAX_NESTING:
        raise BadValue(f"nested more than {MAX_NESTING} deep")
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_proto_value(x, depth + 1) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _proto_value(kv.value, depth + 1) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(v.bytes_value).decode("ascii")
    return getattr(v, which)
