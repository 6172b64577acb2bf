"""Corpus readers: JSONL, BEIR field names, directories of .txt/.md/.pdf, and their errors."""

from __future__ import annotations

import pytest

from conftest import shared, write_jsonl
from ragspan.errors import InputError
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
