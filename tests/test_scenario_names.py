"""A scenario without a name is named after its design (Scenario.derived_name); a given name is kept. The derived
name changes with the design and is always a valid saved-scenario name (the Report page saves under it)."""

from __future__ import annotations

import pytest

from engine.presets import DEFAULT_SCENARIO
from engine.naming import DERIVED_NAME_MAX
from engine.scenario import load_scenario
from engine.store.scenarios import check_name

VARIANTS = [
    {},
    {"model": "bert-large"},
    {"gpu": {"sku": "A100-SXM4-80GB", "count": 2, "layout": ["4g.40gb", "3g.40gb"]}},
    {"gpu": {"sku": "A100-SXM4-80GB", "count": 2, "layouts": [["7g.80gb"], ["1g.10gb"] * 7]}},
    {"gpu": {"sku": "A100-SXM4-80GB", "shares": [50, 25, 25]}},
    {"gpu": {"sku": "T4-16GB"}},
    {"gpu": None, "fpga": {"boards": 2}},
    {"preprocessing": {"device": "dpu", "units": 16}, "scheduler": {"policy": "elsa"}},
    {"gpu": {"sku": "A100-SXM4-80GB", "layout": ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]},
     "preprocessing": {"device": "gpu"}, "rpc": {"preset": "splitrpc-snic"}, "batching": {"policy": "work-conserving"},
     "scheduler": {"policy": "jsq"}},
]


@pytest.mark.parametrize("change", VARIANTS)
def test_a_derived_name_is_a_valid_saved_name_and_differs_per_design(change):
    scenario = load_scenario({**DEFAULT_SCENARIO, **change})
    assert scenario.name == scenario.derived_name() and len(scenario.name) <= DERIVED_NAME_MAX
    assert check_name(scenario.name) == scenario.name


def test_derived_names_tell_the_designs_apart_and_a_given_name_is_kept():
    names = {load_scenario({**DEFAULT_SCENARIO, **change}).name for change in VARIANTS}
    assert len(names) == len(VARIANTS)
    assert load_scenario(DEFAULT_SCENARIO).name == "resnet50, A100-SXM4-80GB 1g.10gb x 7, cpu preprocessing, grpc, " \
                                                   "preba batching"
    assert load_scenario({**DEFAULT_SCENARIO, "name": "mine"}).name == "mine"
    again = load_scenario(load_scenario(DEFAULT_SCENARIO).to_json())  # a derived name survives a round trip
    assert again.name == again.derived_name()
