"""The simulator against queueing theory: M/M/1, M/M/c (c = 7, Erlang C) and M/D/1 waiting times, mean and p99,
within sampling error; Little's law within 2 %.

The GPU side runs with a synthetic service (ServiceSpec, host stages left out, no batching, one query per
job), so a layout of c partitions under first-idle-first-serve is an M/G/c queue; the host-stage pools
(engine.sim.hoststages) are checked against the same formulas. Tolerances: 200,000 customers (50,000 for
the pools' M/M/7 at a lower load); the relative standard error of a mean wait at load 0.7 is then about
1-2 %, so the mean must be within 4 % and within 3 batch-means half-widths, and p99 within 5 %.
"""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from engine.analytic import Context, build_design
from engine.analytic.queueing import md1_wait_mean, mmc_wait_mean, mmc_wait_quantile
from engine.scenario import load_scenario
from engine.sim import ServiceSpec, simulate_design
from engine.sim.hoststages import fifo_pool
from engine.sim.result import t975

N = 200_000
RHO = 0.7
MEAN_S = 1e-3


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def design(ctx, layout):
    sc = load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "layout": layout},
                        "batching": {"policy": "none"}, "preprocessing": {"device": "none"}}, ctx.book)
    return build_design(sc, ctx)


def md1_wait_cdf(t: float, lam: float, d: float) -> float:
    """P(W <= t) of M/D/1 (Erlang 1909; Gross and Harris eq. 5.107):
    (1 - rho) sum_{k=0}^{floor(t/d)} (lam (k d - t))^k / k! exp(-lam (k d - t)).
    The series alternates, so it is summed with 60 significant digits (decimal)."""
    with localcontext() as c:
        c.prec = 60
        lam_, d_, t_ = Decimal(lam), Decimal(d), Decimal(t)
        total = Decimal(0)
        for k in range(int(t // d) + 1):
            x = lam_ * (k * d_ - t_)
            total += (x ** k if k else Decimal(1)) / math.factorial(k) * (-x).exp()
        return float((1 - lam_ * d_) * total)


def md1_wait_quantile(p: float, lam: float, d: float) -> float:
    lo, hi = 0.0, 200 * d
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if md1_wait_cdf(mid, lam, d) < p else (lo, mid)
    return hi


def batch_means_hw(x: np.ndarray, k: int = 20) -> float:
    g = np.array([c.mean() for c in np.array_split(x, k)])
    return t975(k - 1) * g.std(ddof=1) / math.sqrt(k)


CASES = {
    "M/M/1": (None, 1, "exponential"),
    "M/M/7": (["1g.5gb"] * 7, 7, "exponential"),
    "M/D/1": (None, 1, "deterministic"),
}


@pytest.fixture(scope="module")
def runs(ctx):
    out = {}
    for name, (layout, c, kind) in CASES.items():
        lam = RHO * c / MEAN_S
        res = simulate_design(design(ctx, layout), N, seed=11, rate=lam, ctx=ctx, warmup=0.05,
                              service=ServiceSpec(kind=kind, mean_ms=MEAN_S * 1e3, host="none"))
        rec = res.records
        wait = (rec["batch_start"] - rec["arrival"])[rec.measured_from:]
        out[name] = (res, wait, lam, c, kind)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_mean_wait_matches_theory(runs, name):
    res, wait, lam, c, kind = runs[name]
    theory = mmc_wait_mean(lam, 1 / MEAN_S, c) if kind == "exponential" else md1_wait_mean(lam, MEAN_S)
    sim = wait.mean()
    assert abs(sim / theory - 1) < 0.04, (name, sim, theory)
    assert abs(sim - theory) < 3 * batch_means_hw(wait), (name, sim, theory)


@pytest.mark.parametrize("name", list(CASES))
def test_p99_wait_matches_theory(runs, name):
    res, wait, lam, c, kind = runs[name]
    theory = (mmc_wait_quantile(lam, 1 / MEAN_S, c, 0.99) if kind == "exponential"
              else md1_wait_quantile(0.99, lam, MEAN_S))
    assert abs(np.quantile(wait, 0.99) / theory - 1) < 0.05, (name, np.quantile(wait, 0.99), theory)


@pytest.mark.parametrize("name", list(CASES))
def test_littles_law(runs, name):
    res = runs[name][0]
    lt = res.little
    assert lt["rel_error"] < 0.02
    assert res.mean_in_system == pytest.approx(res.throughput_rps * lt["W_s"], rel=0.02)
    assert res.throughput_rps == pytest.approx(runs[name][2], rel=0.02)


def test_md1_cdf_formula_is_sane():
    lam, d = 700.0, 1e-3
    assert md1_wait_cdf(0.0, lam, d) == pytest.approx(1 - lam * d)
    # mean from the CDF (integral of the survival function) equals Pollaczek-Khinchine
    ts = np.linspace(0, 40 * d, 2001)
    surv = np.array([1 - md1_wait_cdf(t, lam, d) for t in ts])
    assert np.trapezoid(surv, ts) == pytest.approx(md1_wait_mean(lam, d), rel=2e-3)


def test_host_pool_is_an_mmc_queue():
    rng = np.random.default_rng(3)
    n, c, mu, lam = 300_000, 7, 1000.0, 0.6 * 7 * 1000.0
    arrive = np.cumsum(rng.exponential(1 / lam, n))
    svc = rng.exponential(1 / mu, n)
    start, end = fifo_pool(arrive, svc, c)
    wait = (start - arrive)[n // 20:]
    assert wait.mean() == pytest.approx(mmc_wait_mean(lam, mu, c), rel=0.05)
    assert np.quantile(wait, 0.99) == pytest.approx(mmc_wait_quantile(lam, mu, c, 0.99), rel=0.05)
    np.testing.assert_allclose(end - start, svc, rtol=0, atol=1e-12)


def test_lindley_closed_form_equals_the_heap_recursion():
    rng = np.random.default_rng(4)
    arrive = np.cumsum(rng.exponential(1.0, 20_000))
    svc = rng.exponential(0.8, 20_000)
    s1, e1 = fifo_pool(arrive, svc, 1)
    s2 = np.empty_like(arrive)
    free = 0.0
    for i, (a, s) in enumerate(zip(arrive, svc)):
        s2[i] = max(a, free)
        free = s2[i] + s
    np.testing.assert_allclose(s1, s2, rtol=0, atol=1e-9)
