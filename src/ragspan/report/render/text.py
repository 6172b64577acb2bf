"""Text primitives of every renderer: aligned plain-text tables, GitHub markdown tables and
escaping, number formats, and the metric x k grid of a score summary. A leaf: it imports no
other renderer."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ragspan.scoring.metrics.registry import METRICS, cutoff_key, parse_name, sorted_cutoffs


def aligned(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Columns padded to a common width; the first ``left`` columns left-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        out = [c.ljust(w) if i < left else c.rjust(w)
               for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)]) + "\n"


class Markdown(str):
    """Markdown written by ragspan itself (a code span around a metric name, a ``<details>``
    block): ``md_text`` and ``md_table`` pass it through. Every other string is data."""


ZWSP = "&#8203;"  # a zero-width space, as an entity: breaks a mention or an autolink
_MD_PUNCT = re.compile(r"([\\`*\[\]~|]|(?<![^\W_])_|_(?![^\W_]))")  # not a_b
_MENTION = re.compile(r"(?<![0-9A-Za-z])@(?=[0-9A-Za-z])")  # GitHub's @user, @org/team
_EMAIL = re.compile(r"(?<=[0-9A-Za-z._%+-])@(?=[0-9A-Za-z-]+\.[0-9A-Za-z])")  # a@b.c autolinks
_REF = re.compile(r"(?<![0-9A-Za-z])#(?=[0-9])")  # #123: an issue or pull request link
_SCHEME = re.compile(r":(?=//)")  # http://, ftp://, javascript://...
_WWW = re.compile(r"(?i)(?<![0-9A-Za-z])(www)\.")


def md_text(text: str) -> str | Markdown:
    """``text`` made inert for GitHub-flavoured markdown, in a paragraph or a table cell:
    it renders as the same characters and is never markup. HTML (``<``, ``>``, ``&``) is
    written as entities; the markdown punctuation that can open a construct inside a line
    (code, emphasis, link and image brackets, pipes, strikethrough) is backslash-escaped
    (``(``, ``!`` and ``#`` need no escape once ``[`` has one; an underscore inside a word, as in
    ``complete_grounding``, cannot emphasise and stays as it is); line ends become spaces; mentions
    (``@user``), issue references (``#12``), e-mail addresses and autolinks (``x://``,
    ``www.``) get a zero-width space, so nobody is pinged and nothing links. ``Markdown``
    passes through unchanged. Used by every markdown output (compare, score, validate,
    leakage, overlap, report and readout): the one escaping function."""
    if isinstance(text, Markdown):
        return text
    out = " ".join(str(text).replace("\r\n", "\n").splitlines()) if text else ""
    out = out.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = _MD_PUNCT.sub(r"\\\1", out)
    out = _MENTION.sub("@\u200b", out)
    out = _EMAIL.sub("@\u200b", out)
    out = _REF.sub("#\u200b", out)
    out = _SCHEME.sub(":\u200b", out)
    out = _WWW.sub("\\1\u200b.", out)
    return out.replace("\u200b", ZWSP)  # last: the entity holds a '#' of its own


_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")


def for_terminal(markdown_text: str) -> str:
    """Markdown made for a person at a terminal rather than a renderer: the HTML entities
    and zero-width spaces of ``md_text`` written as the characters they stand for, and
    backslash escapes dropped (a terminal renders nothing, so nothing needs defusing),
    control characters but tab and newline removed."""
    import html

    out = html.unescape(markdown_text).replace("\u200b", "")
    out = _ESCAPED.sub(r"\1", out)
    return "".join(c for c in out if c in "\t\n" or c >= " " and c != "\x7f")


_LIST_MARK = re.compile(r"^([-+=#])")
_ORDERED_MARK = re.compile(r"^(\d+)([.)])")


def md_lines(text: str) -> str:
    """``text`` as inert markdown lines (a paragraph, a quoted passage): each line through
    ``md_text``; leading spaces and tabs written as entities (``&#32;``, ``&#9;``: they show
    as themselves, and cannot indent a code block or a list); what would start a list or a
    heading at a line's start (``-``, ``+``, ``=``, ``#``, ``1.``) escaped."""
    out = []
    for line in str(text).replace("\r\n", "\n").split("\n"):
        body = line.lstrip(" \t")
        lead = line[:len(line) - len(body)].replace(" ", "&#32;").replace("\t", "&#9;")
        body = _ORDERED_MARK.sub(r"\1\\\2", _LIST_MARK.sub(r"\\\1", md_text(body)))
        out.append(lead + body)
    return "\n".join(out)


def md_code(text: str) -> Markdown:
    """``text`` as an inline code span (a metric name, a key): backticks inside are
    replaced, line ends become spaces; code spans show HTML and mentions literally."""
    body = " ".join(str(text).replace("`", "'").splitlines())
    return Markdown(f"`{body}`")


def md_table(header: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    """A GFM table; every cell and header goes through ``md_text``."""
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(md_text(h) for h in header) + " |",
             "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


# numbers, one way for every text ragspan writes: a metric in a table (``fmt_number``), the
# readout's values, signed changes, p-values, characters and shares; DASH where there is none
DASH = "–"


def f3(v: float) -> str:
    return f"{v:.3f}"


def signed(v: float) -> str:
    return f"{v:+.3f}"


def pval(p: float | None) -> str:
    if p is None:
        return DASH
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def chars(v: float) -> str:
    return f"{v:,.0f}"


def pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def fmt_number(value: float, base: str) -> str:
    if base.startswith("retrieved_chars") or base.startswith("latency"):
        return f"{value:,.0f}"
    return f"{value:.4f}"


def metric_grid(summary_metrics: dict[str, float]) -> tuple[list[int], list[tuple[str, list[str]]]]:
    """Rows ``(metric base, cells)`` and the k columns, in first-seen metric order."""
    parsed = [parse_name(n) for n in summary_metrics]
    ks: list[int] = list(sorted_cutoffs(p.k for p in parsed))  # counts, then budgets
    bases: list[str] = []
    for p in parsed:
        base = p.column
        if base not in bases:
            bases.append(base)
    rows = []
    for base in bases:
        cells = []
        for k in ks:
            v = summary_metrics.get(f"{base}@{k}")
            cells.append("" if v is None else fmt_number(v, base))
        rows.append((base, cells))
    return ks, rows


def ordered_metrics(metrics: Mapping[str, float]) -> dict[str, float]:
    """Summary metrics ordered by the registry (complete grounding first), then by name."""
    order = {name: i for i, name in enumerate(METRICS)}

    def key(name: str) -> tuple[bool, int, str, tuple[int, int]]:
        p = parse_name(name)
        return (p.first_stage, order[p.base], p.base, cutoff_key(p.k))

    return {n: metrics[n] for n in sorted(metrics, key=key)}
