"""Options declared once: the type check as a table, and the docs table equal to the code's."""

from __future__ import annotations

import math

import pytest

from conftest import ROOT
from ragspan.base.option_tables import markdown_table
from ragspan.base.options import GATE_DEFAULTS, GATE_OPTIONS, Option, check_value


@pytest.mark.parametrize("opt,value,ok", [
    (Option("x", "bool"), True, True),
    (Option("x", "bool"), "false", False),
    (Option("x", "bool"), 0, False),
    (Option("x", "int", low=1), 3, True),
    (Option("x", "int", low=1), 0, False),
    (Option("x", "int", low=1), 1.5, False),
    (Option("x", "int", low=1), True, False),
    (Option("x", "float", low=0), 2, True),
    (Option("x", "float", low=0), math.nan, False),
    (Option("x", "float", low=0), math.inf, False),
    (Option("x", "float", low=0), "0.1", False),
    (Option("x", "float", low=0, high=1, open_low=True, open_high=True), 1.0, False),
    (Option("x", "float", low=0, high=1, open_low=True, open_high=True), 0.5, True),
    (Option("x", "enum", choices=("a", "b")), "a", True),
    (Option("x", "enum", choices=("a", "b")), "c", False),
    (Option("x", "enum", choices=("a", "b")), 5, False),
    (Option("x", "strings"), ["a", "b"], True),
    (Option("x", "strings"), "ab", False),
    (Option("x", "strings"), ["a", ""], False),
    (Option("x", "str", nullable=True), None, True),
    (Option("x", "str"), None, False),
    (Option("x", "table"), {}, True),
    (Option("x", "table"), 5, False),
])
def test_check_value_table(opt, value, ok):
    if ok:
        check_value(opt, value)
    else:
        with pytest.raises(ValueError, match="expected"):
            check_value(opt, value)


def test_every_default_fits_its_option():
    for opt in GATE_OPTIONS:
        check_value(opt, list(opt.default) if opt.kind == "strings" else opt.default)
    assert GATE_DEFAULTS["permutations"] == 10_000 and GATE_DEFAULTS["alpha"] is None


def test_docs_table_is_the_code_table():
    text = (ROOT / "docs" / "gate.md").read_text(encoding="utf-8")
    assert markdown_table(GATE_OPTIONS) in text


def test_pipeline_docs_tables_are_the_code_tables():
    from ragspan.base.option_tables import pipeline_markdown
    from ragspan.base.options import RUN_RETRIEVER_OPTIONS

    text = (ROOT / "docs" / "retrieval.md").read_text(encoding="utf-8")
    assert pipeline_markdown() in text
    assert markdown_table(RUN_RETRIEVER_OPTIONS, "--") in text


def test_pipeline_defaults_are_the_declared_ones():
    """The pipeline dataclasses take every default from the declaration, and every declared
    default fits its own option."""
    from dataclasses import fields

    from ragspan.base.options import PIPELINE_SECTIONS, PIPELINE_TOP, RUN_RETRIEVER_OPTIONS
    from ragspan.retrieval.chunkers import ChunkerSpec
    from ragspan.retrieval.config import DenseSpec, PipelineConfig, RerankSpec, SparseSpec

    for opt in (*PIPELINE_TOP, *RUN_RETRIEVER_OPTIONS,
                *(o for opts in PIPELINE_SECTIONS.values() for o in opts)):
        if opt.kind != "table" and opt.key != "name":
            check_value(opt, opt.default)
    for cls, section in ((ChunkerSpec, "chunker"), (DenseSpec, "dense"),
                         (SparseSpec, "sparse"), (RerankSpec, "rerank")):
        declared = {o.attr: o.default for o in PIPELINE_SECTIONS[section] if o.key != "enabled"}
        assert {f.name: f.default for f in fields(cls)} == declared, section
    top = {f.name: f.default for f in fields(PipelineConfig)}
    assert top["depth"] == 10 and top["fusion_k"] == 60 and top["scope"] == "doc_id"


def test_run_retriever_click_options_come_from_the_declaration():
    from ragspan.base.options import RUN_RETRIEVER_OPTIONS
    from ragspan.cli import cli

    params = {p.name: p for p in cli.commands["run-retriever"].params}
    for opt in RUN_RETRIEVER_OPTIONS:
        assert opt.attr in params and opt.help in (params[opt.attr].help or "")
    assert params["depth"].type.min == 1


def test_metric_tables_in_the_docs_are_the_registry():
    from ragspan.scoring.metrics.registry import markdown_tables

    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    span, doc = markdown_tables()
    assert span in text and doc in text


def test_metrics_listing_names_every_registered_metric():
    import json

    from conftest import run_cli
    from ragspan.scoring.metrics.registry import METRICS, parse_name

    listed = json.loads(run_cli("metrics", "--format", "json").stdout)
    assert [m["name"] for m in listed] == list(METRICS)
    table = run_cli("metrics", "--format", "table").stdout
    for name in METRICS:
        assert f"{name}@k" in table
        assert parse_name(f"{name}@5").base == name
