"""Every chart of the pages a design review opens, as Chromium draws it: a screenshot of each (under
artifacts/screenshots/charts/, to be looked at) and checks read from its SVG: no two titles or annotations overlap,
no axis title sits on a plot area, one axis's tick labels do not run into each other, and the Preprocessing
chart's design label stands at the design's input size on its log axis.
"""

from __future__ import annotations

import pytest

from tests.browserkit import SHOTS, browser, close_not_found, settle  # noqa: F401 (fixture)
from tests.browserkit import server  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser

#: url path -> buttons pressed before its charts are read (Compare draws nothing until designs are pinned)
PAGES = {"designer": (), "compare-designs": ("Load preset",), "partition-plans": (), "preprocessing-view": (),
         "rpc-path": (), "seed-papers": ()}

# One chart's text boxes (page pixels): titles (chart, axes, subplot titles and other annotations), the plot
# areas, each axis's tick labels, and the vertical lines (shapes) with the annotations beside them.
GEOMETRY = r"""chart => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0
                       && (e.textContent || '').trim() !== ''; };
  const texts = sel => [...chart.querySelectorAll(sel)].filter(shown).map(e => ({text: e.textContent, box: box(e)}));
  const axisTitles = texts('g[class^="g-x"][class$="title"] > text, g[class^="g-y"][class$="title"] > text');
  const titles = [...texts('g.g-gtitle > text'), ...axisTitles, ...texts('g.annotation g.annotation-text-g')];
  const areas = [...chart.querySelectorAll('.draglayer .nsewdrag')].map(box);
  const ticks = [];
  for (const layer of chart.querySelectorAll('g.xaxislayer-above, g.yaxislayer-above'))
    // rotated labels are left out: their axis-aligned boxes overlap where the slanted text does not
    ticks.push([...layer.querySelectorAll('text')].filter(shown)
      .filter(e => !/rotate\((?!0[,)])/.test(e.getAttribute('transform') || ''))
      .map(e => ({text: e.textContent, box: box(e)})));
  const vlines = [...chart.querySelectorAll('.shapelayer path')].map(box).filter(b => b[2] - b[0] < 3);
  return {titles, axisTitles, areas, ticks, vlines};
}"""


def _overlap(a, b, pad: float = 0.0) -> bool:
    return a[0] < b[2] - pad and b[0] < a[2] - pad and a[1] < b[3] - pad and b[1] < a[3] - pad


def _check(name: str, g: dict) -> list[str]:
    problems = []
    titles = g["titles"]
    for i, a in enumerate(titles):
        for b in titles[i + 1:]:
            if _overlap(a["box"], b["box"], pad=1):
                problems.append(f"{name}: {a['text']!r} overlaps {b['text']!r}")
    for t in g["axisTitles"]:
        for area in g["areas"]:
            if _overlap(t["box"], area, pad=1):
                problems.append(f"{name}: axis title {t['text']!r} sits on a plot area")
    for labels in g["ticks"]:
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                if _overlap(a["box"], b["box"], pad=-1):  # touching counts: a crammed axis reads as one string
                    problems.append(f"{name}: tick labels {a['text']!r} and {b['text']!r} collide")
    return problems


def _open(browser, server, path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/{path}", wait_until="domcontentloaded")
    close_not_found(page)
    page.locator("[data-testid=stMain] h1").first.wait_for(state="visible", timeout=180_000)
    for button in PAGES[path]:
        target = page.get_by_role("button", name=button, exact=True)
        target.wait_for(state="visible", timeout=180_000)
        settle(page, 180_000)  # the first run has ended, so the click starts a run of its own
        close_not_found(page)  # the first deep link's dialog, if it came after the page (it makes the page inert)
        target.click()  # its result is the charts waited for below (a first deep link may reconnect the
        # websocket, so the run's end is read from the page rather than from one socket as act() does)
    page.locator(".js-plotly-plot svg.main-svg").first.wait_for(state="visible", timeout=180_000)
    settle(page, 180_000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=stSkeleton], [data-stale=true]')"
        " && [...document.querySelectorAll('.js-plotly-plot')].every(c => c.querySelector('svg.main-svg'))",
        timeout=120_000)
    return page


@pytest.mark.parametrize("path", list(PAGES))
def test_every_chart_reads_without_collisions(server, browser, path):
    page = _open(browser, server, path)
    out = SHOTS / "charts"
    out.mkdir(parents=True, exist_ok=True)
    charts = page.locator(".js-plotly-plot")
    assert charts.count() > 0, f"{path}: no chart"
    problems = []
    for i in range(charts.count()):
        chart = charts.nth(i)
        chart.scroll_into_view_if_needed()
        chart.screenshot(path=str(out / f"{path}-{i}.png"))
        geometry = chart.evaluate(GEOMETRY)
        assert geometry["areas"], f"{path} chart {i}: no plot area drawn"
        problems += _check(f"{path} chart {i}", geometry)
        if path == "preprocessing-view":
            label = next((t for t in geometry["titles"] if t["text"].startswith("design:")), None)
            if label is not None:  # the design's input size: its label starts at its dotted line
                lines = [v for v in geometry["vlines"] if abs(v[0] - label["box"][0]) < 12]
                assert lines, f"{path} chart {i}: {label['text']!r} is not beside its line ({geometry['vlines']})"
    page.close()
    assert not problems, "\n".join(problems)
