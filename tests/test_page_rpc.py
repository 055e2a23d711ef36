"""The RPC page under AppTest: defaults, widgets, invalid input, URL state, reset."""

import pytest

from engine.scenario import load_scenario
from engine.io.urlstate import decode
from tests.pagetest import metrics, query_token
from tests.pagetest import open_page as _open


def open_page(token=None):
    return _open("rpc.py", {"s": token} if token else None)


token = query_token


@pytest.fixture
def page():
    return open_page()


def test_defaults_render(page):
    m = metrics(page)
    assert m["E2E, batch 1"].endswith(" us") and m["RPC tax"].endswith(" us")
    assert m["Capacity with this path"].endswith("req/s")
    assert len(page.get("plotly_chart")) == 4  # breakdown, load curves, host CPU, Table 1 services
    table = next(d.value for d in page.dataframe if "path" in d.value.columns)
    assert list(table["path"]) == ["grpc", "grpc-bypass", "lynx-snic", "splitrpc-pnic", "splitrpc-snic", "local"]
    assert load_scenario(decode(token(page))).rpc.preset == "grpc"


def test_each_widget_reruns(page):
    before = metrics(page)
    page.selectbox(key="rpc_preset").set_value("splitrpc-pnic").run()
    assert not page.exception and metrics(page)["RPC tax"] != before["RPC tax"]
    page.selectbox(key="rpc_pre").set_value("none").run()
    assert not page.exception and metrics(page)["Capacity with this path"] != before["Capacity with this path"]
    page.number_input(key="rpc_link").set_value(10.0).run()
    assert not page.exception
    page.number_input(key="rpc_rate").set_value(500.0).run()
    assert not page.exception
    page.selectbox(key="rpc_batching").set_value("work-conserving").run()
    assert not page.exception
    page.text_input(key="rpc_components").set_value("transport_us_per_request=10, pcie_gen=4").run()
    assert not page.exception and not page.error
    assert decode(token(page))["rpc"]["components"] == {"transport_us_per_request": 10, "pcie_gen": 4}
    page.selectbox(key="rpc_model").set_value("lenet").run()  # profiled on A100-40GB only: estimated on this GPU
    assert not page.exception and not page.error


@pytest.mark.parametrize("text, message", [("not_a_field=1", "'not_a_field' is not an RPC path component"),
                                           ("pcie_gen=7", "rpc.components.pcie_gen"),
                                           ("just words", "is not name=value")])
def test_invalid_input_is_explained(page, text, message):
    page.text_input(key="rpc_components").set_value(text).run()
    assert not page.exception
    assert any(message in e.value for e in page.error), [e.value for e in page.error]


def test_url_round_trip_and_reset(page):
    page.selectbox(key="rpc_preset").set_value("splitrpc-snic").run()
    page.number_input(key="rpc_link").set_value(25.0).run()
    again = open_page(token(page))
    assert again.selectbox(key="rpc_preset").value == "splitrpc-snic" and again.number_input(key="rpc_link").value == 25
    assert metrics(again) == metrics(page)
    again.button(key="rpc_reset").click().run()
    assert not again.exception
    assert again.selectbox(key="rpc_preset").value == "grpc" and again.number_input(key="rpc_link").value == 100
