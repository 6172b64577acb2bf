"""Rewrite the golden outputs from the current code: ``python tests/golden/make_golden.py``.

Only run this when a change of output is intended, and say why in the commit."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))

from golden.cases import CASES, EPOCH, prepare, run_case  # noqa: E402


def main() -> None:
    os.environ["SOURCE_DATE_EPOCH"] = EPOCH
    os.environ["RAGSPAN_NO_PROVENANCE"] = "1"  # the scratch folder may sit in a repository
    shared = str(ROOT.parent / "shared" / "data")
    files = HERE / "files"
    shutil.rmtree(files, ignore_errors=True)
    files.mkdir()
    digests: dict[str, dict[str, str]] = {}
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        prepare(scratch, str(ROOT), shared)
        os.chdir(scratch)
        try:
            for case in CASES:
                if case.needs and importlib.util.find_spec(case.needs) is None:
                    sys.exit(f"{case.name} needs {case.needs}: install it first")
                got = run_case(case)
                if case.shared:
                    digests[case.name] = {k: hashlib.sha256(v).hexdigest()
                                          for k, v in sorted(got.items())}
                else:
                    for key, value in got.items():
                        (files / f"{case.name}--{key}").write_bytes(value)
                print(f"{case.name}: exit {got['exit_code'].decode()}")
        finally:
            os.chdir(cwd)
    (HERE / "digests.json").write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n",
                                       encoding="utf-8")


if __name__ == "__main__":
    main()
