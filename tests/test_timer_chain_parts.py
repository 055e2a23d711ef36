"""The timeout-batching chain's building blocks against their definitions, computed the slow way: the waits in
a timer window for every number waiting at once, and the batch-size law as a convolution."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.integrate import simpson
from scipy.stats import poisson

from engine.analytic.timerqueue import NEGLIGIBLE_LOG_PMF, _batch_sizes, _Chain, _negligible_count, _timer_windows


@given(st.floats(10.0, 5000.0), st.floats(0.0, 0.05), st.integers(2, 20))
def test_window_waits_by_definition(lam, r, cap):
    wait, area, pois = _timer_windows(lam, np.array(r), cap)
    # E[min(r, T_m)] with T_m the m-th arrival: integral_0^r P(N(t) < m) dt, by Simpson's rule on a fine grid
    t = np.linspace(0.0, r, 4001)
    pmf = poisson.pmf(np.arange(cap)[:, None], lam * t[None, :])  # (k, t)
    for q in range(1, cap):
        m = cap - q
        below, mean_count = pmf[:m].sum(axis=0), (np.arange(m)[:, None] * pmf[:m]).sum(axis=0)
        assert wait[q - 1] == pytest.approx(simpson(below, x=t), rel=1e-5, abs=1e-12)
        assert area[q - 1] == pytest.approx(simpson(mean_count, x=t), rel=1e-5, abs=1e-12)
    assert pois == pytest.approx(poisson.pmf(np.arange(cap), lam * r), rel=1e-9, abs=1e-15)


@given(st.integers(2, 12), st.integers(0, 2**32 - 1))
def test_batch_sizes_are_q_plus_capped_arrivals(cap, seed):
    rng = np.random.default_rng(seed)
    weight = rng.random((3, cap - 1))
    pois = rng.random((3, cap))
    pois /= pois.sum(axis=1, keepdims=True) * rng.uniform(1.0, 1.5)  # a law with mass beyond cap - 1 arrivals
    out = _batch_sizes(weight, pois)
    expected = np.zeros((3, cap))
    for row in range(3):
        for q in range(1, cap):
            for size in range(1, cap):
                if size >= q:
                    expected[row, size - 1] += weight[row, q - 1] * pois[row, size - q]
            expected[row, cap - 1] += weight[row, q - 1] * (1 - sum(pois[row, :cap - q]))
    assert out == pytest.approx(expected, abs=1e-12)


@given(st.lists(st.floats(1e-3, 200.0), min_size=1, max_size=6), st.integers(1, 40), st.integers(0, 500))
def test_chain_arrival_law_is_the_poisson_law_with_its_tail_last(means, cap, extra):
    """_Chain.poisson works out only the counts below _negligible_count of the largest mean: every term it
    leaves 0.0 is below e^NEGLIGIBLE_LOG_PMF in the full law, the rest are the Poisson pmf, and the last entry holds
    the mass beyond the axis."""
    chain = _Chain(lam=1.0, cap=cap, states=cap + extra)
    n = chain.states + chain.cap
    got = chain.poisson(np.array(means))
    full = poisson.pmf(np.arange(n)[None, :], np.array(means)[:, None])
    tail = poisson.sf(n - 2, np.array(means))  # P(N >= n - 1): the last entry's share
    left_out = got[:, :-1] == 0.0
    assert np.all(full[:, :-1][left_out] < np.exp(NEGLIGIBLE_LOG_PMF + 1e-9))
    assert got[:, :-1][~left_out] == pytest.approx(full[:, :-1][~left_out], rel=1e-9, abs=1e-300)
    assert got[:, -1] == pytest.approx(tail, rel=1e-6, abs=1e-12)  # 1 - sum over ~500 terms: rounding ~1e-13
    top = _negligible_count(max(means))
    assert top > max(means) and poisson.logpmf(top, max(means)) < NEGLIGIBLE_LOG_PMF
