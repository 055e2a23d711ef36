"""Workload generators and host-stage sampling: the simulator samples the distributions the analytic model
averages."""

import math

import numpy as np
import pytest

from engine.analytic import Context, build_design
from engine.scenario import load_scenario
from engine.sim import SimError, SimWorkload
from engine.sim.hoststages import lognormal, per_item_fraction, pool_shape, run_host
from engine.sim.workload import generate, mlperf_bound_ms, poisson_times, sample_sizes
from engine.stages import StageCost


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def test_poisson_rate_and_duration():
    rng = np.random.default_rng(1)
    t = poisson_times(2000.0, 200_000, None, rng)
    assert np.all(np.diff(t) >= 0)
    assert 1 / np.mean(np.diff(t)) == pytest.approx(2000, rel=0.01)
    d = poisson_times(2000.0, None, 5.0, rng)
    assert d.max() < 5.0 and len(d) == pytest.approx(10_000, rel=0.05)


def test_lognormal_query_sizes_follow_the_designs_pmf(ctx):
    sc = load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"},
                        "workload": {"query_size": {"kind": "lognormal", "mu": 1.5, "sigma": 1.0, "max_size": 32}}},
                       ctx.book)
    d = build_design(sc, ctx)
    s = sample_sizes(d.q_pmf, 200_000, np.random.default_rng(2))
    assert s.min() >= 1 and s.max() <= 32
    freq = np.bincount(s, minlength=33)[1:] / len(s)
    np.testing.assert_allclose(freq, d.q_pmf, atol=0.004)
    assert s.mean() == pytest.approx(d.q_mean, rel=0.01)


def test_input_lengths_and_multi_stream(ctx):
    sc = load_scenario({"model": "jasper", "gpu": {"sku": "A100-SXM4-80GB"},
                        "workload": {"input_len": {"kind": "uniform", "low": 2, "high": 16}}}, ctx.book)
    d = build_design(sc, ctx)
    rngs = [np.random.default_rng(i) for i in range(3)]
    a = generate(SimWorkload(), d, 50_000, None, rngs, True, rate=100.0)
    assert a.length.min() >= 2 and a.length.max() <= 16 and a.length.mean() == pytest.approx(9, rel=0.02)
    m = generate(SimWorkload(kind="multi-stream", samples_per_query=8), d, 10, None, rngs, True)
    assert m.closed_loop and np.all(m.size == 8) and np.all(np.isnan(m.t))
    with pytest.raises(SimError, match="offline: give n_requests"):
        generate(SimWorkload(kind="offline"), d, None, 1.0, rngs, False)


def test_mlperf_bounds():
    assert mlperf_bound_ms("resnet50") == 15.0
    assert mlperf_bound_ms("bert-large") == 130.0
    assert mlperf_bound_ms("jasper") == 1000.0  # speech models stand in for RNN-T
    assert mlperf_bound_ms("lenet") == 100.0  # issue 12: the analytic engine's DEFAULT_SLA_MS, one constant


def test_stage_sampling_keeps_mean_and_scv():
    x = lognormal(2e-3, 0.3, 400_000, np.random.default_rng(3))
    assert x.mean() == pytest.approx(2e-3, rel=0.01)
    assert x.var() / x.mean() ** 2 == pytest.approx(0.3, rel=0.05)
    assert np.all(lognormal(1e-3, 0.0, 5, np.random.default_rng(0)) == 1e-3)


def test_in_place_draws_are_the_plain_expressions_floats():
    """Arrival times and host service draws are computed in their draws' own array (issue 19: fewer new pages
    in a fresh process); a seed's numbers must stay those of the plain expressions, to the last bit."""
    times = poisson_times(1234.5, 50_000, None, np.random.default_rng(5))
    np.testing.assert_array_equal(times, np.cumsum(np.random.default_rng(5).standard_exponential(50_000)) / 1234.5)
    cut = poisson_times(1234.5, None, 3.0, np.random.default_rng(6))
    enough = int(1234.5 * 3.0 + 6 * math.sqrt(1234.5 * 3.0) + 16)
    plain = np.cumsum(np.random.default_rng(6).standard_exponential(enough)) / 1234.5
    np.testing.assert_array_equal(cut, plain[plain < 3.0])
    variance = math.log1p(0.3)
    plain = 2e-3 * np.exp(math.sqrt(variance) * np.random.default_rng(7).standard_normal(50_001) - variance / 2)
    np.testing.assert_array_equal(lognormal(2e-3, 0.3, 50_001, np.random.default_rng(7)), plain)


def test_pool_shape_follows_the_capacity_cap():
    cores = StageCost(name="rpc", service_s=1e-3, servers=8, capacity_rps=8000.0)
    assert pool_shape(cores) == (8, pytest.approx(1e-3))
    link = StageCost(name="rpc", service_s=1e-3, servers=8, capacity_rps=2500.0)  # a link caps it at 2.5 servers
    k, mean = pool_shape(link)
    assert k == 2 and k / mean == pytest.approx(2500.0)
    assert pool_shape(StageCost(name="x", service_s=0.0, capacity_rps=1e9)) == (0, 0.0)


def test_per_item_part_scales_with_query_size_and_keeps_the_mean():
    st = StageCost(name="host_cpu", service_s=3e-3, servers=4, scv=0.0, capacity_rps=4 / 3e-3,
                   breakdown_s={"server_proc": 1e-3, "preprocess_cpu": 2e-3})
    assert per_item_fraction(st) == pytest.approx(2 / 3)
    sizes = np.array([1, 3] * 1000)
    h = run_host((st,), np.zeros(len(sizes)), sizes, 2.0, [np.random.default_rng(0)], isolated=True)
    svc = h.end[0] - h.start[0]
    assert svc[0] == pytest.approx(1e-3 + 2e-3 / 2) and svc[1] == pytest.approx(1e-3 + 2e-3 * 3 / 2)
    assert svc.mean() == pytest.approx(3e-3)
