"""Runs anchored by text: retrieved items that carry their text are checked against the corpus
or placed in it (``io.placement``, ``io.runs.anchoring``), never taken on trust.

A run rewritten as text only must score exactly as the run with offsets (the bundled CUAD
example and the shared CUAD contracts); rewritten the way extractors and loggers change text
(whitespace collapsed, NFKC, line-break hyphenation) its complete grounding stays within
0.5pt. Offsets that disagree with their text are refused unless ``--align``.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from pathlib import Path

import pytest

from conftest import assert_input_error, assert_valid_report, report_rows, run_cli, shared, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cuad"


def read_texts(corpus: Path) -> dict[str, str]:
    out = {}
    with open(corpus, encoding="utf-8", newline="") as fh:
        for line in fh:
            obj = json.loads(line)
            if "id" in obj:
                out[obj["id"]] = obj["text"]
    return out


def windows_run(evalset: Path, texts: dict[str, str], seed: int = 0) -> list[dict]:
    """Per query: windows around its gold spans and seeded windows elsewhere in its document,
    in a shuffled order (so that some queries fail complete grounding at small k)."""
    rng = random.Random(seed)
    rows = []
    for line in evalset.read_text("utf-8").splitlines():
        q = json.loads(line)
        if "_header" in q:
            continue
        doc = q.get("doc_id") or q["gold_spans"][0]["doc_id"]
        n = len(texts[doc])
        items = []
        for s in q["gold_spans"]:
            start, end = (s[0], s[1]) if isinstance(s, list) else (s["start"], s["end"])
            lo = max(0, start - rng.randint(0, 300))
            hi = min(n, end + rng.randint(-min(40, end - start - 1), 300))
            items.append({"doc_id": doc, "start": lo, "end": hi})
        for _ in range(6):
            lo = rng.randrange(0, max(1, n - 800))
            items.append({"doc_id": doc, "start": lo, "end": min(n, lo + rng.randint(300, 800))})
        rng.shuffle(items)
        rows.append({"id": q["id"], "retrieved": items})
    return rows


def unique(texts: dict[str, str], item: dict) -> bool:
    """Whether the item's text occurs once in its document (overlapping copies count)."""
    doc = texts[item["doc_id"]]
    piece = doc[item["start"]:item["end"]]
    return doc.find(piece, doc.find(piece) + 1) == -1


def as_text(rows: list[dict], texts: dict[str, str], change=lambda t: t, keep_doc=True,
            keep_offsets=False) -> list[dict]:
    out = []
    for row in rows:
        items = []
        for s in row["retrieved"]:
            item = {"doc_id": s["doc_id"]} if keep_doc else {}
            if keep_offsets:
                item.update(start=s["start"], end=s["end"])
            item["text"] = change(texts[s["doc_id"]][s["start"]:s["end"]])
            items.append(item)
        out.append({"id": row["id"], "retrieved": items})
    return out


def mangle(text: str) -> str:
    """What a PDF extractor or a logger does to a chunk: NFKC, whitespace runs collapsed, a
    word now and then hyphenated across a line break."""
    words = " ".join(unicodedata.normalize("NFKC", text).split()).split(" ")
    for i in range(3, len(words), 11):
        w = words[i]
        if len(w) > 6 and w.isalpha():
            words[i] = f"{w[:3]}-\n{w[3:]}"
    return " ".join(words)


def score(tmp: Path, evalset: Path, corpus: Path, run: list[dict], name: str, *extra: str):
    path = write_jsonl(tmp / name, run)
    res = run_cli("score", "--eval-set", evalset, "--run", path, "--corpus", corpus,
                  "--k", "1", "--k", "3", "--k", "10", "--format", "json",
                  "--min-coverage", "0", *extra)  # some cases score a few rows on purpose
    return res


def metrics(res) -> dict[str, float]:
    assert res.exit_code == 0, res.stderr
    return res.json()["predicate"]["summary"]["metrics"]


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("anchor")
    evalset, corpus = EXAMPLE / "eval.jsonl", EXAMPLE / "corpus.jsonl"
    texts = read_texts(corpus)
    rows = windows_run(evalset, texts)
    return tmp, evalset, corpus, texts, rows, metrics(score(tmp, evalset, corpus, rows, "o.jsonl"))


