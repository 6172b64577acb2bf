"""Chunkers keep exact offsets: on every real contract, every chunk slices back and the
no-overlap chunkers tile the document; the clause splitter finds each header style and no
page footer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import shared
from ragspan.retrieval.chunkers import ChunkerSpec, chunk_document, fixed, headers

TILING = ("fixed", "sentence", "recursive", "paragraph", "clause")


@pytest.fixture(scope="module")
def contracts() -> dict[str, str]:
    out = {}
    for path in sorted(shared("cuad_dev", "contracts").glob("*.txt")):
        with open(path, encoding="utf-8", newline="") as fh:
            out[path.stem] = fh.read()
    return out


def assert_tiles(chunks, text):
    pos = 0
    for c in chunks:
        assert c.start == pos, (c, pos)
        pos = c.end
    assert pos == len(text)


@pytest.mark.parametrize("kind", [*TILING, "none"])
def test_real_contracts_offsets_and_tiling(contracts, kind):
    for doc_id, text in contracts.items():
        chunks, _ = chunk_document(doc_id, text, ChunkerSpec(kind, 800))
        assert chunks
        for c in chunks:
            assert 0 <= c.start < c.end <= len(text)
            assert c.chunk_id.startswith(doc_id + ":")
            if kind not in ("none",):
                # sizes respect the limit (a sentence longer than size is cut with fixed)
                assert c.end - c.start <= 800
        assert_tiles(chunks, text)


def test_fixed_with_overlap_and_snap_on_real_text(contracts):
    text = next(iter(contracts.values()))
    spans = fixed(text, 500, 100, snap=True)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (s1, e1), (s2, _) in zip(spans, spans[1:]):
        assert s1 < s2 <= e1  # overlapping, always moving forward
        assert text[e1 - 1].isspace() or e1 == len(text)
    plain = fixed(text, 500, 100)
    assert all(e - s == 500 for s, e in plain[:-1])
    assert [s for s, _ in plain[:3]] == [0, 400, 800]


# Header fixtures are lines taken from the shared CUAD contracts (and the styles the issue
# lists), embedded in surrounding real-looking text.
HEADER_CASES = [
    ("indented", "the parties agree as follows:\n\n  1. Recitals. The recitals are true.\n", "1. Recitals."),
    ("period after number", "as set out below.\n3 .SCHEDULED MAINTENANCE. Licensor shall\n", "3 .SCHEDULED"),
    ("dotted", "by written notice.\n\n12.1 GOVERNING LAW.  This Agreement shall be", "12.1 GOVERNING LAW."),
    ("article", "of the Company.\n\nARTICLE IV\nREPRESENTATIONS AND WARRANTIES\n", "ARTICLE IV"),
    ("section", "hereunder.\nSection 2.3 Term. The initial term shall be", "Section 2.3 Term"),
    ("mid-line", "shall survive termination.   2. Representations. Each party represents",
     "2. Representations."),
]


@pytest.mark.parametrize("name, text, header", HEADER_CASES, ids=[c[0] for c in HEADER_CASES])
def test_clause_header_styles(name, text, header):
    found = [text[h:h + len(header)] for h in headers(text)]
    assert header in found, (name, found)


FOOTERS = [
    "the Licensee shall pay.\n\n5\n\nThe Licensor shall",  # a page number alone on its line
    "end of page.\n\n- 12 -\n\nnext page",
    "Source: ACME CORP, 10-K, 8/26/1999\n\n\n\n\n\nthe term of",
    "page 7 of 19\nwhich shall",
]


@pytest.mark.parametrize("text", FOOTERS)
def test_page_footers_are_not_headers(text):
    assert headers(text) == []


def test_page_footer_from_real_contract_is_not_a_header(contracts):
    # every header found in the real contracts starts a line or follows sentence punctuation,
    # and none of them is a bare number followed by a line break
    for text in contracts.values():
        for h in headers(text):
            line = text[h:text.find("\n", h) if "\n" in text[h:] else len(text)]
            assert not line.strip().isdigit(), line


def test_no_header_falls_back_to_sentence_and_says_so():
    text = "No headers here. Just two sentences of text."
    chunks, note = chunk_document("d", text, ChunkerSpec("clause", 20))
    assert note == {"fallback": "sentence"}
    assert_tiles(chunks, text)


def test_invisible_paragraphs_are_dropped():
    text = "First paragraph.\n\n\u200b\u200b\n\nSecond paragraph."
    chunks, note = chunk_document("d", text, ChunkerSpec("recursive", 18))
    assert note["dropped_invisible"] == 1
    assert [text[c.start:c.end].strip() for c in chunks] == ["First paragraph.", "Second paragraph."]


@given(st.text(alphabet=st.sampled_from("ab .\n\t!?1A"), max_size=400),
       st.integers(min_value=1, max_value=60), st.sampled_from(TILING))
def test_tiling_property(text, size, kind):
    chunks, note = chunk_document("d", text, ChunkerSpec(kind, size))
    spans = [(c.start, c.end) for c in chunks]
    if "dropped_invisible" not in note:
        assert_tiles(chunks, text)
    assert all(e - s <= size for s, e in spans)


def test_headers_in_a_real_contract(contracts):
    """Section headers of the 2TheMart co-branding agreement (CUAD), and its page footers
    ('Source: ... 8/26/1999' and blank lines) never counted as headers."""
    text = next(t for d, t in contracts.items() if d.startswith("2ThemartComInc"))
    found = {text[h:text.find("\n", h)][:22] for h in headers(text)}
    for header in ("1. DEFINITIONS.", "2.1 OVERVIEW.", "5. PAYMENT.", "12.1 GOVERNING LAW."):
        assert any(f.startswith(header) for f in found), header
    assert not any(f.startswith(("Source", "8/26/1999")) for f in found)


@given(st.text(alphabet=st.sampled_from("ab .\n\r\t!?\u00a0"), max_size=400),
       st.integers(min_value=1, max_value=60))
def test_paragraph_never_crosses_a_blank_line_nor_its_cap(text, size):
    """LegalBench-RAG's Config C: no chunk holds text of two paragraphs (a blank line is a
    line of whitespace only, a carriage return included) and none exceeds ``size``."""
    import re

    chunks, note = chunk_document("d", text, ChunkerSpec("paragraph", size))
    for c in chunks:
        assert c.end - c.start <= size
        assert not re.search(r"\n[^\S\n]*\n", text[c.start:c.end].rstrip()), text[c.start:c.end]
    if "dropped_invisible" not in note:
        assert_tiles(chunks, text)


def test_paragraph_keeps_each_paragraph_whole_when_it_fits():
    text = "Para one. Short.\r\n\r\nPara two, a little longer.\n \n\nThree."
    chunks, _ = chunk_document("d", text, ChunkerSpec("paragraph", 40))
    assert [text[c.start:c.end] for c in chunks] == [
        "Para one. Short.\r\n\r\n", "Para two, a little longer.\n \n\n", "Three."]
    packed, _ = chunk_document("d", text, ChunkerSpec("recursive", 40))
    assert len(packed) < len(chunks)  # recursive packs small paragraphs together; paragraph never
