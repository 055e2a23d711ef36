"""What limits a design's SLA-bounded throughput (engine.analytic.operating_point.sla_limit): a latency floor or a
saturating stage, named in the Evaluation and in its headline, with the floor split over the stages."""

from __future__ import annotations

import math

import pytest

from engine.analytic import Context, build_design, evaluate
from engine.analytic.operating_point import (FLOOR_LOAD, capacity, scan_rates, sla_latency, sla_latency_by_stage,
                                             sla_limit)
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.vocab import SlaLimitKind


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def _scenario(**changes) -> dict:
    return {**DEFAULT_SCENARIO, **changes}


def _sla(latency_ms: float, rate_rps: float = 3000) -> dict:
    return {"arrival": {"kind": "poisson", "rate_rps": rate_rps}, "sla": {"latency_ms": latency_ms, "percentile": 99}}


def test_the_default_design_misses_its_sla_on_a_latency_floor_not_on_saturation(ctx):
    ev = evaluate(_scenario(), ctx)
    limit = ev.sla_limit
    assert limit.kind == SlaLimitKind.LATENCY_FLOOR and ev.sla_bounded_rps == 0
    assert limit.floor_ms > limit.sla_ms == 15  # missed even at the lowest load tried
    assert limit.floor_rate_rps < 0.05 * ev.capacity_rps
    assert next(iter(limit.floor_by_stage_ms)) == "host_cpu"  # the CPU path is most of the floor
    assert ev.stable and ev.rate_rps / ev.capacity_rps == pytest.approx(0.61, abs=0.01)  # far from saturated
    text = ev.headline()
    assert "A latency floor, not saturation" in text and "no load meets the 15 ms SLA" in text
    assert f"the p99 is {limit.floor_ms:,.1f} ms even at {limit.floor_rate_rps:,.0f} req/s" in text
    assert "host_cpu, is 61% busy" in text


def test_the_dpu_design_is_held_by_saturation_of_the_dpu_and_more_units_move_it_to_the_gpu(ctx):
    ev = evaluate(_scenario(preprocessing={"device": "dpu"}), ctx)
    assert ev.sla_limit.kind == SlaLimitKind.SATURATION and ev.bottleneck == "preprocess:dpu"
    assert ev.sla_bounded_rps > FLOOR_LOAD * ev.capacity_rps and ev.sla_limit.floor_ms < 15
    assert "Saturation: the 15 ms SLA holds up to" in ev.headline() and "queueing at preprocess:dpu" in ev.headline()
    assert evaluate(_scenario(preprocessing={"device": "dpu", "units": 9}), ctx).bottleneck == "gpu"


def test_a_bound_just_above_the_floor_is_lost_long_before_saturation(ctx):
    floor = evaluate(_scenario(), ctx).sla_limit.floor_ms
    ev = evaluate(_scenario(workload=_sla(floor + 0.2)), ctx)
    assert 0 < ev.sla_bounded_rps < FLOOR_LOAD * ev.capacity_rps
    assert ev.sla_limit.kind == SlaLimitKind.LATENCY_FLOOR and "holds only up to" in ev.headline()
    loose = evaluate(_scenario(workload=_sla(2 * floor)), ctx)  # room for queueing: the CPU's saturation decides
    assert loose.sla_limit.kind == SlaLimitKind.SATURATION and loose.sla_limit.bottleneck == "host_cpu"


@pytest.mark.parametrize("device", ["cpu", "dpu", "gpu", "none"])
def test_the_stages_shares_add_up_to_the_tail_latency(ctx, device):
    design = build_design(load_scenario(_scenario(preprocessing={"device": device})), ctx)
    cap = capacity(design)[0]
    for rate in (scan_rates(design, cap)[0], 0.5 * cap, 0.9 * cap):
        shares = sla_latency_by_stage(design, rate)
        assert all(math.isfinite(v) and v >= 0 for v in shares.values())
        assert sum(shares.values()) == pytest.approx(sla_latency(design, rate), rel=1e-9)
    limit = sla_limit(design, 0.0)
    assert list(limit.floor_by_stage_ms.values()) == sorted(limit.floor_by_stage_ms.values(), reverse=True)


def test_the_report_carries_the_headline(ctx):
    from engine.report import build_report, render_html

    html = render_html(build_report([DEFAULT_SCENARIO], ctx, seed_hash="x"))
    assert "A latency floor, not saturation: no load meets the 15 ms SLA" in html