def test_text_only_scores_as_the_offsets(example):
    tmp, evalset, corpus, texts, rows, original = example
    for keep_doc in (True, False):  # without doc_id: placed in the query's scope document
        res = score(tmp, evalset, corpus, as_text(rows, texts, keep_doc=keep_doc), "t.jsonl")
        assert metrics(res) == original
        assert_valid_report(res.json())
        pred = res.json()["predicate"]
        placement = pred["summary"]["placement"]
        n = sum(len(r["retrieved"]) for r in rows)
        assert placement["exact"] == n and placement["normalized"] == placement["fuzzy"] == 0
        assert pred["parameters"]["anchoring"] == {"align": False, "on_ambiguous": "error",
                                                   "unplaced": "error", "threshold": 0.9}
        row = report_rows(pred)[0]
        assert [p["rank"] for p in row["placed"]] == list(range(1, len(rows[0]["retrieved"]) + 1))
        assert {p["method"] for p in row["placed"]} == {"exact"}


def test_checked_offsets_score_as_before_and_are_counted(example):
    tmp, evalset, corpus, texts, rows, original = example
    res = score(tmp, evalset, corpus, as_text(rows, texts, keep_offsets=True), "c.jsonl")
    assert metrics(res) == original
    assert res.json()["predicate"]["summary"]["placement"]["checked"] == \
        sum(len(r["retrieved"]) for r in rows)


def test_mangled_text_keeps_complete_grounding_within_half_a_point(example):
    tmp, evalset, corpus, texts, rows, original = example
    res = score(tmp, evalset, corpus, as_text(rows, texts, mangle), "m.jsonl")
    got = metrics(res)
    for k in (1, 3, 10):
        assert abs(got[f"complete_grounding@{k}"] - original[f"complete_grounding@{k}"]) <= 0.005
    placement = res.json()["predicate"]["summary"]["placement"]
    assert placement["normalized"] > 0.9 * sum(len(r["retrieved"]) for r in rows)


def test_offsets_that_disagree_with_their_text_are_refused_unless_align(example):
    tmp, evalset, corpus, texts, rows, _ = example
    run = as_text(rows[:3], texts, keep_offsets=True)
    item = run[1]["retrieved"][2]
    item["start"], item["end"] = item["start"] + 100, item["end"] + 100  # page-relative, say
    res = score(tmp, evalset, corpus, run, "bad.jsonl")
    assert_input_error(res, "bad.jsonl:2", f"query '{run[1]['id']}': retrieved[2]",
                       "the text does not match", "the run has '", "the corpus has '",
                       "--align")
    res = score(tmp, evalset, corpus, run, "bad.jsonl", "--align")
    assert res.exit_code == 0, res.stderr
    pred = res.json()["predicate"]
    assert pred["summary"]["placement"]["realigned"] == 1
    placed = [p for p in report_rows(pred)[1]["placed"] if p.get("realigned")]
    assert placed[0]["start"] == item["start"] - 100 and placed[0]["end"] == item["end"] - 100


def test_unplaced_and_ambiguous_texts(example, tmp_path):
    _, evalset, corpus, texts, rows, _ = example
    run = as_text(rows[:2], texts)
    run[0]["retrieved"][1]["text"] = "a sentence that no contract in this corpus holds at all"
    res = score(tmp_path, evalset, corpus, run, "u.jsonl")
    assert_input_error(res, f"query '{run[0]['id']}': retrieved[1]", "cannot place the text",
                       "--unplaced drop")
    res = score(tmp_path, evalset, corpus, run, "u.jsonl", "--unplaced", "drop")
    assert res.exit_code == 0, res.stderr
    pred = res.json()["predicate"]
    assert pred["summary"]["placement"]["dropped"] == 1
    assert {"field": "retrieved", "rank": 2, "method": "dropped"} in \
        report_rows(pred)[0]["placed"]
    run = as_text(rows[:2], texts)
    run[1]["retrieved"][0]["text"] = "the"  # everywhere
    res = score(tmp_path, evalset, corpus, run, "a.jsonl")
    assert_input_error(res, f"query '{run[1]['id']}': retrieved[0]", "occurs", "times",
                       "--on-ambiguous first")
    res = score(tmp_path, evalset, corpus, run, "a.jsonl", "--on-ambiguous", "first",
                "--unplaced", "drop")  # drop never hides an ambiguity
    assert res.exit_code == 0, res.stderr
    assert res.json()["predicate"]["summary"]["placement"]["ambiguous_first"] == 1


def test_text_without_offsets_needs_the_corpus(example, tmp_path):
    _, evalset, _, texts, rows, _ = example
    run = write_jsonl(tmp_path / "t.jsonl", as_text(rows[:1], texts))
    res = run_cli("score", "--eval-set", evalset, "--run", run)
    assert_input_error(res, "t.jsonl:1", "gives its text but no offsets", "--corpus")


