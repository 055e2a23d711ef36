"""Variable-length inputs (audio seconds, tokens): what a batch costs when it costs as its longest member.

A batch of r requests whose lengths are independent draws from F is padded to its longest input,
M_r = max(L_1..L_r). The maximum of r iid draws has the CDF F(x)^r (David and Nagaraja, Order
Statistics, 3rd ed., 2003, section 2.1, eq. 2.1.1), so its quantile function is
Q_M(u) = Q(u^(1/r)), and for any cost g(x) of a batch padded to x (piecewise linear between the
profiled lengths, flat outside them):

    E[g(M_r)] = g(l_0) + sum_i slope_i * integral_{l_i}^{l_(i+1)} (1 - F(x)^r) dx

(the tail-integral form of an expectation, E[h(X)] = h(a) + integral_a^inf h'(x) P(X > x) dx, e.g.
Feller, An Introduction to Probability Theory Vol. II, section V.6). The integrals are done by
Gauss-Legendre quadrature on each piece, split where F has a kink (a uniform's ends), so they are
exact to about 1e-12 for the smooth CDFs here; a fixed length is a point mass and needs none. r
need not be an integer (a batch of b items from queries of q items on average holds b/q requests).

Units: lengths in the model's input unit (s of audio or tokens); costs in whatever unit g is given in
(seconds of batch service time in the engine).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from engine.analytic.special import ndtr_ufunc, ndtri

if TYPE_CHECKING:
    from engine.scenario import Scenario

GAUSS_NODES, GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(24)
QUANTILE_NODES = 400  # midpoints in u for the quantile of a padded batch's service time
_NORMAL = NormalDist()


class LengthDistribution:
    """The input-length distribution of a workload (engine.scenario.InputLenSpec): fixed, uniform or log-normal.

    The simulator draws lengths from the same spec (engine.sim.workload.sample_lengths).
    """

    def __init__(self, kind: str, value: float | None = None, low: float = 1.0, high: float = 25.0,
                 mu: float = 1.9, sigma: float = 0.5):
        self.kind, self.value, self.low, self.high, self.mu, self.sigma = kind, value, low, high, mu, sigma

    @classmethod
    def from_spec(cls, spec, default: float | None = None) -> "LengthDistribution":
        """From a scenario's workload.input_len; a fixed spec without a value takes `default`."""
        value = spec.value if spec.value is not None else default
        return cls(spec.kind, value=value, low=spec.low, high=spec.high, mu=spec.mu, sigma=spec.sigma)

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """F(x) = P(L <= x)."""
        x = np.asarray(x, dtype=float)
        if self.kind == "fixed":
            return (x >= self.value).astype(float)
        if self.kind == "uniform":
            if self.high <= self.low:
                return (x >= self.low).astype(float)
            return np.clip((x - self.low) / (self.high - self.low), 0.0, 1.0)
        return ndtr_ufunc((np.log(np.maximum(x, 1e-300)) - self.mu) / self.sigma)

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """Q(u), the inverse of F, for u in (0, 1)."""
        u = np.asarray(u, dtype=float)
        if self.kind == "fixed":
            return np.full(u.shape, float(self.value))
        if self.kind == "uniform":
            return self.low + (self.high - self.low) * u
        return np.exp(self.mu + self.sigma * ndtri(u))

    def kinks(self) -> list[float]:
        """Points where F is not smooth (quadrature pieces are split there)."""
        return [self.low, self.high] if self.kind == "uniform" else []


def expected_padded_cost(knots: np.ndarray, costs: np.ndarray, dist: LengthDistribution,
                         members: np.ndarray) -> np.ndarray:
    """E[g(M_r)] for each column: the expected cost of a batch padded to its longest of r members.

    knots: the profiled lengths l_0 < ... < l_k; costs: (k+1, B) array, g at each knot for each of B
    batches (linear between knots, flat outside them, as engine.sim.service prices a batch);
    members: (B,) the number of requests r >= 1 in each batch. Returns a (B,) array in the unit of
    `costs`. Formula and source: the module docstring.
    """
    knots = np.asarray(knots, dtype=float)
    costs = np.asarray(costs, dtype=float)
    members = np.asarray(members, dtype=float)
    if dist.kind == "fixed" or len(knots) == 1:
        at = float(dist.value) if dist.kind == "fixed" else float(knots[0])
        return np.array([np.interp(at, knots, costs[:, j]) for j in range(costs.shape[1])])
    total = costs[0].copy()
    for i in range(len(knots) - 1):
        slope = (costs[i + 1] - costs[i]) / (knots[i + 1] - knots[i])
        total += slope * _survival_integral(dist, knots[i], knots[i + 1], members)
    return total


def _survival_integral(dist: LengthDistribution, a: float, b: float, members: np.ndarray) -> np.ndarray:
    """integral_a^b (1 - F(x)^r) dx for each r in `members` (Gauss-Legendre on each smooth piece)."""
    edges = [a] + [k for k in dist.kinks() if a < k < b] + [b]
    out = np.zeros(len(members))
    for lo, hi in zip(edges[:-1], edges[1:]):
        x = 0.5 * (hi - lo) * GAUSS_NODES + 0.5 * (hi + lo)
        f = dist.cdf(x)
        out += 0.5 * (hi - lo) * ((1.0 - f[None, :] ** members[:, None]) @ GAUSS_WEIGHTS)
    return out


