"""engine.analytic.sla_bound: below the SLA-percentile latency at every rate (and at each rate, host waits and the
batching wait counted), for every wait model and scheduler, so sla_bounded_rate may return 0 without scanning where
the bound misses the SLA (the scan's own answer there) and skip the scanned rates where it does."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analytic import Context, build_design
from engine.analytic import operating_point as op
from engine.analytic.operating_point import capacity, scan_rates, sla_bounded_rate, sla_latency
from engine.analytic.sla_bound import BOUND_MARGIN, sla_latency_lower_bound, sla_latency_lower_bounds
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario

BATCHINGS = [{"policy": "preba"}, {"policy": "fixed", "max_batch": 8, "max_queue_delay_ms": 2},
             {"policy": "work-conserving"}, {"policy": "none"}]


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def _design(ctx, **changes):
    return build_design(load_scenario({**DEFAULT_SCENARIO, **changes}), ctx)


@pytest.mark.parametrize("layout", [None, ["7g.80gb"], ["3g.40gb", "4g.40gb"]])
@pytest.mark.parametrize("scheduler", ["fifs", "round-robin"])
@pytest.mark.parametrize("batching", BATCHINGS)
@pytest.mark.parametrize("device", ["none", "cpu", "dpu"])
def test_the_bound_is_below_the_sla_latency_at_every_rate(ctx, layout, scheduler, batching, device):
    gpu = {**DEFAULT_SCENARIO["gpu"], "sku": "A100-SXM4-80GB"}
    if layout is not None:
        gpu["layout"] = layout
    design = _design(ctx, gpu=gpu, scheduler={"policy": scheduler}, batching=batching,
                     preprocessing={**DEFAULT_SCENARIO["preprocessing"], "device": device})
    bound = sla_latency_lower_bound(design)
    assert bound > 0
    cap = capacity(design)[0]
    rates = np.concatenate([scan_rates(design, cap), cap * np.array([1e-4, 0.01, 0.3, 0.77, 0.999])])
    latency = np.array([sla_latency(design, float(r)) for r in rates])
    at_rates = sla_latency_lower_bounds(design, rates)
    assert np.all(at_rates >= bound * (1 - 1e-12))  # the host waits and the batching wait only add
    assert np.all(latency - at_rates * (1 - BOUND_MARGIN) >= 0)


def test_a_design_whose_bound_misses_the_sla_is_the_scan_s_zero(ctx, monkeypatch):
    """CPU preprocessing on the default host cannot meet 15 ms at any load (the README's latency floor): the bound
    says so, and the scan without the bound finds no passing rate either; with a looser SLA neither holds."""
    design = _design(ctx)
    assert sla_latency_lower_bound(design) > design.sla_s
    assert sla_bounded_rate(design) == 0.0
    monkeypatch.setattr(op, "sla_latency_lower_bound", lambda d: 0.0)
    assert sla_bounded_rate(design) == 0.0
    monkeypatch.undo()
    loose = _design(ctx, workload={**DEFAULT_SCENARIO["workload"], "sla": {"latency_ms": 40.0, "percentile": 99}})
    assert sla_latency_lower_bound(loose) < loose.sla_s
    assert sla_bounded_rate(loose) > 0
