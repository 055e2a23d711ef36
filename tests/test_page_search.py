"""The Search page under AppTest: the space around the current design, a run, pins, bad input."""

from tests.pagetest import metrics, open_page


def test_search_around_the_current_design_finds_and_pins_the_best():
    at = open_page("search.py", timeout=300)
    assert any(c.value.startswith("3 designs") for c in at.caption)  # the deployable preprocessing devices
    assert at.multiselect(key="srch_pre").value == ["cpu", "dpu", "gpu"]  # 'none' is the ideal, not a candidate
    at.multiselect(key="srch_pre").set_value(["cpu", "dpu", "none"]).run()
    at.multiselect(key="srch_batch").set_value(["preba", "work-conserving"]).run()
    assert any(c.value.startswith("6 designs") for c in at.caption)
    at.number_input(key="srch_confirm").set_value(1).run()
    at.button(key="srch_run").click().run()
    assert not at.exception, at.exception
    m = metrics(at)
    assert m["Best SLA-bounded throughput"].endswith("req/s") and m["Designs evaluated"] == "6"
    assert len(at.get("plotly_chart")) == 2  # the two Pareto fronts
    best = at.dataframe[0].value
    assert "cpu" not in set(best["preprocessing"])  # CPU preprocessing starves 7 x 1g (PREBA), so it never wins
    at.button(key="srch_pin").click().run()
    assert len(at.session_state["kp_pins"]) >= 1
    at.multiselect(key="srch_rpc").set_value(["grpc", "local"]).run()  # another space: the old result is not shown
    assert not at.get("plotly_chart") and any("run the search" in i.value for i in at.info)


def test_an_empty_choice_falls_back_to_the_current_design():
    at = open_page("search.py", timeout=300)
    at.multiselect(key="srch_pre").set_value([]).run()
    assert not at.exception and any(c.value.startswith("1 designs") for c in at.caption)


def test_a_space_over_the_limit_is_explained():
    at = open_page("search.py", timeout=300)
    at.radio(key="srch_layouts").set_value("every maximal MIG layout").run()
    for key, values in (("srch_pre", ["cpu", "dpu", "gpu", "none"]),
                        ("srch_rpc", ["grpc", "grpc-bypass", "lynx-snic", "splitrpc-pnic", "splitrpc-snic", "local"]),
                        ("srch_batch", ["none", "fixed", "preba", "work-conserving"]),
                        ("srch_sched", ["fifs", "elsa", "round-robin", "jsq"])):
        at.multiselect(key=key).set_value(values).run()
    assert not at.exception
    assert any("over the limit" in e.value for e in at.error)


def test_no_preprocessing_is_a_reference_beside_the_best_not_a_candidate():
    at = open_page("search.py", timeout=300)
    at.number_input(key="srch_confirm").set_value(0).run()
    at.button(key="srch_run").click().run()
    assert not at.exception, at.exception
    best = at.dataframe[0].value
    assert best["preprocessing"].tolist() == ["dpu", "dpu", "none (ideal)"]
    assert best["role"].iloc[-1].startswith("reference")
    (said,) = [c.value for c in at.caption if c.value.startswith("Reference, not a candidate")]
    assert "its dpu preprocessing reaches 9" in said  # about 90 % of the ideal's SLA-bounded throughput


def test_a_first_visit_opens_on_the_search_around_the_current_design():
    at = open_page("search.py", timeout=300)
    assert metrics(at)["Designs evaluated"] == "3" and len(at.get("plotly_chart")) == 2  # answered, not a prompt
    assert any(i.value.startswith("Opened on the search around the design now on the Design page") for i in at.info)
    at.multiselect(key="srch_rpc").set_value(["grpc", "local"]).run()  # the user's own question: asked with the button
    assert not at.get("plotly_chart") and any("run the search" in i.value for i in at.info)
