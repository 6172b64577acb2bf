"""Options declared once: the type check as a table, and the docs table equal to the code's."""

from __future__ import annotations

import math

import pytest

from conftest import ROOT
from ragspan.options import GATE_DEFAULTS, GATE_OPTIONS, Option, check_value, markdown_table


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
