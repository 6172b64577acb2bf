"""The docs tables of the declared options (``base.options``): docs/gate.md and
docs/retrieval.md hold this text, tested equal, so the docs cannot drift from the code."""

from __future__ import annotations

from ragspan.base.options import PIPELINE_SECTIONS, PIPELINE_TOP, Option


def pipeline_markdown() -> str:
    """The docs tables of the pipeline TOML: the top level, then one table per section
    (docs/retrieval.md holds this text, tested equal)."""
    parts = ["Top level:\n\n" + markdown_table(PIPELINE_TOP)]
    parts += [f"`[{name}]`:\n\n" + markdown_table(opts) for name, opts in PIPELINE_SECTIONS.items()]
    return "\n".join(parts)


def markdown_table(options: tuple[Option, ...], prefix: str = "") -> str:
    """The docs table of ``options`` (key, expected value, default, meaning); docs/gate.md
    and docs/retrieval.md hold this text, tested equal, so the docs cannot drift from the
    code. ``prefix`` is written before each key (``--`` for command-line options)."""
    rows = ["| key | value | default | meaning |", "| --- | --- | --- | --- |"]
    for o in options:
        default = "unset" if o.default is None else (
            "true" if o.default is True else "false" if o.default is False
            else "[]" if o.default == () else "{}" if o.default == {} else repr(o.default)
            if isinstance(o.default, str) else f"{o.default}")
        rows.append(f"| `{prefix}{o.key}` | {o.describe()} | {default} | {o.help} |")
    return "\n".join(rows) + "\n"
