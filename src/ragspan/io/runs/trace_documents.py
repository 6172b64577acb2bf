"""What a trace span says, read by the conventions (``io.runs.trace_steps`` puts it
together): a span's role (retriever, reranker), its question (``question_text``: a JSON
``input.value`` read by its usual keys), an attribute path that reaches inside JSON
attributes (``lookup``: ``metadata.KEY``), and its documents (``documents``: OpenInference's
``retrieval.documents.N.document.*`` and ``reranker.*_documents``, the GenAI conventions'
``gen_ai.retrieval.documents``), each with its id (any scalar, as text), content, score and
metadata (JSON text or an object)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragspan.base.errors import InputError
from ragspan.io.files import TooDeep, json_value
from ragspan.io.runs.trace_otlp import BadValue, Span, shown

QUESTION_KEYS = ("question", "query", "input", "query_str", "text")
DOC_PREFIXES = {"retriever": "retrieval.documents.", "reranker": "reranker.output_documents.",
                "reranker_input": "reranker.input_documents."}
GENAI_DOCS = "gen_ai.retrieval.documents"


@dataclass(frozen=True)
class Doc:
    id: str | None
    content: str | None
    score: Any
    metadata: dict[str, Any]


def role(span: Span) -> str | None:
    """``retriever``, ``reranker`` or None."""
    if span.kind == "RETRIEVER" or span.attributes.get("gen_ai.operation.name") == "retrieval":
        return "retriever"
    if span.kind == "RERANKER":
        return "reranker"
    return None


# ---- attributes ---------------------------------------------------------------------------


def _json_object(value: Any) -> Any:
    """A JSON text parsed (anything else as it is; text that is no JSON stays text); JSON
    nested past ``base.bounds.MAX_JSON_DEPTH`` is BadValue (``io.files.json_value``)."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json_value(value)
        except TooDeep as exc:
            raise BadValue(str(exc)) from None
        except ValueError:
            return value
    return value


def lookup(attrs: Mapping[str, Any], path: str) -> Any:
    """The attribute ``path``, or a key inside a JSON (or object) attribute: the longest
    attribute name that ``path`` starts with, then the rest of the path key by key."""
    if path in attrs:
        return attrs[path]
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head in attrs:
            value = _json_object(attrs[head])
            for key in parts[cut:]:
                if not isinstance(value, dict) or key not in value:
                    return None
                value = _json_object(value[key])
            return value
    return None


def question_text(attrs: Mapping[str, Any]) -> str | None:
    """A span's question: ``input.value``, read as JSON when ``input.mime_type`` says so
    (module docstring)."""
    value = attrs.get("input.value")
    if not isinstance(value, str):
        return None
    if str(attrs.get("input.mime_type", "")).startswith("application/json"):
        return _question_of(_json_object(value), 0)
    return value


def _question_of(value: Any, depth: int) -> str | None:
    if isinstance(value, str):
        return value
    if not isinstance(value, dict) or depth > 1:
        return None
    for key in QUESTION_KEYS:
        if isinstance(value.get(key), str):
            return str(value[key])
    for inner in value.values():
        found = _question_of(inner, depth + 1) if isinstance(inner, dict) else None
        if found is not None:
            return found
    return None


def _as_id(value: Any, where: str, path: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputError(f"{where}: a document id must be text or a number, got {shown(value)}",
                         path)
    return str(value)


def _metadata(value: Any, where: str, path: str) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    try:
        parsed = _json_object(value)
    except BadValue as exc:
        raise InputError(f"{where}: document.metadata: {exc}", path) from None
    if not isinstance(parsed, dict):
        raise InputError(f"{where}: document.metadata must be a JSON object, got {shown(value)}",
                         path)
    return parsed


def documents(span: Span, which: str, path: str) -> list[Doc] | None:
    """A span's documents (``which``: ``retriever``, ``reranker`` or ``reranker_input``);
    None when it records none."""
    a = span.attributes
    if which == "retriever" and span.kind != "RETRIEVER" and (
            GENAI_DOCS in a or any(k.startswith(GENAI_DOCS + ".") for k in a)):
        return _genai_documents(span, path)
    prefix = DOC_PREFIXES[which]
    fields: dict[int, dict[str, Any]] = {}
    for key, value in a.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix):].partition(".document.")
            if index.isdigit() and rest in ("id", "content", "score", "metadata"):
                fields.setdefault(int(index), {})[rest] = value
    if not fields:
        return None if which != "retriever" else []
    out = []
    for i in sorted(fields):
        f = fields[i]
        where = f"span {span.span} (trace {span.trace}) document {i}"
        content = f.get("content")
        if content is not None and not isinstance(content, str):
            raise InputError(f"{where}: document.content must be text, got {shown(content)}",
                             path)
        out.append(Doc(_as_id(f.get("id"), where, path), content, f.get("score"),
                       _metadata(f.get("metadata"), where, path)))
    return out


def _genai_documents(span: Span, path: str) -> list[Doc]:
    a = span.attributes
    raw = a.get(GENAI_DOCS)
    if raw is None:  # flattened by a nested export: gen_ai.retrieval.documents.N.field
        by_index: dict[int, dict[str, Any]] = {}
        for key, value in a.items():
            if key.startswith(GENAI_DOCS + "."):
                index, _, name = key[len(GENAI_DOCS) + 1:].partition(".")
                if index.isdigit():
                    by_index.setdefault(int(index), {})[name] = value
        raw = [by_index[i] for i in sorted(by_index)]
    if isinstance(raw, str):
        try:
            raw = json_value(raw)
        except TooDeep as exc:
            raise InputError(f"span {span.span}: {GENAI_DOCS}: {exc}", path) from None
        except ValueError:
            raise InputError(f"span {span.span}: {GENAI_DOCS} is not JSON", path) from None
    if not isinstance(raw, list) or not all(isinstance(d, dict) for d in raw):
        raise InputError(f"span {span.span}: {GENAI_DOCS} must be a list of objects", path)
    out = []
    for i, d in enumerate(raw):
        where = f"span {span.span} (trace {span.trace}) document {i}"
        content = d.get("content", d.get("text"))
        if content is not None and not isinstance(content, str):
            raise InputError(f"{where}: content must be text, got {shown(content)}", path)
        out.append(Doc(_as_id(d.get("id"), where, path), content, d.get("score"),
                       _metadata(d.get("metadata"), where, path)))
    return out
