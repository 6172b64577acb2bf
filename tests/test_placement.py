"""The placement rule (``io.placement``) against crafted texts: ambiguity decided at every
step, a length bound on fuzzy places, the whole string normalised (NFD input), and the
search bounded per text (its cost is printed by ``benchmarks/bench_placement.py``)."""

from __future__ import annotations

import random
import unicodedata

import pytest

from conftest import assert_input_error, run_cli, write_jsonl

PASSAGE = ("The Licensee shall pay all royalties due under this Agreement within thirty days "
           "of the end of each calendar quarter, together with a statement of account.")


def placer(**docs: str):
    from ragspan.io.corpus import Corpus, Document
    from ragspan.io.placement import Placer

    return Placer(Corpus("c", "0" * 64, {d: Document(d, t) for d, t in docs.items()}))


def typo(text: str, every: int = 23) -> str:
    return "".join("#" if i % every == 7 % every else c for i, c in enumerate(text))


def test_a_fuzzy_text_matching_two_copies_in_one_document_is_ambiguous():
    from ragspan.io.placement import Unplaced

    p = placer(d=f"Preamble. {PASSAGE} Schedule A repeats it. {PASSAGE} End.")
    with pytest.raises(Unplaced, match="2 equally good fuzzy places") as err:
        p.place(typo(PASSAGE), ["d"])
    assert err.value.places == 2
    got = p.place(typo(PASSAGE), ["d"], first=True)
    assert (got.method, got.ambiguous) == ("fuzzy", 2)
    assert got.start == p.corpus.text("d").index(PASSAGE)
    # the same text without the typo is refused as occurring twice, as before
    with pytest.raises(Unplaced, match="occurs 2 times"):
        p.place(PASSAGE, ["d"])


def test_a_long_fuzzy_text_matching_two_copies_is_ambiguous():
    from ragspan.io.placement import Unplaced

    rng = random.Random(3)
    words = ["licensee", "shall", "royalty", "notice", "term", "party", "agreement", "audit"]
    long = " ".join(f"{rng.choice(words)}{rng.randrange(1000)}" for _ in range(150))
    p = placer(d=f"A. {long} B. {long} C.")
    with pytest.raises(Unplaced, match="2 equally good fuzzy places"):
        p.place(typo(long), ["d"])
    # a copy with one more difference is not equally good: the closer one is taken
    other = long[:300] + "X" + long[301:]
    p = placer(d=f"A. {other} B. {long} C.")
    got = p.place(typo(long), ["d"])
    assert got.start == p.corpus.text("d").index(long, 10)


def test_equally_good_fuzzy_places_in_two_documents_are_ambiguous():
    from ragspan.io.placement import Unplaced

    p = placer(a=f"x {PASSAGE} y", b=f"z {PASSAGE} w")
    with pytest.raises(Unplaced, match="2 equally good fuzzy places"):
        p.place(typo(PASSAGE), ["a", "b"])


def test_a_long_text_never_lands_on_a_short_document():
    from ragspan.io.placement import Unplaced

    rng = random.Random(0)
    short = " ".join(f"word{rng.randrange(10_000)}" for _ in range(35))[:300]
    filler = " ".join(f"other{rng.randrange(10_000)}" for _ in range(600))
    text = filler[:2700] + " " + short + " " + filler[2700:5400]  # contains the document
    p = placer(d=short)
    with pytest.raises(Unplaced, match="of similar length"):
        p.place(text, ["d"])
    # a text longer than the short path's alignment too
    with pytest.raises(Unplaced, match="of similar length"):
        placer(d=short[:100]).place(short[:200], ["d"])


def test_a_fuzzy_place_meets_the_threshold_on_the_whole_text():
    from ragspan.io.placement import Unplaced

    p = placer(d=f"Other words here. {PASSAGE} More words after it.")
    got = p.place(typo(PASSAGE), ["d"])
    assert got.method == "fuzzy" and got.similarity >= 0.9
    garbled = typo(PASSAGE, 3)
    with pytest.raises(Unplaced, match="similarity >= 0.9"):
        p.place(garbled, ["d"])


