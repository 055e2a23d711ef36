"""The four special functions the analytic formulas use (ndtr, ndtri, gammainc, gammaln), from the standard library.

scipy.special computes the same functions but costs ~0.2 s to import (its array-API layer loads numpy.f2py), more
than the rest of a `python -m engine evaluate` run; these take scalars or arrays like scipy's (an array in, an array
of the same shape out; a scalar in, a numpy float64 out) and apply a scalar formula to each element: the formulas
are called on a few dozen values at a time (a batch law's nodes, a partition's batch sizes), where a map over a
Python list costs about what a ufunc call does. The formulas with large arrays (engine.analytic.gather_scan's rate
axis) import scipy.special where they run. Each agrees with scipy.special to ~1e-15 relative
(tests/test_special.py).
"""

from __future__ import annotations

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


def gammainc(a: float, x):
    """The regularised lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a) (dimensionless; a > 0 the
    shape, a scalar; x >= 0 scalar or array): the series (DLMF 8.7.1) below a + 1, one minus Legendre's continued
    fraction for Q (DLMF 8.9.2) above, as in Numerical Recipes' gammp (3rd ed., section 6.2); P(a, 0) = 0,
    P(a, inf) = 1, nan for x < 0 or nan. The callers' a is a count of servers (the Erlang law of their idle times)."""
    a = float(a)
    if not a > 0.0 or math.isinf(a):
        raise ValueError(f"gammainc needs a finite shape a > 0, got {a}")

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
    out = np.zeros(values.shape)  # P(a, 0) = 0: the callers' arrays are mostly zeros (no wait), skipped here
    where = np.flatnonzero(values)
    out.flat[where] = list(map(p, values.flat[where].tolist()))
    return out
