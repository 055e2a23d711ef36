"""The Preprocessing page under AppTest: defaults, widgets, invalid input, URL state, reset."""

import pytest

from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.io.urlstate import decode, encode
from tests.pagetest import metrics, query_token
from tests.pagetest import open_page as _open


def open_page(token=None):
    return _open("preprocessing.py", {"s": token} if token else None)


token = query_token


@pytest.fixture
def page():
    return open_page()


def test_defaults_render(page):
    m = metrics(page)
    assert m["Without preprocessing"].endswith("req/s") and m["With CPU preprocessing"].endswith("req/s")
    assert m["Cores to feed all partitions"].endswith("cores")
    assert len(page.get("plotly_chart")) == 5  # scaling, cores, DPU, GPU decode, costs
    assert not page.error
    assert any("CPU saturates" in c.value for c in page.caption)  # PREBA: 7 x 1g starves the host
    assert decode(token(page))["model"] == "resnet50"


def test_each_widget_reruns(page):
    before = metrics(page)
    page.number_input(key="pp_cores").set_value(128).run()
    assert not page.exception and metrics(page)["With CPU preprocessing"] != before["With CPU preprocessing"]
    page.number_input(key="pp_units").set_value(16).run()
    assert not page.exception
    page.number_input(key="pp_pre_cores").set_value(8).run()
    assert not page.exception
    page.number_input(key="pp_mp").set_value(1.0).run()
    assert not page.exception
    options = page.selectbox(key="pp_layout").options
    page.selectbox(key="pp_layout").set_value(next(o for o in options if o.startswith("3g"))).run()
    assert not page.exception and decode(token(page))["gpu"]["layout"][0].startswith("3g")
    page.selectbox(key="pp_model").set_value("jasper").run()
    assert not page.exception and not page.error
    page.selectbox(key="pp_model").set_value("bert-large").run()  # text: nothing to preprocess, said so
    assert not page.exception and any("needs no preprocessing" in i.value for i in page.info)


def test_invalid_input_is_explained(page):
    page.number_input(key="pp_cores").set_value(4).run()
    page.number_input(key="pp_reserved").set_value(4).run()
    assert not page.exception
    assert any("cpu_reserved_cores (4) must be below cpu_cores (4)" in e.value for e in page.error)
    assert not page.get("plotly_chart")


def test_url_round_trip_and_reset(page):
    page.number_input(key="pp_units").set_value(24).run()
    page.selectbox(key="pp_model").set_value("efficientnet-b0").run()
    again = open_page(token(page))
    assert again.number_input(key="pp_units").value == 24 and again.selectbox(key="pp_model").value == "efficientnet-b0"
    assert metrics(again) == metrics(page)
    again.button(key="pp_reset").click().run()
    assert not again.exception
    assert again.number_input(key="pp_units").value == 8 and again.selectbox(key="pp_model").value == "resnet50"


def test_link_to_another_design_and_damaged_link():
    linked = {**DEFAULT_SCENARIO, "model": "jasper", "host": {"cpu_cores": 16, "cpu_reserved_cores": 2}}
    at = open_page(encode(load_scenario(linked)))
    assert at.selectbox(key="pp_model").value == "jasper" and at.number_input(key="pp_cores").value == 16
    bad = open_page("not-a-scenario")
    assert any("cannot be used" in e.value for e in bad.error) and bad.selectbox(key="pp_model").value == "resnet50"
