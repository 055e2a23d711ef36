"""The Report page under AppTest: preview and downloads, saved scenarios, importing a report back."""

import uuid

import pytest
from streamlit.testing.v1 import AppTest

from engine.presets import DEFAULT_SCENARIO
from engine.report import StaticUnavailable, build_report, find_chromium, render_html
from engine.store import seed_hash
from tests.conftest import ROOT

APP = str(ROOT / "app.py")
OTHER = {**DEFAULT_SCENARIO, "name": "EfficientNet whole GPU", "model": "efficientnet-b0",
         "gpu": {"sku": "A100-SXM4-80GB"}, "preprocessing": {"device": "none"}}


@pytest.fixture
def page():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(str(ROOT / "pages" / "report.py")).run()
    assert not at.exception, at.exception
    return at


def _labels(at) -> list[str]:
    return [b.label for b in at.get("download_button")]


# a table by a column only it has (AppTest does not expose a read-only dataframe's key)
_MARK = {"rep_designs": "capacity_rps", "rep_provenance": "profile_kind", "rep_saved_table": "saved (UTC)",
         "rep_import_table": "hardware"}


def _frame(at, key):
    if key == "rep_import_table":
        return next(df.value for df in at.dataframe if list(df.value.columns) == ["name", "model", "hardware"])
    return next(df.value for df in at.dataframe if _MARK[key] in df.value.columns)


def _has(at, key) -> bool:
    try:
        _frame(at, key)
        return True
    except StopIteration:
        return False


def test_defaults_preview_the_current_design_with_downloads(page, store):
    assert page.title[0].value == "Report"
    assert page.multiselect(key="rep_pick").value == ["current"]
    assert {"HTML report", "Tables (CSV, zip)", "Tables (Parquet, zip)", "Scenarios (JSON)"} <= set(_labels(page))
    assert len(page.get("plotly_chart")) == 3  # latency vs load, breakdown, utilisation
    designs = _frame(page, "rep_designs")
    from engine.analytic import Context, evaluate

    ev = evaluate(DEFAULT_SCENARIO, Context.from_store(store))
    assert designs["capacity_rps"].tolist() == [ev.capacity_rps]  # the engine's number, not the page's
    prov = _frame(page, "rep_provenance")
    # issue 12: the 1g curves extend past the slice law's support (saturated reference): the curve says so
    assert set(prov["profile_kind"]) <= {"derived", "derived-extrapolated"} and prov["source"].str.len().min() > 10


def test_static_formats_follow_chromium(page):
    try:
        find_chromium()
    except StaticUnavailable:
        assert any("PNG figures and the PDF are skipped here" in i.value for i in page.info)
        return
    page.button(key="rep_static").click().run()
    assert not page.exception and not page.warning
    assert {"Figures (PNG, zip)", "Report (PDF)"} <= set(_labels(page))


def test_save_list_pick_rename_delete(page):
    name = f"page save {uuid.uuid4().hex[:6]}"
    page.text_input(key="rep_save_name").set_value(name)
    page.text_input(key="rep_save_author").set_value("ana")
    page.button(key="rep_save").click().run()
    assert not page.exception and any(name in s.value for s in page.success)
    assert name in _frame(page, "rep_saved_table")["name"].tolist()
    page.button(key="rep_save").click().run()  # the same name again is refused, with a message
    assert any("already saved" in e.value for e in page.error)
    page.multiselect(key="rep_pick").set_value(["current", f"saved:{name}"]).run()
    assert not page.exception and len(page.get("plotly_chart")) == 6
    page.selectbox(key="rep_saved_pick").set_value(name).run()
    page.text_input(key="rep_rename_to").set_value(name + " b").run()
    page.button(key="rep_rename").click().run()
    assert not page.exception and name + " b" in _frame(page, "rep_saved_table")["name"].tolist()
    assert page.multiselect(key="rep_pick").value == ["current"]  # the old name went away
    page.selectbox(key="rep_saved_pick").set_value(name + " b").run()
    page.button(key="rep_delete").click().run()
    assert not page.exception
    names = _frame(page, "rep_saved_table")["name"].tolist() if _has(page, "rep_saved_table") else []
    assert name + " b" not in names


@pytest.mark.parametrize("bad", ["a/b", " x", "y" * 81])
def test_bad_names_are_explained(page, bad):
    page.text_input(key="rep_save_name").set_value(bad)
    page.button(key="rep_save").click().run()
    assert not page.exception
    assert any(f"name: {bad!r} is not a valid scenario name" in e.value for e in page.error)


@pytest.fixture(scope="module")
def report_html(store):
    from engine.analytic import Context

    return render_html(build_report([OTHER], Context.from_store(store), seed_hash=seed_hash(store.seed_dir))).encode()


def test_import_restores_the_scenarios_as_pins(page, report_html):
    page.file_uploader(key="rep_import").set_value(("review.html", report_html, "text/html")).run()
    assert not page.exception
    assert _frame(page, "rep_import_table")["name"].tolist() == ["EfficientNet whole GPU"]
    page.button(key="rep_restore").click().run()
    assert not page.exception and any("Restored 1 scenario" in s.value for s in page.success)
    assert "Pinned: EfficientNet whole GPU" in page.multiselect(key="rep_pick").options  # shown formatted
    page.multiselect(key="rep_pick").set_value(["pin:EfficientNet whole GPU"]).run()
    assert not page.exception
    assert _frame(page, "rep_designs")["model"].tolist() == ["efficientnet-b0"]


def test_import_opens_in_design(page, report_html):
    page.file_uploader(key="rep_import").set_value(("review.html", report_html, "text/html")).run()
    page.button(key="rep_import_open").click().run()
    assert not page.exception
    assert page.selectbox(key="d_model").value == "efficientnet-b0" and page.selectbox(key="d_pre").value == "none"


def test_a_file_without_scenarios_is_explained(page):
    page.file_uploader(key="rep_import").set_value(("x.html", b"<html>hello</html>", "text/html")).run()
    assert not page.exception
    assert any("no embedded Kneepoint scenarios" in e.value for e in page.error)


def test_the_seed_papers_section_is_added_on_request(page):
    assert not any("mechanism / reason" in df.value.columns for df in page.dataframe)
    page.checkbox(key="rep_papers").check().run()
    assert not page.exception, page.exception
    assert len(page.get("plotly_chart")) == 4  # the design's three and the papers' chart
    papers = next(df.value for df in page.dataframe if "mechanism / reason" in df.value.columns)
    from engine.reproduce.registry import entries

    assert list(papers["id"]) == [e.id for e in entries()]
    assert page.checkbox(key="rep_papers_slow").value is False
