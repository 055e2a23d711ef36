"""'Do I need a DPU?': no preprocessing at all (PREBA's ideal) is a reference line beside the search's best design,
not a candidate, unless the space lists it (issue 18)."""

from __future__ import annotations

import json

import pytest

from engine.cli.search import report
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.search import frames, search
from engine.search.result import IDEAL_ROLE
from engine.vocab import DEPLOYABLE_PREPROCESSING, PreprocessDevice

BASE = json.loads(load_scenario(DEFAULT_SCENARIO).to_json())
DEPLOYABLE = [device.value for device in DEPLOYABLE_PREPROCESSING]


@pytest.fixture(scope="module")
def ctx(store):
    from engine.analytic import Context

    return Context.from_store(store)


def test_none_is_not_deployable():
    assert PreprocessDevice.NONE not in DEPLOYABLE_PREPROCESSING and len(DEPLOYABLE_PREPROCESSING) == 3


def test_the_best_deployable_design_comes_with_the_ideal_as_a_reference(ctx):
    result = search({"base": BASE, "preprocessing": DEPLOYABLE}, ctx, workers=1, confirm_top=0)
    best = result.designs[result.best_throughput]
    assert best.preprocessing == "dpu"  # the answer to 'do I need a DPU?' for the default question: yes
    ideal = result.ideal_reference
    assert ideal.preprocessing == "none (ideal)" and ideal.index == result.best_throughput
    assert (ideal.gpu, ideal.rpc, ideal.batching) == (best.gpu, best.rpc, best.batching)
    assert best.sla_bounded_rps < ideal.sla_bounded_rps  # the DPU costs a little, the ideal costs nothing
    assert all(row.preprocessing != "none" for row in result.designs)  # not a candidate
    table = frames(result)["best"]
    assert table["role"].tolist()[-1] == IDEAL_ROLE and "none (ideal)" in table["label"].iloc[-1]
    assert "reference, not a candidate: the best with no preprocessing (ideal)" in report(result)  # the CLI's text


def test_the_ideal_is_a_candidate_only_when_the_space_lists_it(ctx):
    asked = search({"base": BASE, "preprocessing": [*DEPLOYABLE, "none"]}, ctx, workers=1, confirm_top=0)
    assert asked.designs[asked.best_throughput].preprocessing == "none" and asked.ideal_reference is None
    off = search({"base": BASE, "preprocessing": DEPLOYABLE, "ideal_reference": False}, ctx, workers=1, confirm_top=0)
    assert off.ideal_reference is None and off.best_throughput is not None
