"""``ragspan import cuad|legalbench-rag|beir|chroma|ragas``: a public benchmark as an eval set."""

from __future__ import annotations

import logging
from typing import Any

from ragspan.app.eval_build import build_result, input_ref
from ragspan.app.output import CommandResult
from ragspan.base.errors import InputError, UsageError
from ragspan.base.placement import anchoring
from ragspan.base.records import InputRef
from ragspan.base.voice import setting
from ragspan.evalsets.build import EvalBuild
from ragspan.evalsets.importers.beir import import_beir
from ragspan.evalsets.importers.chroma import import_chroma
from ragspan.evalsets.importers.cuad import import_cuad_csv, import_cuad_squad
from ragspan.evalsets.importers.legalbench import import_legalbench
from ragspan.evalsets.importers.ragas import import_ragas
from ragspan.io.corpus import read_corpus
from ragspan.io.files import tree_sha256
from ragspan.io.serialize import jsonl

log = logging.getLogger("ragspan")


def tree_ref(role: str, folder: str) -> InputRef:
    """An InputRef of a folder, its digest ``io.files.tree_sha256``."""
    return InputRef(role, folder, tree_sha256(folder))


def check_release(ref: InputRef, expected: str | None) -> None:
    """``import cuad --expect-sha256``: the release file (the SQuAD JSON, or
    master_clauses.csv) must have the sha256 its publisher gives, else an InputError naming
    both digests; nothing is imported from a file that is not the release it claims to be."""
    if expected is None:
        return
    if not (len(expected) == 64 and all(c in "0123456789abcdef" for c in expected.lower())):
        raise UsageError(f"{setting('expect-sha256')} {expected!r}: expected 64 hexadecimal digits")
    if ref.sha256 != expected.lower():
        raise InputError(f"sha256 {ref.sha256} is not the release's published "
                         f"{expected.lower()}: a different or altered file", ref.name)


def _cuad(opts: dict[str, Any]) -> tuple[EvalBuild, list[InputRef], dict[str, Any]]:
    """The CUAD build, its input references and its parameters (``--squad-json`` or the
    master-clauses CSV; ``--expect-sha256`` checked before a byte of the release is parsed)."""
    common = {"sample_docs": opts["sample_docs"], "seed": opts["seed"],
              "queries": opts.get("sample_queries"),
              "exclude_metadata": opts["exclude_metadata"],
              "exclude_cross_references": opts["exclude_cross_references"]}
    expected = opts.get("expect_sha256")
    if opts.get("squad_json"):
        if opts.get("csv"):
            raise UsageError(f"give {setting('squad-json')} or {setting('csv')}, not both")
        release = input_ref("squad_json", opts["squad_json"])
        check_release(release, expected)  # before a byte of it is parsed
        build = import_cuad_squad(opts["squad_json"], **common)
        inputs = [release]
    else:
        missing = [setting(k) for k in ("csv", "contracts", "categories") if not opts.get(k)]
        if missing:
            raise UsageError(f"import cuad needs {setting('squad-json')}, or {', '.join(missing)}")
        release = input_ref("master_clauses", opts["csv"])
        check_release(release, expected)
        build = import_cuad_csv(opts["csv"], opts["contracts"], opts["categories"],
                                allow_missing_contracts=opts["allow_missing_contracts"],
                                **common)
        contracts = tree_ref("contracts", opts["contracts"])
        inputs = [release, input_ref("categories", opts["categories"]), contracts]
        if expected is not None:  # the CSV's digest says nothing of the files beside it
            uncovered = [f"{setting('contracts')} {opts['contracts']} (tree sha256 {contracts.sha256})",
                         f"{setting('categories')} {opts['categories']}"]
            log.warning(f"import cuad: {setting('expect-sha256')} covers {setting('csv')} only, not %s: the "
                        "corpus is built from those too (their digests are in the report's "
                        "inputs)", " or ".join(uncovered))
    params = {"sample_docs": common["sample_docs"], "seed": common["seed"],
              "exclude_metadata_clauses": common["exclude_metadata"],
              "exclude_cross_references": common["exclude_cross_references"]}
    if expected is not None:
        params["expect_sha256"] = expected.lower()
        params["expect_sha256_covers"] = [release.role]
        if not opts.get("squad_json"):
            params["expect_sha256_does_not_cover"] = ["contracts", "categories"]
    if common["queries"] is not None:
        params["sample_queries"] = common["queries"]
    return build, inputs, params


def run(source: str, *, out: str, corpus_out: str | None, **opts: Any) -> CommandResult:
    """Import ``source`` with its options (the click options of ``import <source>``)."""
    if source == "cuad":
        build, inputs, params = _cuad(opts)
    elif source == "legalbench-rag":
        build = import_legalbench(opts["root"], tuple(opts["subsets"]),
                                  paper_sampling=opts["paper_sampling"],
                                  newlines=opts["newlines"])
        inputs = [input_ref("benchmark", f"{opts['root']}/benchmarks/{s}.json")
                  for s in build.header["subsets"]]
        params = {"subsets": list(opts["subsets"]), "paper_sampling": opts["paper_sampling"],
                  "newlines": opts["newlines"]}
    elif source == "ragas":
        corpus = read_corpus(opts["corpus"])
        placed = anchoring({"on_ambiguous": opts.get("on_ambiguous"),
                            "fuzzy_threshold": opts.get("fuzzy_threshold")})
        build, run_rows = import_ragas(opts["rows"], corpus,
                                       on_ambiguous=placed["on_ambiguous"],
                                       threshold=placed["threshold"])
        inputs = [input_ref("rows", opts["rows"]),
                  InputRef("corpus", opts["corpus"], corpus.sha256)]
        params = {"on_ambiguous": placed["on_ambiguous"], "threshold": placed["threshold"]}
        return build_result("import", build, out=out, corpus_out=None, inputs=inputs,
                            parameters={"source": source, **params},
                            extra={opts["run_out"]: ("run", jsonl(run_rows))})
    elif source == "chroma":
        build = import_chroma(opts["root"])
        inputs = [input_ref("questions", f"{opts['root']}/questions_df.csv")]
        params = {}
    else:
        build = import_beir(opts["root"], opts["split"])
        inputs = [input_ref("queries", f"{opts['root']}/queries.jsonl"),
                  input_ref("qrels", f"{opts['root']}/qrels/{opts['split']}.tsv")]
        params = {"split": opts["split"]}
    return build_result("import", build, out=out, corpus_out=corpus_out, inputs=inputs,
                        parameters={"source": source, **params})
