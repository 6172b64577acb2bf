"""``ragspan leakage`` and ``ragspan overlap``: planted leaks, exactness against a brute-force
reference, real data end to end, and the bad inputs."""

from __future__ import annotations

import json
import random

import pytest

from conftest import assert_input_error, run_cli, shared, write_jsonl
from ragspan.contamination.normalize import tokens

FILLER = [
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be",
    "by", "on", "not", "this", "are", "or", "from", "at", "which", "shall", "party", "agreement",
    "notice", "term", "section", "any", "such", "other", "under",
]
QUESTION = "Which court has exclusive jurisdiction over disputes arising from the supply contract"


def doc_with(words: int, planted: str = "", seed: int = 0, at: int = 150) -> str:
    rng = random.Random(seed)
    body = [rng.choice(FILLER) + str(rng.randrange(50)) for _ in range(words)]
    return " ".join(body[:at] + ([planted] if planted else []) + body[at:])


def leak(tmp_path, items, docs, *extra):
    ev = write_jsonl(tmp_path / "items.jsonl", items)
    co = write_jsonl(tmp_path / "corpus.jsonl", [{"id": k, "text": v} for k, v in docs.items()])
    return run_cli("leakage", "--eval-set", ev, "--corpus", co, "--format", "json", *extra)


def test_planted_verbatim_question_is_found_with_its_passage(tmp_path):
    assert len(QUESTION.split()) == 12
    planted = doc_with(288, QUESTION.upper().replace(" the ", ", the ") + ".")
    assert len(planted.split()) == 300
    res = leak(tmp_path, [{"id": "q1", "query": QUESTION + "?"}, {"id": "q2", "query":
               "What is the boiling point of mercury at sea level in kelvin"}],
               {"pasted": planted, "clean": doc_with(300, seed=1)})
    assert res.exit_code == 4
    doc = res.json()["predicate"]
    assert doc["summary"]["leaking_items"] == 1
    (finding,) = doc["details"]["leaks"]
    assert finding["id"] == "q1" and finding["document"] == "pasted"
    assert finding["containment"] == 1.0
    p = finding["passage"]
    assert planted[p["start"]:p["end"]] == QUESTION.upper().replace(" the ", ", the ") + "."
    assert p["words"] == 12
    # what Jaccard of word trigrams would have said
    q, d = tokens(QUESTION), tokens(planted)
    qg = {tuple(q[i:i + 3]) for i in range(len(q) - 2)}
    dg = {tuple(d[i:i + 3]) for i in range(len(d) - 2)}
    assert len(qg & dg) / len(qg | dg) == pytest.approx(0.033, abs=0.005)


def test_three_words_changed_reports_the_exact_containment(tmp_path):
    words = QUESTION.split()
    changed = list(words)
    for i in (1, 6, 10):  # court -> tribunal, disputes -> claims, supply -> service
        changed[i] = ["tribunal", "", "", "", "", "", "claims", "", "", "", "service"][i]
    docs = {"d": doc_with(288, " ".join(changed))}
    # trigrams of the question: 10; those avoiding positions 1, 6, 10: windows starting at
    # 2, 3 (2-4, 3-5) and 7 (7-9) -> 3 of 10 = 0.3
    res = leak(tmp_path, [{"id": "q", "query": QUESTION}], docs, "--threshold", "0.3")
    assert res.exit_code == 4
    assert res.json()["predicate"]["details"]["leaks"][0]["containment"] == pytest.approx(0.3)
    assert leak(tmp_path, [{"id": "q", "query": QUESTION}], docs).exit_code == 0  # 0.3 < 0.6
    # one changed word at the end keeps 9 of 10 trigrams: found at 0.6
    one = words[:-1] + ["agreement"]
    res = leak(tmp_path, [{"id": "q", "query": QUESTION}], {"d": doc_with(288, " ".join(one))})
    assert res.exit_code == 4
    assert res.json()["predicate"]["details"]["leaks"][0]["containment"] == pytest.approx(0.9)


def test_punctuation_case_and_unicode_do_not_hide_a_leak(tmp_path):
    disguised = "WHICH  court, has EXCLUSIVE\njurisdiction over ‘disputes’ arising from the supply-contract"
    res = leak(tmp_path, [{"id": "q", "query": QUESTION}], {"d": doc_with(100, disguised)})
    # "supply-contract" normalises to "supplycontract" (punctuation dropped, not split): the
    # two trigrams ending in "supply" and "contract" are lost, 8 of 10 remain
    assert res.json()["predicate"]["details"]["leaks"][0]["containment"] == pytest.approx(8 / 10)
    fullwidth = "Ｗｈｉｃｈ court has exclusive jurisdiction over disputes arising from the supply contract"
    res = leak(tmp_path, [{"id": "q", "query": QUESTION}], {"d": doc_with(100, fullwidth)})
    assert res.json()["predicate"]["details"]["leaks"][0]["containment"] == 1.0


