"""What a user installs from: the package metadata names the project's repository, and every
example that installs the Action names that repository (never a placeholder)."""

from __future__ import annotations

import re

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from conftest import ROOT

META = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_metadata_names_the_repository_its_license_and_its_kind():
    urls = META["urls"]
    assert {"Homepage", "Source", "Issues", "Changelog", "Documentation"} <= set(urls)
    assert all(u.startswith(urls["Source"]) for u in urls.values())
    assert META["license"] == "Apache-2.0" and {"LICENSE", "NOTICE"} <= set(META["license-files"])
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Typing :: Typed" in META["classifiers"] and META["keywords"]
    assert (ROOT / "src" / "ragspan" / "py.typed").exists()


def test_every_action_example_names_the_repository_and_says_how_to_pin_it():
    repo = META["urls"]["Source"].removeprefix("https://github.com/")
    files = [ROOT / "README.md", ROOT / "docs" / "quickstart.md",
             ROOT / "examples" / "workflows" / "ragspan-gate.yml"]
    for path in files:
        text = path.read_text(encoding="utf-8")
        refs = re.findall(r"uses: ([\w.-]+/ragspan)@", text)
        assert refs and set(refs) == {repo}, path
        assert "your-org/ragspan" not in text, path
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"git ls-remote https://github.com/{repo}" in readme.replace("\n", " ")
