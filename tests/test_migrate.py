"""``ragspan migrate`` and anchored spans: gold spans carried over to an edited corpus.

Real documents nobody here wrote (CUAD contracts, ``shared/data/cuad_dev``) edited the way
releases edit them: some untouched, some with a new preamble (every span moves), some with
one word changed inside every gold span, some with every gold passage deleted, some with a
passage duplicated as a schedule. Every status is checked against what the edit did.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import assert_valid_report, cuad_questions, run_cli, write_jsonl

PREAMBLE = "AMENDED AND RESTATED AGREEMENT\n\nThis restates the agreement below.\n\n"
KINDS = ("untouched", "preamble", "word", "deleted", "duplicate")


def _read(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text("utf-8").splitlines()]


def _edit(kind: str, text: str, spans: list[tuple[int, int]]) -> str:
    if kind == "untouched":
        return text
    if kind == "preamble":
        return PREAMBLE + text
    if kind == "word":  # one word changed (its last character) inside every gold span
        chars = list(text)
        for s, e in spans:
            words = [(m.start(), m.end()) for m in re.finditer(r"\w{2,}", text[s:e])]
            ws, we = min(words, key=lambda w: abs((w[0] + w[1]) / 2 - (e - s) / 2))
            chars[s + we - 1] = "x" if chars[s + we - 1] != "x" else "y"
        return "".join(chars)
    if kind == "deleted":  # every gold passage taken out
        keep = [True] * len(text)
        for s, e in spans:
            keep[s:e] = [False] * (e - s)
        return "".join(c for c, k in zip(text, keep) if k)
    s, e = min(spans)  # a passage duplicated as a schedule at the end
    return text + "\n\nSCHEDULE A\n\n" + text[s:e] + "\n"


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("migrate")
    texts, questions = cuad_questions()
    evalrows, by_doc = [], defaultdict(list)
    for i, (doc, cat, merged) in enumerate(questions):
        evalrows.append({"id": f"q{i}", "query": f"Find the {cat} clause", "doc_id": doc,
                         "gold_spans": merged, "tags": {"category": cat}})
        by_doc[doc] += [tuple(x) for x in merged]
    kind = {d: KINDS[j % len(KINDS)] for j, d in enumerate(sorted(texts))}
    new = {d: _edit(kind[d], t, sorted(set(by_doc[d]))) for d, t in texts.items()}
    paths = {
        "eval": write_jsonl(tmp / "eval.jsonl", evalrows),
        "old": write_jsonl(tmp / "old.jsonl", [{"id": d, "text": t} for d, t in texts.items()]),
        "new": write_jsonl(tmp / "new.jsonl", [{"id": d, "text": t} for d, t in new.items()]),
        "out": tmp / "eval2.jsonl", "report": tmp / "migrate.json", "dir": tmp}
    res = run_cli("migrate", "--eval-set", paths["eval"], "--corpus", paths["old"],
                  "--to-corpus", paths["new"], "--out", paths["out"], "--report",
                  paths["report"], "--format", "table")
    assert res.exit_code == 0, res.stderr
    report = json.loads(paths["report"].read_text("utf-8"))
    assert_valid_report(report)
    return paths, report, texts, new, kind, evalrows


def test_every_status_is_what_the_edit_did(edited):
    _, report, texts, new, kind, _ = edited
    spans = report["predicate"]["details"]["spans"]
    seen = defaultdict(set)
    for s in spans:
        k, (a, b) = kind[s["doc_id"]], s["old"]
        seen[k].add(s["status"])
        old_text = texts[s["doc_id"]][a:b]
        if k in ("untouched", "duplicate"):  # the copy at the end is not the span's own
            assert s["status"] == "unchanged" and s["new"] == [a, b]
        elif k == "preamble":
            assert s["status"] == "moved" and s["new"] == [a + len(PREAMBLE), b + len(PREAMBLE)]
        elif k == "word":  # substitutions keep offsets: the edited text stands where it was
            assert s["status"] == "edited", s
            assert s["new"] == [a, b] and new[s["doc_id"]][a:b] != old_text
            assert 0.5 < s["similarity"] < 1.0
        else:
            assert s["status"] == "deleted" and s["new"] is None, s
        if s["status"] in ("unchanged", "moved"):  # exact: the same text at the new place
            assert new[s["doc_id"]][s["new"][0]:s["new"][1]] == old_text
    assert set(seen) == set(KINDS)
    summary = report["predicate"]["summary"]
    assert sum(summary["spans"].values()) == len(spans)
    assert summary["questions"]["total"] == sum(
        summary["questions"][f] for f in ("kept", "set_aside", "dropped"))


def test_the_migrated_eval_set_scores_against_the_new_corpus(edited):
    paths, report, _, new, kind, evalrows = edited
    rows = _read(paths["out"])
    header, kept = rows[0]["_header"], rows[1:]
    assert header["source"] == "migrate"
    assert header["migrated_from"]["eval_set"]["name"] == str(paths["eval"])
    fates = {q["id"]: q["fate"] for q in report["predicate"]["details"]["questions"]}
    assert {r["id"] for r in kept} == {r["id"] for r in evalrows} - set(fates)
    for row in kept:  # edited questions are set aside by default; deleted ones dropped
        assert kind[row["doc_id"]] in ("untouched", "preamble", "duplicate")
        for s in row["gold_spans"]:
            assert new[s["doc_id"]][s["start"]:s["end"]] == s["text"] and "anchor" in s
    run = write_jsonl(paths["dir"] / "run.jsonl", [
        {"id": r["id"], "retrieved": [{k: s[k] for k in ("doc_id", "start", "end")}
                                      for s in r["gold_spans"]]} for r in kept])
    res = run_cli("score", "--eval-set", paths["out"], "--run", run, "--corpus", paths["new"],
                  "--k", "100")
    assert res.exit_code == 0, res.stderr
    assert res.json()["predicate"]["summary"]["metrics"]["complete_grounding@100"] == 1.0
    assert run_cli("validate", "--eval-set", paths["out"], "--corpus",
                   paths["new"]).exit_code == 0


def test_keep_edited_keeps_them_flagged(edited):
    paths, _, _, new, kind, _ = edited
    out = paths["dir"] / "kept.jsonl"
    res = run_cli("migrate", "--eval-set", paths["eval"], "--corpus", paths["old"],
                  "--to-corpus", paths["new"], "--out", out, "--keep-edited", "--format", "json")
    assert res.exit_code == 0, res.stderr
    rows = _read(out)[1:]
    flagged = [r for r in rows if "migration" in r]
    assert flagged and all(kind[r["doc_id"]] == "word" for r in flagged)
    for r in flagged:
        for e in r["migration"]["edited"]:
            s = r["gold_spans"][e["span"]]
            assert new[s["doc_id"]][s["start"]:s["end"]] == s["text"]
            assert 0.8 <= e["similarity"] < 1.0
    assert res.json()["predicate"]["summary"]["questions"]["set_aside"] == 0


def test_score_says_corpus_drifted_and_names_migrate(edited):
    """The migrated eval set is anchored: scored against a corpus edited inside a gold span
    it is refused as drift (exit 3); edited elsewhere, its spans are intact and it scores."""
    paths, _, _, new, kind, _ = edited
    rows = _read(paths["out"])
    span = rows[1]["gold_spans"][0]
    doc = span["doc_id"]
    run = write_jsonl(paths["dir"] / "run1.jsonl", [
        {"id": rows[1]["id"], "retrieved": [{"doc_id": doc, "start": 0, "end": 10}]}])
    inside = dict(new)
    text = inside[doc]
    inside[doc] = text[:span["start"] + 1] + "#" + text[span["start"] + 2:]
    drifted = write_jsonl(paths["dir"] / "drifted.jsonl",
                          [{"id": d, "text": t} for d, t in inside.items()])
    res = run_cli("score", "--eval-set", paths["out"], "--run", run, "--corpus", drifted,
                  "--min-coverage", "0")
    assert res.exit_code == 3
    assert "corpus drifted" in res.stderr and "ragspan migrate" in res.stderr
    assert f"document '{doc}'" in res.stderr and res.stderr.count("\n") == 1
    elsewhere = dict(new)
    elsewhere[doc] = new[doc] + "\n\nAppendix added after the eval set was made.\n"
    moved = write_jsonl(paths["dir"] / "appended.jsonl",
                        [{"id": d, "text": t} for d, t in elsewhere.items()])
    res = run_cli("score", "--eval-set", paths["out"], "--run", run, "--corpus", moved,
                  "--min-coverage", "0")
    assert res.exit_code == 0, res.stderr
    assert "changed since the eval set was made" in res.stderr and "intact" in res.stderr


WORDS = ["alpha", "beta", "gamma", "delta", "notice", "term", "party", "shall", "the", "of"]


@given(st.integers(0, 2**32 - 1))
def test_edits_outside_the_spans_keep_every_span(seed):
    """Random insertions and deletions outside the gold spans: every span is ``unchanged``
    or ``moved`` and slices back to the same text."""
    from ragspan.evalsets.migrate import locate_all
    from ragspan.io.corpus import Corpus, Document

    rnd = random.Random(seed)
    text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(30, 400)))
    spans = []
    for _ in range(rnd.randint(1, 6)):
        a = rnd.randrange(0, len(text) - 5)
        spans.append((a, min(len(text), a + rnd.randint(1, 60))))
    inside = [False] * (len(text) + 1)
    for a, b in spans:
        for i in range(a + 1, b):  # an edit at a span's boundary is outside it
            inside[i] = True
    out, i = [], 0
    cuts = sorted(rnd.sample(range(len(text) + 1), rnd.randint(1, 8)))
    for c in cuts:
        if inside[c]:
            continue
        out.append(text[i:c])
        if rnd.random() < 0.5:
            out.append(" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 30))) + " ")
            i = c
        else:  # delete up to the next span
            stop = c
            while stop < len(text) and not inside[stop] and stop - c < 40 and \
                    not any(a == stop for a, _ in spans):
                stop += 1
            i = stop if all(not (a < stop and c < b) for a, b in spans) else c
    out.append(text[i:])
    new_text = "".join(out)

    def corpus(t: str) -> Corpus:
        return Corpus("c", "0", {"d": Document(id="d", text=t)})

    moved = locate_all(corpus(text), corpus(new_text), [("d", a, b) for a, b in spans])
    for (a, b), m in zip(spans, moved):
        assert m.status in ("unchanged", "moved"), (m, text[a:b])
        assert new_text[m.start:m.end] == text[a:b]


def test_an_eval_set_not_made_on_the_corpus_is_refused(edited, tmp_path):
    paths = edited[0]
    res = run_cli("migrate", "--eval-set", paths["out"], "--corpus", paths["old"],
                  "--to-corpus", paths["new"], "--out", tmp_path / "x.jsonl")
    assert res.exit_code == 3 and "do not index --corpus" in res.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_nothing_survives_nothing_is_written(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": "The term is five years."}])
    gone = write_jsonl(tmp_path / "n.jsonl", [{"id": "e", "text": "Another text."}])
    ev = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "term?", "doc_id": "d",
                                             "gold_spans": [[12, 22]]}])
    out = tmp_path / "e2.jsonl"
    res = run_cli("migrate", "--eval-set", ev, "--corpus", corpus, "--to-corpus", gone,
                  "--out", out, "--report", tmp_path / "r.json")
    assert res.exit_code == 3 and "no question survived" in res.stderr
    assert "1 dropped" in res.stderr and "1 deleted" in res.stderr
    assert not out.exists()  # no eval set; the report is the failure's envelope
    assert json.loads((tmp_path / "r.json").read_text())["predicate"]["verdict"] == "error"
    res = run_cli("migrate", "--eval-set", ev, "--corpus", corpus, "--to-corpus", gone,
                  "--out", ev)
    assert res.exit_code == 2  # an output that is an input


def test_ambiguous_when_nothing_decides(tmp_path):
    """Where the span stood was rewritten, and its edited text is found twice, equally: the
    span is ambiguous and its question set aside, never placed on the first copy."""
    from ragspan.evalsets.migrate import locate_all
    from ragspan.io.corpus import Corpus, Document

    rnd = random.Random(7)
    filler = " ".join(rnd.choice(WORDS) for _ in range(300))
    clause = "The Supplier shall deliver the Goods within thirty days of each written order."
    old = filler + " " + clause + " " + filler[::-1]
    copy = clause.replace("thirty", "sixty")
    new = ("Schedule 1. " + copy + " " + "x" * 1200 + " Schedule 2. " + copy + " "
           + filler[::-1])
    start = len(filler) + 1

    def corpus(t: str) -> Corpus:
        return Corpus("c", "0", {"d": Document(id="d", text=t)})

    (m,) = locate_all(corpus(old), corpus(new), [("d", start, start + len(clause))])
    assert m.status == "ambiguous" and m.start is None and "equally good" in m.reason


def test_a_bad_anchor_is_refused_naming_the_key(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": "The term is five years."}])
    ev = write_jsonl(tmp_path / "e.jsonl", [{"id": "q", "query": "term?", "gold_spans": [
        {"doc_id": "d", "start": 12, "end": 22, "anchor": {"text": "zz", "before": "0" * 16,
                                                           "after": "0" * 16, "context": 32}}]}])
    res = run_cli("validate", "--eval-set", ev, "--corpus", corpus)
    assert res.exit_code == 3 and "gold_spans[0].anchor.text" in res.stderr


def _chunk_run(path, rows, texts, shift=None, size=1000):
    """Each question's document in fixed ``size``-character chunks of the old text, in
    document order, each moved by its document's ``shift`` (the same retrieval after an
    edit that only moved the text)."""
    shift = shift or {}
    return write_jsonl(path, [
        {"id": r["id"], "retrieved": [
            {"doc_id": r["doc_id"], "start": s + shift.get(r["doc_id"], 0),
             "end": min(s + size, len(texts[r["doc_id"]])) + shift.get(r["doc_id"], 0)}
            for s in range(0, len(texts[r["doc_id"]]), size)]} for r in rows])


def test_the_gate_across_a_corpus_change(edited):
    """Baseline: E on the old corpus; candidate: the migrated E2 on the edited corpus. Without
    the migration the reports are refused (other eval set, other corpus); with it only the
    questions that survived are paired, and verification re-scores each side from its own
    eval set and corpus."""
    paths, report, texts, new, kind, evalrows = edited
    d = paths["dir"]
    kept = _read(paths["out"])[1:]
    base_run = _chunk_run(d / "run-old.jsonl", evalrows, texts)
    cand_run = _chunk_run(d / "run-new.jsonl", kept, texts, {
        doc: len(PREAMBLE) for doc, k in kind.items() if k == "preamble"})
    for run, ev, corpus, out in ((base_run, paths["eval"], paths["old"], d / "base.json"),
                                 (cand_run, paths["out"], paths["new"], d / "cand.json")):
        res = run_cli("score", "--eval-set", ev, "--run", run, "--corpus", corpus,
                      "--k", "3", "--out", out)
        assert res.exit_code == 0, res.stderr
    res = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json")
    assert res.exit_code == 3 and "different eval set" in res.stderr
    left = len(evalrows) - len(kept)
    # by default the questions the edit left out count as lost, and 41% of them is past the
    # 5% bound: a FAIL that says both
    res = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
                  "--migration", paths["report"], "--format", "json")
    assert res.exit_code == 4, res.stderr
    summary = res.json()["predicate"]["summary"]
    moved = summary["migration"]
    assert summary["queries"] == len(evalrows) == moved["questions"]
    assert moved["survived"] == len(kept) and moved["trusted"] is False
    assert moved["set_aside"] + moved["dropped"] == left
    assert moved["counted_as"] == "lost by the candidate" and moved["over_bound"] is True
    grounded = moved["left_out_grounded_by_baseline"]["3"]
    assert grounded > 0
    assert summary["reasons"][0].startswith(f"the corpus edit left {left} of {len(evalrows)} "
                                            "questions out of the gate")
    cg = summary["metrics"]["complete_grounding@3"]
    assert cg["worse"] == grounded and cg["better"] == 0  # exactly the left-out, grounded ones
    assert any(w.startswith(f"{left} of {len(evalrows)} questions were left out by the corpus "
                            "edit") and "counted as lost by the candidate" in w
               for w in summary["warnings"])
    # trusted (the reviewed migrated eval set itself) and a bound that allows the edit: the
    # survivors alone are paired, and the same retriever on moved text grounds as it did
    res = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
                  "--migration", paths["report"], "--migrated-eval-set-trusted", paths["out"],
                  "--max-set-aside", "0.5", "--format", "json")
    assert res.exit_code in (0, 4), res.stderr
    summary = res.json()["predicate"]["summary"]
    moved = summary["migration"]
    assert moved["survived"] == len(kept) == summary["queries"] and moved["trusted"] is True
    assert summary["clusters"]["population"].endswith("whose answers survived the corpus edit")
    assert summary["metrics"]["complete_grounding@3"]["delta"] == 0.0
    assert res.json()["predicate"]["parameters"]["max_set_aside"] == 0.5
    # a "trusted" file that is not the one the migration wrote is refused
    res = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
                  "--migration", paths["report"], "--migrated-eval-set-trusted", paths["eval"])
    assert res.exit_code == 3 and "is not the eval set the migration wrote" in res.stderr
    table = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
                    "--migration", paths["report"], "--format", "table")
    assert f"across a corpus change: {len(kept)} of {len(evalrows)} questions" in table.stdout
    assert f"the {left} left out: counted as lost by the candidate" in table.stdout
    verified = run_cli(
        "compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
        "--migration", paths["report"], "--eval-set", paths["eval"], "--corpus", paths["old"],
        "--baseline-run", base_run, "--candidate-run", cand_run,
        "--candidate-eval-set", paths["out"], "--candidate-corpus", paths["new"],
        "--format", "json")
    assert verified.exit_code in (0, 4), verified.stderr
    assert verified.json()["predicate"]["summary"]["verification"]["verified"] is True
    # the candidate re-scored against the old corpus is not what its report says
    wrong = run_cli(
        "compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
        "--migration", paths["report"], "--eval-set", paths["eval"], "--corpus", paths["old"],
        "--baseline-run", base_run, "--candidate-run", cand_run,
        "--candidate-eval-set", paths["out"])
    assert wrong.exit_code == 3 and "corpus drifted" in wrong.stderr
    # a migration to another corpus does not link these reports
    other = d / "other.json"
    res = run_cli("migrate", "--eval-set", paths["eval"], "--corpus", paths["old"],
                  "--to-corpus", paths["old"], "--out", d / "same.jsonl", "--report", other)
    assert res.exit_code == 0, res.stderr
    res = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
                  "--migration", other)
    assert res.exit_code == 3 and "migration's migrated eval set" in res.stderr
    res = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
                  "--migration", d / "base.json")
    assert res.exit_code == 3 and "not a migrate report" in res.stderr
    res = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
                  "--candidate-corpus", paths["new"])
    assert res.exit_code == 2 and "give --migration too" in res.stderr
    # the drift guard's anchor (a report of the old corpus) is counted the same way: the
    # left-out questions lost against it too, or, trusted, left out of it too
    res = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
                  "--migration", paths["report"], "--anchor", d / "base.json",
                  "--anchor-budget", "5pt", "--format", "json")
    assert res.exit_code == 4, res.stderr
    assert res.json()["predicate"]["summary"]["anchor"]["verdict"] == "fail"
    res = run_cli("compare", "--baseline", d / "base.json", "--candidate", d / "cand.json",
                  "--migration", paths["report"], "--anchor", d / "base.json",
                  "--anchor-budget", "5pt", "--migrated-eval-set-trusted", paths["out"],
                  "--max-set-aside", "0.5", "--format", "json")
    assert res.exit_code in (0, 4), res.stderr
    assert res.json()["predicate"]["summary"]["anchor"]["verdict"] == "pass"


def _attack(tmp_path, lost: int):
    """30 documents, one question each, its answer one sentence. The baseline grounds all
    30. The pull request's retriever loses ``lost`` of them and its corpus edit changes one
    word inside each lost answer, so ``migrate`` sets exactly those aside; its candidate run
    answers the survivors perfectly."""
    rng = random.Random(7)
    words = ["fee", "term", "party", "notice", "law", "cap", "audit", "claim", "price", "data"]
    texts, rows = {}, []
    for i in range(30):
        filler = " ".join(rng.choice(words) for _ in range(60))
        answer = f"The {words[i % 10]} clause number {i} governs every {words[(i + 3) % 10]}."
        texts[f"d{i}"] = f"{filler}. {answer} {filler}."
        s = texts[f"d{i}"].index(answer)
        rows.append({"id": f"q{i}", "query": f"Which clause {i}?", "doc_id": f"d{i}",
                     "gold_spans": [[s, s + len(answer)]]})
    new = dict(texts)
    for i in range(lost):  # one word inside the gold span: "governs" -> "governz"
        new[f"d{i}"] = new[f"d{i}"].replace(" governs ", " governz ", 1)
    d = tmp_path
    paths = {"eval": write_jsonl(d / "eval.jsonl", rows),
             "old": write_jsonl(d / "old.jsonl", [{"id": k, "text": t} for k, t in texts.items()]),
             "new": write_jsonl(d / "new.jsonl", [{"id": k, "text": t} for k, t in new.items()])}
    res = run_cli("migrate", "--eval-set", paths["eval"], "--corpus", paths["old"],
                  "--to-corpus", paths["new"], "--out", d / "eval2.jsonl", "--report",
                  d / "migrate.json", "--format", "markdown")
    assert res.exit_code == 0, res.stderr
    paths.update(eval2=d / "eval2.jsonl", report=d / "migrate.json", markdown=res.stdout)
    kept = [r["id"] for r in _read(d / "eval2.jsonl")[1:]]
    assert kept == [f"q{i}" for i in range(lost, 30)]  # exactly the lost ones set aside
    return _score_both(paths, rows, kept, d)


def _score_both(paths, rows, kept, d):
    """The baseline's run (every gold span) scored on the old corpus, the candidate's (the
    ``kept`` questions' gold offsets) on the new one with the migrated eval set."""
    gold = {r["id"]: r["gold_spans"][0] for r in rows}
    paths["base_run"] = write_jsonl(d / "base-run.jsonl", [
        {"id": q, "retrieved": [{"doc_id": f"d{q[1:]}", "start": s, "end": e}]}
        for q, (s, e) in gold.items()])
    paths["cand_run"] = write_jsonl(d / "cand-run.jsonl", [
        {"id": q, "retrieved": [{"doc_id": f"d{q[1:]}", "start": gold[q][0],
                                 "end": gold[q][1]}]} for q in kept])
    for run, ev, corpus, out in (("base_run", "eval", "old", "base"),
                                 ("cand_run", "eval2", "new", "cand")):
        res = run_cli("score", "--eval-set", paths[ev], "--run", paths[run], "--corpus",
                      paths[corpus], "--k", "1", "--out", d / f"{out}.json")
        assert res.exit_code == 0, res.stderr
    return paths


def _verified_compare(paths, tmp_path, *extra):
    return run_cli(
        "compare", "--baseline", tmp_path / "base.json", "--candidate", tmp_path / "cand.json",
        "--no-config", "--migration", paths["report"], "--eval-set", paths["eval"],
        "--corpus", paths["old"], "--baseline-run", paths["base_run"], "--candidate-run",
        paths["cand_run"], "--candidate-eval-set", paths["eval2"], "--candidate-corpus",
        paths["new"], "--format", "json", *extra)


def test_a_corpus_edit_cannot_set_aside_exactly_the_regressed_questions(tmp_path):
    """The attack: a verified FAIL (-40pt) became a verified PASS. Now the 12 set-aside
    questions the baseline grounded count as lost: FAIL on complete grounding itself (the
    bound raised so that it alone does not decide), and FAIL by the bound by default."""
    paths = _attack(tmp_path, 12)
    res = _verified_compare(paths, tmp_path, "--max-set-aside", "0.5")
    assert res.exit_code == 4, res.stderr
    pred = res.json()["predicate"]
    assert pred["summary"]["verification"]["verified"] is True
    cg = pred["summary"]["metrics"]["complete_grounding@1"]
    assert cg["failed"] is True and cg["worse"] == 12 and abs(cg["delta"] + 0.4) < 1e-12
    moved = pred["summary"]["migration"]
    assert moved["set_aside"] == 12 and moved["left_out_grounded_by_baseline"] == {"1": 12}
    assert moved["over_bound"] is False
    # the Why line says what happened to them (they were "unlabelled")
    assert pred["summary"]["why"] == ("12 queries lost complete grounding@1: 12 set aside by "
                                      "the migration"), pred["summary"]["why"]
    res = _verified_compare(paths, tmp_path)
    assert res.exit_code == 4
    reasons = res.json()["predicate"]["summary"]["reasons"]
    assert reasons[0].startswith("the corpus edit left 12 of 30 questions out of the gate "
                                 "(40.0%: 12 set aside, 0 dropped), past --max-set-aside 5.0%")
    # the migration's own markdown states what it did, never a verdict
    assert paths["markdown"].startswith("### ragspan migrate: 18 questions kept, 12 set aside")
    assert "pass" not in paths["markdown"].lower().split("\n")[0]


def test_a_small_edit_within_the_bound_passes_where_nothing_was_lost(tmp_path):
    """One question set aside (3.3%, within 5%) that the candidate answers as before
    elsewhere: counted as lost it costs 3.3pt, which a 5pt budget allows."""
    paths = _attack(tmp_path, 1)
    res = _verified_compare(paths, tmp_path, "--budget", "complete_grounding=5pt",
                            "--mode", "threshold")
    assert res.exit_code == 0, res.stdout
    moved = res.json()["predicate"]["summary"]["migration"]
    assert moved["left_out_share"] == 1 / 30 and moved["over_bound"] is False


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan"])
def test_max_set_aside_is_a_share(tmp_path, value):
    paths = _attack(tmp_path, 1)
    res = _verified_compare(paths, tmp_path, "--max-set-aside", value)
    assert res.exit_code == 2 and "--max-set-aside" in res.stderr


def test_the_link_check_names_the_report_it_means(tmp_path):
    """The link check's loop reused ``role``: after it, a candidate question missing from
    the anchor was said to be missing from the candidate. Each message names its report."""
    import dataclasses

    from ragspan.app.score_reports import load_score_report
    from ragspan.base.errors import InputError
    from ragspan.gate.migration import across, migration_of
    from ragspan.report.envelope import load_report

    paths = _attack(tmp_path, 3)
    base = load_score_report(str(tmp_path / "base.json"), "baseline")
    cand = load_score_report(str(tmp_path / "cand.json"), "candidate")
    m = migration_of(load_report(str(paths["report"]))[0], str(paths["report"]))
    short = dataclasses.replace(base, ids=base.ids[:-1], values=base.values[:-1],
                                rows=base.rows[:-1])
    with pytest.raises(InputError, match="candidate questions are not in the anchor") as err:
        across(short, cand, m, "anchor")
    assert err.value.path == cand.path
    extra = dataclasses.replace(cand, ids=cand.ids[1:], values=cand.values[1:],
                                rows=cand.rows[1:])
    with pytest.raises(InputError, match="noise questions are neither in the candidate nor"):
        across(base, extra, m, "noise")


def test_a_planted_copy_is_not_a_move(tmp_path):
    """The fourth round's attack: the corpus edit changes one character inside each of the 12
    answers the candidate loses and writes an exact copy of the old answer where the
    candidate retrieves (half with none of the old place's context, half with 64 characters
    of it copied along). ``migrate`` called them "moved" (nothing set aside) and a -40pt FAIL
    passed ``compare --migration``. Now each is ambiguous (set aside, counted as lost), and
    the verified compare fails."""
    rng = random.Random(11)
    words = ["fee", "term", "party", "notice", "law", "cap", "audit", "claim", "price", "data"]
    texts, rows, new, copies = {}, [], {}, {}
    for i in range(30):
        filler = " ".join(rng.choice(words) for _ in range(60))
        answer = (f"The {words[i % 10]} clause number {i} governs every "
                  f"{words[(i + 3) % 10]} under this agreement and each of its schedules.")
        text = f"{filler}. {answer} {filler}."
        s = text.index(answer)
        texts[f"d{i}"] = text
        rows.append({"id": f"q{i}", "query": f"Which clause {i}?", "doc_id": f"d{i}",
                     "gold_spans": [[s, s + len(answer)]]})
        if i >= 12:
            new[f"d{i}"] = text
            continue
        edited = text.replace(" governs ", " governz ", 1)
        planted = answer if i % 2 else text[s - 64:s + len(answer) + 64]
        new[f"d{i}"] = edited + "\n\nANNEX\n\n" + planted + "\n"
        at = new[f"d{i}"].rindex(answer)
        copies[f"q{i}"] = (at, at + len(answer))
    d = tmp_path
    paths = {"eval": write_jsonl(d / "eval.jsonl", rows),
             "old": write_jsonl(d / "old.jsonl", [{"id": k, "text": t} for k, t in texts.items()]),
             "new": write_jsonl(d / "new.jsonl", [{"id": k, "text": t} for k, t in new.items()])}
    res = run_cli("migrate", "--eval-set", paths["eval"], "--corpus", paths["old"],
                  "--to-corpus", paths["new"], "--out", d / "eval2.jsonl", "--report",
                  d / "migrate.json")
    assert res.exit_code == 0, res.stderr
    report = json.loads((d / "migrate.json").read_text("utf-8"))["predicate"]
    assert report["summary"]["spans"]["ambiguous"] == 12, report["summary"]
    assert report["summary"]["spans"]["moved"] == 0
    reasons = {s["reason"] for s in report["details"]["spans"] if s["status"] == "ambiguous"}
    assert any("surroundings share" in r for r in reasons), reasons
    assert any("edited, and an exact copy stands elsewhere" in r for r in reasons), reasons
    kept = [r["id"] for r in _read(d / "eval2.jsonl")[1:]]
    assert kept == [f"q{i}" for i in range(12, 30)]
    paths.update(eval2=d / "eval2.jsonl", report=d / "migrate.json")
    _score_both(paths, rows, kept, d)
    res = _verified_compare(paths, tmp_path, "--max-set-aside", "0.5")
    assert res.exit_code == 4, res.stdout + res.stderr
    cg = res.json()["predicate"]["summary"]["metrics"]["complete_grounding@1"]
    assert cg["failed"] and cg["worse"] == 12


def test_a_trusted_migrated_eval_set_is_trusted_for_its_content(tmp_path):
    """The reviewed copy committed on the base branch was made in another folder (its header
    records other paths, perhaps another Python): it never matched the one the recipe makes
    in its temporary folder. The digest the gate checks covers the questions and gold spans
    only; a copy whose rows differ is still refused."""
    paths = _attack(tmp_path, 1)
    committed = tmp_path / "committed"
    committed.mkdir()
    for name in ("eval", "old", "new"):
        (committed / paths[name].name).write_bytes(paths[name].read_bytes())
    res = run_cli("migrate", "--eval-set", committed / "eval.jsonl", "--corpus",
                  committed / "old.jsonl", "--to-corpus", committed / "new.jsonl", "--out",
                  committed / "eval2.jsonl")
    assert res.exit_code == 0, res.stderr
    reviewed = committed / "eval2.jsonl"
    lines = reviewed.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["_header"]["tool"]["python"] = "3.99.0"  # made on another machine
    reviewed.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n", encoding="utf-8")
    assert reviewed.read_bytes() != paths["eval2"].read_bytes()
    res = _verified_compare(paths, tmp_path, "--migrated-eval-set-trusted", reviewed,
                            "--budget", "complete_grounding=5pt")
    assert res.exit_code in (0, 4), res.stderr
    assert res.json()["predicate"]["summary"]["migration"]["trusted"] is True
    rows = [json.loads(x) for x in lines[1:]]
    rows[0]["query"] = "another question"
    reviewed.write_text("\n".join([json.dumps(header)] + [json.dumps(r) for r in rows]) + "\n",
                        encoding="utf-8")
    res = _verified_compare(paths, tmp_path, "--migrated-eval-set-trusted", reviewed)
    assert res.exit_code == 3 and "its questions and gold spans" in res.stderr, res.stderr


@pytest.mark.parametrize("edit", ["garbled", "repeated"])
def test_the_alignment_stays_within_its_memory_per_character(edit):
    """Every tenth character changed (no k-gram survives), and a long repeated phrase: the
    unique k-grams were held in Python dicts, ~320 bytes a character (610 MB for a document
    of 2,000,000). Now numpy arrays: under 100 bytes a character, measured by tracemalloc
    (numpy's allocations included)."""
    import tracemalloc

    from ragspan.evalsets.textdiff import matched_blocks

    n = 400_000
    rnd = random.Random(3)
    if edit == "garbled":
        text = " ".join(f"{rnd.choice(WORDS)}{rnd.randrange(10_000)}" for _ in range(n // 8))[:n]
        chars = list(text)
        for i in range(0, len(chars), 10):
            chars[i] = "#" if chars[i] != "#" else "%"
        new = "".join(chars)
    else:
        phrase = "the licensee shall pay royalties to the licensor "
        text = (phrase * (n // len(phrase) + 1))[:n]
        new = "PREFACE " + text[:n // 2] + "inserted words here " + text[n // 2:]
    tracemalloc.start()
    try:
        matched_blocks(text, new)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / len(text) < 100, peak / len(text)


def test_a_run_on_an_edited_corpus_names_migrate_when_the_eval_set_needs_it(tmp_path):
    """The run and the eval set were both made on the corpus before the edit: "run the
    retriever again" was not enough advice; the message names ``ragspan migrate``."""

    paths = _attack(tmp_path, 3)
    anchored = tmp_path / "anchored.jsonl"  # the eval set anchored on the old corpus
    res = run_cli("migrate", "--eval-set", paths["eval"], "--corpus", paths["old"],
                  "--to-corpus", paths["old"], "--out", anchored)
    assert res.exit_code == 0, res.stderr
    import hashlib

    made_on = hashlib.sha256(paths["old"].read_bytes()).hexdigest()
    run = tmp_path / "run-old.jsonl"
    run.write_text(json.dumps({"_header": {"corpus_sha256": made_on}}) + "\n"
                   + paths["base_run"].read_text(), encoding="utf-8")
    res = run_cli("score", "--eval-set", anchored, "--run", run, "--corpus", paths["new"],
                  "--k", "1")
    assert res.exit_code == 3, res.stderr
    assert "the eval set's gold spans were made on the corpus before the edit too: carry " \
           "them over with `ragspan migrate`" in res.stderr, res.stderr