def test_gold_field_skips_its_own_document(tmp_path):
    src = doc_with(200, QUESTION, seed=3)
    start = src.index(QUESTION)
    items = [{"id": "q", "query": "unrelated words here entirely", "doc_id": "src",
              "gold_spans": [[start, start + len(QUESTION)]]}]
    res = leak(tmp_path, items, {"src": src, "other": doc_with(200, seed=4)}, "--field", "gold")
    assert res.exit_code == 0
    res = leak(tmp_path, items, {"src": src, "copy": doc_with(50, QUESTION, seed=5, at=10)},
               "--field", "gold", "--field", "query")
    leaks = res.json()["predicate"]["details"]["leaks"]
    assert [(x["field"], x["document"], x["gold_span"]) for x in leaks] == [("gold", "copy", 0)]


def brute_containment(item: str, doc: str, n: int) -> float:
    q, d = tokens(item), tokens(doc)
    if not q:
        return 0.0
    m = min(n, len(q))
    qg = {tuple(q[i:i + m]) for i in range(len(q) - m + 1)}
    dg = {tuple(d[i:i + m]) for i in range(len(d) - m + 1)}
    return len(qg & dg) / len(qg)


def test_index_equals_brute_force_on_300_random_cases():
    from ragspan.contamination.leakage import ContainmentIndex
    from ragspan.io.corpus import Corpus, Document

    rng = random.Random(2024)
    vocab = ["a", "b", "c", "d", "e", "F!", "g.", "h", "ï", "the"]
    for case in range(300):
        n = rng.choice([1, 2, 3, 4])
        docs = {f"d{i}": " ".join(rng.choice(vocab) for _ in range(rng.randrange(0, 40)))
                for i in range(rng.randrange(1, 6))}
        index = ContainmentIndex(Corpus("c", "", {k: Document(k, v) for k, v in docs.items()}), n)
        for _ in range(3):
            item = " ".join(rng.choice(vocab + ["zz"]) for _ in range(rng.randrange(0, 12)))
            got, _ = index.containment(item)
            want = [brute_containment(item, docs[d], n) for d in index.doc_ids]
            assert got.tolist() == pytest.approx(want, abs=0), (case, item, docs)


def test_bad_inputs(tmp_path):
    res = leak(tmp_path, [{"id": f"q{i}", "query": "x"} for i in range(5)], {"d": "x"},
               "--max-records", "3")
    assert_input_error(res, "5 records exceed --max-records 3")
    ev = write_jsonl(tmp_path / "i.jsonl", [{"id": "q", "query": "x"}])
    co = write_jsonl(tmp_path / "c.jsonl", [{"id": f"d{i}", "text": "x"} for i in range(4)])
    assert_input_error(run_cli("leakage", "--eval-set", ev, "--corpus", co, "--max-records", "2"),
                       "4 records exceed --max-records 2")
    assert_input_error(run_cli("leakage", "--eval-set", tmp_path / "missing.jsonl", "--corpus", co),
                       "missing.jsonl", "not found")
    bad = write_jsonl(tmp_path / "b.jsonl", [{"id": "q"}])
    assert_input_error(run_cli("leakage", "--eval-set", bad, "--corpus", co), "b.jsonl:1", "'query'")


def test_real_cuad_queries_against_their_corpus(tmp_path):
    base = shared("cuad_dev")
    assert run_cli("import", "cuad", "--csv", base / "master_clauses_subset.csv", "--contracts",
                   base / "contracts", "--categories", base / "category_descriptions.csv",
                   "--out", tmp_path / "e.jsonl", "--corpus-out", tmp_path / "c.jsonl").exit_code == 0
    res = run_cli("leakage", "--eval-set", tmp_path / "e.jsonl", "--corpus", tmp_path / "c.jsonl",
                  "--field", "query", "--field", "gold", "--format", "json", "--max-leaks", "1000")
    assert res.exit_code == 0, res.stderr
    s = res.json()["predicate"]["summary"]
    queries = len((tmp_path / "e.jsonl").read_text().splitlines()) - 1
    assert s["items"] == queries and s["documents"] == 32
    # CUAD questions are templates, not contract text: no query leaks at 0.6
    assert s["findings_by_field"]["query"] == 0


def test_real_scifact_queries_against_their_corpus():
    root = shared("beir_scifact")
    res = run_cli("leakage", "--eval-set", root / "queries.jsonl", "--corpus", root / "corpus.jsonl",
                  "--format", "json", "--max-leaks", "100000")
    assert res.exit_code == 0, res.stderr
    s = res.json()["predicate"]["summary"]
    assert s["documents"] == 5183 and s["items"] == 1109
    # SciFact claims are rewritten from abstracts: a handful reach 0.6 containment
    assert 0 <= s["leaking_items"] < 100


