"""Tail latency of a batch when no percentile was published (the default jitter model).

Batch service times on a GPU are close to deterministic (PARIS section IV-C), so
the default models them as log-normal around the mean with a coefficient of
variation of 5 %: p_q = mean * exp(z_q * sigma - sigma^2 / 2), sigma^2 = ln(1 + cv^2).
This gives p99 about 1.12 x mean. Published percentiles always take precedence.
"""

from __future__ import annotations

import math
from statistics import NormalDist

DEFAULT_CV = 0.05
PERCENTILES = (50, 90, 95, 99)


def jitter_factor(percentile: float, cv: float = DEFAULT_CV) -> float:
    """Ratio of the `percentile`-th latency to the mean under the log-normal jitter model."""
    if not 0 < percentile < 100:
        raise ValueError(f"percentile must be in (0, 100), got {percentile}")
    if cv <= 0:
        return 1.0
    sigma = math.sqrt(math.log1p(cv * cv))
    return math.exp(NormalDist().inv_cdf(percentile / 100) * sigma - sigma * sigma / 2)
