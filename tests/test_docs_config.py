"""Every ``[tool.ragspan]`` setting the docs show is one the reader takes as spelled there:
each TOML example in docs/ and the README is loaded through ``load_tool_config`` (the file
as a user would paste it), and each key a sentence names as living in ``[tool.ragspan]``
is accepted in a file of its own."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT
from ragspan.app.settings import load_tool_config
from ragspan.base.errors import InputError
from ragspan.base.options import GATE_OPTIONS

DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"```toml\n(.*?)```", re.S)


def _examples() -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        for n, block in enumerate(BLOCK.findall(path.read_text(encoding="utf-8"))):
            if "[tool.ragspan" in block:
                out.append((f"{path.name}#{n}", block))
    return out


def _named_keys() -> list[tuple[str, str]]:
    """(doc, key) for each backticked key on a line that says it lives in [tool.ragspan]."""
    out = []
    for path in DOCS:
        for line in path.read_text(encoding="utf-8").splitlines():
            if "[tool.ragspan]" not in line or line.startswith("|"):  # a table names code
                continue
            for key in re.findall(r"`([a-z][a-z0-9]*(?:[-_][a-z0-9]+)+)`", line):
                out.append((path.name, key))
    return out


def test_the_docs_show_examples_and_keys():
    assert len(_examples()) >= 2 and _named_keys()


@pytest.mark.parametrize(("where", "block"), _examples(), ids=[w for w, _ in _examples()])
def test_each_toml_example_loads(tmp_path, where, block):
    text = block
    if "[tool.ragspan]" not in text:  # a budgets table alone is still under [tool.ragspan]
        text = "[tool.ragspan]\n" + text
    path = tmp_path / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    settings, used = load_tool_config(str(path))
    assert used == str(path) and settings, where


@pytest.mark.parametrize(("where", "key"), _named_keys())
def test_each_named_key_is_accepted_as_spelled(tmp_path, where, key):
    opt = next(o for o in GATE_OPTIONS
               if o.key in (key, key.replace("_", "-")))
    value = {"float": "1.0", "int": "1", "bool": "true", "str": f'"{opt.default or "2pt"}"',
             "strings": '["category"]', "enum": f'"{opt.choices[0]}"' if opt.choices else '""',
             "table": "{}"}[opt.kind]
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[tool.ragspan]\n{key} = {value}\n", encoding="utf-8")
    settings, _ = load_tool_config(str(path))
    assert opt.attr in settings, (where, key)


def test_both_spellings_of_one_key_are_refused(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.ragspan]\nmax-regression-pct = 5\nmax_regression_pct = 50\n",
                    encoding="utf-8")
    with pytest.raises(InputError, match="given twice"):
        load_tool_config(str(path))
