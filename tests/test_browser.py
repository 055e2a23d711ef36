"""A real browser (Playwright driving Debian's chromium) against `streamlit run app.py`.

Skipped locally when /usr/bin/chromium is missing; in CI (CI=true) a missing
browser is a failure, because .ci/run installs it.
"""

from __future__ import annotations

import pytest

from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from tests.browserkit import (SHOTS, act, browser, close_not_found, metric, no_exception, pick,  # noqa: F401 (fixtures)
                              server, settle, track_runs)

DEFAULT_NAME = load_scenario(DEFAULT_SCENARIO).name  # derived from the design (it has no name)

pytestmark = pytest.mark.browser


def profiles_tab(server, browser, tab: str):
    """A new page on the Profiles page with `tab` open, once the app has finished its run."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    track_runs(page)  # so a test can wait for the run an action starts (act)
    page.goto(f"{server}/profile-store", wait_until="domcontentloaded")
    page.get_by_role("tab", name=tab).wait_for(state="visible", timeout=60_000)
    settle(page)
    close_not_found(page)  # a first deep link into the server shows Streamlit's dialog over the page
    page.get_by_role("tab", name=tab).click()
    return page


def test_profiles_page_in_browser(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/profile-store", wait_until="domcontentloaded")
    chart = page.locator(".js-plotly-plot").first
    chart.wait_for(state="visible", timeout=60_000)
    page.locator('[data-testid="stDataFrame"]:visible').first.wait_for(state="visible", timeout=30_000)
    assert page.get_by_text("Latency profiles").first.is_visible()
    assert "latency (ms)" in chart.inner_text() and "batch size" in chart.inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "profiles.png"), full_page=True)
    assert page.get_by_text("Profile database").first.is_visible()
    no_exception(page)
    page.close()


def test_import_panel_uploads_in_browser(server, browser, tmp_path):
    """A person uploads a perf_analyzer CSV on the Import tab and sees what was added; a bad file is explained."""
    good = tmp_path / "perf.csv"
    good.write_text(
        "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,"
        "Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency\n"
        "1,400.0,50,300,20,40,1900,30,10,2400,2500,2550,2700\n")
    bad = tmp_path / "bad.csv"
    bad.write_text(good.read_text().replace("1900", "fast"))
    page = profiles_tab(server, browser, "Import and export")
    page.get_by_text("Triton perf_analyzer CSV").click()
    page.get_by_label("Model name", exact=True).fill("browser-model")
    page.get_by_label("Model name", exact=True).press("Enter")
    panel = page.locator('[role="tabpanel"]', has_text="Import measurements")
    for path, expect in ((bad, "'fast' is not a number"), (good, "Added 1 load_points, 1 latency_points")):
        # the upload reruns the script: a click that lands before that run ends is lost on a busy machine (the
        # page then shows the file and no answer), so each action waits for the run it starts
        act(page, lambda: panel.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(path)))
        page.get_by_text(path.name).first.wait_for(state="visible", timeout=30_000)
        act(page, lambda: page.get_by_role("button", name="Import", exact=True).click())
        try:
            page.get_by_text(expect).first.wait_for(state="visible", timeout=30_000)
        except Exception:
            page.screenshot(path=str(SHOTS / "import-failure.png"), full_page=True)
            raise
    no_exception(page)
    page.screenshot(path=str(SHOTS / "profiles-import.png"), full_page=True)
    page.close()


def test_onnx_upload_is_estimated_in_browser(server, browser, tmp_path):
    """A person uploads a small ONNX model on the Estimator tab and sees its estimate on every GPU; a file that is
    not ONNX is named, never echoed."""
    from tests.test_onnx_costs import classifier

    good, bad = tmp_path / "tiny.onnx", tmp_path / "bad.onnx"
    good.write_bytes(classifier())
    bad.write_bytes(b"SECRET-CONTENT not a model")
    page = profiles_tab(server, browser, "Estimator")
    panel = page.locator('[role="tabpanel"]', has_text="Estimate your own model")
    panel.get_by_text("Leave-one-out error").first.wait_for(state="visible", timeout=120_000)
    for path, expect in ((bad, "does not parse"), (good, "operators read. Estimated on")):
        panel.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(path))
        try:
            panel.get_by_text(expect).first.wait_for(state="visible", timeout=120_000)
        except Exception:
            page.screenshot(path=str(SHOTS / "onnx-failure.png"), full_page=True)
            raise
        assert "SECRET-CONTENT" not in page.content()
    no_exception(page)
    page.screenshot(path=str(SHOTS / "profiles-onnx.png"), full_page=True)
    page.close()


def test_design_page_in_browser(server, browser):
    """The landing page answers the default question; changing the preprocessing device changes the headline."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(server, wait_until="domcontentloaded")
    page.get_by_text("SLA-bounded throughput").first.wait_for(state="visible", timeout=120_000)
    page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=30_000)
    before = (metric(page, "Capacity"), metric(page, "Bottleneck"))
    assert before[1] == "host_cpu"
    settle(page)
    # another MIG layout: the headline follows
    layout = page.get_by_role("combobox", name="MIG layout", exact=False).first
    pick(page, layout, "4g.40gb@0 + 3g.40gb@4", typed="4g.40gb@0 + 3g.40gb@4")  # 239 layouts: filter as a person would
    page.wait_for_function(
        "c => [...document.querySelectorAll('[data-testid=stMetric]')].some(m => m.innerText.includes('Capacity')"
        " && !m.innerText.includes(c))", arg=before[0], timeout=90_000)
    settle(page)
    before = (metric(page, "Capacity"), metric(page, "Bottleneck"))
    page.get_by_text("Host, preprocessing and RPC path").click()
    box = page.get_by_role("combobox", name="Preprocessing device")
    box.wait_for(state="visible", timeout=30_000)
    pick(page, box, "dpu")
    page.wait_for_function(
        "b => [...document.querySelectorAll('[data-testid=stMetric]')].some(m => m.innerText.includes('Bottleneck')"
        " && !m.innerText.includes(b))", arg=before[1], timeout=90_000)
    after = (metric(page, "Capacity"), metric(page, "Bottleneck"))
    assert after != before and "s=" in page.url  # the scenario lives in the URL
    no_exception(page)
    page.screenshot(path=str(SHOTS / "design.png"), full_page=True)
    page.close()


