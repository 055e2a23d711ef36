"""Quantiles of a run's per-request columns in numpy, the numbers DuckDB's quantile_cont gives (issue 19: the
two queries through DuckDB took ~40 % of a 1M-request run; np.partition reads the same order statistics).

DuckDB defines quantile_cont(x, q) over the n values as: RN = (n - 1) q, lo and hi the order statistics at
floor(RN) and ceil(RN), and lo when they are the same position, else lo (1 - d) + hi d with d = RN - floor(RN)
(DuckDB's InterpolateOperator for doubles). The pinned x86-64 build evaluates that with one rounding,
fma(lo, 1 - d, hi d) (observed: every case of tests/test_sim_quantiles.py matches it and ~10 % do not match
the twice-rounded sum); _fma reproduces it exactly in rationals. tests/test_sim_quantiles.py checks every
quantile against the store's DuckDB (engine.store.summary.summarize) on the same data, grouped and not, so a DuckDB that
computes otherwise fails there. numpy's own np.quantile places RN and interpolates differently (the 'numpy'
stats engine keeps it: its runs' numbers stay as they were).
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction
from typing import Iterator

import numpy as np

MASKED_GROUPS = 16  # at most this many groups are split by a mask each, more by a sort


def _fma(a: float, b: float, c: float) -> float:
    """a * b + c rounded once (IEEE fused multiply-add), by exact rational arithmetic (math.fma is Python 3.13+)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


class OrderStatistics:
    """Order statistics of a scratch array (the caller's own copy), selected in place as they are asked for.

    A position is "placed" once the array holds its order statistic there with nothing larger before it and
    nothing smaller after it (what np.partition leaves at each kth). A new position between two placed ones is the
    order statistic of that stretch alone, so only the stretch is partitioned, not the whole array again (a
    percentile's confidence interval reads positions near the percentile's own)."""

    def __init__(self, values: np.ndarray):
        self.values = values
        self.placed: list[int] = []  # sorted

    def __len__(self) -> int:
        return len(self.values)

    def at(self, positions) -> list[float]:
        """The order statistics at `positions` (0-based ranks, each in [0, len))."""
        placed, n = self.placed, len(self.values)
        stretches: dict[int, list[int]] = {}  # index in `placed` of the placed position above -> new positions
        for position in sorted(set(positions) - set(placed)):
            stretches.setdefault(bisect.bisect_left(placed, position), []).append(position)
        for above, new in stretches.items():
            low = placed[above - 1] + 1 if above else 0
            high = placed[above] if above < len(placed) else n
            self.values[low:high].partition([position - low for position in new])  # a view: in place
        if stretches:
            self.placed = sorted(set(placed).union(*stretches.values()))
        return [float(self.values[position]) for position in positions]


def numpy_quantiles(order: OrderStatistics, qs) -> list[float]:
    """np.quantile(values, qs) (its default method, 'linear') from the values' order statistics: the same
    positions and the same arithmetic (numpy's _quantile and _lerp), so the same floats
    (tests/test_sim_quantiles.py compares them)."""
    n = len(order)
    if n == 0:
        return [math.nan] * len(qs)
    if math.isnan(order.at([n - 1])[0]):  # a nan sorts last, and makes every quantile nan
        return [math.nan] * len(qs)
    bounds = []
    for q in qs:
        virtual = (n - 1) * float(q)
        below = math.floor(virtual)
        below, above = (-1, -1) if virtual >= n - 1 else (below, below + 1)
        bounds.append((virtual - below, below % n, above % n))  # numpy's gamma is taken from the index -1 there
    positions = [position for _, low, high in bounds for position in (low, high)]
    values = dict(zip(positions, order.at(positions)))
    out = []
    for gamma, low, high in bounds:
        a, b = values[low], values[high]
        diff = b - a
        out.append(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)
    return out


def quantile_cont(values: np.ndarray, qs, overwrite: bool = False) -> list[float]:
    """DuckDB's quantile_cont of `values` at each q in qs (one partial sort for all of them; nan when empty).
    overwrite: `values` is the caller's scratch copy, partially sorted in place rather than copied."""
    return quantile_cont_partitioned(values, qs, overwrite)[0]


def quantile_cont_partitioned(values: np.ndarray, qs, overwrite: bool = False) -> tuple[list[float], OrderStatistics]:
    """quantile_cont, and the order statistics it read them from (a partially sorted copy: later order statistics
    of the same values are selected within its stretches, not over all of it again); with overwrite, the copy is
    `values` itself, partitioned in place (the same order statistics, so the same numbers)."""
    order = OrderStatistics(values if overwrite else values.copy())
    return _quantile_cont_of(order, len(values), 0, qs), order


