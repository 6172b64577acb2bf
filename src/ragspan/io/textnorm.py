"""Text normalised for placement, with the map back to the original offsets.

``normalize`` drops soft hyphens, joins line-break hyphenation (``agree-\\nment``), applies
Unicode NFKC to the whole string (a decomposed ``e`` + U+0301 is ``é``; conjoining jamo are
one syllable; halfwidth kana take their voicing marks), makes typographic quotes, dashes and
no-break spaces ASCII, and makes every whitespace run other than one plain space one space.
``Normalized.start_of`` / ``end_of`` map an offset of the normalised text back to the
original (Python string indices, half-open).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass

# ASCII stand-ins for typographic quotes, dashes and spaces (after NFKC); soft hyphens dropped
_TYPOGRAPHIC = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u00a0": " ", "\u00ad": None,
})
# what normalisation may change: line-break hyphenation, whitespace other than one plain
# space, and runs of non-ASCII characters that are not whitespace (single spaces and ASCII
# text map to themselves)
_SPECIAL = re.compile(r"(?P<hyphen>(?<=\w)-[ \t]*\r?\n\s*(?=\w))|(?P<space>\s{2,}|[^\S ])"
                      r"|(?P<run>[^\x00-\x7f\s]+)")
# Characters of canonical combining class 0 that still join the character before them under
# NFKC: second halves of canonical compositions (Indic length marks, Hangul vowel and
# final jamo) and characters whose NFKC form starts with one (halfwidth kana voicing marks,
# compatibility jamo). Generated from unicodedata (tests/test_placement.py recomputes it);
# every character with a non-zero combining class joins too.
_JOINING_RANGES = (
    (0x09BE, 0x09BE), (0x09D7, 0x09D7), (0x0B3E, 0x0B3E), (0x0B56, 0x0B57), (0x0BBE, 0x0BBE),
    (0x0BD7, 0x0BD7), (0x0CC2, 0x0CC2), (0x0CD5, 0x0CD6), (0x0D3E, 0x0D3E), (0x0D57, 0x0D57),
    (0x0DCF, 0x0DCF), (0x0DDF, 0x0DDF), (0x0F73, 0x0F73), (0x0F75, 0x0F75), (0x0F81, 0x0F81),
    (0x102E, 0x102E), (0x1161, 0x1175), (0x11A8, 0x11C2), (0x1B35, 0x1B35), (0x3133, 0x3133),
    (0x3135, 0x3136), (0x313A, 0x313F), (0x314F, 0x3163), (0xFF9E, 0xFF9F), (0xFFA3, 0xFFA3),
    (0xFFA5, 0xFFA6), (0xFFAA, 0xFFAF), (0xFFC2, 0xFFC7), (0xFFCA, 0xFFCF), (0xFFD2, 0xFFD7),
    (0xFFDA, 0xFFDC), (0x11127, 0x11127), (0x1133E, 0x1133E), (0x11357, 0x11357),
    (0x114B0, 0x114B0), (0x114BA, 0x114BA), (0x114BD, 0x114BD), (0x115AF, 0x115AF),
    (0x11930, 0x11930),
)
JOINING = frozenset(chr(c) for lo, hi in _JOINING_RANGES for c in range(lo, hi + 1))


def joins_previous(ch: str) -> bool:
    """Whether NFKC may combine ``ch`` with the character before it."""
    return bool(unicodedata.combining(ch)) or ch in JOINING


@dataclass(frozen=True)
class Normalized:
    """A normalised text and the map back to the original: segment ``i`` starts at output
    position ``out[i]`` and original position ``orig[i]``; a verbatim segment maps position
    by position, a replaced one maps every output position to its original ``[orig, end)``."""

    text: str
    out: list[int]
    orig: list[int]
    orig_end: list[int]
    verbatim: list[bool]

    def start_of(self, p: int) -> int:
        """The original offset where output position ``p`` begins."""
        k = bisect_right(self.out, p) - 1
        return self.orig[k] + (p - self.out[k]) if self.verbatim[k] else self.orig[k]

    def end_of(self, p: int) -> int:
        """The original offset where output position ``p - 1`` ends (``p`` exclusive)."""
        k = bisect_right(self.out, p - 1) - 1
        return self.orig[k] + (p - self.out[k]) if self.verbatim[k] else self.orig_end[k]


class _Builder:
    """Collects a normalised text segment by segment (``Normalized``'s map)."""

    def __init__(self, text: str):
        self.text = text
        self.parts: list[str] = []
        self.out: list[int] = []
        self.orig: list[int] = []
        self.orig_end: list[int] = []
        self.verbatim: list[bool] = []
        self.n = 0
        self.pos = 0  # the original text before ``pos`` is written

    def flush(self, upto: int) -> None:
        """The original text from ``pos`` to ``upto``, verbatim."""
        if upto > self.pos:
            self.parts.append(self.text[self.pos:upto])
            self._segment(self.pos, upto, upto - self.pos, True)
        self.pos = max(self.pos, upto)

    def replace(self, start: int, end: int, rep: str) -> None:
        """The original ``[start, end)`` written as ``rep`` (``start >= pos``)."""
        self.flush(start)
        if rep == " " and self.parts and self.parts[-1].endswith(" "):
            rep = ""  # "a \n b": one space, not two
        if rep:
            self.parts.append(rep)
            self._segment(start, end, len(rep), False)
        self.pos = end

    def _segment(self, start: int, end: int, length: int, verbatim: bool) -> None:
        self.out.append(self.n)
        self.orig.append(start)
        self.orig_end.append(end)
        self.verbatim.append(verbatim)
        self.n += length

    def done(self) -> Normalized:
        self.flush(len(self.text))
        if not self.out:
            return Normalized("", [0], [0], [0], [True])
        return Normalized("".join(self.parts), self.out, self.orig, self.orig_end,
                          self.verbatim)


_ONE: dict[str, str] = {}  # a single character's normalised form


def _clusters(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` cut where NFKC cannot join two characters: before every
    character that does not join the one before it (``joins_previous``)."""
    cuts = [start] + [i for i in range(start + 1, end) if not joins_previous(text[i])]
    return list(zip(cuts, cuts[1:] + [end]))


def normalize(text: str) -> Normalized:
    """``text`` normalised (see the module docstring), with the map back to its offsets.
    NFKC applies to the whole string: a run of non-ASCII characters is normalised cluster by
    cluster, a cluster being a character and every following one that NFKC may join to it
    (combining marks, Hangul jamo, ...), with the ASCII letter before a run that begins with
    a combining mark (decomposed ``e`` + U+0301 is ``é``); clusters that NFKC leaves alone
    stay verbatim."""
    b = _Builder(text)
    for m in _SPECIAL.finditer(text):
        kind = m.lastgroup
        if kind == "hyphen":
            b.replace(m.start(), m.end(), "")  # line-break hyphenation joined
        elif kind == "space":
            b.replace(m.start(), m.end(), " ")
        else:
            lo, hi = m.span()
            if lo > b.pos and joins_previous(text[lo]):
                lo -= 1  # the base character of a leading combining mark
            elif hi - lo == 1:  # one character (most runs): its form is cached
                one = text[lo]
                rep = _ONE.get(one)
                if rep is None:
                    rep = _ONE[one] = unicodedata.normalize("NFKC", one).translate(_TYPOGRAPHIC)
                if rep != one:
                    b.replace(lo, hi, rep)
                continue
            run = text[lo:hi]
            if unicodedata.is_normalized("NFKC", run) and run.translate(_TYPOGRAPHIC) == run:
                continue  # verbatim (the builder writes it with the text around it)
            for c_lo, c_hi in _clusters(text, lo, hi):
                piece = text[c_lo:c_hi]
                rep = unicodedata.normalize("NFKC", piece).translate(_TYPOGRAPHIC)
                if rep != piece:
                    b.replace(c_lo, c_hi, rep)
    return b.done()


def normalized_needle(text: str) -> str:
    """A retrieved text normalised for searching: as ``normalize``, its ends trimmed."""
    return normalize(text).text.strip(" ")
