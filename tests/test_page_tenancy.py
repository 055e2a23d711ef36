"""The Tenancy page under AppTest: defaults, each main widget, invalid input, URL state, reset."""

import pytest
from streamlit.testing.v1 import AppTest

from engine.io.urlstate import decode_view
from tests.conftest import ROOT

APP = str(ROOT / "app.py")
PAGE = str(ROOT / "pages" / "tenancy.py")


@pytest.fixture
def tenancy():
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def _metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def test_defaults_show_every_panel(tenancy):
    assert len(tenancy.get("plotly_chart")) == 5  # MIG, latency vs GPU%, oversubscription, FPGA threads, cold start
    m = _metrics(tenancy)
    assert m["Knee GPU%"].endswith("%") and " x " in m["Multi-Model"]
    assert not tenancy.error
    token = tenancy.query_params["t"]
    view = decode_view(token[0] if isinstance(token, list) else token)
    assert view["ten_model"] == "resnet50" and view["ten_mig_gpu"] == "A100-SXM4-80GB"


@pytest.mark.parametrize("key,value", [("ten_model", "bert-large"), ("ten_mig_gpu", "A30-24GB"),
                                       ("ten_share_gpu", "T4-16GB"), ("ten_batch", 32), ("ten_deadline", 5.0),
                                       ("ten_rate", 800.0), ("ten_buffer", 4000.0), ("ten_weights", False),
                                       ("ten_fpga_ms", 2.5), ("ten_cpu_ms", 20.0), ("ten_sparsity", 0.7),
                                       ("ten_within", "3g.40gb")])
def test_each_widget_reruns(tenancy, key, value):
    kind = {"ten_model": "selectbox", "ten_mig_gpu": "selectbox", "ten_share_gpu": "selectbox", "ten_within": "selectbox",
            "ten_weights": "toggle", "ten_sparsity": "slider"}.get(key, "number_input")
    before = _metrics(tenancy)
    getattr(tenancy, kind)(key=key).set_value(value).run()
    assert not tenancy.exception, tenancy.exception
    if key in ("ten_batch", "ten_buffer", "ten_share_gpu", "ten_within"):
        assert _metrics(tenancy) != before


def test_instances_per_gpu_are_capped_by_the_mps_client_limit_and_by_memory(tenancy):
    assert _metrics(tenancy)["Instances per GPU (MPS)"] == "48 -> 48"  # not 958 -> 2,227: 48 MPS clients per GPU
    assert any("the MPS client limit binds: 48 clients per GPU, while memory would hold" in c.value
               for c in tenancy.caption)
    tenancy.number_input(key="ten_buffer").set_value(4000.0).run()  # a large footprint: memory binds first
    fit = _metrics(tenancy)["Instances per GPU (MPS)"]
    without, with_ = (int(x) for x in fit.split(" -> "))
    assert 48 > with_ >= without >= 1
    assert any("GPU memory binds" in c.value for c in tenancy.caption)


def test_invalid_deadline_is_explained(tenancy):
    tenancy.number_input(key="ten_deadline").set_value(0.0).run()
    assert not tenancy.exception and any("Deadline" in e.value for e in tenancy.error)
    tenancy.number_input(key="ten_deadline").set_value(30.0).run()  # widgets skipped by the stop come back
    assert not tenancy.exception and len(tenancy.get("plotly_chart")) == 5


def test_link_round_trip_and_reset(tenancy):
    tenancy.number_input(key="ten_batch").set_value(16).run()
    token = tenancy.query_params["t"]
    token = token[0] if isinstance(token, list) else token
    fresh = AppTest.from_file(APP, default_timeout=120)
    fresh.query_params["t"] = token
    fresh.switch_page(PAGE).run()
    assert not fresh.exception and fresh.number_input(key="ten_batch").value == 16
    fresh.button(key="ten_reset").click().run()
    assert fresh.number_input(key="ten_batch").value == 8
