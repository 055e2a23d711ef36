"""engine.analytic.special against scipy.special (which it replaces on the evaluate path) and, for the incomplete
gamma function at the callers' integer shapes, against an exact sum in 60-digit decimal arithmetic."""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
import scipy.special as sc
from hypothesis import given
from hypothesis import strategies as st

from engine.analytic import special

finite = dict(allow_nan=False, allow_infinity=False)


def _close(ours, ref, rel: float, abs_: float = 0.0) -> bool:
    return abs(float(ours) - float(ref)) <= rel * abs(float(ref)) + abs_


@given(st.floats(-10.0, 10.0, **finite))
def test_ndtr_matches_scipy_where_the_formulas_evaluate_it(x):
    """Standardised log-time distances of a batch law's components: |x| <= 10 (Phi ~ 1e-23 at the edge)."""
    assert _close(special.ndtr(x), sc.ndtr(x), 1e-14)
    assert _close(special.ndtr(x) + special.ndtr(-x), 1.0, 0.0, 2e-16)  # symmetric: Phi(x) + Phi(-x) = 1


@given(st.floats(-37.5, -10.0, **finite))
def test_ndtr_keeps_its_relative_precision_in_the_far_lower_tail(x):
    """Both are erfc(|x| / sqrt 2) / 2 there, whose rounding of x / sqrt 2 costs ~x^2 ulps (scipy's more: Cephes
    also rounds exp(-z^2)); a 1 - erf(...) form would return 0 from x ~ -8.3 on."""
    assert _close(special.ndtr(x), sc.ndtr(x), 2e-13)


def test_ndtr_keeps_scipys_shapes_and_limits():
    assert isinstance(special.ndtr(0.3), np.float64) and special.ndtr(0.0) == 0.5
    grid = np.linspace(-5, 5, 12).reshape(3, 4)
    assert special.ndtr(grid).shape == (3, 4)
    np.testing.assert_allclose(special.ndtr(grid), sc.ndtr(grid), rtol=1e-14)  # Phi(-5): ours 9e-16 off, scipy's 2e-15
    assert special.ndtr(-math.inf) == 0.0 and special.ndtr(math.inf) == 1.0 and math.isnan(special.ndtr(math.nan))


@given(st.floats(1e-300, 1.0, exclude_max=True, **finite))
def test_ndtri_matches_scipy(p):
    assert _close(special.ndtri(p), sc.ndtri(p), 1e-14, 1e-300)


@given(st.floats(1e-6, 0.5, **finite))
def test_ndtri_inverts_ndtr(p):
    """Within |x| < 4.8: further out Phi's relative slope x amplifies ndtri's rounding ~x^2 times in the round trip."""
    assert _close(special.ndtr(special.ndtri(p)), p, 1e-14)


def test_ndtri_at_and_beyond_its_ends_is_scipys():
    ends = np.array([0.0, 1.0, -0.1, 1.1, math.nan])
    np.testing.assert_array_equal(special.ndtri(ends), sc.ndtri(ends))
    nodes = (np.arange(64) + 0.5) / 64  # the quadrature nodes of the formulas
    np.testing.assert_allclose(special.ndtri(nodes), sc.ndtri(nodes), rtol=1e-15, atol=1e-300)


@given(st.integers(0, 10**6))
def test_gammaln_gives_the_log_factorials(k):
    """The callers' gammaln(k + 1) = log k!: 0 for k = 0 and 1, otherwise to 1e-14 relative."""
    assert _close(special.gammaln(k + 1.0), sc.gammaln(k + 1.0), 1e-14)


@given(st.floats(-50.0, 1000.0, allow_subnormal=False, **finite))
def test_gammaln_matches_scipy_on_the_reals(x):
    """log |Gamma| passes through 0 at 1 and 2, where only an absolute bound holds; inf at the poles. (Not at
    subnormal x, where scipy answers inf and math.lgamma the finite -log x.)"""
    ref = sc.gammaln(x)
    if math.isinf(ref):
        assert special.gammaln(x) == math.inf
    else:
        assert _close(special.gammaln(x), ref, 1e-13, 1e-15)


def test_gammaln_poles_are_infinite():
    np.testing.assert_array_equal(special.gammaln(np.array([0.0, -1.0, -7.0])), [math.inf] * 3)


def _lower_gamma_exact(a: int, x: float) -> float:
    """P(a, x) = e^-x sum_{j >= a} x^j / j! (integer a), summed in 60-digit decimals until the terms vanish."""
    if x == 0.0:
        return 0.0  # every term 0 (the loop below would wait for a term below 0)
    with localcontext() as ctx:
        ctx.prec = 60
        big_x = Decimal(x)
        term = (-big_x).exp()
        for j in range(1, a + 1):
            term = term * big_x / j
        total, j = term, a
        while not (j > x and term < total * Decimal("1e-40")):
            j += 1
            term = term * big_x / j
            total += term
        return float(total)


@given(st.integers(1, 100), st.one_of(st.floats(1e-12, 1.0), st.floats(0.0, 500.0)))
def test_gammainc_at_integer_shapes_is_exact_to_a_few_ulps(a, x):
    """The callers' shape is a count of servers: there P(a, x) is a Poisson tail, summed exactly in decimals. The
    series' and the fraction's prefactor is formed as a product (scipy's as exp(a log x - ...), whose rounding
    costs it up to ~1e-13 here), so the answer holds to 4e-15 relative while above the subnormal range."""
    ref = _lower_gamma_exact(a, x)
    if ref > 1e-290:
        assert _close(special.gammainc(a, x), ref, 4e-15)
    else:
        assert special.gammainc(a, x) <= 1e-290


