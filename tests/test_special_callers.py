"""The callers of engine.analytic.special on their fast paths: the mixture quantile's two ways of summing (a Python
loop up to MIXTURE_LOOP components, numpy above) and its memory of recent mixtures; the timer batch wait over the
Erlang CDFs, against the same formula over scipy.special.gammainc and scipy's brentq."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.special import gammainc

from engine.analytic import queueing, service_laws
from engine.analytic.service_laws import lognormal_mixture_quantile

parts = st.lists(st.tuples(st.floats(1e-6, 1.0), st.floats(-9, -1), st.floats(0.003, 1.2)), min_size=2,
                 max_size=service_laws.MIXTURE_LOOP)


@given(parts, st.sampled_from([0.5, 0.9, 0.99, 0.999]))
def test_the_loop_and_the_arrays_find_the_same_quantile(mixture, p):
    """The same Halley steps, summed in another order: both within the steps' own tolerance (1e-10 in log t) of each
    other, so within 1e-10 relative in t (a flat stretch of S at 1 - p aside, where any point of it is a root)."""
    w, mu, sigma = (np.array(x) for x in zip(*mixture))
    w = w / w.sum()
    loop = lognormal_mixture_quantile(w, mu, sigma, p)
    service_laws._mixture_quantile.cache_clear()
    saved = service_laws.MIXTURE_LOOP
    service_laws.MIXTURE_LOOP = 0
    try:
        arrays = lognormal_mixture_quantile(w, mu, sigma, p)
    finally:
        service_laws.MIXTURE_LOOP = saved
        service_laws._mixture_quantile.cache_clear()
    if loop != pytest.approx(arrays, rel=1e-10):
        survival = [float(np.dot(w, 0.5 * np.array([math.erfc((math.log(t) - m) / s / math.sqrt(2))
                                                    for m, s in zip(mu, sigma)]))) for t in (loop, arrays)]
        assert survival == pytest.approx([1 - p, 1 - p], abs=1e-12)


def test_the_mixture_quantile_remembers_values_not_arrays():
    """Its memory is keyed by the arrays' contents: an array changed in place is a new mixture, and a strided or
    integer-valued view is the same mixture as its contiguous float copy."""
    w = np.array([0.2, 0.5, 0.3])
    mu = np.array([-6.0, -5.0, -4.5])
    sigma = np.array([0.1, 0.2, 0.05])
    first = lognormal_mixture_quantile(w, mu, sigma, 0.99)
    assert lognormal_mixture_quantile(w, mu, sigma, 0.99) == first
    assert lognormal_mixture_quantile(w, mu, sigma, 0.9) < first
    mu += 1.0
    assert lognormal_mixture_quantile(w, mu, sigma, 0.99) == pytest.approx(first * math.e, rel=1e-12)
    wide = np.zeros((3, 2))
    wide[:, 0] = sigma
    assert lognormal_mixture_quantile(w, mu, wide[:, 0], 0.99) == lognormal_mixture_quantile(w, mu, sigma, 0.99)
    assert lognormal_mixture_quantile(np.array([1, 1]), np.array([-5, -4]), np.array([0.1, 0.1]), 0.5) == \
        lognormal_mixture_quantile(np.array([1.0, 1.0]), np.array([-5.0, -4.0]), np.array([0.1, 0.1]), 0.5)


def _timer_wait_by_scipy(service_mean, service_sigma, servers, time_queue, lam, p):
    """queueing.timeout_batch_wait's formula as it was written over scipy.special.gammainc (same nodes)."""
    k = max(1, int(servers))
    s = service_mean * np.exp(service_sigma * queueing.SERVICE_Z - service_sigma ** 2 / 2)
    y = np.maximum(s - k * time_queue, 0.0)
    mean = float(np.mean(y * gammainc(k, lam * y) - (k / lam) * gammainc(k + 1, lam * y)))

    def exceed(w):
        return float(np.mean(gammainc(k, lam * np.maximum(y - w, 0.0))))

    if exceed(0.0) <= 1 - p:
        return mean, 0.0
    return mean, brentq(lambda w: exceed(w) - (1 - p), 0.0, float(y.max()), xtol=1e-12, rtol=1e-9)


@given(st.floats(1e-4, 0.05), st.floats(0.0, 0.8), st.integers(1, 12), st.floats(0.0, 0.01), st.floats(1.0, 2e4),
       st.sampled_from([0.9, 0.99]))
def test_timer_batch_wait_is_the_formula_over_scipys_gammainc(service_mean, sigma, servers, time_queue, lam, p):
    """The mean to ~1e-13 (it subtracts two terms of the same size: scipy's own gammainc errors, ~1e-14, show
    there), the quantile to brentq's tolerance; both 0 where no node outlasts the timers."""
    queueing.timeout_batch_wait.cache_clear()
    mean, q = queueing.timeout_batch_wait(service_mean, sigma, servers, time_queue, lam, p)
    ref_mean, ref_q = _timer_wait_by_scipy(service_mean, sigma, servers, time_queue, lam, p)
    assert mean == pytest.approx(ref_mean, rel=1e-11, abs=1e-300)
    assert q == pytest.approx(ref_q, rel=1e-8, abs=4e-12)
    if not ref_mean:
        assert mean == 0.0 and q == 0.0


def test_timer_batch_wait_remembers_by_value():
    args = (0.004, 0.3, 3, 0.0005, 900.0, 0.99)
    first = queueing.timeout_batch_wait(*args)
    assert first[0] > 0 and first[1] > 0
    assert queueing.timeout_batch_wait(*(np.float64(a) for a in args[:2]), 3, *args[3:]) == first
    assert queueing.timeout_batch_wait(*args[:4], 1800.0, 0.99) != first
