"""engine.studies.compare and the Compare presets (engine.reproduce): deltas against the baseline, curves, errors, presets."""

import math

import pytest

from engine.analytic import Context, evaluate
from engine.studies.compare import RESULTS, CompareError, compare_study, describe
from engine.scenario import load_scenario
from engine.reproduce.preset import PresetError
from engine.reproduce import gpu_primitives, paris_elsa, preba, splitrpc
from engine.reproduce.registry import build_preset, presets


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def _scs(ctx):
    return [load_scenario(d, ctx.book) for d in build_preset("preba", ctx)]


def test_results_are_the_evaluations_and_deltas_are_relative(ctx):
    scs = _scs(ctx)
    c = compare_study(scs, ctx, baseline=1)
    for s, r in zip(scs, c.results):
        ev = evaluate(s, ctx)
        assert r.capacity_rps == ev.capacity_rps and r.tco_usd == ev.cost.tco_usd
    base = c.results[1]
    for r, d in zip(c.results, c.deltas):
        for field in RESULTS:
            if d[field] is not None:
                assert math.isclose(d[field], (getattr(r, field) - getattr(base, field)) / abs(getattr(base, field)))
    assert all(v in (0.0, None) for v in c.deltas[1].values())


def test_curves_rise_to_capacity(ctx):
    c = compare_study(_scs(ctx), ctx)
    for cur, r in zip(c.curves, c.results):
        assert cur.rates_rps[-1] < r.capacity_rps
        finite = [t for t in cur.tail_ms if math.isfinite(t)]
        assert finite[-1] >= finite[0]


def test_errors_name_the_problem(ctx):
    with pytest.raises(CompareError, match="pin at least one"):
        compare_study([], ctx)
    with pytest.raises(CompareError, match="baseline 5"):
        compare_study(_scs(ctx), ctx, baseline=5)
    with pytest.raises(PresetError, match="valid: preba"):
        build_preset("nope", ctx)


def test_every_preset_builds_valid_distinct_designs(ctx):
    for key in presets():
        designs = [load_scenario(d, ctx.book) for d in build_preset(key, ctx)]
        assert len(designs) >= 2 and len({d.name for d in designs}) == len(designs)


def test_describe_says_what_differs(ctx):
    a, b, _ = _scs(ctx)
    da, db = describe(a), describe(b)
    assert da["partitioning"] == "7 x 1g.10gb per GPU"
    assert {k for k in da if da[k] != db[k]} == {"design", "preprocessing"}


def test_presets_show_the_very_scenarios_the_registry_evaluates(ctx):
    """One source (issue 14): a preset's designs are the reproduction modules' scenarios, renamed for the page."""
    def unnamed(designs):
        return [{k: v for k, v in d.items() if k != "name"} for d in designs]

    assert unnamed(build_preset("paris-elsa", ctx)) == unnamed(
        [paris_elsa._scenario(ctx, p, s, "resnet50") for p, s in (("gpu-max", {"policy": "fifs"}),
                                                                   ("paris", {"policy": "fifs"}),
                                                                   ("paris", paris_elsa.ELSA))])
    assert build_preset("preba", ctx)[preba.DPU] == preba.default_question_designs()[preba.DPU]  # preba-dpu-pcie's
    grpc_vma = next(d for d in build_preset("splitrpc", ctx) if d["rpc"]["preset"] == "grpc-bypass")
    assert unnamed([grpc_vma]) == unnamed([splitrpc._service("resnet50", "grpc-bypass", splitrpc.LOW_RPS, 8)])
    mm = gpu_primitives._multi_model(ctx).best
    assert build_preset("gpu-primitives", ctx)[1]["gpu"]["shares"] == [mm.gpu_pct_each] * mm.instances
