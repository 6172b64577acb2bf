"""The HTML report in a real headless Chromium (Debian's ``chromium``, installed by
``make test``): it loads offline without a console error, its tables and plots render, it
fits the window, and the screenshot is not blank."""

from __future__ import annotations

import io
import shutil

import pytest

import report_fixture as fx
from conftest import run_cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (make install-browser installs Debian's package)",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (the dev extra has it)")
Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed")

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    made = fx.build(root)
    out = {}
    for audience in ("developer", "client"):
        path = root / f"{audience}.html"
        res = run_cli("report", *(made[n] for n in "ABCD"), "--baseline", "A", "--out", path,
                      "--audience", audience, "--corpus", made["corpus"], "--format", "json")
        assert res.exit_code == 0, res.stderr
        out[audience] = path
    return out


def load(path, shot):
    """Open ``path`` with the network cut off; returns (console errors, requests made,
    DOM facts) and writes a full-page screenshot to ``shot``."""
    errors, requests = [], []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(path.as_uri(), wait_until="load")
            facts = page.evaluate("""() => ({
                tables: document.querySelectorAll('table').length,
                rows: Array.from(document.querySelectorAll('table')).map(t => t.rows.length),
                svgs: Array.from(document.querySelectorAll('svg')).map(s => {
                    const b = s.getBoundingClientRect(); return [b.width, b.height,
                    s.querySelectorAll('circle, rect').length]; }),
                h2: Array.from(document.querySelectorAll('h2')).map(h => h.textContent),
                overflow: document.documentElement.scrollWidth - window.innerWidth,
                cells: Array.from(document.querySelectorAll('td')).map(td => td.textContent),
            })""")
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    return errors, requests, facts


def not_blank(shot) -> float:
    """The share of pixels that are not the background."""
    img = Image.open(io.BytesIO(shot.read_bytes())).convert("L")
    hist = img.histogram()
    return 1 - max(hist) / sum(hist)


def test_the_developer_report_renders_in_chromium(pages, tmp_path):
    errors, requests, facts = load(pages["developer"], tmp_path / "dev.png")
    assert errors == []
    assert requests == [pages["developer"].as_uri()]  # nothing fetched but the file itself
    assert facts["tables"] >= 7 and min(facts["rows"]) >= 2
    assert len(facts["svgs"]) == 2
    for width, height, marks in facts["svgs"]:
        assert width > 300 and height > 50 and marks >= 3
    assert facts["h2"][:2] == ["Configurations", "Against the baseline (A)"]
    assert facts["overflow"] <= 0  # wide tables scroll inside their box, not the page
    assert "0.500 [" in " ".join(facts["cells"])  # A's complete grounding@5 and its interval
    assert not_blank(tmp_path / "dev.png") > 0.02


def test_the_client_readout_renders_in_chromium(pages, tmp_path):
    errors, requests, facts = load(pages["client"], tmp_path / "client.png")
    assert errors == [] and requests == [pages["client"].as_uri()]
    assert facts["h2"] == ["Where retrieval stands today", "Top failure patterns",
                           "Fix backlog", "Scope: what was and was not measured"]
    assert facts["tables"] == 1 and facts["overflow"] <= 0
    assert not_blank(tmp_path / "client.png") > 0.02
