"""Corpus readers: JSONL, BEIR field names, directories of .txt/.md/.pdf, and their errors."""

from __future__ import annotations

import pytest

from conftest import shared, write_jsonl
from ragspan.base.errors import InputError
from ragspan.io.corpus import read_corpus


def test_beir_corpus_field_names(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"_id": 7, "title": "T", "text": "body"}])
    doc = read_corpus(path).documents["7"]
    assert doc.text == "body" and doc.title == "T"


def test_directory_keeps_exact_text_and_offsets(tmp_path):
    (tmp_path / "a.txt").write_bytes("line one\r\nlíne two\n".encode())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# title\n", encoding="utf-8")
    (tmp_path / ".DS_Store").write_bytes(b"\x00")
    corpus = read_corpus(tmp_path)
    assert sorted(corpus.documents) == ["a", "sub/b"]
    assert corpus.text("a") == "line one\r\nlíne two\n"  # no newline translation
    again = read_corpus(tmp_path)
    assert again.sha256 == corpus.sha256


def test_directory_rejects_other_files_by_name(tmp_path):
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    (tmp_path / "notes.docx").write_bytes(b"PK")
    with pytest.raises(InputError, match="notes.docx.*unsupported file type"):
        read_corpus(tmp_path)


def test_directory_rejects_non_utf8_by_name(tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="bad.txt.*not valid UTF-8"):
        read_corpus(tmp_path)


def test_real_pdfs_extract(tmp_path):
    base = shared("agentic_file_search_test_acquisition")
    corpus = read_corpus(_pdf_dir(base, tmp_path))
    assert len(corpus) == 10
    assert "StartupXYZ owns 12 U.S. patents" in corpus.text("03_ip_certification")
    assert corpus.extractor["name"] == "pypdf"


def _pdf_dir(base, tmp_path):
    out = tmp_path / "pdfs"
    out.mkdir()
    for pdf in base.glob("*.pdf"):
        (out / pdf.name).write_bytes(pdf.read_bytes())
    return out


