"""Monotone interpolation of latency against batch size (DESIGN.md section 5).

Latency is interpolated piecewise-linearly in log(batch): exact at every
measured point, monotone between neighbours, and never evaluated outside the
measured range (the caller gets an OutOfRange error naming the range).
"""

from __future__ import annotations

import numpy as np
from engine.errors import KneepointError


class OutOfRange(KneepointError):
    """A batch (or input length) outside the points a curve was built from."""


def interp_log_batch(batches: np.ndarray, values: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """Interpolate `values` (e.g. latency in s) at batch sizes `b`, linear in log(batch).

    `batches` must be strictly increasing and >= 1. Raises OutOfRange for any b
    outside [batches[0], batches[-1]].
    """
    bs = np.asarray(batches, dtype=float)
    vs = np.asarray(values, dtype=float)
    q = np.atleast_1d(np.asarray(b, dtype=float))
    if len(bs) == 0:
        raise OutOfRange("no points to interpolate")
    lo, hi = bs[0], bs[-1]
    if np.any(q < lo) or np.any(q > hi):
        bad = q[(q < lo) | (q > hi)][0]
        raise OutOfRange(f"batch {bad:g} is outside the profiled range {lo:g}..{hi:g}")
    if len(bs) == 1:
        return np.full(q.shape, vs[0])
    return np.interp(np.log(q), np.log(bs), vs)


def interp_length(lengths: np.ndarray, values: np.ndarray, length: float) -> float:
    """Linear interpolation of a per-length quantity at input length `length` (s or tokens)."""
    ls = np.asarray(lengths, dtype=float)
    if length < ls[0] or length > ls[-1]:
        raise OutOfRange(f"input length {length:g} is outside the profiled lengths {ls[0]:g}..{ls[-1]:g}")
    return float(np.interp(length, ls, np.asarray(values, dtype=float)))
