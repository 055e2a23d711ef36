"""Real user paths in a real browser (issue 17): every Simulate/Search/Run button pressed twice and once more in a
second session (a second browser context), Compare after pin -> preset with every control, and the README
walkthrough ("Answer a question in a few minutes") with its claims read from the page. Requests are kept small so
the suite fits a busy machine; every wait is on the app's state (browserkit.act), never on time."""

from __future__ import annotations

import re

import pytest

from tests.browserkit import (act, browser, close_not_found, metric, no_exception, pick, server,  # noqa: F401
                              settle, track_runs)
from tests.conftest import ROOT

pytestmark = pytest.mark.browser
VIEW = {"width": 1400, "height": 1200}
LONG = 180_000  # ms: a busy 2-core machine runs several suites at once


# --------------------------------------------------------------------------- what a person does

def open_app(browser, server):
    """A new browser context (its own Streamlit session) on the Design page, ready."""
    context = browser.new_context(viewport=VIEW)
    page = context.new_page()
    track_runs(page)
    page.goto(server, wait_until="domcontentloaded")
    page.get_by_text("SLA-bounded throughput").first.wait_for(state="visible", timeout=LONG)
    settle(page, LONG)
    close_not_found(page)
    return page


def go_to(page, title: str) -> None:
    act(page, lambda: page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click())
    page.get_by_role("heading", name=title).first.wait_for(state="visible", timeout=LONG)


def choose(page, label: str, option: str) -> None:
    # pick() reopens the list when a rerun swallows the click (CI lost the DPU choice under load)
    act(page, lambda: pick(page, page.get_by_role("combobox", name=label), option))


def press(page, name: str) -> None:
    act(page, lambda: page.get_by_role("button", name=name, exact=True).click())
    no_exception(page)


def fill(page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    act(page, lambda: box.press("Enter"))


def expand(page, title: str) -> None:
    page.get_by_text(title, exact=True).click()


def shown(page, text: str) -> None:
    page.get_by_text(text).first.wait_for(state="visible", timeout=LONG)


def number(text: str) -> float:
    return float(re.sub(r"[^0-9.]", "", text.split()[0]))


def table_text(page, index: int) -> str:
    return page.locator('[data-testid="stTable"]').nth(index).inner_text()


# --------------------------------------------------------------------------- buttons twice, then a second session

def _design(page) -> None:
    fill(page, "Requests per simulated point", "2000")


def _design_result(page) -> None:
    shown(page, "Diamonds: simulated (2,000 requests per point")


def _compare(page) -> None:
    go_to(page, "Compare")
    press(page, "Load preset")
    fill(page, "Requests per simulated probe", "2000")


def _compare_result(page) -> None:
    shown(page, "SLA-bounded throughput, simulated (req/s)")


def _partitioning(page) -> None:
    go_to(page, "Partitioning")
    fill(page, "GPUs", "1")
    expand(page, "Tail percentile, random seed, simulation")
    fill(page, "Requests per simulated probe", "2000")


def _partitioning_result(page) -> None:
    page.locator(".js-plotly-plot").filter(has_text="ELSA (simulated)").first.wait_for(state="visible", timeout=LONG)


def _search(page) -> None:
    go_to(page, "Search")
    fill(page, "Designs the simulator checks", "1")


def _search_result(page) -> None:
    shown(page, "Simulator check of the top designs")
    assert metric(page, "Designs evaluated") == "3"  # the current layout x the three deployable preprocessing devices


BUTTONS = [(_design, "Simulate points on the curve", _design_result),
           (_compare, "Simulate latency-bounded throughput", _compare_result),
           (_partitioning, "Simulate FIFS and ELSA (GPU(max), random, PARIS)", _partitioning_result),
           (_search, "Run the search", _search_result)]


@pytest.mark.parametrize("setup,button,result", BUTTONS, ids=["design", "compare", "partitioning", "search"])
def test_each_run_button_twice_then_in_a_second_session(server, browser, setup, button, result):
    for session in range(2):
        page = open_app(browser, server)
        setup(page)
        for _ in range(2 if session == 0 else 1):  # the second session asks the same question once
            press(page, button)
            result(page)
            no_exception(page)
        page.context.close()


# --------------------------------------------------------------------------- Compare: pin, then a preset

def test_compare_after_pin_then_preset_every_control(server, browser):
    page = open_app(browser, server)
    fill(page, "Design name", "my own design")
    press(page, "Pin for Compare")
    go_to(page, "Compare")
    assert "my own design" in table_text(page, 1)
    press(page, "Load preset")  # replaces the pins: the baseline box still holds the old name in the browser
    results = table_text(page, 1)
    assert "my own design" not in results and "CPU preprocessing" in results
    press(page, "Pin current design")
    assert "my own design" in table_text(page, 1)
    choose(page, "Baseline", "my own design")
    assert re.search(r"\(baseline\)", table_text(page, 1))
    assert "against the baseline, 'my own design'" in page.inner_text("body")
    choose(page, "Remove a design", "my own design")  # the baseline goes: the first design takes over
    assert "my own design" not in table_text(page, 1)
    no_exception(page)
    fill(page, "Requests per simulated probe", "2000")
    press(page, "Simulate latency-bounded throughput")
    _compare_result(page)
    press(page, "Load preset")
    press(page, "Clear")
    shown(page, "No designs pinned yet")
    no_exception(page)
    page.context.close()


# --------------------------------------------------------------------------- the README walkthrough

def readme_step(number: int) -> str:
    """Step `number` of the README's "Answer a question in a few minutes", on one line."""
    text = (ROOT / "README.md").read_text()
    steps = text.split("## Answer a question in a few minutes")[1].split("\n## ")[0]
    step = re.search(rf"^{number}\. (.*?)(?=^\d\. |\Z)", steps, re.S | re.M).group(1)
    return " ".join(step.split())


def headline(page) -> str:
    """The Design page's verdict (an alert naming the SLA)."""
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="SLA").first
    return " ".join(alert.inner_text().split())


