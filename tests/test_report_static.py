"""PNG figures and the PDF report with Debian's headless Chromium (skipped, with the reason, where it is absent)."""

import os

import pytest

from engine.presets import DEFAULT_SCENARIO
from engine.report import StaticUnavailable, build_report, export_report, find_chromium, scenario_dicts
from engine.report.figures import FIGURE_KINDS, report_figures
from engine.scenario import load_scenario


def _chromium() -> str:
    try:
        return find_chromium()
    except StaticUnavailable as e:
        if os.environ.get("CI"):
            pytest.fail(f"{e}; CI should have installed Debian's chromium")
        pytest.skip(f"static images need Chromium: {e}")


@pytest.fixture(scope="module")
def report(store):
    from engine.analytic import Context

    return build_report([DEFAULT_SCENARIO], Context.from_store(store), seed_hash="test")


def test_png_and_pdf_are_made_when_chromium_is_present(report, tmp_path):
    from PIL import Image

    chromium = _chromium()
    result = export_report(report, html_path=tmp_path / "r.html", table_dir=tmp_path / "t", pdf_path=tmp_path / "r.pdf",
                           chromium=chromium)
    assert result.notes == ()
    pngs = sorted((tmp_path / "t" / "figures").glob("*.png"))
    assert [p.stem for p in pngs] == sorted(report_figures(report)) and len(pngs) == len(FIGURE_KINDS)
    for p in pngs:
        with Image.open(p) as img:
            assert img.format == "PNG" and img.width >= 900
            # a drawn chart, not a blank crop: more than a handful of colours
            assert len(img.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 20, p.name
    pdf = (tmp_path / "r.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-") and len(pdf) > 20_000
    assert scenario_dicts((tmp_path / "r.html").read_bytes())[0]["name"] == load_scenario(DEFAULT_SCENARIO).name


def test_missing_chromium_is_a_note_not_a_failure(report, tmp_path):
    result = export_report(report, table_dir=tmp_path / "t", pdf_path=tmp_path / "r.pdf",
                           chromium=str(tmp_path / "absent"))
    assert len(result.notes) == 2 and all("no Chromium at" in n for n in result.notes)
    assert not (tmp_path / "r.pdf").exists() and not (tmp_path / "t" / "figures").exists()
    assert (tmp_path / "t" / "designs.csv").exists()


def test_a_hung_chromium_is_stopped(report, tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(0o755)
    from engine.report.static import html_to_pdf

    with pytest.raises(StaticUnavailable, match="did not finish within 1 s"):
        html_to_pdf("<html></html>", str(fake), timeout=1)