def test_unknown_document_and_non_string_text(example, tmp_path):
    _, evalset, corpus, texts, rows, _ = example
    run = as_text(rows[:1], texts)
    run[0]["retrieved"][0]["doc_id"] = "nope"
    assert_input_error(score(tmp_path, evalset, corpus, run, "n.jsonl"), "'nope'",
                       "absent from the corpus")
    run = as_text(rows[:1], texts)
    run[0]["retrieved"][0]["text"] = 5
    assert_input_error(score(tmp_path, evalset, corpus, run, "s.jsonl"),
                       "'text' must be a string")


def cuad_rows(spans: list[dict], texts: dict[str, str]) -> list[dict]:
    """One question per (contract, category) of the shared clause annotations, its unique
    spans with the ones that overlap merged into their union (as every importer does:
    score refuses overlapping gold spans)."""
    from ragspan.evalsets.build import merge_overlapping
    from ragspan.io.serialize import built_span

    groups: dict = {}
    for s in spans:
        if s["unique"]:
            groups.setdefault((s["doc_id"], s["category"]), []).append(
                built_span(s["doc_id"], s["start"], s["end"],
                          texts[s["doc_id"]][s["start"]:s["end"]]))
    rows = []
    for i, ((doc, cat), sp) in enumerate(sorted(groups.items())):
        unique = list({(x.start, x.end): x for x in sp}.values())
        merged, _ = merge_overlapping(unique, texts.__getitem__, "q")
        rows.append({"id": f"q{i}", "query": cat, "doc_id": doc,
                     "gold_spans": [[x.start, x.end] for x in merged]})
    return rows


def test_on_the_shared_cuad_contracts(tmp_path):
    base = shared("cuad_dev")
    spans = [json.loads(x) for x in (base / "clause_spans.jsonl").read_text("utf-8").splitlines()]
    texts = {}
    for path in sorted((base / "contracts").glob("*.txt")):
        with open(path, encoding="utf-8", newline="") as fh:
            texts[path.name] = fh.read()
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": d, "text": t} for d, t in texts.items()])
    rows = cuad_rows(spans, texts)
    evalset = write_jsonl(tmp_path / "eval.jsonl", rows)
    run = windows_run(evalset, texts, seed=1)
    # a window of repeated boilerplate ("Confidential Information has been omitted ...") has
    # no one place: text alone cannot say which copy was retrieved, and it is refused
    repeated = [(r, s) for r in run for s in r["retrieved"] if not unique(texts, s)]
    assert 0 < len(repeated) < 0.05 * sum(len(r["retrieved"]) for r in run)
    one = [{"id": repeated[0][0]["id"], "retrieved": [repeated[0][1]]}]
    assert_input_error(score(tmp_path, evalset, corpus, as_text(one, texts), "r.jsonl"),
                       "occurs", "times")
    run = [{"id": r["id"], "retrieved": [s for s in r["retrieved"] if unique(texts, s)]}
           for r in run]
    original = metrics(score(tmp_path, evalset, corpus, run, "o.jsonl"))
    assert metrics(score(tmp_path, evalset, corpus, as_text(run, texts), "t.jsonl")) == original
    got = metrics(score(tmp_path, evalset, corpus, as_text(run, texts, mangle), "m.jsonl"))
    for k in (1, 3, 10):
        assert abs(got[f"complete_grounding@{k}"] - original[f"complete_grounding@{k}"]) <= 0.005


# --- the placement itself (``io.placement``) ---------------------------------------------

def placer(**docs: str):
    from ragspan.io.corpus import Corpus, Document
    from ragspan.io.placement import Placer

    return Placer(Corpus("c", "0" * 64, {d: Document(d, t) for d, t in docs.items()}))


@pytest.mark.parametrize("doc, needle, expect, method", [
    ("The Licensee shall pay royalties.", "shall pay", "shall pay", "exact"),
    ("The Licensee shall\n   pay royalties.", "shall pay royalties", "shall\n   pay royalties",
     "normalized"),
    ("under this agree-\nment the parties", "this agreement", "this agree-\nment", "normalized"),
    ("the \ufb01nal payment", "final payment", "\ufb01nal payment", "normalized"),
    ("the \u201cLicensed Product\u201d means", '"Licensed Product"',
     "\u201cLicensed Product\u201d", "normalized"),
    ("term \u2014 five years", "term - five years", "term \u2014 five years", "normalized"),
    ("co\u00adoperation of both", "cooperation of both", "co\u00adoperation of both",
     "normalized"),
    ("  padded text here  ", "  padded text here", "  padded text here", "exact"),
    ("The Licensee shall pay all royalties due under this Agreement within thirty days.",
     "Licensee shal pay all royaltes due under this Agreement", None, "fuzzy"),
])
def test_placement_methods_map_back_to_the_original(doc, needle, expect, method):
    p = placer(d=doc + " and some unrelated words to pad it out a little further")
    got = p.place(needle, ["d"])
    assert got.method == method
    text = p.corpus.text("d")[got.start:got.end]
    if expect is not None:
        assert text == expect
    else:  # the alignment is as long as the text: its ends may be off by the edits
        full = p.corpus.text("d").index("Licensee shall pay all royalties due under this Agreement")
        assert abs(got.start - full) <= 2 and "shall pay all royalties due under this" in text
        assert 0.9 <= got.similarity < 1.0