def test_pdf_without_text_is_named(tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    with open(tmp_path / "scan.pdf", "wb") as fh:
        writer.write(fh)
    with pytest.raises(InputError, match="scan.pdf.*no extractable text"):
        read_corpus(tmp_path)


def _text_bomb(path, repeats: int) -> None:
    """A real PDF, a few KB, whose one compressed content stream draws the same words
    ``repeats`` times: its text is hundreds of times its size."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"),
                             NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 12 Tf 72 720 Td " + b"(lorem ipsum dolor sit amet ) Tj " * repeats
                    + b"ET")
    page[NameObject("/Contents")] = writer._add_object(stream)
    page.compress_content_streams()
    writer.write(str(path))


def _extractions(monkeypatch) -> list[int]:
    """Every call of pypdf's page extraction, counted (work counted, not timed)."""
    from pypdf import PageObject

    calls: list[int] = []
    real = PageObject.extract_text
    monkeypatch.setattr(PageObject, "extract_text",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    return calls


def test_a_pdf_whose_text_explodes_is_refused_with_the_counts(tmp_path, monkeypatch):
    """A 40 KB one-page bomb whose text takes pypdf 18 s to extract: refused before its page
    is extracted (no extraction call), with the counts."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _text_bomb(docs / "bomb.pdf", 200_000)
    size = (docs / "bomb.pdf").stat().st_size
    assert size < 40_000
    calls = _extractions(monkeypatch)
    with pytest.raises(InputError, match=r"page 1 of 1 of the PDF draws 5,400,000 characters "
                                         r"of text .* over the cap of [\d,]+ for a "
                                         r"[\d,]+-byte file"):
        read_corpus(docs)
    assert calls == []
    # the caps are options: a generous one reads it (a smaller bomb: the same property)
    small = tmp_path / "small"
    small.mkdir()
    _text_bomb(small / "bomb.pdf", 5_000)
    corpus = read_corpus(small, pdf_cap=(1000.0, 10_000_000))
    assert len(corpus.documents["bomb"].text) == 135_000


def test_adapt_takes_the_pdf_caps(tmp_path):
    from conftest import run_cli

    docs = tmp_path / "docs"
    docs.mkdir()
    _text_bomb(docs / "bomb.pdf", 20_000)
    queries = write_jsonl(tmp_path / "q.jsonl", [{"id": "q", "query": "x", "doc_id": "bomb",
                                                  "gold_texts": ["lorem ipsum dolor sit amet lorem"]}])
    res = run_cli("adapt", "--docs", docs, "--queries", queries, "--out", tmp_path / "e.jsonl",
                  "--max-pdf-chars", "1000")
    assert res.exit_code == 3 and "over the cap of 1,000" in res.stderr
    assert not (tmp_path / "e.jsonl").exists()


def _form_bomb(path, times: int, chars: int, nested: bool = False, loop: bool = False) -> None:
    """A real PDF (pypdf's writer) whose one page draws a Form XObject ``times`` times, the
    form drawing ``chars`` characters (``nested``: through a second form; ``loop``: a form
    that draws itself)."""
    from pypdf import PdfWriter
    from pypdf.generic import (
        ArrayObject,
        DecodedStreamObject,
        DictionaryObject,
        NameObject,
        NumberObject,
    )

    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica")}))

    def form(data: bytes, xobjects: dict | None = None):
        stream = DecodedStreamObject()
        stream.set_data(data)
        resources = DictionaryObject({NameObject("/Font"): DictionaryObject(
            {NameObject("/F1"): font})})
        if xobjects:
            resources[NameObject("/XObject")] = DictionaryObject(xobjects)
        stream.update({NameObject("/Type"): NameObject("/XObject"),
                       NameObject("/Subtype"): NameObject("/Form"),
                       NameObject("/BBox"): ArrayObject([NumberObject(0), NumberObject(0),
                                                         NumberObject(612), NumberObject(792)]),
                       NameObject("/Resources"): resources})
        return writer._add_object(stream)

    inner = form(b"BT /F1 12 Tf 72 720 Td (" + b"A" * chars + b") Tj ET")
    if nested:
        inner = form(b"/X2 Do", {NameObject("/X2"): inner})
    if loop:
        inner = writer._add_object(DecodedStreamObject())
        looped = inner.get_object()
        looped.set_data(b"/X1 Do")
        looped.update({NameObject("/Type"): NameObject("/XObject"),
                       NameObject("/Subtype"): NameObject("/Form"),
                       NameObject("/BBox"): ArrayObject([NumberObject(0)] * 4),
                       NameObject("/Resources"): DictionaryObject({NameObject("/XObject"):
                                                                   DictionaryObject(
                                                                       {NameObject("/X1"): inner})})})
    page[NameObject("/Resources")] = DictionaryObject({
        NameObject("/Font"): DictionaryObject({NameObject("/F1"): font}),
        NameObject("/XObject"): DictionaryObject({NameObject("/X1"): inner})})
    content = DecodedStreamObject()
    content.set_data(b"/X1 Do\n" * times)
    page[NameObject("/Contents")] = writer._add_object(content)
    page.compress_content_streams()
    writer.write(str(path))


@pytest.mark.parametrize("nested", [False, True])
def test_a_form_drawn_a_thousand_times_is_counted_each_time(tmp_path, nested, monkeypatch):
    """A one-page PDF drawing one 40,000-character form 1,000 times took 100 s: the drawn
    count missed Form XObjects. Each is counted each time drawn (nested forms too), and the
    count stops at the cap: refused before the page is extracted."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _form_bomb(docs / "form.pdf", 1_000, 40_000, nested=nested)
    assert (docs / "form.pdf").stat().st_size < 60_000
    calls = _extractions(monkeypatch)
    with pytest.raises(InputError, match=r"page 1 of 1 of the PDF draws [\d,]+ characters of "
                                         r"text \(its content streams' strings and the forms "
                                         r"it draws"):
        read_corpus(docs)
    assert calls == []
    monkeypatch.undo()
    # at the cap and just past it: the same form drawn twice draws 80,000 characters (and
    # extracts to 80,001: a line break between the two)
    small = tmp_path / "small"
    small.mkdir()
    _form_bomb(small / "form.pdf", 2, 40_000, nested=nested)
    assert len(read_corpus(small, pdf_cap=(1e6, 80_001)).documents["form"].text) == 80_001
    with pytest.raises(InputError, match="over the cap of 79,999"):
        read_corpus(small, pdf_cap=(1e6, 79_999))


def test_a_form_that_draws_itself_is_refused(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    _form_bomb(docs / "loop.pdf", 1, 10, loop=True)
    with pytest.raises(InputError, match="loop.pdf"):
        read_corpus(docs)


def test_a_page_whose_contents_are_no_stream_is_one_input_error(tmp_path):
    """Found by the fuzz test: a page's /Contents that is a number was an AttributeError
    traceback inside the drawn-character count."""
    from pypdf import PdfWriter
    from pypdf.generic import NameObject, NumberObject

    writer = PdfWriter()
    page = writer.add_blank_page(200, 200)
    page[NameObject("/Contents")] = NumberObject(0)
    docs = tmp_path / "docs"
    docs.mkdir()
    writer.write(str(docs / "odd.pdf"))
    with pytest.raises(InputError, match="odd.pdf.*cannot read PDF"):
        read_corpus(docs)
