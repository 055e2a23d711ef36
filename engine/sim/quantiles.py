"""Quantiles of a run's per-request columns in numpy, the numbers DuckDB's quantile_cont gives (issue 19: the
two queries through DuckDB took ~40 % of a 1M-request run; np.partition reads the same order statistics).

DuckDB defines quantile_cont(x, q) over the n values as: RN = (n - 1) q, lo and hi the order statistics at
floor(RN) and ceil(RN), and lo when they are the same position, else lo (1 - d) + hi d with d = RN - floor(RN)
(DuckDB's InterpolateOperator for doubles). The pinned x86-64 build evaluates that with one rounding,
fma(lo, 1 - d, hi d) (observed: every case of tests/test_sim_quantiles.py matches it and ~10 % do not match
the twice-rounded sum); _fma reproduces it exactly in rationals. tests/test_sim_quantiles.py checks every
quantile against the store's DuckDB (Store.summarize) on the same data, grouped and not, so a DuckDB that
computes otherwise fails there. numpy's own np.quantile places RN and interpolates differently (the 'numpy'
stats engine keeps it: its runs' numbers stay as they were).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Iterator

import numpy as np

MASKED_GROUPS = 16  # at most this many groups are split by a mask each, more by a sort


def _fma(a: float, b: float, c: float) -> float:
    """a * b + c rounded once (IEEE fused multiply-add), by exact rational arithmetic (math.fma is Python 3.13+)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def quantile_cont(values: np.ndarray, qs, overwrite: bool = False) -> list[float]:
    """DuckDB's quantile_cont of `values` at each q in qs (one partial sort for all of them; nan when empty).
    overwrite: `values` is the caller's scratch copy, partially sorted in place rather than copied."""
    return quantile_cont_partitioned(values, qs, overwrite)[0]


def quantile_cont_partitioned(values: np.ndarray, qs, overwrite: bool = False) -> tuple[list[float], np.ndarray]:
    """quantile_cont, and the partially sorted copy of the values it read them from (a later quantile of the same
    values partitions that copy about twice as fast as the values in their own order); with overwrite, that is
    `values` itself, partitioned in place (the same order statistics, so the same numbers)."""
    n = len(values)
    if n == 0:
        return [math.nan] * len(qs), values
    positions = [(n - 1) * float(q) for q in qs]  # RN, in double as DuckDB computes it
    kth = sorted({math.floor(position) for position in positions} | {math.ceil(position) for position in positions})
    if overwrite:
        values.partition(kth)
        ordered = values
    else:
        ordered = np.partition(values, kth)
    out = []
    for position in positions:
        below = math.floor(position)
        lo = float(ordered[below])
        if below == math.ceil(position):
            out.append(lo)
            continue
        hi, d = float(ordered[below + 1]), position - below
        out.append(_fma(lo, 1.0 - d, hi * d))
    return out, ordered


def split_by(groups: np.ndarray, values: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(group, its values in their order) for each group present, in ascending group order: contiguous slices
    where the groups are already in order (time bins of requests in arrival order), a mask per group where there
    are few (partitions: no sorted copy of the columns), else a stable sort by group on the narrowest integer
    type that holds them (a radix sort for small ranges)."""
    if not len(groups):
        return
    if np.all(groups[1:] >= groups[:-1]):  # a byte a request to find out, not the 8 of np.diff's
        cuts = np.flatnonzero(np.diff(groups)) + 1
        for chunk_start, chunk_stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(groups)]):
            yield int(groups[chunk_start]), values[chunk_start:chunk_stop]
        return
    low, high = int(groups.min()), int(groups.max())
    if low >= 0:
        present = np.flatnonzero(np.bincount(groups)).tolist()
        if len(present) <= MASKED_GROUPS:
            for group in present:
                yield group, values[groups == group]
            return
    keys = groups
    for narrow in (np.int16, np.int32):
        if np.iinfo(narrow).min <= low and high <= np.iinfo(narrow).max:
            keys = groups.astype(narrow)
            break
    order = np.argsort(keys, kind="stable")
    sorted_keys, sorted_values = keys[order], values[order]
    del order
    cuts = np.flatnonzero(np.diff(sorted_keys)) + 1
    for chunk_start, chunk_stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(groups)]):
        yield int(sorted_keys[chunk_start]), sorted_values[chunk_start:chunk_stop]
