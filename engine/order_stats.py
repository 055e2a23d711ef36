"""Order statistics of small 1-D samples: the median, and the sorted distinct values.

numpy's median and unique give the same numbers, but each checks its argument for a masked array, which imports
numpy.ma on first use (~0.4 MB of bytecode, ~7-10 ms of a `python -m engine evaluate` run that uses nothing else
of it). These sort and index instead: the median of an even-sized sample is (a + b) / 2 of its two middle values,
as numpy's (a mean of two), and of an odd-sized one its middle value, so the results are the same to the bit
(tests/test_order_stats.py compares them).
"""

from __future__ import annotations

import numpy as np


def median(values) -> float:
    """The median of a non-empty sample of numbers (any shape, flattened); nan if any value is nan, as numpy's."""
    a = np.sort(np.asarray(values, dtype=float), axis=None)
    n = a.size
    if n == 0:
        raise ValueError("the median of an empty sample is undefined")
    if np.isnan(a[-1]):  # np.sort puts nan last
        return float("nan")
    m = n // 2
    return float(a[m]) if n % 2 else float((a[m - 1] + a[m]) / 2)


def distinct(values) -> np.ndarray:
    """The distinct values of a sample of finite numbers (flattened), sorted ascending: np.unique's answer without
    its options (np.unique also folds NaNs into one; here each NaN would be kept)."""
    a = np.sort(np.asarray(values), axis=None)
    if a.size == 0:
        return a
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]
