"""``ragspan report``: the lever backlog attributes a delta only to a pair that isolates one
lever, every figure of the report traces to its inputs, the client readout has its four
sections and quotes the corpus, and bad inputs are refused."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import report_fixture as fx
from conftest import assert_input_error, report_rows, run_cli


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return fx.build(tmp_path_factory.mktemp("report"))


def report(made, out, *extra):
    return run_cli("report", *(made[n] for n in "ABCD"), "--baseline", "A", "--out", out,
                   "--format", "json", *extra)


def readout(made):
    from ragspan.app.report import read_configs
    from ragspan.report.readout.build import build

    return build(read_configs([str(made[n]) for n in "ABCD"]), "A")


# ---- the lever backlog ---------------------------------------------------------------------


def test_a_pair_isolating_one_lever_lends_it_the_delta_and_a_hurt_shows_negative(made):
    r = readout(made)
    by = {row.lever: row for row in r.backlog}
    (chunker,) = by["chunker"].effects
    assert (r.configs[chunker.pair.a].name, r.configs[chunker.pair.b].name) == ("A", "B")
    assert chunker.outcome("complete_grounding@5").delta == pytest.approx(7 / 30)
    (sparse,) = by["sparse"].effects
    assert (r.configs[sparse.pair.a].name, r.configs[sparse.pair.b].name) == ("B", "C")
    assert sparse.outcome("complete_grounding@5").delta == pytest.approx(-4 / 30)
    assert (sparse.outcome("complete_grounding@5").fixed,
            sparse.outcome("complete_grounding@5").broken) == (0, 4)


def test_a_two_lever_pair_lends_nothing_and_unisolated_levers_read_not_measured(made, tmp_path):
    r = readout(made)
    by = {row.lever: row for row in r.backlog}
    assert by["filter scope"].effects == ()  # only A -> D (and C/B -> D) change it
    assert all(not by[lv].effects for lv in ("dense model", "fusion", "rerank", "k"))
    a_d = next(p for p in r.pairs if {r.configs[p.a].name, r.configs[p.b].name} == {"A", "D"})
    assert a_d.levers == ("sparse", "filter scope") and a_d.isolates is None
    lent = [e for row in r.backlog for e in row.effects]
    assert all(len(e.pair.levers) == 1 for e in lent)
    assert res_ok(report(made, tmp_path / "r.md"))
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    backlog = text.split("## Lever backlog")[1].split("## ")[0]
    for lever in ("filter scope", "rerank", "k", "dense model", "fusion"):
        assert re.search(rf"^\| {lever} \| [^\n]*\| not measured \|", backlog, re.M), lever
    assert "| sparse | " in backlog and "| -0.133 |" in backlog  # the hurt, negative
    assert "| chunker | " in backlog and "| +0.233 |" in backlog
    assert "A → D changes sparse, filter scope" in backlog
    d_delta = f"{(20 - 15) / 30:+.3f}"
    assert d_delta not in backlog  # A -> D's delta is lent to no lever


def test_the_backlog_counts_the_baselines_failing_queries_each_lever_can_move(made):
    r = readout(made)
    rows_a = r.base.report.rows
    labels = [row.failure.get("5") for row in rows_a]
    by = {row.lever: row.accounts_for for row in r.backlog}
    assert by["rerank"] == labels.count("rank-miss") > 0
    assert by["dense model"] == labels.count("retrieval-miss") > 0
    assert [row.accounts_for for row in r.backlog] == sorted(
        (row.accounts_for for row in r.backlog), reverse=True)


def res_ok(res) -> bool:
    assert res.exit_code == 0, res.stderr
    return True


# ---- every number traces to the inputs -----------------------------------------------------

NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?")


def _leaves(obj, out):
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        out.append(float(obj))
    elif isinstance(obj, dict):
        for v in obj.values():
            _leaves(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _leaves(v, out)


def known_values(made) -> list[float]:
    """Every number of the inputs (the score reports, whole) and of the statistics computed
    from them independently of the report: each pair's gate comparison, each interval, the
    counts of queries, configurations, spans and grounded queries."""

    from ragspan.app.report import read_configs
    from ragspan.base.options import GATE_DEFAULTS
    from ragspan.gate.compare import compare
    from ragspan.gate.options import GateOptions
    from ragspan.gate.stats import bootstrap_ci

    values: list[float] = []
    configs = read_configs([str(made[n]) for n in "ABCD"])
    for c in configs:
        _leaves(json.loads(Path(c.report.path).read_text(encoding="utf-8")), values)
        col = c.report.column("complete_grounding@5")
        ci = bootstrap_ci(col.reshape(-1, 1), 2000, 0)
        values += [float(ci.low[0]), float(ci.high[0]), float(col.sum()),
                   len(col) - float(col.sum())]
        for d in configs:
            if d is not c:
                res = compare(c.report, d.report, GateOptions(), allow_identical=True)
                _leaves(res.summary(), values)
    values += [len(configs), 2000, 0, GATE_DEFAULTS["budget_tolerance"] * 100, 2]
    # the family of the comparisons with the baseline (A), by max-T on the per-query drops,
    # computed here straight from the reports: its size, alpha and each bound's level
    import numpy as np

    from ragspan.gate.stats import family_alpha

    base = configs[0].report.column("complete_grounding@5")
    drops = [base - c.report.column("complete_grounding@5") for c in configs[1:]]
    members = [x for d in drops for x in (d, -d)]
    from ragspan.gate.alignment import cluster_plan

    ref = configs[0].report
    units = cluster_plan(ref, ref, "auto").index(ref.ids)  # the documented sampling unit
    level = family_alpha(members, [np.arange(len(base))] * len(members), len(base), 0.05,
                         "max-t", 10_000, 0, units)
    values += [len(members), len(drops), 0.05, 1 - level]
    return values


def _shown(token: str) -> tuple[float, float]:
    """The value a token shows and half its last digit (the rounding it allows)."""
    pct = token.endswith("%")
    body = token.rstrip("%").replace(",", "")
    if "e" in body:
        mant, _ = body.split("e")
        decimals = len(mant.split(".")[1]) if "." in mant else 0
        v = float(body)
        return v, 0.5 * 10 ** (math.floor(math.log10(abs(v))) - decimals) if v else 0.5
    decimals = len(body.split(".")[1]) if "." in body else 0
    v = float(body)
    return (v / 100, 0.5 * 10 ** -decimals / 100) if pct else (v, 0.5 * 10 ** -decimals)


def test_every_number_in_the_report_traces_to_an_input(made, tmp_path):
    assert res_ok(report(made, tmp_path / "r.md"))
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    text = re.sub(r"\b[0-9a-f]{64}\b", "", text)  # digests: checked below as strings
    text = re.sub(r"[\w./-]*\.(?:jsonl|json)\b", "", text)  # file names
    text = re.sub(r"@\d+", "", text.replace("&#8203;", ""))  # the cutoff in metric names
    values = known_values(made)

    def traced(token: str) -> bool:
        v, tol = _shown(token)
        return any(abs(v - x) <= tol + 1e-12 or abs(abs(v) - abs(x)) <= tol + 1e-12
                   for x in values)

    tokens = NUMBER.findall(text)
    assert len(tokens) > 120
    for token in tokens:
        assert traced(token), f"{token} is in no input"
    assert not any(traced(t) for t in ("0.4321", "+0.0123", "61.7%", "4,321"))  # not lax


def test_provenance_lists_every_input_digest(made, tmp_path):
    assert res_ok(report(made, tmp_path / "r.md"))
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    from ragspan.io.files import read_bytes, sha256_hex

    for name in "ABCD":
        assert sha256_hex(read_bytes(made[name])) in text
        assert sha256_hex(read_bytes(made[name].with_name(f"{name}.run.jsonl"))) in text
        assert fx.CONFIGS[name][0]["config_digest"] in text
    assert sha256_hex(read_bytes(made["eval"])) in text


def test_the_same_inputs_give_the_same_bytes(made, tmp_path):
    for fmt in ("md", "html"):
        assert res_ok(report(made, tmp_path / f"1.{fmt}"))
        assert res_ok(report(made, tmp_path / f"2.{fmt}"))
        assert (tmp_path / f"1.{fmt}").read_bytes() == (tmp_path / f"2.{fmt}").read_bytes()


# ---- the client readout --------------------------------------------------------------------


def md_plain(line: str) -> str:
    """The characters an inert markdown line shows (``render.text.md_lines`` undone)."""
    import html

    return html.unescape(re.sub(r"\\([\\`*\[\]~|_#+=.)-])", r"\1", line)).replace("\u200b", "")


def test_the_client_readout_has_four_sections_and_quotes_the_corpus(made, tmp_path):
    from ragspan.io.corpus import read_corpus
    from ragspan.report.readout.client import ELLIPSIS

    res = report(made, tmp_path / "c.md", "--audience", "client", "--corpus", made["corpus"])
    assert res_ok(res)
    text = (tmp_path / "c.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", text, re.M) == [
        "Where retrieval stands today", "Top failure patterns", "Fix backlog",
        "Scope: what was and was not measured"]
    assert re.findall(r"^# ", text, re.M) == ["# "]
    corpus = read_corpus(made["corpus"])
    quotes = re.findall(r"((?:^> .*\n)+)>\n> — (\S+), characters (\d+)–(\d+), missed", text,
                        re.M)
    assert len(quotes) >= 4  # two failure patterns, two queries each
    for body, doc, start, end in quotes:
        quoted = "\n".join(md_plain(line[2:]) for line in body.rstrip("\n").split("\n"))
        truth = corpus.text(doc)[int(start):int(end)]
        assert quoted == truth or (quoted.endswith(ELLIPSIS)
                                   and truth.startswith(quoted[:-len(ELLIPSIS)]))
    assert "rerank: not measured" in text
    assert "15 of 30 questions are completely grounded" in text


def test_one_command_writes_the_developer_report_and_the_client_readout(made, tmp_path):
    """``--client-out`` (the CUAD harness writes both at once): the same bytes as the two
    commands, both files in the report's subject; refused without a corpus, beside
    ``--audience client`` or on the file ``--out`` names, and then nothing is written."""
    dev, cli_md = tmp_path / "dev.html", tmp_path / "client.md"
    res = report(made, dev, "--client-out", cli_md, "--corpus", made["corpus"])
    assert res_ok(res)
    assert [s["name"] for s in res.json()["subject"]] == [str(dev), str(cli_md)]
    assert res.json()["predicate"]["parameters"]["client_format"] == "markdown"
    assert res_ok(report(made, tmp_path / "d1.html"))
    assert res_ok(report(made, tmp_path / "c1.md", "--audience", "client", "--corpus",
                         made["corpus"]))
    assert dev.read_bytes() == (tmp_path / "d1.html").read_bytes()
    assert cli_md.read_bytes() == (tmp_path / "c1.md").read_bytes()
    for extra, fragment, code in (
            (["--client-out", tmp_path / "x.md"], "give --corpus", 2),
            (["--client-out", tmp_path / "x.md", "--corpus", made["corpus"], "--audience",
              "client"], "leave --audience at developer", 2),
            (["--client-out", tmp_path / "x.txt", "--corpus", made["corpus"]], "use .md or .html", 2)):
        res = report(made, tmp_path / "x.html", *extra)
        assert res.exit_code == code and fragment in res.stderr, (extra, res.stderr)
        assert not (tmp_path / "x.html").exists() and not (tmp_path / "x.md").exists()
    res = report(made, tmp_path / "x.md", "--client-out", tmp_path / "x.md", "--corpus",
                 made["corpus"])
    assert res.exit_code == 2 and not (tmp_path / "x.md").exists()


def test_the_html_client_readout_is_one_self_contained_file(made, tmp_path):
    assert res_ok(report(made, tmp_path / "c.html", "--audience", "client", "--corpus",
                         made["corpus"]))
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    assert page.count("<h2>") == 4
    assert not re.search(r"<(script|link|img|iframe)\b|url\(|https?://(?!www\.w3\.org/2000/svg)",
                         page)


def test_the_html_report_has_the_tables_and_both_plots(made, tmp_path):
    assert res_ok(report(made, tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 2 and page.count("<table>") >= 7
    assert not re.search(r"<(script|link|img|iframe)\b|url\(|https?://(?!www\.w3\.org/2000/svg)",
                         page)


# ---- refused -------------------------------------------------------------------------------


def test_bad_requests_are_usage_errors(made, tmp_path):
    cases = [
        (["--baseline", "Z"], "names no configuration"),
        (["--k", "3"], "scored at k = 5, 10"),
    ]
    for extra, fragment in cases:
        res = run_cli("report", made["A"], made["B"], "--out", tmp_path / "r.md", *extra)
        assert res.exit_code == 2 and fragment in res.stderr, (extra, res.stderr)
    res = run_cli("report", made["A"], "--out", tmp_path / "r.txt")
    assert res.exit_code == 2 and "use .md or .html" in res.stderr
    res = run_cli("report", made["A"], made["A"], "--out", tmp_path / "r.md")
    assert res.exit_code == 2 and "configuration 'A'" in res.stderr
    res = run_cli("report", made["A"], "--out", made["A"])
    assert res.exit_code == 2
    assert not (tmp_path / "r.md").exists()


def test_incomparable_or_doc_level_reports_are_input_errors(made, tmp_path):
    other = dict(fx.build(tmp_path))  # same content, but read as written: same digests
    evalset = [json.loads(line) for line in
               other["eval"].read_text(encoding="utf-8").splitlines()]
    evalset[0]["query"] += " (edited)"
    (tmp_path / "eval2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evalset),
                                          encoding="utf-8")
    res = run_cli("score", "--eval-set", tmp_path / "eval2.jsonl", "--run",
                  tmp_path / "B.run.jsonl", "--corpus", other["corpus"], "--k", "5", "--k", "10",
                  "--out", tmp_path / "B2.json")
    assert res.exit_code == 0
    res = run_cli("report", made["A"], tmp_path / "B2.json", "--out", tmp_path / "r.md")
    assert_input_error(res, "different eval set", "B2.json")
    qrels = tmp_path / "q.tsv"
    qrels.write_text("q00\t0\tcontract-00\t1\n", encoding="utf-8")
    trec = tmp_path / "run.trec"
    trec.write_text("q00 Q0 contract-00 1 1.0 x\n", encoding="utf-8")
    assert run_cli("score", "--qrels", qrels, "--run", trec, "--out",
                   tmp_path / "doc.json").exit_code == 0
    res = run_cli("report", tmp_path / "doc.json", "--out", tmp_path / "r.md")
    assert_input_error(res, "doc-level score report")
    assert not (tmp_path / "r.md").exists()


def test_the_client_readout_checks_the_corpus_it_quotes(made, tmp_path):
    other = tmp_path / "corpus.jsonl"
    other.write_text(made["corpus"].read_text(encoding="utf-8").replace("Contract 0.",
                                                                         "Contract 0!"),
                     encoding="utf-8")
    res = run_cli("report", made["A"], made["B"], "--audience", "client", "--corpus", other,
                  "--out", tmp_path / "c.md")
    assert_input_error(res, "not the one the baseline was scored on", "corpus.jsonl")
    assert not (tmp_path / "c.md").exists()


def test_the_configurations_are_one_family(made, tmp_path):
    """Each configuration against the baseline, both directions, adjusted together by max-T:
    every bound is stricter than one pair's alone; --all-pairs makes every pair a member."""
    res = report(made, tmp_path / "r.md", "--format", "json")
    assert res_ok(res)
    fam = res.json()["predicate"]["summary"]["family"]
    assert fam["size"] == 6 and fam["alpha"] == 0.05 and fam["bound_alpha"] < 0.05
    assert [(p["from"], p["to"]) for p in fam["pairs"]] == [("A", "B"), ("A", "C"), ("A", "D")]
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "in the family" in text and ("survives" in text or "within noise" in text)
    for p in fam["pairs"]:
        assert p["survives"] == (p["drop_low"] > 0 or p["drop_high"] < 0)
    res = report(made, tmp_path / "all.md", "--all-pairs", "--format", "json")
    fam = res.json()["predicate"]["summary"]["family"]
    assert fam["size"] == 12 and len(fam["pairs"]) == 6
    assert "## Every pair, one family" in (tmp_path / "all.md").read_text(encoding="utf-8")