@pytest.mark.parametrize("form", ["NFD", "NFKD"])
def test_the_decomposed_form_of_an_exact_slice_is_placed(form):
    doc = "Der Lizenznehmer zahlt die Gebühren für München und Zürich pünktlich. Ende."
    p = placer(d=doc)
    piece = "Gebühren für München und Zürich"
    got = p.place(unicodedata.normalize(form, piece), ["d"])
    assert got.method == "normalized"
    assert doc[got.start:got.end] == piece
    # and a decomposed document takes a composed text
    decomposed = unicodedata.normalize(form, doc)
    p = placer(d=decomposed)
    got = p.place(piece, ["d"])
    assert unicodedata.normalize("NFC", decomposed[got.start:got.end]) == piece


def test_hangul_and_halfwidth_kana_are_normalised_whole():
    from ragspan.io.textnorm import normalize

    jamo = "\u1112\u1161\u11ab\u1100\u1173\u11af"  # conjoining jamo of "한글"
    assert normalize(f"say {jamo} now").text == "say \ud55c\uae00 now"
    assert normalize("\uff76\uff9e").text == "\u30ac"  # halfwidth ka + voicing mark
    norm = normalize("a e\u0301b c")
    assert norm.text == "a \u00e9b c"
    assert (norm.start_of(2), norm.end_of(3)) == (2, 4)  # é maps to "e\u0301"


def test_the_joining_table_is_what_unicodedata_says():
    """``textnorm.JOINING`` recomputed from this Python's unicodedata: the second halves of
    canonical compositions with combining class 0, Hangul vowel and final jamo, and every
    character whose NFKC form starts with one of those or with a combining mark."""
    from ragspan.io.textnorm import JOINING

    seconds = set()
    for c in range(0x110000):
        ch = chr(c)
        dec = unicodedata.decomposition(ch)
        if dec and not dec.startswith("<"):
            parts = dec.split()
            pair = "".join(chr(int(x, 16)) for x in parts)
            if len(parts) == 2 and unicodedata.normalize("NFC", pair) == ch:
                seconds.add(pair[1])
    seconds |= {chr(c) for c in range(0x1161, 0x1176)} | {chr(c) for c in range(0x11A8, 0x11C3)}

    def joins(ch: str) -> bool:
        return bool(unicodedata.combining(ch)) or ch in seconds

    want = {chr(c) for c in range(0x80, 0x110000)
            if not unicodedata.combining(chr(c))
            and (n := unicodedata.normalize("NFKC", chr(c))) and joins(n[0])}
    assert want == JOINING, sorted(hex(ord(c)) for c in want ^ JOINING)


def test_a_repetitive_text_is_not_placed_by_seeds():
    from ragspan.io.placement import Unplaced

    p = placer(d="ab" * 5000)
    with pytest.raises(Unplaced):
        p.place("abab#" * 100, ["d"])


def test_import_ragas_refuses_a_fuzzy_context_with_two_places(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "d", "text": f"Preamble. {PASSAGE} Schedule A repeats it. {PASSAGE} End."}])
    rows = write_jsonl(tmp_path / "ragas.jsonl", [{
        "id": "q1", "user_input": "When are royalties due?",
        "reference_contexts": [typo(PASSAGE)], "retrieved_contexts": ["Preamble."]}])
    res = run_cli("import", "ragas", "--rows", rows, "--corpus", corpus,
                  "--out", tmp_path / "e.jsonl", "--run-out", tmp_path / "r.jsonl")
    assert_input_error(res, "ragas.jsonl:1", "reference_contexts[0]",
                       "2 equally good fuzzy places")
    assert not (tmp_path / "e.jsonl").exists()


def test_score_refuses_a_fuzzy_text_with_two_places(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "d", "text": f"Preamble. {PASSAGE} Schedule A repeats it. {PASSAGE} End."}])
    start = 10
    evalset = write_jsonl(tmp_path / "e.jsonl", [{
        "id": "q1", "query": "When?", "doc_id": "d",
        "gold_spans": [[start, start + len(PASSAGE)]]}])
    run = write_jsonl(tmp_path / "r.jsonl", [{"id": "q1", "retrieved": [{"text": typo(PASSAGE)}]}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus)
    assert_input_error(res, "r.jsonl:1", "2 equally good fuzzy places")
