"""The SLA-bounded rate's root finding: the shared scan lattice, the Illinois refinement against plain bisection,
and the log-normal mixture quantile against a textbook root finder on its survival function."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.special import ndtr

from engine.analytic import Context, build_design, evaluate
from engine.analytic.operating_point import capacity, scan_rates, sla_bounded_rate, sla_latency
from engine.analytic.service_laws import lognormal_mixture_quantile
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def _design(ctx, **changes):
    raw = {**DEFAULT_SCENARIO, **changes}
    return build_design(load_scenario(raw), ctx)


def _bisection(design, rtol=1e-9):
    """The former refinement: the same scan, then plain bisection to a far finer resolution."""
    cap = capacity(design)[0]
    grid = scan_rates(design, cap)
    ok = [sla_latency(design, r) <= design.sla_s for r in grid]
    if not any(ok):
        return 0.0
    i = max(k for k, v in enumerate(ok) if v)
    lo, hi = grid[i], (grid[i + 1] if i + 1 < len(grid) else cap)
    while hi - lo > rtol * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sla_latency(design, mid) <= design.sla_s else (lo, mid)
    return lo


@pytest.mark.parametrize("device", ["none", "cpu", "dpu", "gpu"])
@pytest.mark.parametrize("batching", [{"policy": "preba"}, {"policy": "fixed", "max_batch": 8, "max_queue_delay_ms": 2},
                                      {"policy": "none"}])
def test_illinois_refinement_lands_where_bisection_does(ctx, device, batching):
    design = _design(ctx, preprocessing={**DEFAULT_SCENARIO["preprocessing"], "device": device}, batching=batching)
    fast, slow = sla_bounded_rate(design), _bisection(design)
    assert fast <= slow * (1 + 1e-9)  # never above the bound: the bracket's low end always passes
    assert fast == pytest.approx(slow, rel=2e-6)
    if fast > 0:
        assert sla_latency(design, fast) <= design.sla_s


def test_designs_that_share_a_gpu_side_scan_the_same_rates(ctx):
    """A search's preprocessing devices share the GPU side; their scans fall on its lattice, so its state at
    each rate is worked out once."""
    pre = DEFAULT_SCENARIO["preprocessing"]
    gpu_bound, dpu = (_design(ctx, preprocessing={**pre, "device": d}) for d in ("none", "dpu"))
    assert gpu_bound.gpu is dpu.gpu
    a, b = (set(scan_rates(d, capacity(d)[0])[:-1].round(9)) for d in (gpu_bound, dpu))
    assert len(a & b) >= 0.9 * len(b)
    for design in (gpu_bound, dpu):
        cap = capacity(design)[0]
        grid = scan_rates(design, cap)
        assert len(grid) >= 24 and grid[-1] < cap and np.all(np.diff(grid) > 0)


@given(st.lists(st.tuples(st.floats(0.01, 1.0), st.floats(-9, -1), st.floats(0.01, 1.2)), min_size=1, max_size=40),
       st.sampled_from([0.5, 0.9, 0.95, 0.99, 0.999]))
@example(parts=[(0.5, -1.0, 0.01), (0.5, -9.0, 0.01)], p=0.5)  # found by hypothesis: a flat median
# narrow parts far apart and a far one of tiny weight (the wide search space's batch laws): S is flat beside
# steep edges, where an unbounded Halley correction once crept to a false root (0.0111 s for 0.0101 s)
@example(parts=[(0.6, -5.2, 0.007), (0.3, -6.8, 0.03), (0.1, -4.6, 0.005), (1e-6, -3.1, 0.0035)], p=0.99)
def test_mixture_quantile_matches_brent_on_the_survival_function(parts, p):
    w, mu, sigma = (np.array(x) for x in zip(*parts))
    w = w / w.sum()

    def exceed(t):
        return float(np.dot(w, ndtr(-(math.log(t) - mu) / sigma))) - (1 - p)

    lo, hi = math.exp(mu.min() - 6 * sigma.max()), math.exp(mu.max() + 8 * sigma.max())
    expected = brentq(exceed, lo, hi, xtol=1e-300, rtol=1e-12)
    got = lognormal_mixture_quantile(w, mu, sigma, p)
    if got != pytest.approx(expected, rel=1e-8):
        # Far-apart parts (weights .5/.5, mu -1 and -9, p .5) leave the survival function flat at 1 - p over a whole
        # stretch: every point of it is a p-quantile, and the two roots may be different points of it.
        assert exceed(got) == pytest.approx(0, abs=1e-12) and exceed(expected) == pytest.approx(0, abs=1e-12)
        assert exceed(math.sqrt(got * expected)) == pytest.approx(0, abs=1e-12)


def test_an_unbatched_whole_gpu_is_evaluated_up_to_capacity(ctx):
    """ResNet-50 unbatched on a whole A100: the SLA search probes rates within 1e-9 of capacity, where the M/G/1
    tail's root bracket once failed; the answer must be a rate below capacity, not an error."""
    scenario = load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB"},
                              "preprocessing": {"device": "none"}, "batching": {"policy": "none"}}, ctx.book)
    ev = evaluate(scenario, ctx)
    assert 0 < ev.sla_bounded_rps <= ev.capacity_rps and math.isfinite(ev.sla.latency_at_rate_ms)
