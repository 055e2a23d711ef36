"""Tail latency of a batch when no percentile was published (the default jitter model).

Batch service times on a GPU are close to deterministic (PARIS section IV-C), so
the default models them as log-normal around the mean with a coefficient of
variation of 5 %: p_q = mean * exp(z_q * sigma - sigma^2 / 2), sigma^2 = ln(1 + cv^2).
This gives p99 about 1.12 x mean. Published percentiles always take precedence.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

DEFAULT_CV = 0.05
DEFAULT_SCV = 0.0025  # DEFAULT_CV squared, as the queueing formulas take the jitter
DEFAULT_SIGMA = math.sqrt(math.log1p(DEFAULT_CV ** 2))  # log-sd of the default jitter
PERCENTILES = (50, 90, 95, 99)


def percentile_key(quantile: float) -> str:
    """The name of a latency quantile (0..1) in the simulator's results: 0.99 -> 'p99', 0.999 -> 'p99.9'."""
    return f"p{round(quantile * 100, 4):g}"


def jitter_factor(percentile: float, cv: float = DEFAULT_CV) -> float:
    """Ratio of the `percentile`-th latency to the mean under the log-normal jitter model."""
    if not 0 < percentile < 100:
        raise ValueError(f"percentile must be in (0, 100), got {percentile}")
    if cv <= 0:
        return 1.0
    sigma = math.sqrt(math.log1p(cv * cv))
    return math.exp(NormalDist().inv_cdf(percentile / 100) * sigma - sigma * sigma / 2)


def lognormal_quantile(mean: float, scv: float, quantile: float) -> float:
    """`quantile` (0..1) of a log-normal time with this mean and squared coefficient of variation; the mean
    itself when either is not positive."""
    if scv <= 0 or mean <= 0:
        return mean
    log_variance = math.log1p(scv)
    return mean * math.exp(NormalDist().inv_cdf(quantile) * math.sqrt(log_variance) - log_variance / 2)


def lognormal_sigma_for_ratio(ratio: float, z: float) -> float:
    """Log-normal sigma (mean 1) whose quantile at standard-normal score z is `ratio`: the small root of
    exp(z s - s^2 / 2) = ratio (log-normal quantile, Johnson, Kotz and Balakrishnan, Continuous Univariate
    Distributions Vol. 1, ch. 14); the default jitter's (DEFAULT_CV) when the ratio says nothing."""
    if ratio <= 1.0 or z <= 0:
        return DEFAULT_SIGMA
    disc = z * z - 2 * math.log(ratio)
    return z - math.sqrt(disc) if disc > 0 else z


def lognormal_sigmas_for_ratios(ratio: np.ndarray, z: float) -> np.ndarray:
    """lognormal_sigma_for_ratio over an array of tail-to-mean ratios."""
    if z <= 0:
        return np.full(len(ratio), DEFAULT_SIGMA)
    disc = z * z - 2 * np.log(np.maximum(ratio, 1e-300))
    small_root = np.where(disc > 0, z - np.sqrt(np.maximum(disc, 0.0)), z)
    return np.where(ratio <= 1.0, DEFAULT_SIGMA, small_root)