def test_overlap_exact_and_minhash(tmp_path):
    base = doc_with(400, seed=10)
    near = base.split()
    near[200] = "CHANGED"  # one word: 5 of ~396 shingles differ
    a = write_jsonl(tmp_path / "a.jsonl", [{"id": "a1", "text": base},
                                           {"id": "a2", "text": doc_with(400, seed=11)},
                                           {"id": "a3", "text": " ".join(near)}])
    b = write_jsonl(tmp_path / "b.jsonl", [{"_id": "b1", "title": "t", "text": base.upper() + "!"},
                                           {"_id": "b2", "text": doc_with(400, seed=12)}])
    res = run_cli("overlap", "--a", a, "--b", b, "--format", "json")
    assert res.exit_code == 4
    assert res.json()["predicate"]["details"]["pairs"] == [{"a": "a1", "b": "b1", "jaccard": 1.0}]
    res = run_cli("overlap", "--a", a, "--b", b, "--method", "minhash", "--format", "json")
    pred = res.json()["predicate"]
    pairs = {(p["a"], p["b"]): p["jaccard"] for p in pred["details"]["pairs"]}
    assert set(pairs) == {("a1", "b1"), ("a3", "b1")}
    assert pairs[("a1", "b1")] == 1.0 and 0.8 <= pairs[("a3", "b1")] < 1.0
    assert pred["parameters"]["bands"] * pred["parameters"]["rows"] <= 128
    assert pred["summary"]["miss_probability_at_threshold"] <= 0.005
    res = run_cli("overlap", "--a", a, "--b", write_jsonl(tmp_path / "c.jsonl", [{"id": "c", "text": "zz"}]))
    assert res.exit_code == 0


def test_overlap_shingle_size(tmp_path):
    """--shingle N: the Jaccard is that of word N-gram sets (checked by brute force), so a
    text with every tenth word changed is a near-duplicate at 1-word shingles and none at 5;
    --shingle with --method exact is a usage error."""
    from ragspan.contamination.normalize import tokens

    base = doc_with(300, seed=20)
    words = base.split()
    edited = " ".join("CHANGED" if i % 10 == 5 else w for i, w in enumerate(words))
    a = write_jsonl(tmp_path / "a.jsonl", [{"id": "a", "text": base}])
    b = write_jsonl(tmp_path / "b.jsonl", [{"id": "b", "text": edited}])

    def grams(text, n):
        toks = tokens(text)
        return {tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)}

    for n in (1, 3, 5):
        res = run_cli("overlap", "--a", a, "--b", b, "--method", "minhash", "--shingle",
                      str(n), "--threshold", "0.5", "--max-duplicates", "5", "--format", "json")
        assert res.exit_code == 0, res.stderr
        pred = res.json()["predicate"]
        assert pred["parameters"]["shingle_words"] == n
        ga, gb = grams(base, n), grams(edited, n)
        jac = len(ga & gb) / len(ga | gb)
        found = {(p["a"], p["b"]): p["jaccard"] for p in pred["details"]["pairs"]}
        assert found == ({("a", "b"): jac} if jac >= 0.5 else {}), (n, jac)
    assert len(grams(base, 1) & grams(edited, 1)) / len(grams(base, 1) | grams(edited, 1)) >= 0.5
    assert run_cli("overlap", "--a", a, "--b", b, "--shingle", "3").exit_code == 2
    assert run_cli("overlap", "--a", a, "--b", b, "--method", "minhash", "--shingle",
                   "51").exit_code == 2


