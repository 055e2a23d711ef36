"""The Design page under AppTest: defaults, widgets, invalid input, URL state, reset."""

import pytest
from streamlit.testing.v1 import AppTest

from engine.presets import DEFAULT_SCENARIO
from engine.io.urlstate import decode, encode
from tests.pagetest import APP, metrics


def test_defaults_render_headline_metrics(design):
    m = metrics(design)
    assert {"SLA-bounded throughput", "Capacity", "Bottleneck", "Queries per dollar"} <= set(m)
    assert m["Bottleneck"] == "host_cpu"  # CPU preprocessing starves 7 x 1g (PREBA)
    assert len(design.get("plotly_chart")) == 5  # slots, curve, breakdown, utilisation, host CPU
    assert decode(design.query_params["s"][0] if isinstance(design.query_params["s"], list)
                  else design.query_params["s"])["model"] == "resnet50"


def test_changing_layout_and_device_changes_metrics(design):
    before = metrics(design)
    design.selectbox(key="d_pre").set_value("dpu").run()
    assert not design.exception
    dpu = metrics(design)
    assert dpu["Bottleneck"] != before["Bottleneck"] and dpu["Capacity"] != before["Capacity"]
    options = design.selectbox(key="d_layout").options
    design.selectbox(key="d_layout").set_value(next(o for o in options if o.startswith("3g"))).run()
    assert not design.exception and metrics(design)["Capacity"] != dpu["Capacity"]
    for key, value in (("d_batching", "work-conserving"), ("d_sched", "round-robin"), ("d_rpc", "splitrpc-pnic"),
                       ("d_mode", "Whole GPU (MIG off)"), ("d_model", "bert-large"), ("d_gpu", "T4-16GB")):
        (design.radio if key == "d_mode" else design.selectbox)(key=key).set_value(value).run()
        assert not design.exception, (key, design.exception)


def test_invalid_layout_is_explained_not_raised(design):
    design.selectbox(key="d_layout").set_value("custom (type profiles)").run()
    design.text_input(key="d_custom").set_value("4g.40gb, 4g.40gb").run()
    assert not design.exception
    assert any("allows at most 1" in e.value for e in design.error)
    design.text_input(key="d_custom").set_value("9g.99gb").run()
    # the Markdown source: the brackets are escaped (ui.text.md)
    assert any(r"gpu.layout\[0\]: '9g.99gb' is not a profile" in e.value for e in design.error)


def test_overload_is_reported_unstable(design):
    design.number_input(key="d_rate").set_value(1e6).run()
    assert not design.exception and any("Unstable" in e.value for e in design.error)


def test_link_restores_the_scenario_and_reset_restores_defaults():
    from engine.scenario import load_scenario

    linked = {**DEFAULT_SCENARIO, "model": "efficientnet-b0", "preprocessing": {"device": "none"}}
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode(load_scenario(linked))
    at.run()
    assert not at.exception
    assert at.selectbox(key="d_model").value == "efficientnet-b0" and at.selectbox(key="d_pre").value == "none"
    at.button(key="d_reset").click().run()
    assert at.selectbox(key="d_model").value == "resnet50" and at.selectbox(key="d_pre").value == "cpu"


def test_damaged_link_falls_back_with_a_message():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = "not-a-scenario"
    at.run()
    assert not at.exception and any("cannot be used" in e.value for e in at.error)
    assert at.selectbox(key="d_model").value == "resnet50"


def test_tail_metric_is_at_the_chosen_percentile(design):
    design.number_input(key="d_pct").set_value(99.9).run()
    assert not design.exception
    m = metrics(design)
    shown = float(m["p99.9 at offered load"].split()[0].replace(",", ""))
    from engine.analytic import Context, evaluate
    from engine.scenario import load_scenario
    from engine.io.urlstate import decode
    from ui.session import get_store

    token = design.query_params["s"]
    token = token[0] if isinstance(token, list) else token
    ev = evaluate(load_scenario(decode(token)), Context.from_store(get_store()))
    assert shown == pytest.approx(ev.sla.latency_at_rate_ms, abs=0.006)
    assert ev.sla.latency_at_rate_ms > ev.latency_ms.p99  # not the p99 relabelled


def test_simulated_points_join_the_curve_and_show_batch_sizes(design):
    design.number_input(key="d_sim_n").set_value(4000).run()
    design.button(key="d_sim").click().run()
    assert not design.exception, design.exception
    charts = design.get("plotly_chart")
    assert len(charts) == 6  # the five analytic charts and the batch-size histogram
    curve = next(c for c in charts if "simulated" in c.proto.spec)
    assert '"p99 (simulated)"' in curve.proto.spec and "diamond" in curve.proto.spec
    assert any("Diamonds: simulated (4,000 requests per point" in c.value for c in design.caption)
    design.selectbox(key="d_pre").set_value("dpu").run()  # another design: its points are not the old ones
    assert not design.exception and len(design.get("plotly_chart")) == 5


def test_pin_keeps_designs_for_compare(design):
    design.button(key="d_pin").click().run()
    design.selectbox(key="d_pre").set_value("dpu").run()
    design.button(key="d_pin").click().run()
    assert not design.exception
    pinned = design.session_state["kp_pins"]
    assert len(pinned) == 2 and '"dpu"' in pinned[1] and '"cpu"' in pinned[0]


def test_query_size_table(design):
    design.selectbox(key="d_qkind").set_value("table").run()
    assert not design.exception
    design.text_input(key="d_qtable").set_value("1:0.5, 8:0.5").run()
    assert not design.exception and not any("not valid" in e.value for e in design.error)
    assert any("Unstable" in e.value for e in design.error)  # 4.5 items per query: CPU preprocessing overloads
    design.text_input(key="d_qtable").set_value("1:0.5, eight:0.5").run()
    assert not design.exception and any("query_size" in e.value for e in design.error)


def test_fpga_backend(design):
    design.radio(key="d_mode").set_value("FPGA boards (EIF)").run()
    assert not design.exception
    # the seed reports speed-ups only: without a time per request the page says what is missing
    assert any("ms_per_request" in e.value for e in design.error)
    design.number_input(key="d_fpga_ms").set_value(2.0).run()
    assert not design.exception and not any("not valid" in e.value for e in design.error)
    m = metrics(design)
    assert m["Capacity"].endswith("req/s") and m["SLA-bounded throughput"].endswith("req/s")
    token = design.query_params["s"]
    data = decode(token[0] if isinstance(token, list) else token)
    assert data["fpga"]["ms_per_request"] == 2.0 and "gpu" not in data
    fresh = AppTest.from_file(APP, default_timeout=120)  # the link reopens the FPGA design
    fresh.query_params["s"] = token[0] if isinstance(token, list) else token
    fresh.run()
    assert not fresh.exception and fresh.radio(key="d_mode").value == "FPGA boards (EIF)"
    assert metrics(fresh)["Capacity"] == m["Capacity"]


def test_build_a_layout_one_instance_at_a_time(design):
    design.selectbox(key="d_layout").set_value("custom (type profiles)").run()
    design.button(key="d_clear").click().run()
    for profile in ("4g.40gb", "2g.20gb"):
        design.selectbox(key="d_add").set_value(profile).run()
        design.button(key="d_add_btn").click().run()
        assert not design.exception, design.exception
    assert design.text_input(key="d_custom").value == "4g.40gb, 2g.20gb"
    assert "3g.40gb" not in design.selectbox(key="d_add").options  # it no longer fits, and the page says why
    assert any("3g.40gb: the layout needs 9 compute slices" in c.value for c in design.caption)
    assert not any("not valid" in e.value for e in design.error)