def test_ambiguity_counts_overlapping_copies_and_first_takes_the_first():
    from ragspan.io.placement import Unplaced

    p = placer(a="aaaa", b="xx aaa yy")
    with pytest.raises(Unplaced, match="occurs 3 times"):
        p.place("aaa", ["a", "b"])
    got = p.place("aaa", ["a", "b"], first=True)
    assert (got.doc_id, got.start, got.end, got.ambiguous) == ("a", 0, 3, 3)


def test_fuzzy_search_is_bounded():
    from ragspan.io import placement

    p = placer(d="x" * 100)
    old = placement.MAX_FUZZY_CHARS
    placement.MAX_FUZZY_CHARS = 50
    try:
        with pytest.raises(placement.Unplaced, match="past its bound of 50"):
            p.place("nothing like it", ["d"])
    finally:
        placement.MAX_FUZZY_CHARS = old


@pytest.mark.parametrize("seed", range(20))
def test_any_unique_slice_is_placed_where_it_was_cut(seed):
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma\n", "delta  ", "\u201cquote\u201d", "e\ufb03cient", "x-\ny"]
    doc = " ".join(rng.choice(words) + str(rng.randrange(10_000)) for _ in range(200))
    p = placer(d=doc)
    lo = rng.randrange(0, len(doc) - 60)
    hi = lo + rng.randint(20, 60)
    piece = doc[lo:hi]
    if doc.find(piece, doc.find(piece) + 1) != -1:
        pytest.skip("the slice repeats")
    got = p.place(piece, ["d"])
    assert (got.start, got.end, got.method) == (lo, hi, "exact")
    # NFKC and runs of spaces collapsed (a line break is kept: "x-\ny" joined is "xy", and
    # "x- y" is another text)
    got = p.place(re.sub(" +", " ", unicodedata.normalize("NFKC", piece)), ["d"])
    assert got.method in ("exact", "normalized", "fuzzy")
    assert lo - 2 <= got.start and got.end <= hi + 2  # the trimmed ends at most


def test_the_api_takes_the_same_settings_and_refuses_bad_ones(example):
    import ragspan
    from ragspan.base.errors import UsageError

    _, evalset, corpus, texts, rows, original = example
    run = as_text(rows, texts)
    got = ragspan.score(evalset, run, corpus, k=(1, 3, 10))
    assert got.report["predicate"]["summary"]["metrics"] == original
    with pytest.raises(UsageError, match="on_ambiguous must be one of error, first"):
        ragspan.score(evalset, run, corpus, on_ambiguous="frist")
    with pytest.raises(UsageError, match=r"threshold must be a number in \(0, 1\]"):
        ragspan.score(evalset, run, corpus, fuzzy_threshold=0)


def test_a_scope_document_absent_from_the_corpus_is_named(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d0", "text": "some words here"}])
    evalset = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "?", "doc_id": "gone",
                                                  "gold_spans": [[0, 4]]}])
    run = write_jsonl(tmp_path / "r.jsonl", [{"id": "q", "retrieved": [{"text": "some"}]}])
    res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus)
    assert_input_error(res, "r.jsonl:1", "doc_id 'gone'", "absent from the corpus")


def junk_first(tmp_path: Path, n: int = 10) -> tuple[Path, Path, Path, Path]:
    """A corpus of n documents, an eval set asking one question of each, a baseline run
    whose rank 1 is the gold clause, and a candidate whose rank 1 is text from no document
    (its gold clause at rank 2): every item gives its text only."""
    docs = {f"d{i}": f"Preamble {i}. Clause {i}: the licensee pays royalty number {i} "
                     f"within {i + 10} days. Closing words of contract {i}." for i in range(n)}
    gold = {d: t.index("Clause") for d, t in docs.items()}
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": d, "text": t} for d, t in docs.items()])
    rows = [{"id": f"q{i}", "query": f"royalty {i}?", "doc_id": d,
             "gold_spans": [[gold[d], docs[d].index(" Closing")]]}
            for i, d in enumerate(docs)]
    evalset = write_jsonl(tmp_path / "eval.jsonl", rows)

    def clause(d: str) -> dict:
        return {"text": docs[d][gold[d]:docs[d].index(" Closing")]}

    base = write_jsonl(tmp_path / "run-base.jsonl",
                       [{"id": r["id"], "retrieved": [clause(r["doc_id"])]} for r in rows])
    cand = write_jsonl(tmp_path / "run-cand.jsonl", [
        {"id": r["id"], "retrieved": [{"text": f"junk {i} " * 30}, clause(r["doc_id"])]}
        for i, r in enumerate(rows)])
    return corpus, evalset, base, cand