def test_minhash_recall_at_the_threshold():
    """The banding finds a pair exactly at Jaccard 0.8 with probability >= 99.5%."""
    from ragspan.contamination.overlap import MIN_RECALL, PERMUTATIONS, banding

    bands, rows, miss = banding(0.8)
    assert (bands, rows) == (21, 6)
    assert miss <= 1 - MIN_RECALL
    assert pytest.approx(1 - miss) == 1 - (1 - 0.8 ** rows) ** bands
    # the banding takes the most rows per band that keeps the recall: one more row would not
    more = rows + 1
    assert 1 - (1 - 0.8 ** more) ** (PERMUTATIONS // more) < MIN_RECALL


def test_minhash_banding_finds_pairs_at_the_threshold_empirically():
    """The real signatures and banding, on 400 pairs of sets at Jaccard exactly 0.8: the share
    found is at least the stated recall, less three binomial standard errors."""
    import numpy as np

    from ragspan.contamination.overlap import PERMUTATIONS, banding, signatures

    bands, rows, miss = banding(0.8)
    rng = np.random.default_rng(7)
    found = 0
    pairs = 400
    for i in range(pairs):
        # |A & B| = 80, |A | B| = 100: Jaccard 0.8
        pool = rng.choice(2 ** 62, size=100, replace=False).astype(np.uint64)
        a, b = pool[:90], np.concatenate([pool[:80], pool[90:]])
        sig = signatures([a, b], PERMUTATIONS, seed=i)
        same = (sig[0, :bands * rows] == sig[1, :bands * rows]).reshape(bands, rows)
        found += bool(same.all(axis=1).any())
    se = (miss * (1 - miss) / pairs) ** 0.5
    assert found / pairs >= 1 - miss - 3 * se - 1 / pairs


def test_leakage_table_lists_the_leaks(tmp_path):
    ev = write_jsonl(tmp_path / "i.jsonl", [{"id": "q1", "query": QUESTION}])
    co = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": doc_with(50, QUESTION)}])
    res = run_cli("leakage", "--eval-set", ev, "--corpus", co, "--format", "table")
    assert res.exit_code == 4
    assert "Leaking items:" in res.stdout and "q1" in res.stdout and "1.000" in res.stdout
    json_out = tmp_path / "r.json"
    run_cli("leakage", "--eval-set", ev, "--corpus", co, "--out", json_out)
    assert json.loads(json_out.read_text())["predicate"]["verdict"] == "fail"


@pytest.mark.parametrize("span, fragment", [
    ({"start": 0}, "missing 'start' or 'end'"),
    ([0, 10_000], "past the end of 'd'"),
    ({"doc_id": "nope", "start": 0, "end": 2}, "'nope' is not in the corpus"),
])
def test_bad_gold_spans_for_the_gold_field(tmp_path, span, fragment):
    res = leak(tmp_path, [{"id": "q", "query": "x", "doc_id": "d", "gold_spans": [span]}],
               {"d": "some text here"}, "--field", "gold")
    assert_input_error(res, "items.jsonl:1", fragment)


# ---- items as toolkit-rag-quality writes them (id, query or question, answer) ------------

ANSWER = "the courts of the state of new york have exclusive jurisdiction over every dispute"


def test_the_toolkits_items_have_their_answer_checked_by_default(tmp_path):
    """An item's ``answer`` is checked against every document, by default when the items
    carry one (toolkit-rag-quality checks it; it was ignored, and --field gold checked 0
    texts and passed); ``question`` is a query; ``--items`` is the toolkit's flag."""
    docs = {"contract": doc_with(300, ANSWER), "clean": doc_with(300, seed=1)}
    items = [{"id": "q1", "question": "Which court decides disputes?", "answer": ANSWER},
             {"id": "q2", "query": "What is the boiling point of mercury in kelvin"}]
    ev = write_jsonl(tmp_path / "items.jsonl", items)
    co = write_jsonl(tmp_path / "corpus.jsonl", [{"id": k, "text": v} for k, v in docs.items()])
    res = run_cli("leakage", "--items", ev, "--corpus", co, "--format", "json")
    assert res.exit_code == 4, res.stderr
    pred = json.loads(res.stdout)["predicate"]
    assert pred["parameters"]["fields"] == ["query", "answer"]
    (found,) = pred["details"]["leaks"]
    assert (found["id"], found["field"], found["document"]) == ("q1", "answer", "contract")
    s = pred["summary"]
    assert (s["items"], s["texts_checked"], s["items_without_field"]) == (2, 3, {"answer": 1})
    assert "1 of the 2 items have no answer text" in res.stderr
    # asked for query alone, the answer is not checked, and nothing leaks
    res = run_cli("leakage", "--items", ev, "--corpus", co, "--field", "query")
    assert res.exit_code == 0, res.stderr


def test_a_field_no_item_has_is_an_error_not_a_clean_pass(tmp_path):
    docs = {"contract": doc_with(300, ANSWER)}
    items = [{"id": "q1", "query": "Which court decides disputes?", "answer": ANSWER}]
    res = leak(tmp_path, items, docs, "--field", "gold")
    assert_input_error(res, "items.jsonl", "--field gold: none of the 1 items has gold_spans, so "
                       "nothing would be checked (they carry: answer, query)")
    res = leak(tmp_path, [{"id": "q1", "query": "Which court decides disputes?"}], docs,
               "--field", "answer")
    assert_input_error(res, "--field answer: none of the 1 items has 'answer'")
    res = leak(tmp_path, [{"id": "q1", "query": "x", "answer": 5}], docs, "--field", "answer")
    assert_input_error(res, "'answer' must be a string or a list of strings")
