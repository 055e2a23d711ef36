"""The Compare page under AppTest: pins from Design, presets, baseline deltas, removal, URL state."""

import pytest
from streamlit.testing.v1 import AppTest

from engine.io.urlstate import decode_many
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from tests.conftest import ROOT

DEFAULT_NAME = load_scenario(DEFAULT_SCENARIO).name  # derived from the design (it has no name)

APP = str(ROOT / "app.py")
PAGE = str(ROOT / "pages" / "compare.py")


@pytest.fixture
def compare():
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def test_a_session_with_nothing_pinned_opens_on_the_preba_preset_which_its_first_pin_replaces(compare):
    assert list(compare.table[1].value.columns) == ["7 x 1g, CPU preprocessing", "7 x 1g, DPU preprocessing",
                                                    "7 x 1g, ideal (none)"]
    assert len(compare.get("plotly_chart")) == 2
    (said,) = [i.value for i in compare.info if "Nothing of yours is pinned yet" in i.value]
    assert "PREBA" in said and "replaces these designs with your own" in said
    compare.button(key="cmp_pin").click().run()  # the current design: the default question
    assert list(compare.table[1].value.columns) == [DEFAULT_NAME]
    assert not any("Nothing of yours" in i.value for i in compare.info)


def test_a_pin_made_before_compare_is_shown_not_the_sample():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.button(key="d_pin").click().run()
    at.switch_page(PAGE).run()
    assert list(at.table[1].value.columns) == [DEFAULT_NAME]
    assert not any("Nothing of yours" in i.value for i in at.info)


def test_pinned_designs_from_design_page_appear_side_by_side():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.button(key="d_pin").click().run()
    at.selectbox(key="d_pre").set_value("dpu").run()
    at.text_input(key="d_name").set_value("with DPU").run()
    at.button(key="d_pin").click().run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    results = at.table[1].value
    assert list(results.columns) == [DEFAULT_NAME, "with DPU"]
    assert "(baseline)" in results.loc["capacity (req/s)"].iloc[0] and "%" in results.loc["capacity (req/s)"].iloc[1]
    assert results.loc["bottleneck"].tolist()[0] == "host_cpu"
    assert len(at.get("plotly_chart")) == 2
    token = at.query_params["c"]
    assert [d["name"] for d in decode_many(token[0] if isinstance(token, list) else token)] == results.columns.tolist()


@pytest.mark.parametrize("key", ["preba", "splitrpc"])
def test_seed_presets_load_and_compare(compare, key):
    compare.selectbox(key="cmp_preset").set_value(key).run()
    compare.button(key="cmp_load").click().run()
    assert not compare.exception, compare.exception
    results = compare.table[1].value
    assert len(results.columns) == {"preba": 3, "splitrpc": 6}[key]
    compare.selectbox(key="cmp_baseline").select_index(1).run()  # options are the designs' names
    assert not compare.exception
    assert "(baseline)" in compare.table[1].value.iloc[0, 1]


def test_preba_preset_answers_its_question(compare):
    compare.button(key="cmp_load").click().run()  # the first preset is PREBA's
    r = compare.table[1].value
    cpu, dpu, ideal = r.columns
    assert r.loc["bottleneck", cpu] == "host_cpu" and r.loc["bottleneck", dpu] != "host_cpu"
    tput = [float(r.loc["SLA-bounded throughput (req/s)", c].split()[0].replace(",", "")) for c in r.columns]
    assert tput[0] < tput[1] <= tput[2] * 1.001  # the CPU misses at every load (a latency floor) < DPU <= ideal


def test_remove_and_clear(compare):
    compare.button(key="cmp_load").click().run()
    compare.selectbox(key="cmp_baseline").select_index(2).run()
    compare.selectbox(key="cmp_drop").select_index(1).run()  # option 0 is "-"
    assert not compare.exception, compare.exception
    assert len(compare.table[1].value.columns) == 2
    compare.button(key="cmp_clear").click().run()
    assert any("No designs pinned yet" in i.value for i in compare.info)


def test_link_restores_designs_and_damaged_link_is_explained():
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(PAGE).run()
    at.button(key="cmp_load").click().run()
    token = at.query_params["c"]
    token = token[0] if isinstance(token, list) else token
    fresh = AppTest.from_file(APP, default_timeout=120)
    fresh.query_params["c"] = token
    fresh.switch_page(PAGE).run()
    assert not fresh.exception
    assert list(fresh.table[1].value.columns) == list(at.table[1].value.columns)
    bad = AppTest.from_file(APP, default_timeout=120)
    bad.query_params["c"] = "not-a-token"
    bad.switch_page(PAGE).run()
    assert not bad.exception and any("cannot be used" in e.value for e in bad.error)


def test_paris_preset_simulated_shows_elsa_winning(compare):
    compare.selectbox(key="cmp_preset").set_value("paris-elsa").run()
    compare.button(key="cmp_load").click().run()
    compare.number_input(key="cmp_sim_n").set_value(10_000).run()
    compare.button(key="cmp_sim").click().run()
    assert not compare.exception, compare.exception
    row = compare.table[1].value.loc["SLA-bounded throughput, simulated (req/s)"]
    rps = [float(v.split()[0].replace(",", "")) for v in row]
    gmax, paris_fifs, paris_elsa = rps
    assert paris_elsa > gmax and paris_elsa > paris_fifs  # the seed's headline, by the simulator


@pytest.mark.parametrize("key", ["gpu-primitives", "eif"])
def test_other_seed_presets(compare, key):
    compare.selectbox(key="cmp_preset").set_value(key).run()
    compare.button(key="cmp_load").click().run()
    assert not compare.exception, compare.exception
    names = list(compare.table[1].value.columns)
    assert len(names) == {"gpu-primitives": 2, "eif": 5}[key]
