"""Issue 18, 'Answers that mislead', under AppTest: the Design headline says whether an SLA miss is a latency floor
or saturation, and the design's name follows the design until the user types one."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from tests.pagetest import APP, metrics


def test_the_default_headline_names_a_latency_floor_not_the_cpu_saturating(design):
    assert metrics(design)["SLA-bounded throughput"] == "0 req/s" and not design.success
    (headline,) = [w.value for w in design.warning]
    assert headline.startswith("Misses the p99 15 ms SLA at 3,000 req/s")
    assert "A latency floor, not saturation" in headline and "host_cpu, is 61% busy" in headline


def test_with_a_dpu_the_headline_names_the_saturating_stage(design):
    design.selectbox(key="d_pre").set_value("dpu").run()
    (headline,) = [s.value for s in design.success]
    assert headline.startswith("Meets the p99 15 ms SLA at 3,000 req/s")
    assert "Saturation" in headline and "queueing at preprocess:dpu" in headline


def _pinned_names(at) -> list[str]:
    return [json.loads(text)["name"] for text in at.session_state["kp_pins"]]  # ui.scenarios keeps the pins there


def test_the_name_follows_the_design_until_one_is_typed_and_then_stays(design):
    name = design.text_input(key="d_name")
    assert name.value == "resnet50, A100-SXM4-80GB 1g.10gb x 7, cpu preprocessing, grpc, preba batching"
    design.selectbox(key="d_model").set_value("efficientnet-b0").run()
    assert design.text_input(key="d_name").value.startswith("efficientnet-b0, A100-SXM4-80GB 1g.10gb x 7,")
    layout = next(o for o in design.selectbox(key="d_layout").options if o.startswith("7g.80gb"))
    design.selectbox(key="d_layout").set_value(layout).run()
    design.selectbox(key="d_pre").set_value("dpu").run()
    derived = "efficientnet-b0, A100-SXM4-80GB 7g.80gb, dpu 8 CUs, grpc, preba batching"
    assert design.text_input(key="d_name").value == derived
    design.button(key="d_pin").click().run()
    assert _pinned_names(design) == [derived]  # Compare and Report read the pins and the current design
    design.text_input(key="d_name").set_value("my own design").run()
    design.selectbox(key="d_model").set_value("resnet50").run()
    assert design.text_input(key="d_name").value == "my own design"
    design.button(key="d_pin").click().run()
    assert _pinned_names(design) == [derived, "my own design"]
    design.text_input(key="d_name").set_value("").run()  # an emptied box: derived again
    assert design.text_input(key="d_name").value.startswith("resnet50, A100-SXM4-80GB 7g.80gb,")


def test_a_link_keeps_its_typed_name_and_a_derived_one_keeps_following():
    from engine.io.urlstate import encode
    from engine.presets import DEFAULT_SCENARIO
    from engine.scenario import load_scenario

    for name, after in (("shared design", "shared design"), (None, "bert-large, A100-SXM4-80GB")):
        at = AppTest.from_file(APP, default_timeout=120)
        at.query_params["s"] = encode(load_scenario({**DEFAULT_SCENARIO, **({"name": name} if name else {})}))
        at.run()
        at.selectbox(key="d_model").set_value("bert-large").run()
        assert not at.exception and at.text_input(key="d_name").value.startswith(after)