@given(st.floats(0.05, 60.0), st.floats(0.0, 300.0))
def test_gammainc_matches_scipy_at_any_shape(a, x):
    """Beyond the callers' integer shapes: within scipy's own error (above) of scipy, and absolutely to 1e-15."""
    assert _close(special.gammainc(a, x), sc.gammainc(a, x), 2e-13, 1e-15)


def test_gammainc_on_arrays_of_waits_keeps_shape_and_zeros():
    """The callers pass Gamma arguments lam * y with most y zero (no wait): P(a, 0) = 0 exactly."""
    x = np.array([[0.0, 0.3, 0.0], [2.5, 0.0, 40.0]])
    out = special.gammainc(7, x)
    assert out.shape == (2, 3) and out[0, 0] == out[0, 2] == out[1, 1] == 0.0
    np.testing.assert_allclose(out, sc.gammainc(7, x), rtol=1e-13)
    assert isinstance(special.gammainc(3, 0.5), np.float64)
    assert special.gammainc(3, math.inf) == 1.0 and math.isnan(special.gammainc(3, -1.0))


@pytest.mark.parametrize("a", [0.0, -1.0, math.inf, math.nan])
def test_gammainc_refuses_a_shape_that_is_not_positive(a):
    with pytest.raises(ValueError):
        special.gammainc(a, 1.0)


@given(st.integers(1, special._ERLANG_SHAPES), st.one_of(st.floats(1e-12, 1.0), st.floats(0.0, 60.0),
                                                        st.floats(60.0, 800.0)))
def test_erlang_cdfs_are_exact_to_a_few_ulps(k, x):
    """Both answers of erlang_cdfs, P(k, x) and P(k + 1, x), against the exact Poisson tail in decimals: the series'
    lead term is one power, one exponential and one division, its further terms positive, and above k + 1 the
    complement is at least 1/2, so the answer holds to a few ulps from 1 down to the subnormal range."""
    p0, p1 = special.erlang_cdfs(k, x)
    for got, shape in ((p0, k), (p1, k + 1)):
        ref = _lower_gamma_exact(shape, x)
        if ref > 1e-290:
            assert _close(got, ref, 4e-15)
        else:
            assert got <= 1e-290


@given(st.integers(1, special._ERLANG_SHAPES),
       st.lists(st.one_of(st.just(0.0), st.floats(0.0, 3.0), st.floats(0.0, 100.0), st.floats(0.0, 1e6)),
                min_size=1, max_size=80))
def test_erlang_cdfs_over_an_array_match_scipy_element_by_element(k, xs):
    """Over an array the series takes as many terms as its largest x needs, so an element's answer does not depend
    on its neighbours beyond rounding; each matches scipy.special.gammainc within scipy's own error."""
    x = np.array(xs)
    p0, p1 = special.erlang_cdfs(k, x)
    assert p0.shape == p1.shape == x.shape
    np.testing.assert_allclose(p0, sc.gammainc(k, x), rtol=2e-13, atol=1e-300)
    np.testing.assert_allclose(p1, sc.gammainc(k + 1, x), rtol=2e-13, atol=1e-300)
    alone = np.array([special.erlang_cdfs(k, v)[0] for v in xs])
    np.testing.assert_allclose(p0, alone, rtol=4e-15, atol=1e-300)
    assert np.all(p1 <= p0)  # P(k + 1, x) <= P(k, x): one more arrival needed


def test_erlang_cdfs_ends_and_shapes():
    x = np.array([[0.0, -1.0, math.nan], [math.inf, 2.0, 1e-320]])
    p0, p1 = special.erlang_cdfs(3, x)
    assert p0.shape == (2, 3) and p0[0, 0] == p1[0, 0] == 0.0 and p0[1, 0] == p1[1, 0] == 1.0
    assert np.isnan(p0[0, 1]) and np.isnan(p0[0, 2]) and np.isnan(p1[0, 1]) and np.isnan(p1[0, 2])
    assert p0[1, 2] == 0.0  # (1e-320)^3 / 3! underflows
    s0, s1 = special.erlang_cdfs(2, 1.5)
    assert isinstance(s0, np.float64) and isinstance(s1, np.float64)
    assert special.gammainc(2, 1.5) == s0 and special.gammainc(3, 1.5) == special.erlang_cdfs(3, 1.5)[0]
    with pytest.raises(ValueError):
        special.erlang_cdfs(0, 1.0)
    with pytest.raises(ValueError):
        special.erlang_cdfs(special._ERLANG_SHAPES + 1, 1.0)


def test_gammainc_beyond_the_erlang_shapes_is_still_scipys():
    """Shapes above _ERLANG_SHAPES, or not integers, take the per-element series and continued fraction."""
    x = np.array([0.0, 0.5, 30.0, 41.0, 42.0, 60.0, 400.0])
    for a in (41, 2.5, 77):
        np.testing.assert_allclose(special.gammainc(a, x), sc.gammainc(a, x), rtol=2e-13, atol=1e-300)