def test_readme_walkthrough(server, browser):
    """README, "Answer a question in a few minutes", steps 1-5: each claim read from the page, and each number the
    README gives checked against the page's."""
    page = open_app(browser, server)
    # 1. the Design page opens on the question: the SLA missed at every load on a latency floor, not saturation
    step = readme_step(1)
    assert metric(page, "Bottleneck") == "host_cpu" and "capacity bottleneck" in step
    assert number(metric(page, "SLA-bounded throughput")) == 0 and "SLA-bounded throughput 0" in step
    said = headline(page)
    assert said.startswith("Misses the p99 15 ms SLA at 3,000 req/s") and "A latency floor, not saturation" in said
    floor = re.search(r"the p99 is ([\d.]+) ms even at ([\d,]+) req/s \(host_cpu ([\d.]+) ms", said)
    assert float(floor[1]) > 15 and float(floor[3]) > float(floor[1]) / 2  # the host CPU's path is most of it
    busy = re.search(r"host_cpu, is (\d+)% busy \(capacity ([\d,]+) req/s\)", said)
    assert int(busy[1]) < 80  # far from saturated
    cpu_capacity = number(metric(page, "Capacity"))
    assert f"{cpu_capacity:,.0f}" == busy[2]
    for claim in (f"({floor[2]} req/s) the p99 is {floor[1]} ms", f"{floor[3]} ms of it on the host CPU",
                  f"({busy[2]} req/s), is only {busy[1]} %"):
        assert claim in step, claim
    chart = " ".join(page.locator(".js-plotly-plot").filter(has_text="cores free for serving").first.inner_text().split())
    cores = re.search(r"total ([\d.]+)\)", chart)[1]
    bars = [float(x) for x in re.findall(r"([\d.]+) cores(?! free)", chart)]  # one labelled bar per consumer
    assert "30 cores free for serving" in chart and "preprocessing" in chart and len(bars) >= 2, chart
    assert (f"preprocessing takes {max(bars):.2f} of the {cores} cores the pool uses at 3,000 req/s, with 30 free "
            "for serving") in step  # the largest bar
    # 2. preprocessing on the DPU: the SLA is met, and the DPU itself saturates first (8 compute units; the GPU
    #    from 9 units)
    step = readme_step(2)
    expand(page, "Host, preprocessing and RPC path")
    choose(page, "Preprocessing device", "dpu")
    assert metric(page, "Bottleneck") == "preprocess:dpu" and "`preprocess:dpu`, 8 compute units by default" in step
    said = headline(page)
    assert said.startswith("Meets the p99 15 ms SLA at 3,000 req/s") and "Saturation" in said
    held = re.search(r"holds up to ([\d,]+) req/s \((\d+)% of the capacity\), where queueing at preprocess:dpu "
                     r"\(capacity ([\d,]+) req/s\)", said)
    dpu_capacity = number(metric(page, "Capacity"))
    assert f"{dpu_capacity:,.0f}" == held[3] and dpu_capacity > 2 * cpu_capacity
    assert (f"holds up to {held[1]} req/s, {held[2]} % of a capacity of {held[3]} req/s, "
            f"{dpu_capacity / cpu_capacity:.1f} times the CPU design's") in step
    fill(page, "DPU compute units", "9")
    assert metric(page, "Bottleneck") == "gpu" and "With 9 or more units the bottleneck moves on to the GPU" in step
    fill(page, "DPU compute units", "8")
    assert metric(page, "Bottleneck") == "preprocess:dpu"
    press(page, "Pin for Compare")
    # another layout from the list, filtered by typing as a person would
    act(page, lambda: pick(page, page.get_by_role("combobox", name="MIG layout", exact=False).first,
                           "4g.40gb@0 + 3g.40gb@4", typed="4g.40gb@0 + 3g.40gb@4"))
    fill(page, "Design name", "4g + 3g with a DPU")
    press(page, "Pin for Compare")
    # 3. Compare: the pinned designs side by side with deltas; the PREBA preset; Simulate confirms the tails
    step = readme_step(3)
    go_to(page, "Compare")
    results = table_text(page, 1)
    assert "4g + 3g with a DPU" in results and "(baseline)" in results and "%" in results
    assert page.locator(".js-plotly-plot").count() >= 2  # overlaid curves and the grouped bars
    press(page, "Load preset")
    results = table_text(page, 1)
    assert "CPU preprocessing" in results and "DPU preprocessing" in results and "ideal" in results
    assert "(CPU vs DPU vs no preprocessing)" in step
    fill(page, "Requests per simulated probe", "2000")
    press(page, "Simulate latency-bounded throughput")
    _compare_result(page)
    # 4. Search over every maximal MIG layout and the three deployable preprocessing devices: the DPU wins, and no
    #    preprocessing is a reference beside it, not a candidate
    step = readme_step(4)
    go_to(page, "Search")
    act(page, lambda: page.get_by_text("every maximal MIG layout", exact=True).click())
    assert "the three preprocessing devices a server can have, CPU, DPU and GPU decode" in step
    devices = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Preprocessing devices").inner_text()
    assert all(d in devices for d in ("cpu", "dpu", "gpu")) and "none" not in devices
    fill(page, "Designs the simulator checks", "1")
    press(page, "Run the search")
    shown(page, "Simulator check of the top designs")
    assert number(metric(page, "Best SLA-bounded throughput")) > 0 and number(metric(page, "Best queries per USD")) > 0
    assert page.locator(".js-plotly-plot").count() >= 2  # the two Pareto fronts
    shown(page, "Reference, not a candidate: with no preprocessing at all")
    assert "its dpu preprocessing reaches" in page.inner_text("body") and "the best design preprocesses on the DPU" in step
    # 5. Partitioning opens on the seed's case, simulated, and names the winner; Report exports it
    step = readme_step(5)
    go_to(page, "Partitioning")
    shown(page, "PARIS partition")
    page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=LONG)
    shown(page, "PARIS wins")
    said = " ".join(page.locator('[data-testid="stAlert"]').filter(has_text="PARIS wins").first.inner_text().split())
    won = re.search(r"PARIS \+ ELSA carries ([\d,]+) req/s within the SLA, ([\d.]+)x the best baseline "
                    r"\(GPU\(max\) \+ FIFS, ([\d,]+) req/s\)", said)
    assert won, said
    assert (f"carries {won[1]} req/s within the SLA with ELSA, {won[2]}x the best baseline (GPU(max) + FIFS, "
            f"{won[3]} req/s)") in step
    assert "four A100s, every design given the same 24 GPCs" in step
    go_to(page, "Report")
    page.get_by_role("button", name=re.compile("Download", re.I)).first.wait_for(state="visible", timeout=LONG)
    no_exception(page)
    page.context.close()


