"""The SplitRPC calibration's identifiability study (engine.stages.rpc_fit_bounds) and the bounds the registry's
reasons quote (engine.reproduce.splitrpc.FIT_BOUNDS): the tuned point is the engine's defaults, a point is a
scenario's rpc.components, and (slow) the bounds found still match what the reasons say and still miss the paper.
"""

import math

import pytest

from engine.analytic import Context
from engine.reproduce import splitrpc
from engine.reproduce._common import saving_pct
from engine.reproduce.runner import WITHIN, run
from engine.seed.papers import paper_results
from engine.stages import rpc_fit_bounds as fb
from engine.stages.rpc import PRESETS
from engine.stages.rpc_calibration import model_figures
from engine.vocab import RpcPreset


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def test_the_tuned_point_is_the_engines_defaults_and_meets_every_figure():
    assert fb.presets_at(fb.tuned_point()) == PRESETS
    assert min(fb.slack(PRESETS).values()) >= 0
    assert fb.quantities(PRESETS)["grpc_tax_resnet50_us"] == model_figures()["grpc_tax_resnet50"]


def test_a_point_changes_the_grpc_stack_but_not_splitrpcs_own_transport():
    point = {**fb.tuned_point(), "transport_us_per_request": 50.0, fb.SPLIT_CLIENT: 0.4}
    moved = fb.presets_at(point)
    assert moved[RpcPreset.GRPC_BYPASS].transport_us_per_request == 50.0
    pnic = RpcPreset.SPLITRPC_PNIC
    assert moved[pnic].transport_us_per_request == PRESETS[pnic].transport_us_per_request
    assert moved[RpcPreset.SPLITRPC_PNIC].client_serdes_ns_per_byte == 0.4
    assert moved[RpcPreset.LOCAL].client_serdes_ns_per_byte == 0.0  # no network: no client copy into packets
    assert fb.quantities(moved)["bert_reduction_pct"] < fb.quantities(PRESETS)["bert_reduction_pct"]


def test_predictions_at_the_tuned_point_are_the_registrys_values(ctx):
    rows = {r.id: r.kneepoint for r in run(ctx, paper="splitrpc")}
    assert splitrpc.predictions_at(ctx) == {k: rows[k] for k in splitrpc.predictions_at(ctx)}


def test_predictions_at_another_point_run_it_through_the_scenario(ctx):
    point = {**fb.tuned_point(), "transport_us_per_request": 50.0}
    tuned, moved = splitrpc.predictions_at(ctx), splitrpc.predictions_at(ctx, point)
    assert moved["splitrpc-bert-lowload-mean"] < tuned["splitrpc-bert-lowload-mean"]  # less fixed tax
    assert moved["splitrpc-knee-lenet"] < tuned["splitrpc-knee-lenet"]
    assert all(math.isfinite(v) for v in moved.values())


def test_the_bert_reasons_load_figures_hold(ctx):
    """The BERT reason says queueing reaches 22 % only between 350 and 400 req/s, 76-87 % of a 459 req/s cap."""
    assert "between 350 and 400 req/s, 76-87 % of gRPC-VMA's 459 req/s" in splitrpc._BERT
    new, old = splitrpc._pair(ctx, "bert-splitrpc", 350)
    assert round(old.capacity_rps) == 459 and saving_pct(new.latency_ms.mean, old.latency_ms.mean) < 22
    new, old = splitrpc._pair(ctx, "bert-splitrpc", 400)
    assert saving_pct(new.latency_ms.mean, old.latency_ms.mean) > 22


@pytest.mark.slow
@pytest.mark.parametrize("quantity", list(splitrpc.FIT_BOUNDS))
def test_the_quoted_bounds_are_what_the_search_finds_and_the_entry_still_misses_there(quantity, ctx):
    """The reasons quote these bounds: the search must still find them, and the out-of-sample entry recomputed at
    the bound's point (a refit that meets every in-sample figure) must still miss the paper by more than 25 %."""
    sense, quoted, entry, rel = splitrpc.FIT_BOUNDS[quantity]
    found = fb.bound(quantity, sense, starts=4, seed=0)
    assert found.value == pytest.approx(quoted, rel=rel)
    paper = paper_results()[entry].value
    assert abs(splitrpc.predictions_at(ctx, found.point)[entry] - paper) > WITHIN * abs(paper)