def test_budget_curves_when_the_reports_carry_character_cutoffs(made, tmp_path):
    """Scored with --budget-grid, the report draws complete grounding against characters per
    query (one line per configuration, its fixed-k points on the same axes) and states the
    budget each needs to ground 80% of the questions; without character cutoffs, no section."""
    import xml.etree.ElementTree as ET

    scored = {}
    for name in "AB":
        out = tmp_path / f"{name}.json"
        res = run_cli("score", "--eval-set", made["eval"], "--run",
                      made["A"].parent / f"{name}.run.jsonl", "--corpus", made["corpus"],
                      "--k", "5", "--k", "10", "--budget-grid", "--out", out)
        assert res.exit_code == 0, res.stderr
        scored[name] = out
    args = [scored["A"], scored["B"], "--baseline", "A"]
    assert run_cli("report", *args, "--out", tmp_path / "r.md").exit_code == 0
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "## Budget curves: like with like" in text and "| budget for 80% |" in text
    grid = "| configuration | 250 | 500 | 1,000 | 2,000 | 4,000 | 8,000 | 16,000 | 32,000 |"
    assert grid + " budget for 80% |" in text
    assert run_cli("report", *args, "--out", tmp_path / "r.html").exit_code == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    curve = [s for s in svgs if "characters per query (log)" in s]
    assert len(curve) == 1 and curve[0].count("<polyline") == 2
    ET.fromstring(curve[0])  # well-formed
    assert res_ok(report(made, tmp_path / "plain.md"))
    assert "Budget curves" not in (tmp_path / "plain.md").read_text(encoding="utf-8")