def test_compare_page_in_browser(server, browser):
    """Pin two designs on the Design page and see both, side by side, on Compare. Every action waits for the
    server's word that its rerun finished (a click followed at once by a status check could look before the rerun
    began, and on a loaded machine the next click then hit the page mid-run)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    track_runs(page)
    page.goto(server, wait_until="domcontentloaded")
    page.get_by_text("SLA-bounded throughput").first.wait_for(state="visible", timeout=120_000)
    settle(page, 120_000)
    act(page, lambda: page.get_by_role("button", name="Pin for Compare").click())
    name = page.get_by_role("textbox", name="Design name")
    name.fill("second design")
    act(page, lambda: name.press("Enter"))
    act(page, lambda: page.get_by_role("button", name="Pin for Compare").click())
    act(page, lambda: page.locator('[data-testid="stSidebarNav"]').get_by_text("Compare", exact=True).click())
    table = page.locator('[data-testid="stTable"]').nth(1)
    table.wait_for(state="visible", timeout=90_000)
    text = table.inner_text()
    assert DEFAULT_NAME in text and "second design" in text and "(baseline)" in text
    page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=30_000)
    assert "c=" in page.url
    no_exception(page)
    page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)
    page.close()


# (url path, heading, text the page must show, a button to press first)
PAGES = [("design-search", "Search", "Pareto front", "Run the search"),
         ("partition-plans", "Partitioning", "latency-bounded throughput", None),
         ("preprocessing-view", "Preprocessing", None, None), ("rpc-path", "RPC", None, None),
         ("tenants", "Tenancy", "GPU%", None), ("cost-model", "Cost", None, None), ("reports", "Report", None, None)]


@pytest.mark.parametrize("path,title,axis,press", PAGES, ids=[p[0] for p in PAGES])
def test_each_page_shows_its_main_chart(server, browser, path, title, axis, press):
    """Every page loads in a real browser, draws its first chart with axis titles, and raises nothing."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/{path}", wait_until="domcontentloaded")
    page.get_by_role("heading", name=title).first.wait_for(state="visible", timeout=120_000)
    if press:
        settle(page, 180_000)
        close_not_found(page)
        page.get_by_role("button", name=press).click()
    chart = page.locator(".js-plotly-plot").first
    chart.wait_for(state="visible", timeout=120_000)
    settle(page, 180_000)
    text = chart.inner_text()
    assert text.strip(), "the chart drew no text (no axis titles or legend)"
    if axis:
        assert axis in page.inner_text("body")
    no_exception(page)
    page.screenshot(path=str(SHOTS / f"{path}.png"), full_page=True)
    page.close()
