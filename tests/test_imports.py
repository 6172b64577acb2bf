"""The core stays light: importing the CLI pulls no heavy module, and --help is fast."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "transformers", "sentence_transformers", "qdrant_client", "scipy", "pyarrow",
         "pandas", "jsonschema")


def test_import_cli_pulls_no_heavy_module():
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import ragspan.cli"],
                         capture_output=True, text=True, check=True).stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in out.splitlines()
                if "|" in line}
    assert not imported & set(HEAVY), imported & set(HEAVY)


def test_every_subcommand_help_pulls_no_heavy_module():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from ragspan.cli import cli\n"
        "for name in cli.commands:\n"
        "    r = CliRunner().invoke(cli, [name, '--help'])\n"
        "    assert r.exit_code == 0, (name, r.output)\n"
        f"bad = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_version():
    from conftest import run_cli
    from ragspan import __version__

    res = run_cli("--version")
    assert res.exit_code == 0 and __version__ in res.stdout


def test_import_cli_pulls_no_numpy():
    """``main`` checks ``SOURCE_DATE_EPOCH`` before numpy is imported: the CLI loads a
    command's modules only when that command runs."""
    out = subprocess.run([sys.executable, "-c", "import sys, ragspan.cli; "
                          "print('numpy' in sys.modules)"], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