def _positions(n: int, qs) -> list[float]:
    """quantile_cont's RN = (n - 1) q for each q, in double as DuckDB computes it."""
    return [(n - 1) * float(q) for q in qs]


def _quantile_cont_of(order: OrderStatistics, n: int, left_out: int, qs) -> list[float]:
    """quantile_cont at qs of n values whose `left_out` smallest are not in `order` (it holds the others: their
    order statistics are the n values' from rank left_out up, which every position read must be)."""
    if n == 0:
        return [math.nan] * len(qs)
    positions = _positions(n, qs)
    kth = sorted({math.floor(position) for position in positions} | {math.ceil(position) for position in positions})
    ordered = dict(zip(kth, order.at([rank - left_out for rank in kth])))  # one partition for all of them
    out = []
    for position in positions:
        below = math.floor(position)
        lo = ordered[below]
        if below == math.ceil(position):
            out.append(lo)
            continue
        hi, d = ordered[below + 1], position - below
        out.append(_fma(lo, 1.0 - d, hi * d))
    return out


TAIL_SAMPLE_STEP = 64  # group_quantiles places its threshold on every 64th value
TAIL_SHARE = 10  # ... at the pooled quantile 1 - TAIL_SHARE x (1 - the lowest q)


def group_quantiles(groups: np.ndarray, values: np.ndarray, qs) -> Iterator[tuple[int, list[float]]]:
    """(group, quantile_cont of its values at qs) for each group present, in ascending group order; `values` are
    left as they are.

    Where every q is in the upper tail (p99 by partition, by time bin), the order statistics quantile_cont reads
    from a group are among its values at or above a threshold placed below them: the values at or above it (about
    a tenth) are gathered once with their groups, and each group's statistics are read from its share of them,
    ranks shifted by its count below (exact: every value below the threshold sorts before every value at or above
    it, a nan among the latter). The threshold is the pooled quantile at 1 - TAIL_SHARE (1 - the lowest q), read
    off a sample; a group whose positions do not all fall at or above it (its tail far below the pool's) is read
    from all of its values, as are all groups where the qs are not a tail or the values few."""
    n = len(values)
    level = 1.0 - TAIL_SHARE * (1.0 - min(qs)) if len(qs) else 0.0
    if level < 0.5 or n < 64 * TAIL_SAMPLE_STEP:
        for group, chunk in split_by(groups, values):
            yield group, quantile_cont(chunk, qs, overwrite=not np.may_share_memory(chunk, values))
        return
    threshold = quantile_cont(values[::TAIL_SAMPLE_STEP], (level,))[0]
    tail = values < threshold  # then its complement: values at or above the threshold, or nan
    np.logical_not(tail, out=tail)
    tail_groups, tail_values = groups[tail], values[tail]
    del tail
    counts = np.bincount(groups)
    tail_counts = np.bincount(tail_groups, minlength=len(counts))
    tails = dict(split_by(tail_groups, tail_values))
    for group in np.flatnonzero(counts).tolist():
        size, left_out = int(counts[group]), int(counts[group] - tail_counts[group])
        if left_out == 0 or min(math.floor(position) for position in _positions(size, qs)) >= left_out:
            # its share of the gathered tail (a copy or a slice of it: the run's own scratch, partitioned in place)
            yield group, _quantile_cont_of(OrderStatistics(tails[group]), size, left_out, qs)
        else:  # its tail lies below the threshold: all of its values
            yield group, quantile_cont(values[groups == group], qs, overwrite=True)


def narrow(groups: np.ndarray) -> np.ndarray:
    """Non-negative group numbers on the narrowest integer type that holds them (a comparison reads a byte a
    value, not 8), or the array itself where none is narrower."""
    high = int(groups.max()) if len(groups) else 0
    for narrower in (np.int8, np.int16, np.int32):
        if high <= np.iinfo(narrower).max and np.dtype(narrower).itemsize < groups.dtype.itemsize:
            return groups.astype(narrower)
    return groups


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
            keys = narrow(groups)
            for group in present:
                yield group, values[keys == group]
            return
    keys = groups
    for key_type in (np.int16, np.int32):
        if np.iinfo(key_type).min <= low and high <= np.iinfo(key_type).max:
            keys = groups.astype(key_type)
            break
    order = np.argsort(keys, kind="stable")
    sorted_keys, sorted_values = keys[order], values[order]
    del order
    cuts = np.flatnonzero(np.diff(sorted_keys)) + 1
    for chunk_start, chunk_stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(groups)]):
        yield int(sorted_keys[chunk_start]), sorted_values[chunk_start:chunk_stop]
