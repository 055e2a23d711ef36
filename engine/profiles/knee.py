"""Batch-size knees of a latency curve.

Two rules, always reported with their name so a consumer can say which it used:
- "utilization" (PARIS, Algorithm 1 step A): the smallest batch whose utilisation,
  throughput over saturated throughput, reaches a threshold (default 0.8).
- "curve" (Kneedle, Satopaa et al. 2011): the point of maximum distance below the
  chord of the normalised tail-latency-vs-throughput curve, where more batching
  stops buying throughput and starts costing latency (PREBA section 3.2).
Time_knee is the tail latency at Batch_knee (PREBA section 4.3).
"""

from __future__ import annotations


import numpy as np

from engine.errors import KneepointError

#: the utilisation rule's threshold is a fraction of the saturated throughput: in (0, 1]
THRESHOLD_RANGE = "(0, 1]"


class KneeError(KneepointError):
    """A knee asked with a rule parameter out of its range; the message names the parameter and the range."""


def utilization(throughput) -> np.ndarray:
    """Throughput over saturated throughput (the maximum over the curve), 0..1."""
    x = np.asarray(throughput, dtype=float)
    return x / np.max(x)


def reaches_knee(util, threshold: float):
    """The utilisation rule (PARIS Alg. 1 line 8): utilisation (a number or an array) at or above `threshold`,
    to 1e-12 so a value on the threshold counts."""
    return util >= threshold - 1e-12


def knee_utilization(batches, throughput, threshold: float = 0.8) -> int:
    """Index of the smallest batch whose utilisation reaches `threshold` (PARIS Alg. 1 line 8)."""
    if not 0 < threshold <= 1:  # also refuses NaN
        raise KneeError(f"threshold must be a fraction in {THRESHOLD_RANGE}, got {threshold!r}")
    util = utilization(throughput)
    return int(np.argmax(reaches_knee(util, threshold)))


def knee_curve(throughput, tail_latency) -> int:
    """Index of the Kneedle knee of tail latency (y) against throughput (x).

    Both axes are normalised to [0, 1]; for a convex increasing curve the knee is
    where x_n - y_n is largest. With fewer than three points, or a flat axis,
    there is no knee and the last point is returned.
    """
    x = np.asarray(throughput, dtype=float)
    y = np.asarray(tail_latency, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return len(x) - 1
    xn = (x - x.min()) / np.ptp(x)
    yn = (y - y.min()) / np.ptp(y)
    return int(np.argmax(xn - yn))
