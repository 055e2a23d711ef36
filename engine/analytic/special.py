"""The special functions the analytic formulas use (ndtr, ndtri, gammainc and its Erlang pairs, gammaln), from the
standard library and numpy.

scipy.special computes the same functions but costs ~0.2 s to import (its array-API layer loads numpy.f2py), more
than the rest of a `python -m engine evaluate` run; these take scalars or arrays like scipy's (an array in, an array
of the same shape out; a scalar in, a numpy float64 out). ndtr, ndtri and gammaln apply a standard-library formula
to each element: they are called on a few dozen values at a time (a batch law's nodes, a partition's batch sizes),
where a map over a Python list costs about what a ufunc call does. The incomplete gamma function at the callers'
integer shapes (erlang_cdfs) is summed over the whole array in numpy: a Python series per element cost ~100 us a
call, thousands of times per search. Over large arrays (engine.analytic.gather_scan's rate axis,
engine.analytic.lengths) scipy's ufuncs are faster per element: ndtr_ufunc and gammainc_ufunc import scipy.special
on their first call, which `evaluate` on the default scenario never makes. Each agrees with scipy.special to ~1e-15 relative,
or is closer to the exact value than scipy is (tests/test_special.py).
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np

_SQRT1_2 = math.sqrt(0.5)
_STANDARD_NORMAL = NormalDist()  # immutable: its inv_cdf is Wichura's AS241 (see ndtri)
_EPS = 2.0 ** -53  # a term below this fraction of the sum no longer moves it
_MAX_TERMS = 10_000  # far beyond what either gammainc expansion needs (~100 terms at a = 1000)


def _elementwise(f, x):
    """f (float -> float) applied to each element of x: an array of x's shape, or a float64 for a scalar x."""
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        return np.float64(f(float(a)))
    return np.fromiter(map(f, a.ravel().tolist()), dtype=float, count=a.size).reshape(a.shape)


def ndtr(x):
    """Standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2 (dimensionless; erfc as in DLMF 7.2.2), by the C
    library's erfc (math.erfc, correctly rounded to ~1 ulp): in the lower tail erfc of a positive argument keeps
    its relative precision down to ~1e-308, as Cephes' ndtr (which scipy.special.ndtr uses) does by switching
    from 1/2 + erf/2 to erfc/2. math.erfc is mapped over the elements directly (no Python call per element):
    the formulas ask for a few dozen values at a time, thousands of times per search."""
    z = np.multiply(x, -_SQRT1_2, dtype=float)
    if z.ndim == 0:
        return np.float64(0.5 * math.erfc(z))
    out = np.fromiter(map(math.erfc, z.ravel().tolist()), dtype=float, count=z.size)
    out *= 0.5
    return out.reshape(z.shape)


def _ndtri(p: float) -> float:
    if 0.0 < p < 1.0:
        return _STANDARD_NORMAL.inv_cdf(p)
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    return math.nan  # outside [0, 1], or nan


def ndtri(p):
    """Standard normal quantile Phi^-1(p), by Wichura's rational approximations (M. J. Wichura, "Algorithm AS241:
    The Percentage Points of the Normal Distribution", Applied Statistics 37(3), 1988; relative error ~1e-16),
    which the standard library's NormalDist.inv_cdf implements; -inf at 0, inf at 1, nan outside [0, 1]."""
    return _elementwise(_ndtri, p)


def _gammaln(x: float) -> float:
    try:
        return math.lgamma(x)
    except ValueError:  # a pole: 0 or a negative integer
        return math.inf


def gammaln(x):
    """log |Gamma(x)| (math.lgamma), inf at the poles (0 and the negative integers) as scipy.special.gammaln; the
    callers ask for log k! = gammaln(k + 1)."""
    return _elementwise(_gammaln, x)