def test_a_dropped_result_keeps_its_rank_and_its_characters(tmp_path):
    corpus, evalset, base, cand = junk_first(tmp_path)
    outs = {}
    for name, run in (("base", base), ("cand", cand)):
        out = tmp_path / f"{name}.json"
        res = run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus,
                      "--k", "1", "--k", "2", "--k", "200c", "--unplaced", "drop", "--out", out)
        assert res.exit_code == 0, res.stderr
        outs[name] = out
    pred = json.loads(outs["cand"].read_text())["predicate"]
    m = pred["summary"]["metrics"]
    # the junk holds rank 1: nothing is grounded there, the clause counts from rank 2
    assert m["complete_grounding@1"] == 0.0 and m["complete_grounding@2"] == 1.0
    assert m["retrieved_chars@1"] == len("junk 0 " * 30)  # its characters count
    assert m["complete_grounding@200c"] == 0.0  # the junk fills the 200-character budget
    assert pred["summary"]["placement"]["dropped"] == 10
    # verified, the gate fails the candidate (it passed before: the clause moved up a rank)
    res = run_cli("compare", "--baseline", outs["base"], "--candidate", outs["cand"],
                  "--eval-set", evalset, "--corpus", corpus, "--baseline-run", base,
                  "--candidate-run", cand, "--allow-budget-change", "--format", "json")
    assert res.exit_code == 4, res.stderr
    said = res.json()["predicate"]["summary"]
    assert said["placement"] == {"baseline": {"dropped": 0}, "candidate": {"dropped": 10}}


def test_an_empty_text_is_refused(example, tmp_path):
    _, evalset, corpus, texts, rows, _ = example
    run = as_text(rows[:1], texts)
    run[0]["retrieved"][0]["text"] = ""
    res = score(tmp_path, evalset, corpus, run, "e.jsonl", "--unplaced", "drop")
    assert_input_error(res, "e.jsonl:1", "'text' is empty")


def test_every_repair_is_said_on_stderr_and_in_the_table(example, tmp_path):
    """50 of 50 results realigned said nothing on stderr, and --unplaced drop gave its
    count in the JSON only."""
    _, evalset, corpus, texts, rows, _ = example
    shifted = []
    for row in rows[:5]:
        items = []
        for s in row["retrieved"][:2]:
            text = texts[s["doc_id"]][s["start"]:s["end"]]
            items.append({"doc_id": s["doc_id"], "start": s["start"] + 100,
                          "end": s["end"] + 100, "text": text})
        items.append({"text": "a sentence that no contract in this corpus holds at all"})
        shifted.append({"id": row["id"], "retrieved": items})
    res = score(tmp_path, evalset, corpus, shifted, "s.jsonl", "--align", "--unplaced", "drop",
                "--format", "table")
    assert res.exit_code == 0, res.stderr
    assert "realigned: 10 results whose offsets did not slice back" in res.stderr
    assert "dropped: 5 results could not be placed" in res.stderr
    assert "realigned: 10 results" in res.stdout and "dropped: 5 results" in res.stdout
    md = score(tmp_path, evalset, corpus, shifted, "s.jsonl", "--align", "--unplaced", "drop",
               "--format", "markdown")
    assert "- realigned: 10 results" in md.stdout


def test_offsets_without_their_text_draw_one_warning_with_their_count(example, tmp_path):
    """A run with offsets but no text (page-relative offsets) scored with exit 0 and not a
    word; the docs never said to keep the text in runs."""
    _, evalset, corpus, _, rows, _ = example
    res = score(tmp_path, evalset, corpus, rows[:4], "o.jsonl")
    n = sum(len(r["retrieved"]) for r in rows[:4])
    assert res.exit_code == 0, res.stderr
    assert res.stderr.count("offsets alone:") == 1
    assert f"offsets alone: {n} results give no text" in res.stderr
    assert res.json()["predicate"]["summary"]["results_without_text"] == n
