"""The SLA-bounded scan's array path (engine.analytic.gather_scan, rate_scan.gather_points,
operating_point._scan_latencies) against the scalar step it stands in for, rate by rate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.analytic import Context, build_design
from engine.analytic.operating_point import _scan_latencies, capacity, scan_rates, sla_latency
from engine.analytic.rate_scan import gather_points, scans_as_array
from engine.analytic.rates import compute_gpu_point, gpu_capacity_rps
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario

FIELDS = ("utilization", "batching_wait_mean_s", "batching_wait_q_s", "queue_wait_mean_s", "queue_wait_q_s",
          "service_mean_s", "service_q_s")


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def _design(ctx, **changes):
    return build_design(load_scenario({**DEFAULT_SCENARIO, **changes}), ctx)


CASES = [dict(batching={"policy": "preba"}),
         dict(batching={"policy": "fixed", "max_batch": 16, "max_queue_delay_ms": 2}),
         dict(batching={"policy": "fixed", "max_batch": 32, "max_queue_delay_ms": 5},
              gpu={"sku": "A100-SXM4-80GB", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}),
         dict(batching={"policy": "work-conserving"},
              gpu={"sku": "A100-SXM4-80GB", "layout": ["1g.10gb"] * 7}),
         dict(batching={"policy": "preba"}, gpu={"sku": "A100-SXM4-80GB", "layout": ["4g.40gb", "3g.40gb"]},
              scheduler={"policy": "jsq"}),
         dict(batching={"policy": "fixed", "max_batch": 16, "max_queue_delay_ms": 2},
              gpu={"sku": "A100-SXM4-80GB", "layout": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]},
              scheduler={"policy": "round-robin"}),
         dict(batching={"policy": "preba"}, gpu={"sku": "A100-SXM4-80GB", "layout": ["2g.20gb"] * 3 + ["1g.10gb"]},
              scheduler={"policy": "round-robin"})]


def _close(a: float, b: float) -> bool:
    return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-12))


@pytest.mark.parametrize("case", CASES)
def test_array_points_equal_the_scalar_step(ctx, case):
    design = _design(ctx, **case)
    if not scans_as_array(design.gpu, design.scheduler):
        pytest.skip("the scalar step's own wait model")
    gpu_cap = gpu_capacity_rps(design.gpu, design.q_mean, design.q_pmf, design.scheduler)
    # the scan's lattice, then the saturated regime up to and beyond what Batch_max carries
    lams = np.concatenate([scan_rates(design, capacity(design)[0]), gpu_cap * np.array([0.97, 0.999, 1.0, 1.2])])
    many = gather_points(design.gpu, design.scheduler, lams, design.q_mean, design.q_pmf, design.sla_percentile)
    for lam, got in zip(lams, many):
        want = compute_gpu_point(design.gpu, design.scheduler, float(lam), design.q_mean, design.q_pmf,
                          design.sla_percentile)
        assert got.saturated == want.saturated
        for name in FIELDS:
            assert _close(getattr(got, name), getattr(want, name)), (lam, name)
        assert all(_close(a, b) for a, b in zip(got.batch + got.partition_utilization,
                                                want.batch + want.partition_utilization))


@pytest.mark.parametrize("device", ["none", "cpu", "dpu"])
@pytest.mark.parametrize("case", CASES[:2])
def test_scan_latencies_equal_sla_latency(ctx, device, case):
    design = _design(ctx, preprocessing={**DEFAULT_SCENARIO["preprocessing"], "device": device}, **case)
    cap = capacity(design)[0]
    rates = np.concatenate([scan_rates(design, cap), [cap * 1.01]])
    got = _scan_latencies(design, rates)
    for r, g in zip(rates, got):
        assert _close(float(g), sla_latency(design, float(r))), r