def _prefactor(a: float, x: float) -> float:
    """x^a e^-x / Gamma(a), the factor both expansions of P(a, x) share: as a product where its parts are finite
    (three roundings), else as the exponential of its logarithm (which loses ~|a log x| ulps)."""
    if a <= 100.0 and x <= 700.0:  # x^a <= 700^100 ~ 1e284, Gamma(100) ~ 1e156, e^-700 ~ 1e-304
        return x ** a * math.exp(-x) / math.gamma(a)
    return math.exp(a * math.log(x) - x - math.lgamma(a))


def _gamma_series(a: float, x: float) -> float:
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1)...(a + n)) (DLMF 8.7.1): positive terms whose ratio
    x / (a + n) falls below one, used for x < a + 1."""
    term = total = 1.0
    n = a
    for _ in range(_MAX_TERMS):
        n += 1.0
        term *= x / n
        total += term
        if term <= total * _EPS:
            break
    return total * _prefactor(a, x) / a


def _gamma_fraction(a: float, x: float) -> float:
    """Q(a, x) = 1 - P(a, x) = x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)) (Legendre's
    continued fraction, DLMF 8.9.2), by the modified Lentz method (W. H. Press et al., Numerical Recipes, 3rd ed.,
    sections 5.2 and 6.2), used for x >= a + 1 where it converges in a few terms."""
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) <= _EPS:
            break
    return _prefactor(a, x) * h


_ERLANG_SHAPES = 40  # integer shapes up to this are summed over whole arrays at once (erlang_cdfs)
_ERLANG_TOP = 700.0  # x beyond it counts as 700, where Q(k <= 41, x) < e^-700 700^40 / 40! ~ 1e-239: P = 1 exactly


@functools.lru_cache(maxsize=64)
def _series_denominators(k: int) -> np.ndarray:
    """k + 1, k + 2, ..., k + N as a column: the series of P(k, x) (DLMF 8.7.1) to the term t_{k+N} / t_k below
    _EPS / 4 at x = k + 2, the largest x the series serves (read-only: shared by every call)."""
    out = np.arange(k + 1.0, k + 1.0 + _series_terms(k, k + 2.0))[:, None]
    out.setflags(write=False)
    return out


def _series_terms(k: int, x: float) -> int:
    """How many terms x^n / ((k + 1)...(k + n)), n >= 1, the series of P(k, x) needs: until one is below _EPS / 4
    (their sum is at least 1, and the later terms fall faster still)."""
    term, n = 1.0, 0
    while term > _EPS / 4:
        n += 1
        term *= x / (k + n)
    return n


def erlang_cdfs(k: int, x) -> tuple[np.ndarray, np.ndarray]:
    """(P(k, x), P(k + 1, x)), the regularised lower incomplete gamma function at an integer shape
    1 <= k <= _ERLANG_SHAPES (dimensionless; x >= 0, scalar or array): the Erlang law's CDF, the probability that
    a Poisson count of mean x reaches k, P(k, x) = e^-x sum_{j >= k} x^j / j! (DLMF 8.4.10), worked out over the
    whole array at once (the callers ask ~10,000 times per search on 64 values, where a Python formula per element
    costs ~100 us a call). Below x = k + 1 (k + 2 for P(k + 1)) by the series x^k e^-x / k! (1 + sum_n x^n /
    ((k + 1)...(k + n))) (DLMF 8.7.1), its terms one cumulative product down a column of denominators, as many as
    the largest x needs: positive terms, so the relative precision holds down to the smallest P. Above, by one
    minus the finite Poisson sum Q(k, x) = e^-x sum_{j < k} x^j / j! (DLMF 8.4.10 again; there P >= 1/2, so the
    subtraction costs no precision). P(k, 0) = 0, P(k, inf) = 1, nan for x < 0 or nan."""
    if not (isinstance(k, int) and 1 <= k <= _ERLANG_SHAPES):
        raise ValueError(f"erlang_cdfs needs an integer shape 1 <= k <= {_ERLANG_SHAPES}, got {k!r}")
    values = np.asarray(x, dtype=float)
    xc = np.minimum(values.ravel(), _ERLANG_TOP)  # a copy: nan stays nan, inf becomes 700
    bad = not xc.min() >= 0.0  # a negative x or nan (min passes nan on)
    if bad:
        xc[~(xc >= 0.0)] = 0.0  # anything finite: nan below
    top = float(xc.max())
    lead = xc ** k
    lead *= np.exp(-xc)
    lead /= math.factorial(k)  # e^-x x^k / k!, a Poisson probability (an exact divisor up to k = 22)
    terms = xc / _series_denominators(k)[:_series_terms(k, min(top, k + 2.0))]
    np.cumprod(terms, axis=0, out=terms)  # x^n / ((k + 1)...(k + n)) = t_{k+n} / t_k, n = 1, 2, ...
    p1 = terms.sum(axis=0)
    p1 *= lead
    p0 = lead + p1
    if top >= k + 1.0:  # the complement, where P >= 1/2: 1 - e^-x sum_{j < k} x^j / j!
        high = np.flatnonzero(xc >= k + 1.0)
        xh = xc[high]
        head = xh / np.arange(1.0, k)[:, None]
        np.cumprod(head, axis=0, out=head)  # x^j / j!, j = 1..k-1
        q0 = (head.sum(axis=0) + 1.0) * np.exp(-xh)
        p0[high] = 1.0 - q0
        higher = xh >= k + 2.0
        p1[high[higher]] = 1.0 - (q0[higher] + lead[high[higher]])
    if bad:
        p0[~(values.ravel() >= 0.0)] = p1[~(values.ravel() >= 0.0)] = math.nan
    if values.ndim == 0:
        return np.float64(p0[0]), np.float64(p1[0])
    return p0.reshape(values.shape), p1.reshape(values.shape)


def gammainc(a: float, x):
    """The regularised lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a) (dimensionless; a > 0 the
    shape, a scalar; x >= 0 scalar or array). At the callers' shapes, counts of servers (integers up to
    _ERLANG_SHAPES), by erlang_cdfs over the whole array; at any other shape per element, by the series (DLMF 8.7.1)
    below a + 1 and one minus Legendre's continued fraction for Q (DLMF 8.9.2) above, as in Numerical Recipes'
    gammp (3rd ed., section 6.2). P(a, 0) = 0, P(a, inf) = 1, nan for x < 0 or nan."""
    a = float(a)
    if not a > 0.0 or math.isinf(a):
        raise ValueError(f"gammainc needs a finite shape a > 0, got {a}")
    if a.is_integer() and a <= _ERLANG_SHAPES:
        return erlang_cdfs(int(a), x)[0]

    def p(x: float) -> float:
        if x == 0.0:
            return 0.0
        if not x > 0.0:
            return math.nan
        if math.isinf(x):
            return 1.0
        if x < a + 1.0:
            return _gamma_series(a, x)
        return 1.0 - _gamma_fraction(a, x)

    values = np.asarray(x, dtype=float)
    if values.ndim == 0:
        return np.float64(p(float(values)))
    out = np.zeros(values.shape)  # P(a, 0) = 0: skipped
    where = np.flatnonzero(values)
    out.flat[where] = list(map(p, values.flat[where].tolist()))
    return out


def ndtr_ufunc(x):
    """scipy.special.ndtr (the standard normal CDF), for large arrays: ~10-15 ns an element against ~60 ns for ndtr's
    mapped math.erfc. scipy (~0.2 s to import) is imported on the first call."""
    from scipy.special import ndtr as ufunc  # heavy: only formulas over large arrays reach this (module docstring)

    return ufunc(x)


def gammainc_ufunc(a, x):
    """scipy.special.gammainc (the regularised lower incomplete gamma function P(a, x)), for large arrays of any shape
    a. scipy (~0.2 s to import) is imported on the first call."""
    from scipy.special import gammainc as ufunc  # heavy: only formulas over large arrays reach this (module docstring)

    return ufunc(a, x)