def test_reports_scored_at_character_budgets_only_are_refused_with_the_fix(made, tmp_path):
    scored = []
    for name in "AB":
        out = tmp_path / f"{name}.json"
        res = run_cli("score", "--eval-set", made["eval"], "--run",
                      made["A"].parent / f"{name}.run.jsonl", "--corpus", made["corpus"],
                      "--k", "2000c", "--out", out)
        assert res.exit_code == 0, res.stderr
        scored.append(out)
    res = run_cli("report", *scored, "--out", tmp_path / "r.md")
    assert res.exit_code == 2 and "score with --k 5" in res.stderr


def test_the_csv_has_one_row_per_query_and_configuration(tmp_path):
    """report --csv: the rows equal the score reports' per-query values, a formula-looking
    id is defused, and the CSV is written with the report or not at all."""
    import csv
    import json

    from conftest import run_cli, write_jsonl

    rows = [{"id": qid, "query": "x", "doc_id": "d", "gold_spans": [[0, 5]]}
            for qid in ("q1", "=HYPERLINK(1)")]
    evalset = write_jsonl(tmp_path / "e.jsonl", rows)
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "d", "text": "abcdefghij"}])
    scores = []
    for name, end in (("a", 5), ("b", 2)):
        run = write_jsonl(tmp_path / f"{name}.jsonl", [
            {"id": r["id"], "retrieved": [{"doc_id": "d", "start": 0, "end": end}]} for r in rows])
        out = tmp_path / f"{name}.json"
        assert run_cli("score", "--eval-set", evalset, "--run", run, "--corpus", corpus,
                       "--k", "1", "--out", out).exit_code == 0
        scores.append(out)
    res = run_cli("report", *scores, "--out", tmp_path / "r.md", "--csv", tmp_path / "r.csv")
    assert res.exit_code == 0, res.stderr
    table = list(csv.DictReader((tmp_path / "r.csv").open(encoding="utf-8", newline="")))
    assert [(r["configuration"], r["query_id"]) for r in table] == [
        (c, q) for c in ("a", "b") for q in ("q1", "'=HYPERLINK(1)")]
    for path, part in zip(scores, (table[:2], table[2:])):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for qrow, crow in zip(report_rows(doc), part):
            assert {m: float(crow[m]) for m in qrow["metrics"]} == qrow["metrics"]
    assert {r["failure@1"] for r in table[2:]} == {"partial-grounding"}
    assert {r["failure@1"] for r in table[:2]} == {""}
    res = run_cli("report", *scores, "--out", tmp_path / "s.md", "--csv", tmp_path / "s.md")
    assert res.exit_code == 2 and not (tmp_path / "s.md").exists()
