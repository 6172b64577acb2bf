"""A report as plain blocks (paragraphs, tables, quotes, plots), written as Markdown or as
one self-contained HTML file.

HTML: inline CSS, inline SVG plots, no script, no external resource (font, image, style
sheet), so the file opens offline and reads the same anywhere. Markdown leaves the plots out
(their numbers are in the tables). Text is escaped for each format; nothing in a block is
interpreted as markup.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragspan.report.render.text import md_lines, md_text


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class Table:
    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    caption: str = ""
    left: int | tuple[int, ...] = 1  # left-aligned columns: the first n, or these indices
    wide: tuple[int, ...] = ()  # columns of running text, given room in HTML

    def is_left(self, i: int) -> bool:
        return i < self.left if isinstance(self.left, int) else i in self.left


@dataclass(frozen=True)
class Quote:
    text: str
    source: str


@dataclass(frozen=True)
class Plot:
    """An inline SVG figure (HTML only); ``svg`` is the whole ``<svg>`` element."""

    title: str
    svg: str


Block = Para | Table | Quote | Plot


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Document:
    title: str
    intro: list[Block]
    sections: list[Section]


def _md_block(b: Block) -> str | None:
    if isinstance(b, Para):
        return md_lines(b.text)
    if isinstance(b, Quote):
        body = "\n".join("> " + line if line else ">" for line in md_lines(b.text).split("\n"))
        return f"{body}\n>\n> — {md_text(b.source)}"
    if isinstance(b, Table):
        head = "| " + " | ".join(md_text(h) for h in b.header) + " |"
        align = "|" + "|".join("---" if b.is_left(i) else "---:"
                               for i in range(len(b.header))) + "|"
        rows = ["| " + " | ".join(md_text(c) for c in r) + " |" for r in b.rows]
        text = "\n".join([head, align, *rows])
        return f"{text}\n\n{md_lines(b.caption)}" if b.caption else text
    return None  # plots are HTML only


def markdown(doc: Document) -> str:
    """The document as GitHub-flavoured markdown; every text is data (``render.text.md_text``
    and ``md_lines``): nothing in a title, paragraph, cell or quote becomes markup."""
    parts = [f"# {md_text(doc.title)}"]
    parts += [t for t in map(_md_block, doc.intro) if t is not None]
    for s in doc.sections:
        parts.append(f"## {md_text(s.title)}")
        parts += [t for t in map(_md_block, s.blocks) if t is not None]
    return "\n\n".join(parts) + "\n"


CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2430;
max-width:1180px;margin:2rem auto;padding:0 1.25rem;background:#fff}
h1{font-size:1.6rem;margin:.2rem 0 1rem}h2{font-size:1.2rem;margin:2rem 0 .6rem;
border-bottom:1px solid #d8dde6;padding-bottom:.25rem}
table{border-collapse:collapse;margin:.5rem 0 .4rem;font-size:.88rem}
th,td{border:1px solid #d8dde6;padding:.28rem .55rem;vertical-align:top}
th{background:#f1f4f8;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.caption{color:#4a5568;font-size:.85rem;margin:0 0 1rem}
blockquote{margin:.5rem 0 1rem;padding:.4rem .9rem;border-left:4px solid #9fb3c8;
background:#f7f9fb;white-space:pre-wrap}blockquote footer{color:#4a5568;font-size:.85rem}
figure{margin:1rem 0}figcaption{font-weight:600;margin-bottom:.3rem}
.scroll{overflow-x:auto}td.w{min-width:16rem}
"""


def _html_block(b: Block) -> str:
    e = html.escape
    if isinstance(b, Para):
        return f"<p>{e(b.text)}</p>"
    if isinstance(b, Quote):
        return f"<blockquote>{e(b.text)}<footer>— {e(b.source)}</footer></blockquote>"
    if isinstance(b, Plot):
        return f'<figure><figcaption>{e(b.title)}</figcaption>{b.svg}</figure>'
    head = "".join(f"<th>{e(h)}</th>" for h in b.header)
    rows = "".join(
        "<tr>" + "".join((f'<td class="w">{e(c)}</td>' if i in b.wide else f"<td>{e(c)}</td>")
                         if b.is_left(i)
                         else f'<td class="n">{e(c)}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in b.rows)
    cap = f'<p class="caption">{e(b.caption)}</p>' if b.caption else ""
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>{cap}")


def html_page(doc: Document) -> str:
    body = [f"<h1>{html.escape(doc.title)}</h1>", *map(_html_block, doc.intro)]
    for s in doc.sections:
        body.append(f"<section><h2>{html.escape(s.title)}</h2>")
        body += map(_html_block, s.blocks)
        body.append("</section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{html.escape(doc.title)}</title><style>{CSS.strip()}</style></head>"
            "<body>\n" + "\n".join(body) + "\n</body></html>\n")
