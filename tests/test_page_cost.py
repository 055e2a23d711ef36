"""The Cost page under AppTest: defaults, widgets, invalid input, URL state, reset, default sources."""

import pytest

from engine.io.urlstate import decode
from tests.pagetest import metrics, query_token
from tests.pagetest import open_page as _open


def open_page(token=None):
    return _open("cost.py", {"s": token} if token else None)


token = query_token


def money(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))


@pytest.fixture
def page():
    return open_page()


def test_defaults_render_with_sources(page):
    m = metrics(page)
    assert {"TCO (3 years)", "CAPEX", "OPEX (energy)", "Queries per dollar", "Queries per joule"} <= set(m)
    assert money(m["TCO (3 years)"]) == pytest.approx(money(m["CAPEX"]) + money(m["OPEX (energy)"]), abs=1)
    assert len(page.get("plotly_chart")) == 5  # split, years, electricity, utilisation, devices
    assert "PREBA" in page.number_input(key="cost_kwh").help  # the default's source
    assert "default:" in page.number_input(key="cost_gpu_price_usd").help
    sources = next(d.value for d in page.dataframe if "source" in d.value.columns)
    assert sources["source"].str.len().min() > 3 and "gpu_price_usd" in set(sources["input"])
    assert "cost" not in decode(token(page))  # defaults stay defaults in the link


def test_each_widget_reruns(page):
    before = metrics(page)
    page.number_input(key="cost_gpu_price_usd").set_value(20000.0).run()
    assert not page.exception and money(metrics(page)["CAPEX"]) == money(before["CAPEX"]) + 8500
    page.number_input(key="cost_kwh").set_value(0.30).run()
    assert not page.exception and metrics(page)["OPEX (energy)"] != before["OPEX (energy)"]
    page.number_input(key="cost_years").set_value(5.0).run()
    assert not page.exception and "TCO (5 years)" in metrics(page)
    page.number_input(key="cost_pue").set_value(1.1).run()
    assert not page.exception
    for f in ("server_price_usd", "dpu_price_usd", "nic_price_usd"):
        page.number_input(key=f"cost_{f}").set_value(1234.0).run()
        assert not page.exception
    cost = decode(token(page))["cost"]
    assert cost["gpu_price_usd"] == 20000 and cost["years"] == 5 and cost["nic_price_usd"] == 1234


@pytest.mark.parametrize("key, value, message", [("cost_years", 0.0, "cost.years"), ("cost_pue", 0.5, "cost.pue")])
def test_invalid_input_is_explained(page, key, value, message):
    page.number_input(key=key).set_value(value).run()
    assert not page.exception
    assert any(message in e.value for e in page.error), [e.value for e in page.error]
    assert not page.metric


def test_url_round_trip_and_reset(page):
    page.number_input(key="cost_gpu_price_usd").set_value(9000.0).run()
    page.number_input(key="cost_kwh").set_value(0.2).run()
    again = open_page(token(page))
    assert again.number_input(key="cost_gpu_price_usd").value == 9000
    assert again.number_input(key="cost_kwh").value == 0.2
    assert metrics(again) == metrics(page)
    again.button(key="cost_reset").click().run()
    assert not again.exception
    assert again.number_input(key="cost_kwh").value == pytest.approx(0.139)
    assert again.number_input(key="cost_gpu_price_usd").value != 9000