# --------------------------------------------------------------------------- a crafted link's name is text

NAME = "![x](http://example.invalid/a.png) <img src=x>"


@pytest.mark.parametrize("path,param", [("design-search", "s"), ("compare-designs", "c"), ("cost-model", "s")])
def test_a_crafted_name_fetches_nothing_and_reads_as_typed(server, browser, path, param):
    from engine.presets import DEFAULT_SCENARIO
    from engine.scenario import load_scenario
    from engine.io.urlstate import encode, encode_many

    scenario = load_scenario({**DEFAULT_SCENARIO, "name": NAME})
    token = encode_many([scenario]) if param == "c" else encode(scenario)
    context = browser.new_context(viewport=VIEW)
    page = context.new_page()
    fetched = []
    page.on("request", lambda request: fetched.append(request.url) if "example.invalid" in request.url else None)
    page.goto(f"{server}/{path}?{param}={token}", wait_until="domcontentloaded")
    close_not_found(page)
    shown(page, NAME)  # the name, exactly as typed
    settle(page, LONG)
    sources = page.locator("img").evaluate_all("images => images.map(i => i.getAttribute('src') || '')")
    external = [s for s in sources if not (s.startswith(("data:", "/", server)) or s.startswith("./"))]
    assert not external and not fetched, (external, fetched)
    no_exception(page)
    context.close()
