"""The Design page's inputs are grouped by stage and show only what applies to the chosen device, query-size kind,
batching policy and scheduler; an input hidden because it does not apply keeps its value in the scenario and the
link."""

from __future__ import annotations

from engine.io.urlstate import decode
from engine.presets import DEFAULT_SCENARIO
from tests.pagetest import open_page, query_token

CONDITIONAL = ("d_pre_cores", "d_dpu_units", "d_qsize", "d_mu", "d_sigma", "d_max_batch", "d_delay", "d_alpha",
               "d_beta")


def _shown(at) -> set[str]:
    return {w.key for w in [*at.number_input, *at.text_input] if w.key in CONDITIONAL or w.key == "d_qtable"}


def _scenario(at) -> dict:
    return decode(query_token(at))


def test_default_design_shows_only_what_applies():
    at = open_page("design.py")
    assert DEFAULT_SCENARIO["batching"]["policy"] == "preba"
    # CPU preprocessing, fixed query size, PREBA (knee Batch_max and Time_queue), first-idle scheduler
    assert _shown(at) == {"d_pre_cores", "d_qsize"}
    labels = [m.value for m in at.markdown]
    for stage in ("**Workload**", "**Batching**", "**Scheduler**", "**SLA**", "**Cost**"):
        assert stage in labels


def test_choices_bring_their_inputs_and_hidden_values_stay():
    at = open_page("design.py")
    at.selectbox(key="d_sched").set_value("elsa").run()
    assert {"d_alpha", "d_beta"} <= _shown(at)
    at.number_input(key="d_alpha").set_value(2.5).run()
    at.selectbox(key="d_sched").set_value("fifs").run()
    assert not {"d_alpha", "d_beta"} & _shown(at)
    at.run()  # Streamlit drops an undrawn widget's state at the end of the run after the one that hid it
    assert _scenario(at)["scheduler"]["alpha"] == 2.5  # hidden, but still the scenario's (and the link's)

    at.selectbox(key="d_batching").set_value("fixed").run()
    assert {"d_max_batch", "d_delay"} <= _shown(at)
    at.selectbox(key="d_batching").set_value("work-conserving").run()
    assert "d_max_batch" in _shown(at) and "d_delay" not in _shown(at)

    at.selectbox(key="d_pre").set_value("dpu").run()
    assert "d_dpu_units" in _shown(at) and "d_pre_cores" not in _shown(at)
    at.number_input(key="d_dpu_units").set_value(12).run()
    at.selectbox(key="d_pre").set_value("cpu").run()
    at.run()
    assert _scenario(at)["preprocessing"]["units"] == 12

    at.selectbox(key="d_qkind").set_value("lognormal").run()
    assert {"d_mu", "d_sigma"} <= _shown(at) and "d_qsize" not in _shown(at)
    assert not at.exception, at.exception


def test_the_cpu_audio_pipeline_is_drawn_for_audio_models_and_stays_in_the_link():
    """PREBA's CitriNet design (the Papers page's link for preba-citrinet-cores) keeps its Librosa CPU pipeline on
    the Design page; the choice is drawn for an audio model on a CPU pool only."""
    from engine.io.urlstate import encode
    from engine.reproduce.preba import CITRINET_SEC3
    from engine.scenario import load_scenario

    at = open_page("design.py", {"s": encode(load_scenario(CITRINET_SEC3))})
    assert at.selectbox(key="d_pre_audio").value == "librosa"
    assert _scenario(at)["preprocessing"]["cpu_audio_pipeline"] == "librosa"
    at.selectbox(key="d_model").set_value("resnet50").run()
    assert "d_pre_audio" not in {w.key for w in at.selectbox}  # a vision model: not drawn
    at = open_page("design.py")  # the default (vision) design: not drawn, and its scenario does not name it
    assert "d_pre_audio" not in {w.key for w in at.selectbox}
    assert "cpu_audio_pipeline" not in _scenario(at).get("preprocessing", {})


def _length_inputs(at) -> dict:
    return {w.key: w.value for w in at.number_input if w.key.startswith("d_ilen")}


def test_a_links_input_length_is_kept_shown_and_editable():
    """A link's input-length law (the Papers page opens CitriNet at PREBA's 2.5 s clips) reaches the scenario, shows
    for a variable-length model with the inputs its law reads, and survives a detour through a vision model."""
    from engine.io.urlstate import encode
    from engine.scenario import load_scenario

    spec = {**DEFAULT_SCENARIO, "model": "citrinet", "preprocessing": {"device": "none"},
            "workload": {**DEFAULT_SCENARIO.get("workload", {}), "input_len": {"kind": "fixed", "value": 2.5}}}
    at = open_page("design.py", {"s": encode(load_scenario(spec))})
    assert not at.exception and not at.error
    assert _length_inputs(at) == {"d_ilen_value": 2.5}
    assert _scenario(at)["workload"]["input_len"]["value"] == 2.5
    at.selectbox(key="d_ilen_kind").set_value("uniform").run()
    assert set(_length_inputs(at)) == {"d_ilen_low", "d_ilen_high"}
    at.number_input(key="d_ilen_high").set_value(10.0).run()
    law = _scenario(at)["workload"]["input_len"]
    assert (law["kind"], law["high"]) == ("uniform", 10.0)
    at.selectbox(key="d_model").set_value("resnet50").run()
    assert _length_inputs(at) == {} and "d_ilen_kind" not in {w.key for w in at.selectbox}  # a fixed-input model
    at.run()
    at.selectbox(key="d_model").set_value("citrinet").run()
    assert _length_inputs(at) == {"d_ilen_low": 1.0, "d_ilen_high": 10.0}