def padded_cost_quantile(knots: np.ndarray, costs: np.ndarray, dist: LengthDistribution, members: np.ndarray,
                         jitter_sigma: float, p: float) -> np.ndarray:
    """p-quantile of g(M_r) x J for each column, J a log-normal jitter of mean 1 and log-sd jitter_sigma.

    The simulator draws a batch's time as its mean at its longest input times that jitter
    (engine.sim.service), independently of the lengths. P(g(M_r) J > t) = integral_0^1 P(J > t /
    g(Q(u^(1/r)))) du (the quantile of M_r, module docstring), by the midpoint rule on
    QUANTILE_NODES points of u, solved for t for every column at once (_product_quantiles). Same units
    as `costs`.
    """
    knots = np.asarray(knots, dtype=float)
    costs = np.asarray(costs, dtype=float)
    members = np.maximum(np.asarray(members, dtype=float), 1.0)
    u = (np.arange(QUANTILE_NODES) + 0.5) / QUANTILE_NODES
    lengths = dist.quantile(u[None, :] ** (1.0 / members[:, None]))  # (columns, nodes): M_r's quantiles
    return _product_quantiles(_interp_columns(lengths, knots, costs), jitter_sigma, p)


def _interp_columns(x: np.ndarray, knots: np.ndarray, costs: np.ndarray) -> np.ndarray:
    """np.interp(x[j], knots, costs[:, j]) for every row j of x at once (linear between knots, flat outside)."""
    if len(knots) == 1:
        return np.broadcast_to(costs[0][:, None], x.shape).astype(float)
    i = np.clip(np.searchsorted(knots, x, side="right") - 1, 0, len(knots) - 2)
    w = np.clip((x - knots[i]) / (knots[i + 1] - knots[i]), 0.0, 1.0)
    cols = np.arange(x.shape[0])[:, None]
    return costs[i, cols] * (1.0 - w) + costs[i + 1, cols] * w


#: most regula falsi steps per quantile (the Illinois variant converges in about fifteen; each step shrinks the
#: bracket, so the bound only stops a pathological row)
_ROOT_STEPS = 100
#: |h| below which a row counts as solved (h's rounding over QUANTILE_NODES terms is about 1e-16)
_H_RESOLUTION = 1e-15


def _product_quantiles(g: np.ndarray, sigma: float, p: float) -> np.ndarray:
    """For each row of g, t with mean over the row of P(g J > t) = 1 - p, J = exp(sigma Z - sigma^2 / 2).

    Solved in s = log t for every row at once by the Illinois variant of regula falsi (Dowell and Jarratt,
    BIT 11, 1971) on h(s) = mean Phi(-(s - log g + sigma^2/2) / sigma) - (1 - p), which falls in s, from the
    bracket [log min g, log max g + sigma (z_p + 4)] bisected to under sigma wide (on a wider one h is nearly a
    step function, where secant and Newton steps crawl), until a step moves s by under 1e-13: the same root a
    bisection per row found in 60 passes over its nodes.
    """
    if sigma <= 0:
        return np.quantile(g, p, axis=1)
    shift, target = sigma * sigma / 2, 1.0 - p
    log_g = np.log(g)

    def h(s: np.ndarray) -> np.ndarray:
        return ndtr_ufunc(-(s[:, None] - log_g + shift) / sigma).mean(axis=1) - target

    a = log_g.min(axis=1)
    b = log_g.max(axis=1) + sigma * (_NORMAL.inv_cdf(p) + 4.0)
    while True:  # bisect until every bracket is under sigma wide, where h is smooth and the secant fast
        wide = (b - a) > sigma
        if not wide.any():
            break
        mid = 0.5 * (a + b)
        right = h(mid) > 0
        a, b = np.where(wide & right, mid, a), np.where(wide & ~right, mid, b)
    fa, fb = h(a), h(b)
    kept = np.zeros(len(a))  # +1: the last step kept b, -1: it kept a (Illinois halves a twice-kept end's value)
    c = np.full(len(a), np.nan)  # no step taken yet
    solved = np.zeros(len(a), dtype=bool)
    for _ in range(_ROOT_STEPS):
        with np.errstate(divide="ignore", invalid="ignore"):
            step = (a * fb - b * fa) / (fb - fa)
        step = np.where(np.isfinite(step) & (step > a) & (step < b), step, 0.5 * (a + b))
        solved |= np.abs(step - c) <= 1e-13 * np.maximum(1.0, np.abs(step))
        c = np.where(solved, c, step)
        if solved.all():
            break
        fc = h(c)
        # h is a mean of QUANTILE_NODES terms: below ~1e-15 its value is rounding, and further secant steps
        # only bisect noise; s is then within about 1e-15 / |h'(s)| of the root
        solved |= np.abs(fc) <= _H_RESOLUTION
        right = fc > 0  # the root lies right of c
        fb = np.where(right & (kept == 1), 0.5 * fb, fb)
        fa = np.where(~right & (kept == -1), 0.5 * fa, fa)
        a, fa = np.where(right, c, a), np.where(right, fc, fa)
        b, fb = np.where(right, b, c), np.where(right, fb, fc)
        kept = np.where(right, 1, -1)
    return np.exp(c)


def query_size_pmf(scenario: Scenario) -> np.ndarray:
    """Items per query: fixed, a table, or log-normal discretised to 1..max_size (PARIS section V)."""
    spec = scenario.workload.query_size
    if spec.kind == "fixed":
        pmf = np.zeros(spec.size)
        pmf[-1] = 1.0
        return pmf
    if spec.kind == "table":  # a measured or edited distribution, normalised
        pmf = np.zeros(spec.largest)
        for size, probability in spec.table:
            if size <= spec.largest:
                pmf[size - 1] += probability
        return pmf / pmf.sum()
    sizes = np.arange(1, spec.max_size + 1, dtype=float)
    normal = NormalDist(spec.mu, spec.sigma)
    cdf = np.array([normal.cdf(math.log(edge)) for edge in np.concatenate([[0.5], sizes + 0.5])])
    pmf = np.diff(cdf)
    return pmf / pmf.sum()
